"""Content-free summaries of channel values for the ``langgraph.channel`` span event.

A summary names only types, counts and names defined by the graph's code (message types, tool
names from ``AIMessage.tool_calls[i]["name"]`` and ``ToolMessage.name``, class names). It never
contains a value, message text or a dict key. Examples::

    "+2 messages: ai(tool_calls=search), tool(search)"
    "3 messages: system, human, ai"
    "-2 messages"
    "dict: 4 keys (+1)"
    "list: 7 items (+2)"
    "str"

Pure logic: no OpenTelemetry, no saver.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["MAX_ITEMS", "MAX_SUMMARY_CHARS", "is_message", "plural", "summarize"]

#: At most this many new messages are described one by one; the rest become "…+N more".
MAX_ITEMS: Final[int] = 5
#: Summaries are cut to this many characters.
MAX_SUMMARY_CHARS: Final[int] = 200
#: Tool and node names are shown only when they look like identifiers; a name a model made up
#: (free text) is shown as "?".
_NAME_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,63}")
_TYPE_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
_CHUNK_TYPES: Final[dict[str, str]] = {
    "AIMessageChunk": "ai_chunk",
    "HumanMessageChunk": "human_chunk",
    "ToolMessageChunk": "tool_chunk",
    "SystemMessageChunk": "system_chunk",
    "ChatMessageChunk": "chat_chunk",
    "FunctionMessageChunk": "function_chunk",
}


def is_message(value: Any) -> bool:
    """Whether `value` is a LangChain message (checked by class, without importing it)."""
    kind = type(value)
    known = _MESSAGE_TYPES.get(kind)
    if known is None:
        known = any(
            c.__name__ == "BaseMessage" and c.__module__.startswith("langchain_core.messages")
            for c in kind.__mro__
        )
        if len(_MESSAGE_TYPES) < 1024:
            _MESSAGE_TYPES[kind] = known
    return known


_MESSAGE_TYPES: dict[type, bool] = {}
"""type -> whether it is a message class (bounded: at most 1,024 types are remembered)."""


def _safe_name(name: Any) -> str:
    if isinstance(name, str) and _NAME_RE.fullmatch(name):
        return name
    return "?"


def _message_type(msg: Any) -> str:
    t = getattr(msg, "type", None)
    if isinstance(t, str):
        if t in _CHUNK_TYPES:
            return _CHUNK_TYPES[t]
        if _TYPE_RE.fullmatch(t):
            return t
    return type(msg).__name__


def _describe_message(msg: Any) -> str:
    kind = _message_type(msg)
    calls = getattr(msg, "tool_calls", None)
    if isinstance(calls, list) and calls:
        names = ",".join(
            _safe_name(c.get("name") if isinstance(c, dict) else getattr(c, "name", None))
            for c in calls
        )
        return f"{kind}(tool_calls={names})"
    if kind in ("tool", "tool_chunk"):
        name = getattr(msg, "name", None)
        if name is not None:
            return f"{kind}({_safe_name(name)})"
    return kind


def _describe_messages(items: list[Any] | tuple[Any, ...]) -> str:
    parts = [_describe_message(m) for m in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        parts.append(f"…+{len(items) - MAX_ITEMS} more")
    return ", ".join(parts)


def plural(n: int, word: str) -> str:
    """`1 message`, `2 messages`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _delta(count: int, previous_count: int | None) -> str:
    if previous_count is None:
        return ""
    d = count - previous_count
    return f" ({d:+d})"


def _summarize_sequence(value: list[Any] | tuple[Any, ...], previous_count: int | None) -> str:
    count = len(value)
    kind = type(value).__name__
    # a messages channel is recognised by its first and its new items (not a scan of history)
    fresh = value[previous_count:] if previous_count is not None else value
    if count and is_message(value[0]) and all(is_message(m) for m in fresh):
        if previous_count is None:
            return f"{plural(count, 'message')}: {_describe_messages(value)}"
        d = count - previous_count
        if d > 0:
            return f"+{plural(d, 'message')}: {_describe_messages(value[previous_count:])}"
        if d < 0:
            return f"-{plural(-d, 'message')} ({count} total)"
        return f"{plural(count, 'message')} (+0)"
    return f"{kind}: {plural(count, 'item')}{_delta(count, previous_count)}"


def _summarize(value: Any, previous_count: int | None) -> str:
    if isinstance(value, list | tuple):
        return _summarize_sequence(value, previous_count)
    if isinstance(value, dict):
        n = len(value)
        return f"{type(value).__name__}: {plural(n, 'key')}{_delta(n, previous_count)}"
    if isinstance(value, set | frozenset):
        n = len(value)
        return f"{type(value).__name__}: {plural(n, 'item')}{_delta(n, previous_count)}"
    if is_message(value):
        return _describe_message(value)
    # scalars, pydantic models, dataclasses, anything else: the class name only
    return type(value).__name__


def summarize(value: Any, previous_count: int | None) -> str:
    """Return a short, content-free description of a channel value.

    Args:
        value: the channel's new value.
        previous_count: the channel's previous ``len()`` (list, tuple, dict, set), if known;
            for message lists, only the messages after it are described.
    """
    try:
        text = _summarize(value, previous_count)
    except Exception:  # a summary must never break a checkpoint write
        text = type(value).__name__
    if len(text) > MAX_SUMMARY_CHARS:
        text = text[: MAX_SUMMARY_CHARS - 1] + "…"
    return text
