"""Instrument every checkpointer LangGraph is given, without touching application code.

    from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
    LangGraphCheckpointInstrumentor().instrument(tracer_provider=tp, meter_provider=mp)
    graph = builder.compile(checkpointer=InMemorySaver())  # graph.checkpointer is instrumented

or, with no code at all, ``opentelemetry-instrument python app.py`` (entry point
``langgraph_checkpoint`` in the ``opentelemetry_instrumentor`` group).

It also adds a `tool_spans.ToolKeySpanProcessor` to the (SDK) tracer provider it instruments,
once per provider, so the tool spans of the official GenAI and OpenInference LangChain
instrumentations carry the tool call's idempotency key (it stays after ``uninstrument()``:
an SDK provider cannot remove a span processor).

While active, the instrumentor patches the two places where a LangGraph application hands a
checkpointer to LangGraph:

- ``langgraph.graph.state.StateGraph.compile(checkpointer=...)`` (which also covers
  ``langgraph.prebuilt.create_react_agent`` and anything else that builds a ``StateGraph``);
- ``langgraph.func.entrypoint(checkpointer=...)`` (the functional API stores it in
  ``entrypoint.__init__`` and builds its ``Pregel`` from it on decoration).

A checkpointer that is a `BaseCheckpointSaver` is replaced by
``instrument(checkpointer, tracer_provider=..., meter_provider=..., **options)``; flags
(``True``/``False``/``None``) and savers that are already instrumented pass through unchanged,
so nothing is ever wrapped twice. The same saver given to several graphs gets the same wrapper.
Graphs compiled while the instrumentor was active keep their instrumented saver after
``uninstrument()``; graphs compiled afterwards get the saver they are given.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Collection, Mapping
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from wrapt import wrap_function_wrapper

from langgraph.checkpoint.otel.core.telemetry import warn_if_export_blocks
from langgraph.checkpoint.otel.core.tool_spans import add_tool_key_processor
from langgraph.checkpoint.otel.options import InstrumentOptions

__all__ = ["LangGraphCheckpointInstrumentor"]

_instruments = ("langgraph >= 1.2",)

_STATE_MODULE = "langgraph.graph.state"
_FUNC_MODULE = "langgraph.func"

_logger = logging.getLogger(__name__)

Saver = BaseCheckpointSaver[Any]
Wrapped = Callable[..., Any]


class LangGraphCheckpointInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """An OpenTelemetry instrumentor for LangGraph checkpointers.

    ``instrument(tracer_provider=None, meter_provider=None, **options)``: `options` are
    `InstrumentOptions` fields, validated at this call (``TypeError`` for an unknown option,
    ``ValueError`` for a bad value). Without providers the global ones are used.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        tracer_provider: TracerProvider | None = kwargs.pop("tracer_provider", None)
        meter_provider: MeterProvider | None = kwargs.pop("meter_provider", None)
        if InstrumentOptions.load(kwargs).enabled:  # a bad option fails here, not in a run
            warn_if_export_blocks(tracer_provider)
            add_tool_key_processor(tracer_provider)  # once per provider; never raises
        replace = _SaverReplacer(tracer_provider, meter_provider, dict(kwargs))
        wrap_function_wrapper(_STATE_MODULE, "StateGraph.compile", _compile_wrapper(replace))
        wrap_function_wrapper(_FUNC_MODULE, "entrypoint.__init__", _entrypoint_wrapper(replace))

    def _uninstrument(self, **kwargs: Any) -> None:
        unwrap(f"{_STATE_MODULE}.StateGraph", "compile")
        unwrap(f"{_FUNC_MODULE}.entrypoint", "__init__")


class _SaverReplacer:
    """Turns a checkpointer argument into an instrumented one (one wrapper per saver)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        options: Mapping[str, Any],
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._options = dict(options)
        # id(inner) -> wrapper; the wrapper keeps its inner saver alive, so the id is stable
        # for as long as the entry exists.
        self._wrappers: weakref.WeakValueDictionary[int, Saver] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()
        self._failed: set[type[Any]] = set()

    def __call__(self, checkpointer: Any) -> Any:
        # Imported here: the package's __init__ may import this module.
        from langgraph.checkpoint.otel.core.instrument import (
            instrument,
            is_instrumented,
            uninstrument,
        )

        if not isinstance(checkpointer, BaseCheckpointSaver) or is_instrumented(checkpointer):
            return checkpointer
        with self._lock:
            cached = self._wrappers.get(id(checkpointer))
            if cached is not None and uninstrument(cached) is checkpointer:
                return cached
            try:
                wrapper = instrument(
                    checkpointer,
                    tracer_provider=self._tracer_provider,
                    meter_provider=self._meter_provider,
                    **self._options,
                )
            except Exception:  # instrumentation must never break the application
                kind = type(checkpointer)
                if kind not in self._failed:
                    self._failed.add(kind)
                    _logger.warning(
                        "could not instrument checkpointer %s; using it uninstrumented",
                        kind.__qualname__,
                        exc_info=True,
                    )
                return checkpointer
            self._wrappers[id(checkpointer)] = wrapper
            return wrapper


def _replace_checkpointer(
    replace: _SaverReplacer, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Replace the ``checkpointer`` argument (first positional parameter or keyword)."""
    if "checkpointer" in kwargs:
        kwargs = {**kwargs, "checkpointer": replace(kwargs["checkpointer"])}
    elif args:
        args = (replace(args[0]), *args[1:])
    return args, kwargs


def _compile_wrapper(
    replace: _SaverReplacer,
) -> Callable[[Wrapped, Any, tuple[Any, ...], dict[str, Any]], Any]:
    def compile_(
        wrapped: Wrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        args, kwargs = _replace_checkpointer(replace, args, kwargs)
        return wrapped(*args, **kwargs)

    return compile_


def _entrypoint_wrapper(
    replace: _SaverReplacer,
) -> Callable[[Wrapped, Any, tuple[Any, ...], dict[str, Any]], None]:
    def init(
        wrapped: Wrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        args, kwargs = _replace_checkpointer(replace, args, kwargs)
        wrapped(*args, **kwargs)

    return init
