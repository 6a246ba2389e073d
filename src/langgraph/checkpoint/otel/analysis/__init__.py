"""Pure logic over checkpoints and spans: the offline analysis of stored checkpoints and
exported spans, public from this package.

    from langgraph.checkpoint.otel.analysis import divergences, history_records

    findings = divergences(history_records(saver.list({"configurable": {"thread_id": "t"}})))

The public names (`__all__`): `CheckpointRecord`, `history_records` and `span_facts` (records of
a stored history or of exported spans), `Finding` and `divergences` (the divergence detectors),
`diff` (two checkpoints compared) and `resume_log` (every resume the spans tell of). They are
loaded on first use. The modules: `encoding` and `hashing` (canonical encoding, digests),
`stored_metadata` (the format stored in checkpoint metadata: a compatibility contract),
`tool_calls`, `text_bounds`, `records` and `span_records`, `resume_kinds` and `resume_events`,
`detectors/` (one module per kind of finding), `checkpoint_diff`, `graph_structure`,
`release_risks`, `summary`, `carrier`; every module but this one is internal.

Free of OpenTelemetry and of saver details; imports only `names`, `options`, `bounded` and
`_langgraph`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph.checkpoint.otel.lazy import lazy_names

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.analysis.checkpoint_diff import diff
    from langgraph.checkpoint.otel.analysis.detectors import Finding, divergences
    from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, history_records
    from langgraph.checkpoint.otel.analysis.resume_events import resume_log
    from langgraph.checkpoint.otel.analysis.span_records import span_facts

_EXPORTS: dict[str, str] = {
    "CheckpointRecord": "records",
    "Finding": "detectors",
    "diff": "checkpoint_diff",
    "divergences": "detectors",
    "history_records": "records",
    "resume_log": "resume_events",
    "span_facts": "span_records",
}
"""Public name -> the module under this package that defines it."""

__all__ = [
    "CheckpointRecord",
    "Finding",
    "diff",
    "divergences",
    "history_records",
    "resume_log",
    "span_facts",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)
