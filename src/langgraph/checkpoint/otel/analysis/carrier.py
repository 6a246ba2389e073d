"""The W3C trace context stored with each checkpoint (`traceparent`, `tracestate`): what a
resume links to, and which run's trace wrote a checkpoint."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.otel import names

TRACEPARENT, TRACESTATE = names.META_CARRIER_KEYS
_TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_MAX_TRACESTATE = 512


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A W3C trace context (version 00) as stored with a checkpoint."""

    trace_id: int
    span_id: int
    flags: int = 1
    tracestate: str = ""

    @property
    def traceparent(self) -> str:
        """The `traceparent` header value."""
        return f"00-{self.trace_id:032x}-{self.span_id:016x}-{self.flags:02x}"

    def carrier(self) -> dict[str, str]:
        """The dict stored in checkpoint metadata (never baggage)."""
        carrier = {TRACEPARENT: self.traceparent}
        if self.tracestate:
            carrier[TRACESTATE] = self.tracestate
        return carrier


def parse_carrier(carrier: Any) -> TraceContext | None:
    """The trace context in a stored carrier, or None for anything missing or malformed.

    Accepts only version 00 traceparents with non-zero ids; a foreign or garbage carrier never
    raises.
    """
    if not isinstance(carrier, Mapping):
        return None
    traceparent = carrier.get(TRACEPARENT)
    if not isinstance(traceparent, str):
        return None
    match = _TRACEPARENT_RE.match(traceparent.strip())
    if match is None:
        return None
    trace_id, span_id = int(match[1], 16), int(match[2], 16)
    if trace_id == 0 or span_id == 0:
        return None
    tracestate = carrier.get(TRACESTATE, "")
    if not isinstance(tracestate, str) or len(tracestate) > _MAX_TRACESTATE:
        tracestate = ""
    return TraceContext(trace_id, span_id, int(match[3], 16), tracestate)
