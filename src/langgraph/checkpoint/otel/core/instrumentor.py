"""Instrument every checkpointer LangGraph is given, without touching application code.

    from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
    LangGraphCheckpointInstrumentor().instrument(tracer_provider=tp, meter_provider=mp)
    graph = builder.compile(checkpointer=InMemorySaver())  # graph.checkpointer is instrumented

or, with no code at all, ``opentelemetry-instrument python app.py`` (entry point
``langgraph_checkpoint`` in the ``opentelemetry_instrumentor`` group), and on the LangGraph
Agent Server ``opentelemetry-instrument langgraph dev``.

It also adds a `tool_key_spans.ToolKeySpanProcessor` to the (SDK) tracer provider it instruments,
once per provider, so the tool spans of the official GenAI and OpenInference LangChain
instrumentations carry the tool call's idempotency key (it stays after ``uninstrument()``:
an SDK provider cannot remove a span processor).

While active, the instrumentor patches the two places where a checkpointer is handed to
LangGraph:

- ``langgraph.pregel.Pregel.__init__(checkpointer=...)``: every compiled graph is a `Pregel`
  (``StateGraph.compile``, ``create_react_agent``, ``create_agent``, the functional API), and so
  is every copy of one: the Agent Server attaches its own checkpointer (or the custom one of
  ``langgraph.json``) to a graph per run with ``graph.copy(update={"checkpointer": ...})``;
- ``langgraph.func.entrypoint(checkpointer=...)``, which keeps it as ``entrypoint.checkpointer``.

A checkpointer that is a `BaseCheckpointSaver` is replaced by an instrumented one; flags
(``True``/``False``/``None``) pass through unchanged, and so do savers that are instrumented or
delegate to an instrumented saver (the server's adapter around a custom checkpointer that
yields ``instrument(...)``), so nothing is ever wrapped twice. The same saver gets the same
wrapper; savers of one type share one telemetry (the server makes a saver per run). Graphs
built while the instrumentor was active keep their instrumented saver after
``uninstrument()``. ``instrument()`` again while active does nothing, quietly.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Collection
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry._logs import LoggerProvider
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import unwrap
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from wrapt import wrap_function_wrapper

from langgraph.checkpoint.otel._langgraph.graph_calls import CHECKPOINTER_OWNERS
from langgraph.checkpoint.otel.core.observer import CheckpointObserver
from langgraph.checkpoint.otel.core.telemetry import warn_if_export_blocks
from langgraph.checkpoint.otel.core.tool_key_spans import add_tool_key_processor
from langgraph.checkpoint.otel.options import InstrumentOptions

__all__ = ["LangGraphCheckpointInstrumentor"]

_instruments = ("langgraph >= 1.2",)

_logger = logging.getLogger(__name__)

Saver = BaseCheckpointSaver[Any]
Wrapped = Callable[..., Any]


class LangGraphCheckpointInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """An OpenTelemetry instrumentor for LangGraph checkpointers.

    ``instrument(tracer_provider=None, meter_provider=None, logger_provider=None, **options)``:
    `options` are `InstrumentOptions` fields, validated at this call (``TypeError`` for an
    unknown option, ``ValueError`` for a bad value). Without providers the global ones are used.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def instrument(self, **kwargs: Any) -> None:
        """Instrument, unless already instrumented (then quietly nothing: a graph module the
        Agent Server imports once per graph may call it each time)."""
        if self.is_instrumented_by_opentelemetry:
            return
        super().instrument(**kwargs)

    def _instrument(self, **kwargs: Any) -> None:
        tracer_provider: TracerProvider | None = kwargs.pop("tracer_provider", None)
        meter_provider: MeterProvider | None = kwargs.pop("meter_provider", None)
        logger_provider: LoggerProvider | None = kwargs.pop("logger_provider", None)
        options = InstrumentOptions.load(kwargs)  # a bad option fails here, not in a run
        if options.enabled:
            warn_if_export_blocks(tracer_provider)
            add_tool_key_processor(tracer_provider)  # once per provider; never raises
        replace = _SaverReplacer(tracer_provider, meter_provider, logger_provider, options)
        wrapper = _checkpointer_argument(replace)
        for module, owner in CHECKPOINTER_OWNERS:
            wrap_function_wrapper(module, f"{owner}.__init__", wrapper)

    def _uninstrument(self, **kwargs: Any) -> None:
        for module, owner in CHECKPOINTER_OWNERS:
            unwrap(f"{module}.{owner}", "__init__")


class _SaverReplacer:
    """Turns a checkpointer argument into an instrumented one (one wrapper per saver, one
    telemetry per saver type)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        logger_provider: LoggerProvider | None,
        options: InstrumentOptions,
    ) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._logger_provider = logger_provider
        self._options = options
        # id(inner) -> wrapper; the wrapper keeps its inner saver alive, so the id is stable
        # for as long as the entry exists.
        self._wrappers: weakref.WeakValueDictionary[int, Saver] = weakref.WeakValueDictionary()
        self._observers: dict[type[Any], CheckpointObserver] = {}
        self._lock = threading.Lock()
        self._failed: set[type[Any]] = set()

    def __call__(self, checkpointer: Any) -> Any:
        # Imported here: the package's __init__ may import this module.
        from langgraph.checkpoint.otel.core.wrapping import (
            observe,
            reaches_instrumented,
            uninstrument,
            wrap,
        )

        if not isinstance(checkpointer, BaseCheckpointSaver):
            return checkpointer
        with self._lock:
            cached = self._wrappers.get(id(checkpointer))
            if cached is not None and uninstrument(cached) is checkpointer:
                return cached
            kind = type(checkpointer)
            try:
                if reaches_instrumented(checkpointer):
                    return checkpointer
                observer = self._observers.get(kind)
                if observer is None:
                    observer = observe(
                        checkpointer,
                        self._options,
                        self._tracer_provider,
                        self._meter_provider,
                        self._logger_provider,
                    )
                    self._observers[kind] = observer
                wrapper = wrap(checkpointer, observer)
            except Exception:  # instrumentation must never break the application
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


def _checkpointer_argument(
    replace: _SaverReplacer,
) -> Callable[[Wrapped, Any, tuple[Any, ...], dict[str, Any]], Any]:
    """A wrapper of `Pregel.__init__` / `entrypoint.__init__` that replaces their
    ``checkpointer`` argument (keyword, or the entrypoint's first positional parameter)."""

    def init(wrapped: Wrapped, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if "checkpointer" in kwargs:
            kwargs = {**kwargs, "checkpointer": replace(kwargs["checkpointer"])}
        elif args:
            args = (replace(args[0]), *args[1:])
        return wrapped(*args, **kwargs)

    return init
