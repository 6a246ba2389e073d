"""OpenTelemetry for LangGraph checkpointers: spans, state hashes and metrics for every
checkpoint write, pending write and load.

    from langgraph.checkpoint.otel import instrument
    graph = builder.compile(checkpointer=instrument(SqliteSaver(conn)))
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from langgraph.checkpoint.otel.hashing import serde_fallback
from langgraph.checkpoint.otel.instrumentor import LangGraphCheckpointInstrumentor
from langgraph.checkpoint.otel.observer import CheckpointObserver
from langgraph.checkpoint.otel.options import InstrumentOptions
from langgraph.checkpoint.otel.saver import (
    InstrumentedSaver,
    astored_history,
    stored_history,
    wrapper_type,
)
from langgraph.checkpoint.otel.telemetry import PACKAGE_VERSION as __version__

__all__ = [
    "InstrumentOptions",
    "InstrumentedSaver",
    "LangGraphCheckpointInstrumentor",
    "__version__",
    "astored_history",
    "instrument",
    "is_instrumented",
    "stored_history",
    "uninstrument",
]


def instrument(
    saver: BaseCheckpointSaver[Any],
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    **options: Any,
) -> BaseCheckpointSaver[Any]:
    """Return a saver that persists through `saver` and emits OpenTelemetry telemetry.

    With no providers it uses the global ones. `options` are `InstrumentOptions` fields (also
    read from ``LANGGRAPH_OTEL_*`` variables). An already instrumented saver is returned as is.

    Raises `TypeError` for a non-saver or an unknown option, `ValueError` for a bad value.
    """
    if isinstance(saver, InstrumentedSaver):
        return saver
    if not isinstance(saver, BaseCheckpointSaver):
        raise TypeError(
            f"instrument() needs a LangGraph BaseCheckpointSaver, got {type(saver).__qualname__}"
        )
    resolved = InstrumentOptions.load(options)
    observer = CheckpointObserver(
        type(saver).__name__,
        resolved,
        tracer_provider,
        meter_provider,
        fallback_encoder=serde_fallback(saver.serde),
    )
    return wrapper_type(saver)(saver, observer)


def uninstrument(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """The saver that `instrument()` wrapped (or `saver` itself if it is not instrumented)."""
    return saver.inner if isinstance(saver, InstrumentedSaver) else saver


def is_instrumented(saver: object) -> bool:
    """Whether `saver` is a wrapper returned by `instrument()`."""
    return isinstance(saver, InstrumentedSaver)
