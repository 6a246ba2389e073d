"""OpenTelemetry for LangGraph checkpointers: spans, state hashes and metrics for every
checkpoint write, pending write and load.

    from langgraph.checkpoint.otel import instrument
    graph = builder.compile(checkpointer=instrument(SqliteSaver(conn)))

The names below are loaded on first use, so a process that only reads checkpoints (the
inspector) or imports a submodule (`names`) does not load the wrapper.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.core.instrument import (
        instrument,
        is_instrumented,
        uninstrument,
    )
    from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
    from langgraph.checkpoint.otel.core.saver import (
        InstrumentedSaver,
        astored_history,
        stored_history,
    )
    from langgraph.checkpoint.otel.core.telemetry import PACKAGE_VERSION as __version__
    from langgraph.checkpoint.otel.core.tool_spans import (
        ToolKeySpanProcessor,
        add_tool_key_processor,
        record_tool_start,
    )
    from langgraph.checkpoint.otel.migrations import Migrations, SchemaMigrationError
    from langgraph.checkpoint.otel.options import InstrumentOptions

_EXPORTS: dict[str, tuple[str, str]] = {
    "InstrumentOptions": ("options", "InstrumentOptions"),
    "InstrumentedSaver": ("core.saver", "InstrumentedSaver"),
    "LangGraphCheckpointInstrumentor": ("core.instrumentor", "LangGraphCheckpointInstrumentor"),
    "Migrations": ("migrations", "Migrations"),
    "SchemaMigrationError": ("migrations", "SchemaMigrationError"),
    "ToolKeySpanProcessor": ("core.tool_spans", "ToolKeySpanProcessor"),
    "__version__": ("core.telemetry", "PACKAGE_VERSION"),
    "add_tool_key_processor": ("core.tool_spans", "add_tool_key_processor"),
    "astored_history": ("core.saver", "astored_history"),
    "instrument": ("core.instrument", "instrument"),
    "is_instrumented": ("core.instrument", "is_instrumented"),
    "record_tool_start": ("core.tool_spans", "record_tool_start"),
    "stored_history": ("core.saver", "stored_history"),
    "uninstrument": ("core.instrument", "uninstrument"),
}
"""Public name -> (module under this package, attribute)."""

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
