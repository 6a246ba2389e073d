"""Attribute values derived from user input: bounded, never raising.

Pure logic: nothing here knows OpenTelemetry or any saver.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.otel import names

UNPRINTABLE = "<unprintable>"
"""The attribute value of a user value whose ``str()`` raises."""


def bounded_text(value: Any, limit: int = names.MAX_ID_LENGTH) -> str:
    """An attribute string for a user value (a thread id, namespace, checkpoint id, ...).

    Never raises: a value whose ``str()`` fails gives `UNPRINTABLE`. A text longer than
    `limit` characters keeps its start and is marked, ``<start>…[+N chars]``, within `limit`.
    """
    try:
        text = str(value)
    except Exception:
        return UNPRINTABLE
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(f"…[+{len(text)} chars]"))
    return f"{text[:keep]}…[+{len(text) - keep} chars]"


def key_text(value: Any) -> str:
    """The full ``str()`` of a user value for use in a key (never truncated, never raising).

    A value whose ``str()`` fails is keyed by its identity, so two such values never share
    state.
    """
    try:
        return str(value)
    except Exception:
        return f"{UNPRINTABLE}@{id(value):x}"


def repr_bytes(value: Any) -> bytes:
    """Last-resort encoding for argument values of unknown types."""
    return repr(value).encode()
