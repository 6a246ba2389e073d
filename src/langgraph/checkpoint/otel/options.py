"""Validated public options of the instrumentation, loadable from environment variables."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENV_PREFIX = "LANGGRAPH_OTEL_"
CODE_ONLY = frozenset({"redact", "on_divergence", "divergence"})
"""Options that are objects and can only be given in code, not as environment variables."""

DivergenceKind = Literal["state", "trajectory", "duplicate_tool_call"]
DETECTORS: tuple[DivergenceKind, ...] = ("state", "trajectory", "duplicate_tool_call")


class DivergencePolicy(BaseModel):
    """What counts as a divergence. The defaults give no finding on deterministic replays."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    detectors: frozenset[DivergenceKind] = frozenset(DETECTORS)
    """Detectors that run."""
    ignore_channels: frozenset[str] = frozenset()
    """Channels whose hashes are never compared (timestamps, counters, scratch space)."""
    compare_tool_args: bool = True
    """Whether the same tool called with other arguments is a trajectory departure."""
    repeatable_tools: frozenset[str] = frozenset()
    """Tools safe to run again with the same arguments (read-only lookups): never reported as
    `duplicate_tool_call`."""
    window: int = Field(default=50, ge=1, le=10_000)
    """At most this many checkpoints after the fork point are compared."""


class InstrumentOptions(BaseModel):
    """Options of `instrument()`; each can also be set as ``LANGGRAPH_OTEL_<NAME>``.

    Keyword arguments given to `instrument()` win over environment variables.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    enabled: bool = True
    """Emit telemetry. When false the wrapper only delegates (and still mirrors capabilities)."""

    store_hashes: bool = True
    """Store the state hash and per-channel hashes in each checkpoint's metadata."""

    hash_cache_size: int = Field(default=10_000, ge=16, le=10_000_000)
    """Entries in each bounded cache of channel digests (per wrapper)."""

    max_channel_events: int = Field(default=64, ge=0, le=10_000)
    """At most this many `langgraph.channel` events per put span (largest changes first)."""

    capture_content: bool = False
    """Opt-in: allow content in telemetry (values pass through `redact` and `content_max_bytes`)."""

    redact: Callable[[str, Any], Any] | None = None
    """Redaction hook ``(channel, value) -> value`` applied to every captured value."""

    content_max_bytes: int = Field(default=4096, ge=0, le=1_048_576)
    """Cap on the size of one captured value."""

    divergence: DivergencePolicy = DivergencePolicy()
    """What the divergence detectors compare after a resume (see `DivergencePolicy`)."""

    on_divergence: Callable[[Any], None] | None = None
    """Called with each `divergence.Finding` after its checkpoint is stored; an exception it raises
    propagates to the graph (strict mode, as Temporal fails a non-deterministic workflow)."""

    messages_channel: str = "messages"
    """The channel holding LangChain messages, read for tool calls."""

    @classmethod
    def load(
        cls, overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None
    ) -> InstrumentOptions:
        """Build options from ``LANGGRAPH_OTEL_*`` variables, then `overrides`.

        Raises `ValueError` naming the bad option and value.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and name not in CODE_ONLY:
                values[name] = raw
        unknown = sorted(set(overrides) - set(cls.model_fields))
        if unknown:
            raise TypeError(
                f"instrument() got unknown option(s) {', '.join(map(repr, unknown))}; "
                f"known options: {', '.join(sorted(cls.model_fields))}"
            )
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}={e.get('input')!r}: {e['msg']}"
                for e in exc.errors()
            )
            raise ValueError(f"invalid langgraph-checkpoint-otel option: {problems}") from None
