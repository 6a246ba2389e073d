"""OpenTelemetry for LangGraph checkpointers: spans, state hashes and metrics for every
checkpoint write, pending write and load.

    from langgraph.checkpoint.otel import instrument
    graph = builder.compile(checkpointer=instrument(SqliteSaver(conn)))

The public API of this module (`__all__`) is what a user of the wrapper needs: `instrument` and
its options, the Instrumentor, schema migrations, the tool-key span processor and the stored
history readers. The other public packages, by audience:

- `langgraph.checkpoint.otel.analysis`: the offline analysis of stored checkpoints and exported
  spans (records, divergences, diffs, the resume log);
- `langgraph.checkpoint.otel.testing`: the resume harness (and its ``resume_checker`` pytest
  fixture) and recorded threads replayed against the current code;
- `langgraph.checkpoint.otel.export`: the span and metric files (OTLP/JSON lines);
- `langgraph.checkpoint.otel.inspector`: the `langgraph-otel` command;
- `langgraph.checkpoint.otel.names`: the telemetry names (see docs/telemetry.md).

Every other module is internal and may change in any release. The names this module exported
before 0.2 from those packages still resolve here, with a `DeprecationWarning` naming their new
home, until the next minor version (CHANGELOG).

The names are loaded on first use, so a process that only reads checkpoints (the inspector)
or imports a submodule (`names`) does not load the wrapper.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.otel.lazy import lazy_names

if TYPE_CHECKING:
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

_EXPORTS: dict[str, tuple[str, str]] = {
    "DivergencePolicy": ("options", "DivergencePolicy"),
    "InstrumentOptions": ("options", "InstrumentOptions"),
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
}
"""Public name -> (module under this package, attribute)."""

_MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "CheckpointRecord",
            "Finding",
            "diff",
            "divergences",
            "history_records",
            "resume_log",
            "span_facts",
        ),
        "analysis",
    ),
    **dict.fromkeys(
        (
            "ReplayFailed",
            "ReplayResult",
            "ResumeChecker",
            "ResumeReport",
            "aassert_replays",
            "acheck_resume",
            "areplay_thread",
            "assert_replays",
            "check_resume",
            "replay_thread",
        ),
        "testing",
    ),
    **dict.fromkeys(
        (
            "HistogramPoint",
            "MetricPoint",
            "NumberPoint",
            "OtlpJsonMetricExporter",
            "OtlpJsonSpanExporter",
            "SpanRecord",
            "merge_histograms",
            "read_metrics",
            "read_spans",
            "write_span_files",
        ),
        "export",
    ),
}
"""Names this module exported before 0.2 -> the public package that exports them now (still
resolved here, with a `DeprecationWarning`, until the next minor version)."""

__all__ = [
    "DivergencePolicy",
    "InstrumentOptions",
    "InstrumentedSaver",
    "LangGraphCheckpointInstrumentor",
    "Migrations",
    "SchemaMigrationError",
    "ToolKeySpanProcessor",
    "__version__",
    "add_tool_key_processor",
    "astored_history",
    "instrument",
    "is_instrumented",
    "record_tool_start",
    "stored_history",
    "uninstrument",
]


_lazy_getattr, __dir__ = lazy_names(__name__, _EXPORTS, __all__)


def __getattr__(name: str) -> Any:
    package = _MOVED.get(name)
    if package is None:
        return _lazy_getattr(name)
    home = f"{__name__}.{package}"
    warnings.warn(
        f"{__name__}.{name} is deprecated and will be removed in the next minor version: "
        f"import it from {home} ({home}.{name})",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(home), name)
