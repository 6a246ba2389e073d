"""End-to-end over the wire: a real instrumented graph exports OTLP/HTTP protobuf, and the spans
and metrics are decoded and checked on the far side.

* ``test_app_to_receiver``: app -> a stdlib OTLP/HTTP receiver on 127.0.0.1 (this file), which
  decodes ``ExportTraceServiceRequest`` / ``ExportMetricsServiceRequest`` with the
  ``opentelemetry-proto`` classes. Always runs.
* ``test_app_through_rotel``: app -> rotel (a Rust OTLP collector, PyPI package ``rotel``, run as
  a subprocess receiving OTLP/HTTP and re-exporting OTLP/HTTP) -> the same receiver: a real
  collector-like hop that batches, re-encodes and (gzip-)compresses. Skipped when ``rotel`` is not
  installed.

No otelcol-contrib binary is involved (none can be installed here); collector-config/README.md
says what was and was not run.
"""

from __future__ import annotations

import importlib.util
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from graphs import Flaky, linear, user_input
from langgraph.checkpoint.otel import instrument, names
from otlp_receiver import OTLPReceiver, Received, attrs, wait_until

SERVICE = "langgraph-wire-test"
HEX32 = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as r:
        yield r


# --------------------------------------------------------------------------------------------
# The app: a real graph, a real instrumented saver, SDK providers with the OTLP/HTTP exporters
# --------------------------------------------------------------------------------------------


