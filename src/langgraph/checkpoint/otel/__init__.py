"""OpenTelemetry for LangGraph checkpointers: spans, state hashes and metrics for every
checkpoint write, pending write and load.

    from langgraph.checkpoint.otel import instrument
    graph = builder.compile(checkpointer=instrument(SqliteSaver(conn)))
"""

from __future__ import annotations

from langgraph.checkpoint.otel.core.instrument import instrument, is_instrumented, uninstrument
from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
from langgraph.checkpoint.otel.core.saver import InstrumentedSaver, astored_history, stored_history
from langgraph.checkpoint.otel.core.telemetry import PACKAGE_VERSION as __version__
from langgraph.checkpoint.otel.core.tool_spans import (
    ToolKeySpanProcessor,
    add_tool_key_processor,
    record_tool_start,
)
from langgraph.checkpoint.otel.migrations import Migrations, SchemaMigrationError
from langgraph.checkpoint.otel.options import InstrumentOptions

__all__ = [
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
