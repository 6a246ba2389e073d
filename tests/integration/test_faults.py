"""Faults in the telemetry pipeline never reach the graph, and export never blocks a step.

Real SDK providers, real savers, real graphs (a node that fails once and is resumed), real
OTLP/HTTP exporters against a dead loopback port and a loopback server that never answers.
Every provider is shut down at the end of its test with a bounded wait.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics._internal.aggregation import Aggregation
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.trace import (
    ConcurrentMultiSpanProcessor,
    SpanProcessor,
    TracerProvider,
)
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from graphs import Flaky, linear, user_input
from helpers import RaisingProcessor
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.core import telemetry

LOGGER = "langgraph.checkpoint.otel"
SHUTDOWN_WAIT_S = 10.0
THREADS = ("t-0", "t-1", "t-2")


@pytest.fixture(autouse=True)
def _fresh_once_per_process_logs() -> Iterator[None]:
    telemetry._FAULTS_LOGGED.clear()
    telemetry._EXPORT_WARNED.clear()
    yield
    telemetry._FAULTS_LOGGED.clear()
    telemetry._EXPORT_WARNED.clear()


# --- the graph and what it stores ---------------------------------------------------------


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def run_threads(saver: BaseCheckpointSaver[Any]) -> tuple[list[Any], list[float]]:
    """Per thread: a run whose node b fails, then the resumed run. Outcomes and wall times."""
    outcomes: list[Any] = []
    walls: list[float] = []
    for thread in THREADS:
        graph = linear(Flaky(failures=1)).compile(checkpointer=saver)
        for inputs in (user_input(), None):
            started = time.perf_counter()
            try:
                result = graph.invoke(inputs, config(thread))
            except RuntimeError as exc:
                outcomes.append(("error", str(exc)))
            else:
                outcomes.append(("ok", result["log"], result["last"]))
            walls.append(time.perf_counter() - started)
    return outcomes, walls


def stored(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    """What the (bare, inner) saver holds, without ids and timestamps or the `otel` key."""
    out: list[Any] = []
    for thread in THREADS:
        for t in saver.list(config(thread)):
            metadata = {k: v for k, v in t.metadata.items() if k != names.METADATA_KEY}
            writes = [w[1] for w in t.pending_writes or []]
            out.append((thread, t.checkpoint["channel_values"], metadata, writes))
    return out


EXPECTED_OUTCOMES = [("error", "b failed (attempt 1)"), ("ok", ["input", "a", "b", "c"], "c")] * 3


def faults(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def shutdown(*providers: TracerProvider | MeterProvider) -> None:
    """Shut the providers down, waiting a bounded time (a stuck exporter cannot hang the
    session: the waiting thread is a daemon)."""
    for provider in providers:
        done = threading.Event()
        threading.Thread(
            target=_shutdown_then_set, args=(provider, done), daemon=True, name="test-shutdown"
        ).start()
        assert done.wait(SHUTDOWN_WAIT_S), f"{type(provider).__name__} did not shut down"


def _shutdown_then_set(provider: TracerProvider | MeterProvider, done: threading.Event) -> None:
    try:
        provider.shutdown()
    finally:
        done.set()


def check_transparent(
    caplog: pytest.LogCaptureFixture,
    tracer_provider: Any = None,
    meter_provider: Any = None,
) -> tuple[list[str], list[float]]:
    """Run bare and wrapped; the wrapped runs fail and succeed exactly as bare ones and store
    the same history. Returns the faults logged and the wrapped invokes' wall times."""
    bare = InMemorySaver()
    bare_outcomes, _ = run_threads(bare)
    assert bare_outcomes == EXPECTED_OUTCOMES
    inner = InMemorySaver()
    with caplog.at_level(logging.WARNING):
        saver = instrument(inner, tracer_provider=tracer_provider, meter_provider=meter_provider)
        outcomes, walls = run_threads(saver)
    assert outcomes == bare_outcomes
    assert stored(inner) == stored(bare)
    history = stored(inner)
    assert len(history) == 3 * 5  # per thread: input, start, a, b, c
    assert sum("__error__" in writes for *_, writes in history) == 3  # b's failure, kept
    logged = faults(caplog)
    assert len(set(logged)) == len(logged), logged  # once per kind of fault
    return logged, walls


