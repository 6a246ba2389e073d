"""OpenTelemetry for LangGraph checkpointers: spans, state hashes and metrics for every
checkpoint write, pending write and load.

    from langgraph.checkpoint.otel import instrument
    graph = builder.compile(checkpointer=instrument(SqliteSaver(conn)))

The public API is what this module exports (`__all__`): the wrapper and its Instrumentor, the
offline analysis of stored checkpoints and exported spans, the resume harness and the span-file
exporter and readers; with the `langgraph-otel` command, the ``resume_checker`` pytest fixture,
the telemetry names (`names`, see docs/telemetry.md) and `InstrumentOptions`'s fields. Every
other module is internal and may change in any release.

The names are loaded on first use, so a process that only reads checkpoints (the inspector)
or imports a submodule (`names`) does not load the wrapper.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.analysis.checkpoint_diff import diff
    from langgraph.checkpoint.otel.analysis.detectors import Finding, divergences
    from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, history_records
    from langgraph.checkpoint.otel.analysis.resume_events import resume_log
    from langgraph.checkpoint.otel.analysis.span_records import span_facts
    from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
    from langgraph.checkpoint.otel.core.saver import (
        InstrumentedSaver,
        astored_history,
        stored_history,
    )
    from langgraph.checkpoint.otel.core.telemetry import PACKAGE_VERSION as __version__
    from langgraph.checkpoint.otel.core.tool_key_spans import (
        ToolKeySpanProcessor,
        add_tool_key_processor,
        record_tool_start,
    )
    from langgraph.checkpoint.otel.core.wrapping import instrument, is_instrumented, uninstrument
    from langgraph.checkpoint.otel.migrations import Migrations, SchemaMigrationError
    from langgraph.checkpoint.otel.options import DivergencePolicy, InstrumentOptions
    from langgraph.checkpoint.otel.tools.otlp_json import (
        HistogramPoint,
        MetricPoint,
        NumberPoint,
        OtlpJsonMetricExporter,
        OtlpJsonSpanExporter,
        SpanRecord,
        merge_histograms,
        read_metrics,
        read_spans,
        write_span_files,
    )
    from langgraph.checkpoint.otel.tools.replay import (
        ReplayFailed,
        ReplayResult,
        aassert_replays,
        areplay_thread,
        assert_replays,
        replay_thread,
    )
    from langgraph.checkpoint.otel.tools.testing import (
        ResumeChecker,
        ResumeReport,
        acheck_resume,
        check_resume,
    )

_EXPORTS: dict[str, tuple[str, str]] = {
    # The wrapper
    "InstrumentOptions": ("options", "InstrumentOptions"),
    "DivergencePolicy": ("options", "DivergencePolicy"),
    "InstrumentedSaver": ("core.saver", "InstrumentedSaver"),
    "LangGraphCheckpointInstrumentor": ("core.instrumentor", "LangGraphCheckpointInstrumentor"),
    "Migrations": ("migrations", "Migrations"),
    "SchemaMigrationError": ("migrations", "SchemaMigrationError"),
    "ToolKeySpanProcessor": ("core.tool_key_spans", "ToolKeySpanProcessor"),
    "__version__": ("core.telemetry", "PACKAGE_VERSION"),
    "add_tool_key_processor": ("core.tool_key_spans", "add_tool_key_processor"),
    "astored_history": ("core.saver", "astored_history"),
    "instrument": ("core.wrapping", "instrument"),
    "is_instrumented": ("core.wrapping", "is_instrumented"),
    "record_tool_start": ("core.tool_key_spans", "record_tool_start"),
    "stored_history": ("core.saver", "stored_history"),
    "uninstrument": ("core.wrapping", "uninstrument"),
    # Offline analysis of stored checkpoints and exported spans
    "CheckpointRecord": ("analysis.records", "CheckpointRecord"),
    "Finding": ("analysis.detectors", "Finding"),
    "divergences": ("analysis.detectors", "divergences"),
    "history_records": ("analysis.records", "history_records"),
    "diff": ("analysis.checkpoint_diff", "diff"),
    "resume_log": ("analysis.resume_events", "resume_log"),
    "span_facts": ("analysis.span_records", "span_facts"),
    # The resume harness (under pytest also the `resume_checker` fixture)
    "ResumeChecker": ("tools.testing", "ResumeChecker"),
    "ResumeReport": ("tools.testing", "ResumeReport"),
    "check_resume": ("tools.testing", "check_resume"),
    "acheck_resume": ("tools.testing", "acheck_resume"),
    # Deploy safety: recorded threads replayed against the current code
    "ReplayFailed": ("tools.replay", "ReplayFailed"),
    "ReplayResult": ("tools.replay", "ReplayResult"),
    "assert_replays": ("tools.replay", "assert_replays"),
    "aassert_replays": ("tools.replay", "aassert_replays"),
    "replay_thread": ("tools.replay", "replay_thread"),
    "areplay_thread": ("tools.replay", "areplay_thread"),
    # Span and metric files (OTLP/JSON lines)
    "OtlpJsonSpanExporter": ("tools.otlp_json", "OtlpJsonSpanExporter"),
    "OtlpJsonMetricExporter": ("tools.otlp_json", "OtlpJsonMetricExporter"),
    "write_span_files": ("tools.otlp_json", "write_span_files"),
    "read_spans": ("tools.otlp_json", "read_spans"),
    "read_metrics": ("tools.otlp_json", "read_metrics"),
    "SpanRecord": ("tools.otlp_json", "SpanRecord"),
    "MetricPoint": ("tools.otlp_json", "MetricPoint"),
    "NumberPoint": ("tools.otlp_json", "NumberPoint"),
    "HistogramPoint": ("tools.otlp_json", "HistogramPoint"),
    "merge_histograms": ("tools.otlp_json", "merge_histograms"),
}
"""Public name -> (module under this package, attribute)."""

__all__ = [
    "CheckpointRecord",
    "DivergencePolicy",
    "Finding",
    "HistogramPoint",
    "InstrumentOptions",
    "InstrumentedSaver",
    "LangGraphCheckpointInstrumentor",
    "MetricPoint",
    "Migrations",
    "NumberPoint",
    "OtlpJsonMetricExporter",
    "OtlpJsonSpanExporter",
    "ReplayFailed",
    "ReplayResult",
    "ResumeChecker",
    "ResumeReport",
    "SchemaMigrationError",
    "SpanRecord",
    "ToolKeySpanProcessor",
    "__version__",
    "aassert_replays",
    "acheck_resume",
    "add_tool_key_processor",
    "areplay_thread",
    "assert_replays",
    "astored_history",
    "check_resume",
    "diff",
    "divergences",
    "history_records",
    "instrument",
    "is_instrumented",
    "merge_histograms",
    "read_metrics",
    "read_spans",
    "record_tool_start",
    "replay_thread",
    "resume_log",
    "span_facts",
    "stored_history",
    "uninstrument",
    "write_span_files",
]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = target
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