def run_app(endpoint: str, thread_id: str) -> None:
    """Run a graph that fails in node b, then resume it; export everything to ``endpoint``."""
    resource = Resource.create({"service.name": SERVICE})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", timeout=5))
    )
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=f"{endpoint}/v1/metrics", timeout=5),
        export_interval_millis=60_000,
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    try:
        saver = instrument(
            InMemorySaver(), tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        graph = linear(Flaky(failures=1)).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": thread_id}}
        with pytest.raises(RuntimeError, match="b failed"):
            graph.invoke(user_input(), config)
        result = graph.invoke(None, config)
        assert result["log"] == ["input", "a", "b", "c"]
        assert tracer_provider.force_flush(10_000)
        assert meter_provider.force_flush(10_000)
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


def _complete(received: Received) -> bool:
    names_seen = {span.name for _, _, span in received.spans()}
    metrics_seen = set(received.metric_points())
    return {names.SPAN_PUT, names.SPAN_PUT_WRITES, names.SPAN_GET, names.SPAN_RESUME} <= (
        names_seen
    ) and {names.METRIC_OPERATION_DURATION, names.METRIC_RESUMES} <= metrics_seen


# --------------------------------------------------------------------------------------------
# What must arrive on the far side
# --------------------------------------------------------------------------------------------


def assert_far_side(received: Received, thread_id: str) -> None:
    spans = received.spans()
    assert spans, "no span arrived"
    for res, scope, _ in spans:
        assert res["service.name"] == SERVICE
        assert scope == names.SCOPE
    by_name: dict[str, list[Any]] = {}
    for _, _, span in spans:
        by_name.setdefault(span.name, []).append(span)
    assert {names.SPAN_PUT, names.SPAN_PUT_WRITES, names.SPAN_GET, names.SPAN_RESUME} <= set(
        by_name
    ), sorted(by_name)

    for span in spans:
        a = attrs(span[2].attributes)
        assert a[names.THREAD_ID] == thread_id
        assert a[names.CONVERSATION_ID] == thread_id
        assert a[names.SAVER] == "InMemorySaver"

    puts = [attrs(s.attributes) for s in by_name[names.SPAN_PUT]]
    for a in puts:
        assert a[names.OPERATION] == "put"
        assert HEX32.fullmatch(a[names.STATE_HASH]), a[names.STATE_HASH]
        assert isinstance(a[names.STEP], int)
        assert a[names.SIZE_BYTES] > 0
        assert a[names.CHECKPOINT_ID]
    assert {a[names.SOURCE] for a in puts} >= {"input", "loop"}
    assert any(names.RESUME_FROM_CHECKPOINT_ID in a for a in puts)
    # channel events travel with the put spans
    events = [e for s in by_name[names.SPAN_PUT] for e in s.events]
    assert any(e.name == names.EVENT_CHANNEL for e in events)
    channel = next(attrs(e.attributes) for e in events if e.name == names.EVENT_CHANNEL)
    assert HEX32.fullmatch(channel[names.CHANNEL_HASH])

    # by default only the failed task's write has a put_writes span (ok writes have none) ...
    writes = [attrs(s.attributes) for s in by_name[names.SPAN_PUT_WRITES]]
    assert [(a[names.TASK_NODE], a[names.TASK_OUTCOME]) for a in writes] == [("b", "error")]
    assert all(a[names.OPERATION] == "put_writes" for a in writes)
    assert ERROR in writes[0][names.WRITES_CHANNELS]
    # ... and every node that ran is on the put that applies its writes
    assert {"a", "b", "c"} <= {node for a in puts for node in a.get(names.NODES, [])}

    (resume,) = by_name[names.SPAN_RESUME]
    ra = attrs(resume.attributes)
    assert ra[names.RESUME_KIND] == "error"
    assert ra[names.RESUME_TASKS] == ["b"]
    assert ra[names.OPERATION] == "resume"
    # the link to the put span that wrote the loaded checkpoint survives the wire
    assert len(resume.links) == 1
    link = resume.links[0]
    assert attrs(link.attributes)[names.LINK_TYPE] == "checkpoint_writer"
    writer_ids = {(s.trace_id, s.span_id) for s in by_name[names.SPAN_PUT]}
    assert (link.trace_id, link.span_id) in writer_ids
    # saver calls succeeded: no checkpointer span is an error (the node's failure is a task
    # outcome); the runs the library opened end with their outcomes, the failed one in error
    run_spans = [s for _, _, s in spans if names.is_run_span_name(s.name)]
    saver_spans = [s for _, _, s in spans if not names.is_run_span_name(s.name)]
    assert all(s.status.code != Status.STATUS_CODE_ERROR for s in saver_spans)
    runs = [attrs(s.attributes) for s in run_spans]
    assert sorted(a[names.RUN_OUTCOME] for a in runs) == ["error", "finished"]
    # each run is one trace: every span is in the trace of a run span
    run_traces = {s.trace_id for s in run_spans}
    assert {s.trace_id for _, _, s in spans} == run_traces
    assert all(s.kind == s.SPAN_KIND_INTERNAL for _, _, s in spans)

    points = received.metric_points()
    forbidden = {names.THREAD_ID, names.CONVERSATION_ID, names.CHECKPOINT_ID, names.TASK_ID}
    for metric_name, entries in points.items():
        for res, scope, _, point in entries:
            assert res["service.name"] == SERVICE
            assert scope == names.SCOPE, metric_name
            assert not forbidden & set(attrs(point.attributes)), metric_name

    duration = points[names.METRIC_OPERATION_DURATION]
    assert {m.unit for _, _, m, _ in duration} == {"s"}
    assert {m.WhichOneof("data") for _, _, m, _ in duration} == {"histogram"}
    ops = {attrs(p.attributes)[names.OPERATION] for _, _, _, p in duration}
    assert {"put", "put_writes", "get", "resume"} <= ops
    assert {attrs(p.attributes)[names.SAVER] for _, _, _, p in duration} == {"InMemorySaver"}
    # one duration per checkpointer call (run spans are not checkpointer calls)
    assert sum(p.count for _, _, _, p in duration) >= len(saver_spans)

    size = points[names.METRIC_CHECKPOINT_SIZE]
    assert {m.unit for _, _, m, _ in size} == {"By"}
    assert all(attrs(p.attributes) == {names.SAVER: "InMemorySaver"} for _, _, _, p in size)

    channel_size = points[names.METRIC_CHANNEL_SIZE]
    assert {"messages", "log"} <= {
        attrs(p.attributes)[names.CHANNEL_NAME] for *_, p in channel_size
    }

    resumes = points[names.METRIC_RESUMES]
    assert {m.WhichOneof("data") for _, _, m, _ in resumes} == {"sum"}
    assert [(attrs(p.attributes), p.as_int) for *_, p in resumes] == [
        ({names.RESUME_KIND: "error"}, 1)
    ]

    outcomes = {
        (attrs(p.attributes)[names.TASK_NODE], attrs(p.attributes)[names.TASK_OUTCOME]): p.as_int
        for *_, p in points[names.METRIC_TASK_OUTCOMES]
    }
    # every pending-writes call is counted, spans or not: the first run's __start__, a and
    # b (failed), the resumed run's b and c
    assert outcomes == {
        ("__start__", "ok"): 1,
        ("a", "ok"): 1,
        ("b", "error"): 1,
        ("b", "ok"): 1,
        ("c", "ok"): 1,
    }
    timed_writes = sum(
        p.count for _, _, _, p in duration if attrs(p.attributes)[names.OPERATION] == "put_writes"
    )
    assert timed_writes == sum(outcomes.values())


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_app_to_receiver(receiver: OTLPReceiver) -> None:
    thread_id = f"wire-{uuid.uuid4().hex[:8]}"
    run_app(receiver.endpoint, thread_id)
    assert wait_until(lambda: _complete(receiver.received))
    assert_far_side(receiver.received, thread_id)
    # the SDK's OTLP/HTTP exporters speak protobuf
    paths = {path for path, _ in receiver.received.requests}
    assert paths == {"/v1/traces", "/v1/metrics"}
    for _, headers in receiver.received.requests:
        assert headers.get("content-type") == "application/x-protobuf"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rotel_agent() -> Path | None:
    spec = importlib.util.find_spec("rotel")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "rotel-agent"
    return binary if binary.is_file() else None


@pytest.fixture
def rotel(receiver: OTLPReceiver, tmp_path: Path) -> Iterator[str]:
    """A rotel agent on 127.0.0.1 (OTLP/HTTP in), exporting OTLP/HTTP to ``receiver``.
    Yields its OTLP/HTTP endpoint; stops the process afterwards."""
    binary = _rotel_agent()
    if binary is None:
        pytest.skip("rotel (PyPI: rotel) is not installed: the collector-like hop is not tested")
    http_port, grpc_port = _free_port(), _free_port()
    log = tmp_path / "rotel.out"
    cmd = [
        str(binary),
        "start",
        "--otlp-http-endpoint",
        f"127.0.0.1:{http_port}",
        "--otlp-grpc-endpoint",
        f"127.0.0.1:{grpc_port}",
        "--exporter",
        "otlp",
        "--otlp-exporter-endpoint",
        receiver.endpoint,
        "--otlp-exporter-protocol",
        "http",
        "--batch-timeout",
        "100ms",
        "--pid-file",
        str(tmp_path / "rotel.pid"),
        "--log-file",
        str(tmp_path / "rotel.log"),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:

        def listening() -> bool:
            if proc.poll() is not None:
                return True
            with socket.socket() as s:
                s.settimeout(0.2)
                return s.connect_ex(("127.0.0.1", http_port)) == 0

        assert wait_until(listening, timeout=10), f"rotel did not listen: {log.read_text()}"
        assert proc.poll() is None, f"rotel exited {proc.returncode}: {log.read_text()}"
        yield f"http://127.0.0.1:{http_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def test_app_through_rotel(rotel: str, receiver: OTLPReceiver) -> None:
    thread_id = f"wire-{uuid.uuid4().hex[:8]}"
    run_app(rotel, thread_id)
    assert wait_until(lambda: _complete(receiver.received)), (
        f"rotel forwarded {len(receiver.received.traces)} trace and "
        f"{len(receiver.received.metrics)} metric requests"
    )
    # give a late batch a moment, then check everything that crossed both hops
    time.sleep(0.3)
    assert_far_side(receiver.received, thread_id)
    # it really went through rotel: the requests the receiver saw were made by rotel
    agents = {headers.get("user-agent", "") for _, headers in receiver.received.requests}
    assert all("Rotel" in a for a in agents), agents