# --- broken pieces of the pipeline --------------------------------------------------------


class RaisingExporter(SpanExporter):
    def __init__(self) -> None:
        self.calls = 0

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        self.calls += 1
        raise RuntimeError("exporter")


class RaisingAggregation(Aggregation):
    def _create_aggregation(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("view aggregation")


class RaisingMetricExporter(MetricExporter):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> Any:
        self.calls += 1
        raise RuntimeError("metric exporter")

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


def test_a_raising_span_processor(caplog: pytest.LogCaptureFixture) -> None:
    provider = TracerProvider()
    provider.add_span_processor(RaisingProcessor())
    try:
        logged, _ = check_transparent(caplog, tracer_provider=provider)
        assert logged and all("RuntimeError" in m for m in logged)
        assert not any("processor on_" in m for m in logged)  # never the exception's message
    finally:
        shutdown(provider)


@pytest.mark.parametrize("processor", [SimpleSpanProcessor, BatchSpanProcessor])
def test_a_raising_exporter(
    processor: Callable[..., SpanProcessor], caplog: pytest.LogCaptureFixture
) -> None:
    exporter = RaisingExporter()
    provider = TracerProvider()
    kwargs = {"schedule_delay_millis": 10} if processor is BatchSpanProcessor else {}
    provider.add_span_processor(processor(exporter, **kwargs))
    try:
        check_transparent(caplog, tracer_provider=provider)
        assert provider.force_flush(2_000) in (True, False)
        assert exporter.calls >= 1  # the exporter did raise, and the graph never saw it
    finally:
        shutdown(provider)


def test_a_raising_meter_view(caplog: pytest.LogCaptureFixture) -> None:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(
        metric_readers=[InMemoryMetricReader()],
        views=[View(instrument_name="*", aggregation=RaisingAggregation())],
    )
    try:
        logged, _ = check_transparent(caplog, tracer_provider, meter_provider)
        assert logged and all("RuntimeError" in m for m in logged)
        assert any(s.name == names.SPAN_PUT for s in spans.get_finished_spans())
    finally:
        shutdown(tracer_provider, meter_provider)


def test_a_raising_metric_reader(caplog: pytest.LogCaptureFixture) -> None:
    exporter = RaisingMetricExporter()
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=20)
    meter_provider = MeterProvider(metric_readers=[reader])
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    try:
        check_transparent(caplog, tracer_provider, meter_provider)
        deadline = time.monotonic() + 5
        while exporter.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert exporter.calls >= 1
    finally:
        shutdown(tracer_provider, meter_provider)


class RaisingTracerProvider(TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("get_tracer")


class RaisingMeterProvider(MeterProvider):
    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("get_meter")


@pytest.mark.parametrize("broken", ["tracer", "meter"])
def test_a_raising_provider_gives_a_delegating_saver(
    broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    spans = InMemorySpanExporter()
    tracer_provider = RaisingTracerProvider() if broken == "tracer" else TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = RaisingMeterProvider() if broken == "meter" else MeterProvider()
    try:
        logged, _ = check_transparent(caplog, tracer_provider, meter_provider)
        assert len(logged) == 1 and "instrument() setting up telemetry" in logged[0]
        assert spans.get_finished_spans() == ()  # only delegates
    finally:
        shutdown(tracer_provider, meter_provider)


# --- a network exporter whose endpoint is down or hangs -----------------------------------


def dead_port() -> int:
    """A loopback port that was bound and closed: connections to it are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class HangingServer:
    """Accepts connections on loopback and never reads or answers."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)
        self.port: int = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="hanging-otlp")

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)  # held open, never answered

    def __enter__(self) -> HangingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self.accepted:
            conn.close()
        self.sock.close()


MAX_INVOKE_S = 1.0


def otlp_provider(port: int) -> TracerProvider:
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=1)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=10))
    return provider


