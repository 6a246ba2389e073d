"""`instrument()`: wrap a saver; `uninstrument()` and `is_instrumented()`."""

from __future__ import annotations

import contextlib
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider, TracerProvider

from langgraph.checkpoint.otel._langgraph.savers import delegates
from langgraph.checkpoint.otel.analysis.encoding import serde_fallback
from langgraph.checkpoint.otel.core.observer import CheckpointObserver
from langgraph.checkpoint.otel.core.saver import InstrumentedSaver, wrapper_type
from langgraph.checkpoint.otel.core.telemetry import warn_if_export_blocks
from langgraph.checkpoint.otel.options import InstrumentOptions


def instrument(
    saver: BaseCheckpointSaver[Any],
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    **options: Any,
) -> BaseCheckpointSaver[Any]:
    """Return a saver that persists through `saver` and emits OpenTelemetry telemetry.

    With no providers it uses the global ones (the logger provider carries the opt-in agent
    lifecycle events, see `core.agent_events`). `options` are `InstrumentOptions` fields (also
    read from ``LANGGRAPH_OTEL_*`` variables). An already instrumented saver is returned as is.

    Raises `TypeError` for a non-saver or an unknown option, `ValueError` for a bad value. A
    provider that raises (in ``get_tracer``, ``get_meter`` or creating an instrument) does not
    fail the call: the fault is logged once and the saver returned only delegates.
    """
    if isinstance(saver, InstrumentedSaver):
        return saver
    if not isinstance(saver, BaseCheckpointSaver):
        raise TypeError(_not_a_saver(saver))
    resolved = InstrumentOptions.load(options)
    if resolved.enabled:
        warn_if_export_blocks(tracer_provider)  # never raises
    return wrap(saver, observe(saver, resolved, tracer_provider, meter_provider, logger_provider))


def observe(
    saver: BaseCheckpointSaver[Any],
    options: InstrumentOptions,
    tracer_provider: TracerProvider | None,
    meter_provider: MeterProvider | None,
    logger_provider: LoggerProvider | None = None,
) -> CheckpointObserver:
    """The telemetry of savers like `saver` (its type names them), shareable by several.

    A provider that raises while the tracer and instruments are made does not fail: the fault
    is logged once and the observer only delegates.
    """
    name = type(saver).__name__
    try:
        return CheckpointObserver(
            name,
            options,
            tracer_provider,
            meter_provider,
            logger_provider,
            fallback_encoder=serde_fallback(saver.serde),
        )
    except Exception as exc:
        observer = CheckpointObserver(
            name,
            options.model_copy(update={"enabled": False}),
            NoOpTracerProvider(),
            NoOpMeterProvider(),
        )
        observer.telemetry.fault("instrument() setting up telemetry", exc)
        return observer


def wrap(saver: BaseCheckpointSaver[Any], observer: CheckpointObserver) -> InstrumentedSaver:
    """`saver` instrumented, reporting through `observer`."""
    return wrapper_type(saver)(saver, observer)


def _not_a_saver(value: object) -> str:
    """The TypeError message for an `instrument()` argument that is no saver: what to do."""
    prefix = "instrument() needs a LangGraph BaseCheckpointSaver instance"
    if isinstance(value, type) and issubclass(value, BaseCheckpointSaver):
        cls = value.__name__
        return f"{prefix}, got the class {cls}: did you mean {cls}()?"
    if isinstance(
        value, contextlib.AbstractAsyncContextManager | contextlib.AbstractContextManager
    ):
        func = getattr(value, "func", None)
        made_by = getattr(func, "__qualname__", None) or type(value).__qualname__
        opener = (
            "async with" if isinstance(value, contextlib.AbstractAsyncContextManager) else "with"
        )
        return (
            f"{prefix}, got a context manager ({made_by}(...)) that makes one: open it first: "
            f"`{opener} {made_by}(...) as saver: instrument(saver)`"
        )
    return f"{prefix}, got {type(value).__qualname__}"


def uninstrument(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """The saver that `instrument()` wrapped (or `saver` itself if it is not instrumented)."""
    return saver.inner if isinstance(saver, InstrumentedSaver) else saver


def is_instrumented(saver: object) -> bool:
    """Whether `saver` is a wrapper returned by `instrument()`."""
    return isinstance(saver, InstrumentedSaver)


def reaches_instrumented(saver: object) -> bool:
    """Whether `saver` is instrumented or delegates to an instrumented saver (the Agent
    Server's adapter around a custom checkpointer, a user's cache or retry layer)."""
    return is_instrumented(saver) or any(is_instrumented(d) for d in delegates(saver))
