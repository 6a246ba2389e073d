"""Side effects started twice, read from the ``langgraph.tool.start`` spans of a thread.

`record_tool_start` exports such a span before a side-effecting tool's body runs, so a run
killed inside the tool leaves it behind even though no checkpoint records the call. The same
call (idempotency key) started from the same checkpoint in two or more traces is the task run
again: the killed run and its resume. That is a `duplicate_tool_call` finding naming the traces
(`expected`: the idempotency key, `actual`: the tool, both checkpoints: the one the starts ran
from). The same key from another checkpoint is the model asking again in a later step, which
the checkpoint-based detectors judge; starts without a checkpoint (a tool called outside a
graph) are grouped by key alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.detectors.duplicate_tool_call import started_twice
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord
from langgraph.checkpoint.otel.options import DivergencePolicy


def side_effect_findings(spans: Iterable[SpanRecord], policy: DivergencePolicy) -> list[Finding]:
    """One finding per call (idempotency key, checkpoint) started in two or more traces."""
    if "duplicate_tool_call" not in policy.detectors:
        return []
    by_call: dict[tuple[str, str], dict[str, SpanRecord]] = {}
    starts = (s for s in spans if s.name == names.SPAN_TOOL_START)
    for span in sorted(starts, key=lambda s: s.start_time_unix_nano):
        key = span.attributes.get(names.TOOL_IDEMPOTENCY_KEY)
        if key:
            call = (str(key), str(span.attributes.get(names.CHECKPOINT_ID, "")))
            by_call.setdefault(call, {}).setdefault(span.trace_id, span)
    findings = []
    for (key, _), first_by_trace in by_call.items():
        if len(first_by_trace) < 2:
            continue
        first, *_, last = first_by_trace.values()
        tool = str(last.attributes.get(names.TOOL_NAME, ""))
        if policy.is_repeatable(tool):
            continue
        findings.append(
            started_twice(
                key,
                tool,
                str(last.attributes.get(names.CHECKPOINT_ID, "")),
                str(first.attributes.get(names.CHECKPOINT_ID, "")),
                tuple(first_by_trace),
            )
        )
    return findings