def test_otlp_to_a_dead_port_never_slows_or_changes_the_graph(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = otlp_provider(dead_port())
    try:
        logged, walls = check_transparent(caplog, tracer_provider=provider)
        assert logged == []
        assert max(walls) < MAX_INVOKE_S, walls
    finally:
        shutdown(provider)


def test_otlp_to_a_server_that_never_answers_never_slows_or_changes_the_graph(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with HangingServer() as server:
        provider = otlp_provider(server.port)
        try:
            logged, walls = check_transparent(caplog, tracer_provider=provider)
            assert logged == []
            # the export thread is the one that waits on the silent server, not the graph
            assert max(walls) < MAX_INVOKE_S, walls
            deadline = time.monotonic() + 5
            while not server.accepted and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.accepted  # the exporter did connect and is waiting for an answer
        finally:
            shutdown(provider)


# --- the warning about a synchronous network export ---------------------------------------


def export_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [m for m in faults(caplog) if "synchronously" in m]


@pytest.mark.parametrize("exporter_type", [OTLPSpanExporter, GrpcSpanExporter])
@pytest.mark.parametrize("nested", [False, True])
def test_simple_processor_with_a_network_exporter_is_warned_about_once(
    exporter_type: type[SpanExporter], nested: bool, caplog: pytest.LogCaptureFixture
) -> None:
    port = dead_port()
    exporter: SpanExporter = (
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=1)
        if exporter_type is OTLPSpanExporter
        else GrpcSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True, timeout=1)
    )
    provider = (
        TracerProvider(active_span_processor=ConcurrentMultiSpanProcessor())
        if nested
        else TracerProvider()
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        with caplog.at_level(logging.WARNING):
            instrument(InMemorySaver(), tracer_provider=provider)
            instrument(InMemorySaver(), tracer_provider=provider)
        warned = export_warnings(caplog)
        assert len(warned) == 1, warned
        assert "BatchSpanProcessor" in warned[0]
        assert "SimpleSpanProcessor" in warned[0] and "OTLPSpanExporter" in warned[0]
        assert "blocks the graph step" in warned[0]
    finally:
        shutdown(provider)


@pytest.mark.parametrize("kind", ["batch-otlp", "simple-in-memory", "disabled"])
def test_no_warning_where_export_does_not_block(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider()
    if kind == "batch-otlp":
        exporter: SpanExporter = OTLPSpanExporter(
            endpoint=f"http://127.0.0.1:{dead_port()}/v1/traces", timeout=1
        )
        provider.add_span_processor(BatchSpanProcessor(exporter))
    elif kind == "simple-in-memory":
        provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    else:  # telemetry off: nothing is exported, so nothing to warn about
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{dead_port()}"))
        )
    try:
        with caplog.at_level(logging.WARNING):
            instrument(InMemorySaver(), tracer_provider=provider, enabled=kind != "disabled")
        assert export_warnings(caplog) == []
    finally:
        shutdown(provider)


def test_an_unreadable_provider_is_no_reason_to_fail(caplog: pytest.LogCaptureFixture) -> None:
    class Odd(TracerProvider):
        @property
        def _active_span_processor(self) -> Any:
            raise RuntimeError("unreadable")

        @_active_span_processor.setter
        def _active_span_processor(self, value: Any) -> None:
            pass

    with caplog.at_level(logging.WARNING):
        telemetry.warn_if_export_blocks(Odd(shutdown_on_exit=False))
        telemetry.warn_if_export_blocks(object())
    assert export_warnings(caplog) == []


def test_the_instrumentor_warns_about_a_blocking_export_when_it_instruments(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from langgraph.checkpoint.otel import LangGraphCheckpointInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=f"http://127.0.0.1:{dead_port()}/v1/traces", timeout=1)
        )
    )
    instrumentor = LangGraphCheckpointInstrumentor()
    try:
        with caplog.at_level(logging.WARNING):
            instrumentor.instrument(tracer_provider=provider)
        assert len(export_warnings(caplog)) == 1
    finally:
        instrumentor.uninstrument()
        shutdown(provider)
