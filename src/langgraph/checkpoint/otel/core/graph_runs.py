"""A root graph's run span, opened when the graph is called, before LangChain's callbacks start.

Where no span is current when a graph whose checkpointer reaches an instrumented saver is
called (`stream`, `astream`, so `invoke`, `ainvoke`), the library opens the run's span then
(see `_langgraph.graph_calls`) and keeps it current around the graph's steps: every peer
instrumentation's span of the graph (OpenInference's, which is never current; the official
GenAI one's, made current only after) gets it as parent, and the run is one trace whatever mix
of peers is loaded, in whatever order. The run's loop adopts the span when it enters
(`Telemetry.begin_run`) and sets the outcome on it.

Under ``resume_trace = "continue"``, a call that resumes the thread's latest checkpoint (input
None or a `Command`, no checkpoint id in the config) first reads that checkpoint through the
inner saver, and opens the run span as a child of the put span that wrote it (its trace
context is stored with the checkpoint): the resumed run continues the writer's trace.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.types import Command
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph import graph_calls
from langgraph.checkpoint.otel._langgraph.savers import delegates
from langgraph.checkpoint.otel.analysis.carrier import parse_carrier
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.core.observer import CheckpointObserver
from langgraph.checkpoint.otel.core.runs import run_attributes
from langgraph.checkpoint.otel.core.telemetry import OpenedRun, Telemetry, opened_run, remote_parent


class _Call:
    """A graph call whose run span the library opened (a `graph_calls.GraphCall`)."""

    __slots__ = ("_opened", "_telemetry")

    def __init__(self, telemetry: Telemetry, opened: OpenedRun) -> None:
        self._telemetry = telemetry
        self._opened = opened

    def attach(self) -> object:
        return otel_context.attach(self._opened.context(otel_context.get_current()))

    def detach(self, token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]  # (logs, never raises)

    def end(self, error: BaseException | None) -> None:
        self._telemetry.guard("end graph call", self._opened.release, _failure(error))


class _PendingRun:
    """A root graph call about to start, through an instrumented saver."""

    __slots__ = ("_base", "_config", "_continues", "_graph_name", "_inner", "_telemetry")

    def __init__(
        self, saver: Any, graph: Any, graph_input: Any, config: RunnableConfig, base: Context
    ) -> None:
        self._base = base
        observer = saver.observer
        self._telemetry: Telemetry = observer.telemetry
        self._inner: BaseCheckpointSaver[Any] = saver.inner
        self._config = config
        name = getattr(graph, "name", None)
        self._graph_name = name if isinstance(name, str) and name else None
        configurable = config.get("configurable") or {}
        self._continues = (
            observer.options.resume_trace == "continue"
            and (graph_input is None or isinstance(graph_input, Command))
            and configurable.get("thread_id") is not None
            and not configurable.get("checkpoint_id")
        )

    def start(self) -> _Call | None:
        loaded = None
        if self._continues:
            loaded = self._telemetry.guard("resume trace read", self._inner.get_tuple, self._config)
        return self._telemetry.guard("open run span", self._open, loaded)

    async def astart(self) -> _Call | None:
        loaded = None
        if self._continues:
            try:
                loaded = await self._inner.aget_tuple(self._config)
            except Exception as exc:
                self._telemetry.fault("resume trace read", exc)
        return self._telemetry.guard("open run span", self._open, loaded)

    def _open(self, loaded: CheckpointTuple | None) -> _Call:
        attributes = run_attributes(self._config, self._graph_name)
        parent = self._base
        stored = read_stored_telemetry(loaded.metadata) if loaded is not None else None
        writer = parse_carrier(stored.carrier) if stored is not None else None
        if writer is not None:
            parent = remote_parent(writer)
            attributes[names.RUN_RESUME_TRACE] = "continue"
        run_span = self._telemetry.start_run_span(attributes, parent)
        return _Call(self._telemetry, OpenedRun(self._telemetry, run_span, self._base))


def _pending_run(graph: Any, graph_input: Any, config: Any) -> _PendingRun | None:
    """The hook of `graph_calls`: a root graph called where no span is current, whose
    checkpointer is, or delegates to, an instrumented saver that reports."""
    base = otel_context.get_current()
    earlier = opened_run()
    if earlier is not None and earlier.ended:
        # an ended run's context left current by a peer that restores, after a stream, the
        # context it saw inside the stream's first step: the run starts where that one did
        base = earlier.base
    elif trace.get_current_span(base).get_span_context().is_valid:
        return None  # the run joins the current span (an app's, a peer's, its parent graph's)
    config = config if isinstance(config, dict) else {}
    configurable = config.get("configurable") or {}
    if configurable.get("checkpoint_ns"):
        return None  # a subgraph
    saver = _instrumented(graph_calls.checkpointer_of(graph, config))
    if saver is None or not saver.observer.active() or Telemetry.suppressed():
        return None
    return _PendingRun(saver, graph, graph_input, config, base)


def _instrumented(checkpointer: Any) -> Any:
    """The instrumented saver `checkpointer` is or delegates to, if any."""
    if not isinstance(checkpointer, BaseCheckpointSaver):
        return None
    for saver in (checkpointer, *delegates(checkpointer)):
        if _is_instrumented(saver):
            return saver
    return None


def _is_instrumented(saver: Any) -> bool:
    return isinstance(getattr(saver, "observer", None), CheckpointObserver) and hasattr(
        saver, "inner"
    )


def _failure(error: BaseException | None) -> BaseException | None:
    """The error a stream ended with, as the run's failure (a closed stream is no failure)."""
    return None if error is None or isinstance(error, GeneratorExit) else error


def install_graph_call_hook() -> None:
    """Open root runs' spans when their graph is called (idempotent)."""
    graph_calls.install()
    graph_calls.set_hook(_pending_run)
