"""Spans, events and metrics: with `instruments` (the metric instruments, created from a meter),
the only module that talks to OpenTelemetry.

Every call into OpenTelemetry goes through `Telemetry.guard`, so a raising span processor,
exporter or meter is logged once and never reaches the graph. Exceptions raised by the code
inside an `operation` (the inner saver) propagate unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import Token
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.context import Context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.trace import (
    Span,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TracerProvider,
    TraceState,
)
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.carrier import TraceContext
from langgraph.checkpoint.otel.core.instruments import Instruments
from langgraph.checkpoint.otel.core.measurements import NO_EXEMPLAR, Measurements
from langgraph.checkpoint.otel.core.peers import names_graph_runs

logger = logging.getLogger("langgraph.checkpoint.otel")

T = TypeVar("T")
P = ParamSpec("P")
Attributes = Mapping[str, AttributeValue]

try:
    PACKAGE_VERSION = version("langgraph-checkpoint-otel")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    PACKAGE_VERSION = "0+unknown"


_FAULTS_LOGGED: set[tuple[str, type[BaseException]]] = set()
_FAULTS_LOCK = threading.Lock()


def log_fault(where: str, exc: BaseException) -> None:
    """Log an instrumentation fault once per process and (where, exception type).

    Only the place and the exception's type are logged: an exception's message (and the
    values a traceback's rendering can show) may hold application data, so the message is
    never logged, and the traceback's frames (files, lines, functions) only at DEBUG.
    """
    key = (where, type(exc))
    with _FAULTS_LOCK:
        if key in _FAULTS_LOGGED:
            return
        _FAULTS_LOGGED.add(key)
    kind = type(exc).__qualname__
    logger.warning(
        "langgraph-checkpoint-otel: telemetry fault in %s (%s); the checkpointer call "
        "continues and further faults of this kind are not logged",
        where,
        kind,
    )
    if logger.isEnabledFor(logging.DEBUG):
        # frames as file, line and function only: a source line can quote application data
        frames = "\n".join(
            f"  {frame.filename}:{frame.lineno} in {frame.name}"
            for frame in traceback.extract_tb(exc.__traceback__)
        )
        logger.debug(
            "langgraph-checkpoint-otel: where the %s fault in %s was raised:\n%s",
            kind,
            where,
            frames,
        )


_EXPORT_WARNED: set[tuple[str, str]] = set()
_EXPORT_WARNED_LOCK = threading.Lock()
_LOCAL_EXPORTER_MODULES = ("console", "in_memory", "inmemory", "memory")


def warn_if_export_blocks(tracer_provider: object | None) -> None:
    """Warn once per process when a `SimpleSpanProcessor` of `tracer_provider` (or of the
    global one) hands spans to a network exporter: the SDK exports synchronously there, so
    each span export blocks the graph step that ended the span. Never raises."""
    try:
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        for processor, exporter in _sync_network_exports(provider):
            key = (type(processor).__qualname__, type(exporter).__qualname__)
            with _EXPORT_WARNED_LOCK:
                if key in _EXPORT_WARNED:
                    continue
                _EXPORT_WARNED.add(key)
            logger.warning(
                "langgraph-checkpoint-otel: %s exports spans through %s (%s) synchronously: "
                "each span export then blocks the graph step that ends the span (up to the "
                "exporter's timeout when the endpoint is slow or down); use BatchSpanProcessor",
                key[0],
                key[1],
                type(exporter).__module__,
            )
    except Exception:  # a provider this cannot read is no reason to fail instrument()
        return


def _sync_network_exports(provider: object) -> list[tuple[object, object]]:
    """(processor, exporter) pairs of `provider`'s SDK SimpleSpanProcessors with a network
    exporter, also inside the SDK's multi span processors. Read defensively, by class name
    and module: the library imports no SDK module."""
    found: list[tuple[object, object]] = []
    pending: list[object] = [getattr(provider, "_active_span_processor", None)]
    seen = 0
    while pending and seen < 100:
        processor = pending.pop()
        seen += 1
        children = getattr(processor, "_span_processors", None)
        if isinstance(children, tuple | list):
            pending.extend(children)
        if not _is_sdk_class(processor, "SimpleSpanProcessor"):
            continue
        exporter = getattr(processor, "span_exporter", None)
        module = str(getattr(type(exporter), "__module__", ""))
        if module.startswith("opentelemetry.exporter.") and not any(
            local in module.lower() for local in _LOCAL_EXPORTER_MODULES
        ):
            found.append((processor, exporter))
    return found


def _is_sdk_class(value: object, name: str) -> bool:
    """Whether `value` is an instance of the OpenTelemetry SDK class `name` (or a subclass)."""
    return any(
        cls.__name__ == name and cls.__module__.startswith("opentelemetry.sdk.")
        for cls in type(value).__mro__
    )


class Operation:
    """One instrumented call, used as a context manager around the inner saver's call.

    On entry: starts a span (made current when `activate`; never across generator yields).
    On exit: records `operation.duration`, marks the span ERROR with `error.type` when the
    block raised, ends the span, and lets that very exception propagate.

    `operation.duration` is the inner saver's call alone where the caller marks it with
    `inner()`; the rest of the span's time is the library's own, reported on the span as
    `langgraph.instrumentation.duration`.
    """

    __slots__ = (
        "_activate",
        "_attributes",
        "_inner",
        "_pending",
        "_recording",
        "_run",
        "_span_name",
        "_started",
        "_token",
        "name",
        "span",
        "telemetry",
    )

    def __init__(
        self,
        telemetry: Telemetry,
        name: str,
        span_name: str | None,
        attributes: Attributes,
        activate: bool = True,
        run: RunTrace | None = None,
    ) -> None:
        self.telemetry = telemetry
        self.name = name
        self.span: Span | None = None
        self._span_name = span_name
        self._attributes = attributes
        self._activate = activate
        self._run = run
        self._token: Token[Context] | None = None
        self._started = 0.0
        self._inner: float | None = None
        self._recording = False
        self._pending: dict[str, AttributeValue] = {}
        """Attributes set during the call, given to the span in one call when it ends."""

    def __enter__(self) -> Operation:
        telemetry = self.telemetry
        self._started = time.perf_counter()
        if self._span_name is None:
            return self  # timed only
        try:
            self.span = telemetry.tracer.start_span(
                self._span_name,
                context=self._run.parent() if self._run is not None else None,
                kind=SpanKind.INTERNAL,
                attributes={
                    **self._attributes,
                    names.SAVER: telemetry.saver_name,
                    names.OPERATION: self.name,
                },
                record_exception=False,
                set_status_on_exception=False,
            )
            self._recording = self.span.is_recording()
            if self._activate:
                self._token = otel_context.attach(trace.set_span_in_context(self.span))
        except Exception as exc:
            telemetry.fault("start span", exc)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        if self._token is not None:
            self.telemetry.guard("detach context", otel_context.detach, self._token)
        # a consumer closing a listing early (GeneratorExit) is not an error
        error = None if exc_type is None or exc_type is GeneratorExit else exc
        self.telemetry.finish(self, self._started, error)

    @contextmanager
    def inner(self) -> Iterator[None]:
        """Time the inner saver's call (the block): that is the recorded duration."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.inner_since(started)

    def inner_since(self, started: float) -> None:
        """Count the time from `started` (a `time.perf_counter()` value) as the inner call's."""
        self._inner = (self._inner or 0.0) + time.perf_counter() - started

    @property
    def pending(self) -> Mapping[str, AttributeValue]:
        """Attributes set since the span started, not yet given to it."""
        return self._pending

    @property
    def inner_seconds(self) -> float | None:
        """The inner call's time so far, where marked with `inner()`."""
        return self._inner

    @property
    def recording(self) -> bool:
        """Whether attributes set on this operation's span are kept."""
        return self._recording

    def set(self, attributes: Mapping[str, AttributeValue]) -> None:
        """Set span attributes (no-op when not recording; given to the span as it ends)."""
        if self._recording:
            self._pending.update(attributes)

    def event(self, name: str, attributes: Attributes) -> None:
        """Add a span event (no-op when not recording)."""
        if self.recording:
            assert self.span is not None
            self.telemetry.guard("add event", self.span.add_event, name, attributes)

    def rename(self, span_name: str, operation: str) -> None:
        """Give the span another name and operation (a load that turns out to be a resume)."""
        self.name = operation
        if self.recording:
            assert self.span is not None
            self.telemetry.guard("rename span", self.span.update_name, span_name)
            self.set({names.OPERATION: operation})

    def link(self, context: TraceContext, attributes: Attributes) -> None:
        """Add a span link to a span of another trace (possibly of another process)."""
        if self.recording:
            assert self.span is not None
            self.telemetry.guard("add link", self.span.add_link, _span_context(context), attributes)

    def trace_context(self) -> TraceContext | None:
        """This operation's W3C trace context, when its span context is valid."""
        if self.span is None:
            return None
        ctx = self.span.get_span_context()
        if not ctx.is_valid:
            return None
        return TraceContext(
            ctx.trace_id, ctx.span_id, int(ctx.trace_flags), ctx.trace_state.to_header()
        )


class RunTrace:
    """The trace of one graph run: the span current when it started, or the library's run span
    (`invoke_workflow {graph name}`), opened when the graph was called (`OpenedRun`) or when
    its loop entered because no span was current.

    Spans of the run started where no span is current (the pending writes of tasks that
    LangGraph saves from worker threads, every span of an async run the library opened) get
    the run's context as parent.
    """

    __slots__ = ("context", "opened", "own", "restore")

    def __init__(
        self,
        context: Context,
        own: RunSpan | None = None,
        restore: Context | None = None,
        opened: OpenedRun | None = None,
    ) -> None:
        self.context = context
        self.own = own
        """The library's run span, when the run's span is the library's."""
        self.restore = restore
        """The context to make current again when the run ends (where the run span was made
        current: sync runs)."""
        self.opened = opened
        """The span opened when the graph was called, which the run adopted (it ends when both
        the call and the run are done)."""

    @property
    def span(self) -> Span | None:
        """The library's run span (None when the run's span is the app's or a peer's)."""
        return self.own.span if self.own is not None else None

    def parent(self) -> Context | None:
        """The run's context where no span is current, else None (the current span is)."""
        if trace.get_current_span().get_span_context().is_valid:
            return None
        return self.context

    def set(self, attributes: Attributes) -> None:
        """Set attributes on the library's run span (no-op when the app's span is the run's)."""
        if self.span is not None and self.span.is_recording():
            self.span.set_attributes(attributes)


class RunSpan:
    """A run span the library opened, with what its duration is recorded with (None where a
    peer instrumentation counts the run)."""

    __slots__ = ("measured", "span", "started")

    def __init__(self, span: Span, measured: Mapping[str, AttributeValue] | None) -> None:
        self.span = span
        self.measured = measured
        self.started = time.perf_counter()


_OPENED_RUN = otel_context.create_key("langgraph-checkpoint-otel.opened-run")


class OpenedRun:
    """The library's run span, opened when a graph was called (before LangChain's callbacks,
    see `_langgraph.graph_calls`) and current around the graph's steps; the run whose loop
    enters under it adopts it (`claim`). It ends when the call and the adopting run have both
    released it, so the run's outcome is on it whichever ends last."""

    __slots__ = ("_holders", "_lock", "_telemetry", "base", "claimed", "run_span")

    def __init__(self, telemetry: Telemetry, run_span: RunSpan, base: Context) -> None:
        self._telemetry = telemetry
        self.run_span = run_span
        self.base = base
        """The context the graph was called in (without the run span)."""
        self.claimed = False
        self._holders = 1
        self._lock = threading.Lock()

    def context(self, base: Context) -> Context:
        """`base` with the run span current, and this record (made current around the graph's
        steps)."""
        return otel_context.set_value(
            _OPENED_RUN, self, trace.set_span_in_context(self.run_span.span, base)
        )

    @property
    def ended(self) -> bool:
        """Whether the span has ended (its call and its run are done)."""
        return self._holders == 0

    def claim(self) -> bool:
        """Adopt the span for the run whose loop is entering (once)."""
        with self._lock:
            if self.claimed or self._holders == 0:
                return False
            self.claimed = True
            self._holders += 1
            return True

    def release(self, error: BaseException | None = None) -> None:
        """The call or the run is done with the span; the last one ends it."""
        with self._lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            self._telemetry.end_run_span(self.run_span, error)


def opened_run() -> OpenedRun | None:
    """The run span a graph call opened, in the current context (None outside one)."""
    value = otel_context.get_value(_OPENED_RUN)
    return value if isinstance(value, OpenedRun) else None


def remote_parent(context: TraceContext) -> Context:
    """A context whose (remote) parent span is the one `context` names."""
    return trace.set_span_in_context(trace.NonRecordingSpan(_span_context(context)))


def _span_context(context: TraceContext) -> trace.SpanContext:
    state = TraceState.from_header([context.tracestate]) if context.tracestate else TraceState()
    return trace.SpanContext(
        context.trace_id,
        context.span_id,
        is_remote=True,
        trace_flags=TraceFlags(context.flags),
        trace_state=state,
    )


class Telemetry:
    """Tracer, instruments (`instruments.Instruments`) and fault handling for one instrumented
    saver."""

    def __init__(
        self,
        saver_name: str,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.saver_name = saver_name
        self._saver_attributes = {names.SAVER: saver_name}
        self._duration_attributes: dict[str, dict[str, AttributeValue]] = {}
        """The duration metric's attributes by operation (shared, never changed)."""
        self._meter_provider = meter_provider
        self._tracer_provider = tracer_provider
        self._live = False
        self.measurements = Measurements(self.fault)
        """Held while this saver's runs are in progress (see `measurements`)."""
        self.tracer = trace.get_tracer(
            names.SCOPE, PACKAGE_VERSION, tracer_provider=tracer_provider
        )
        self.instruments = Instruments(
            metrics.get_meter(names.SCOPE, PACKAGE_VERSION, meter_provider=meter_provider)
        )

    # --- fault handling ---------------------------------------------------------------------

    def guard(self, where: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """Call `fn`; on any exception log it once per (where, type) and return None."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            self.fault(where, exc)
            return None

    def fault(self, where: str, exc: BaseException) -> None:
        """Log an instrumentation fault once per process and (where, exception type)."""
        log_fault(where, exc)

    # --- state ------------------------------------------------------------------------------

    @staticmethod
    def suppressed() -> bool:
        """True when OpenTelemetry's suppress_instrumentation is set in the current context."""
        return not is_instrumentation_enabled()

    def live(self) -> bool:
        """Whether spans or metrics can reach an SDK (see `records_somewhere`). The global
        providers are read at every call until one is an SDK's (a global provider, once set, is
        never unset), so an SDK set up after `instrument()` (`opentelemetry-instrument`, an app's
        start-up) counts at once."""
        if not self._live:
            tracing = records_somewhere(self._tracer_provider or trace.get_tracer_provider())
            self._live = tracing or self.metrics_recording()
        return self._live

    def metrics_recording(self) -> bool:
        """Whether metric measurements can reach an SDK (not the API's no-op or unset proxy)."""
        return records_somewhere(self._meter_provider or metrics.get_meter_provider())

    # --- operations -------------------------------------------------------------------------

    def operation(
        self,
        span_name: str | None,
        operation: str,
        attributes: Attributes,
        *,
        activate: bool = True,
        run: RunTrace | None = None,
    ) -> Operation:
        """Trace a `with` block as one checkpointer operation (see `Operation`); with no
        `span_name`, only time it (the duration metric).

        A span of a run carries the thread as `gen_ai.conversation.id` too; one outside any
        run (a state or history read, an update, a thread copy) does not: backends count the
        traces that carry it as a conversation's turns."""
        thread = attributes.get(names.THREAD_ID)
        if run is not None and thread is not None:
            attributes = {**attributes, names.CONVERSATION_ID: thread}
        return Operation(self, operation, span_name, attributes, activate, run)

    def begin_run(
        self,
        attributes: Attributes,
        *,
        parent: RunTrace | None = None,
        peer: Span | None = None,
        activate: bool = True,
        adopt: bool = True,
    ) -> RunTrace:
        """The trace of a run starting now: the run span its graph call opened (see
        `OpenedRun`), else the current span's, else `parent`'s (the run of an enclosing graph),
        else `peer`'s (a peer instrumentation's span of the graph, never current: see `peers`),
        else a new run span with `attributes` (`start_run_span`).

        Only a root graph's run (`adopt`) adopts an opened span. The peer's or new span is
        made current when `activate` (a sync run, whose loop exits
        in the context it entered in, so `end_run` can restore it). An async run's loop exits
        in another task; its span is the explicit parent of the library's spans and is made
        current only in the run's node tasks (see `runs`).
        """
        current = otel_context.get_current()
        opened = opened_run()
        if adopt and opened is not None and opened.claim():
            self.guard("set attributes", opened.run_span.span.set_attributes, attributes)
            return RunTrace(current, opened.run_span, opened=opened)
        if trace.get_current_span(current).get_span_context().is_valid:
            return RunTrace(current)
        if parent is not None:
            return RunTrace(parent.context)
        own = None
        if peer is None:
            own = self.start_run_span(attributes)
            peer = own.span
        context = trace.set_span_in_context(peer)
        if not activate:
            return RunTrace(context, own)
        otel_context.attach(context)
        return RunTrace(context, own, restore=current)

    def start_run_span(self, attributes: Attributes, parent: Context | None = None) -> RunSpan:
        """A new run span, `invoke_workflow {graph name}`, with `attributes` (the graph's name
        as `gen_ai.agent.name`, `gen_ai.workflow.name` and `langgraph.graph.name`), under
        `parent` (default: the current context).

        It carries `gen_ai.operation.name = invoke_workflow`, and its duration is recorded on
        `gen_ai.invoke_agent.duration`, unless a peer instrumentation names the graph's runs
        itself (`peers.names_graph_runs`): a run is counted once."""
        graph = attributes.get(names.GRAPH_NAME)
        own: dict[str, AttributeValue] = {names.OPENINFERENCE_SPAN_KIND: "CHAIN", **attributes}
        measured: dict[str, AttributeValue] | None = None
        if not names_graph_runs():
            own[names.GEN_AI_OPERATION_NAME] = names.SPAN_RUN
            measured = {names.GEN_AI_OPERATION_NAME: names.SPAN_RUN}
            if isinstance(graph, str):
                measured[names.AGENT_NAME] = graph
        own[names.SAVER] = self.saver_name
        span = self.tracer.start_span(
            names.run_span_name(graph if isinstance(graph, str) else None),
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=own,
            record_exception=False,
            set_status_on_exception=False,
        )
        return RunSpan(span, measured)

    def end_run(self, run: RunTrace, outcome: str, error: BaseException | None) -> None:
        """Set the run's outcome on the library's run span and end it (an opened one, once its
        call is done too); restore the context before it."""
        own = run.own
        if own is not None:
            span = own.span
            failed = error if outcome == "error" else None
            if span.is_recording():
                attributes: dict[str, AttributeValue] = {names.RUN_OUTCOME: outcome}
                if failed is not None:
                    attributes[names.ERROR_TYPE] = _error_type(failed)
                    self.guard("set status", span.set_status, Status(StatusCode.ERROR))
                self.guard("set attributes", span.set_attributes, attributes)
            if run.opened is not None:
                run.opened.release(failed)
            else:
                self.end_run_span(own, failed)
        # where the run's span is still current, the context before the run is made current
        # again (attached, not detached by token: a stream consumed across contexts exits in
        # a copy)
        if run.restore is not None and trace.get_current_span() is trace.get_current_span(
            run.context
        ):
            self.guard("restore context", otel_context.attach, run.restore)

    def end_run_span(self, run_span: RunSpan, error: BaseException | None) -> None:
        """End a run span the library opened; record its duration where it counts the run
        (`gen_ai.invoke_agent.duration`, equal to the span's duration)."""
        seconds = time.perf_counter() - run_span.started
        self.guard("end span", run_span.span.end)
        if run_span.measured is None:
            return  # a peer counts the run
        measured = dict(run_span.measured)
        if error is not None:
            measured[names.ERROR_TYPE] = _error_type(error)
        self.measurements.take(self.instruments.run_duration.record, seconds, measured)

    def finish(self, op: Operation, started: float, error: BaseException | None) -> None:
        """End an operation: status, span end, duration metric. Never raises."""
        elapsed = time.perf_counter() - started
        inner = op.inner_seconds
        if inner is not None:
            op.set({names.INSTRUMENTATION_DURATION: max(0.0, elapsed - inner)})
        attributes = self._duration_attributes.get(op.name)
        if attributes is None:
            attributes = {names.OPERATION: op.name, names.SAVER: self.saver_name}
            if len(self._duration_attributes) < 64:  # a few operation names, never grows
                self._duration_attributes[op.name] = attributes
        if error is not None:
            error_type = _error_type(error)
            attributes = {**attributes, names.ERROR_TYPE: error_type}
            if op.recording:
                assert op.span is not None
                op.set({names.ERROR_TYPE: error_type})
                self.guard("set status", op.span.set_status, Status(StatusCode.ERROR))
        exemplar = NO_EXEMPLAR
        if op.span is not None:
            if op.pending:
                self.guard("set attributes", op.span.set_attributes, op.pending)
            self.guard("end span", op.span.end)
            if op.recording:  # the exemplar names the operation's own span
                exemplar = trace.set_span_in_context(op.span)
        self.measurements.take(
            self.instruments.duration.record,
            elapsed if inner is None else inner,
            attributes,
            exemplar,
        )

    # --- measurements -----------------------------------------------------------------------

    def record_sizes(self, state_size: int, channel_sizes: Sequence[tuple[str, int]]) -> None:
        """Record the state size and the size of each changed channel (the channel-size
        histogram's sum is the bytes written per channel)."""
        take = self.measurements.take
        take(self.instruments.checkpoint_size.record, state_size, self._saver_attributes)
        for channel, size in channel_sizes:
            take(self.instruments.channel_size.record, size, {names.CHANNEL_NAME: channel})

    def record_thread_growth(self, checkpoints: int, written_bytes: int) -> None:
        """Record a thread's line (checkpoints, bytes written) as its run ends."""
        take = self.measurements.take
        take(self.instruments.thread_checkpoints.record, checkpoints, self._saver_attributes)
        take(self.instruments.thread_written.record, written_bytes, self._saver_attributes)

    def count_schema_mismatch(self, written: str, running: str) -> None:
        """Count one resume of a checkpoint written under schema version `written`."""
        self.measurements.take(
            self.instruments.schema_mismatches.add,
            1,
            {names.SCHEMA_WRITTEN_VERSION: written, names.SCHEMA_RUNNING_VERSION: running},
        )

    def count_graph_change(self, graph_name: str | None) -> None:
        """Count one resume of a checkpoint written under another graph structure."""
        self.measurements.take(self.instruments.graph_changes.add, 1, _graph_attributes(graph_name))

    def count_concurrent_write(self, graph_name: str | None) -> None:
        """Count one checkpoint written beside another run's child of its parent."""
        self.measurements.take(
            self.instruments.concurrent_writes.add, 1, _graph_attributes(graph_name)
        )

    def count_retention(self, by: str, checkpoints: int | None, reclaimed: int | None) -> None:
        """Count what a retention call (`by`: `prune`, `apply`) removed and reclaimed."""
        attributes = {names.RETENTION_BY: by, names.SAVER: self.saver_name}
        counters = self.instruments.retention
        if checkpoints is not None:
            self.measurements.take(counters.checkpoints_removed.add, checkpoints, attributes)
        if reclaimed is not None:
            self.measurements.take(counters.bytes_reclaimed.add, reclaimed, attributes)

    def count_resume(self, kind: str) -> None:
        """Count one resume by kind."""
        self.measurements.take(self.instruments.resumes.add, 1, {names.RESUME_KIND: kind})

    def count_divergence(self, kind: str) -> None:
        """Count one divergence finding by kind."""
        self.measurements.take(self.instruments.divergences.add, 1, {names.DIVERGENCE_KIND: kind})

    def count_task_outcome(self, node: str, outcome: str, calls: int = 1) -> None:
        """Count pending-writes calls by node and outcome."""
        self.measurements.take(
            self.instruments.task_outcomes.add,
            calls,
            {names.TASK_NODE: node, names.TASK_OUTCOME: outcome},
        )


_API_PROVIDERS = (
    trace.ProxyTracerProvider,
    trace.NoOpTracerProvider,
    NoOpMeterProvider,
    NoOpLoggerProvider,
)
_API_PROXY_NAMES = frozenset({"_ProxyMeterProvider", "ProxyLoggerProvider"})
"""The API's unset global meter and logger proxies (private classes: known by name)."""


def records_somewhere(provider: object) -> bool:
    """Whether a tracer, meter or logger provider can record: it is not the API's no-op or its
    unset global proxy (what an app that set up no SDK has). Known per type (checked on every
    call of an app with no SDK: an `isinstance` of the API's abstract classes costs more than
    the rest of such a call)."""
    kind = type(provider)
    known = _RECORDS_BY_TYPE.get(kind)
    if known is None:
        known = not isinstance(provider, _API_PROVIDERS) and kind.__name__ not in _API_PROXY_NAMES
        if len(_RECORDS_BY_TYPE) < 64:  # provider types are few
            _RECORDS_BY_TYPE[kind] = known
    return known


_RECORDS_BY_TYPE: dict[type, bool] = {}


def _error_type(error: BaseException) -> str:
    return type(error).__qualname__


def _graph_attributes(graph_name: str | None) -> dict[str, AttributeValue]:
    return {names.GRAPH_NAME: graph_name} if graph_name else {}
