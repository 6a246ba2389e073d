"""The demo end to end: a real subprocess, real SQLite, real SDK, files read back."""

from __future__ import annotations

import gzip
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.demo import SCENARIOS
from langgraph.checkpoint.otel.otlp_json import (
    HistogramPoint,
    NumberPoint,
    SpanRecord,
    read_metrics,
    read_spans,
)

HEX32 = re.compile(r"[0-9a-f]{32}")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo")
    (out / "spans.jsonl").write_text("stale\n")  # must be replaced, not appended to
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["NO_COLOR"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.otel.demo", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, proc.stdout


def _spans(out: Path) -> list[SpanRecord]:
    return read_spans(out / "spans.jsonl")


def _thread(spans: list[SpanRecord], thread_id: str) -> list[SpanRecord]:
    return [s for s in spans if s.attributes.get(names.THREAD_ID) == thread_id]


def test_demo_writes_checkpoint_spans(demo: tuple[Path, str]) -> None:
    out, _ = demo
    spans = _spans(out)
    span_names = {s.name for s in spans}
    assert {names.SPAN_PUT, names.SPAN_PUT_WRITES, names.SPAN_GET} <= span_names
    assert all(s.resource.get("service.name") == "langgraph-checkpoint-otel-demo" for s in spans)
    assert (out / "demo.sqlite").exists()


def test_every_put_has_a_state_hash(demo: tuple[Path, str]) -> None:
    puts = [s for s in _spans(demo[0]) if s.name == names.SPAN_PUT]
    assert puts
    for span in puts:
        state_hash = span.attributes.get(names.STATE_HASH)
        assert isinstance(state_hash, str) and HEX32.fullmatch(state_hash), span


def test_failing_thread_has_an_error_outcome(demo: tuple[Path, str]) -> None:
    spans = _spans(demo[0])
    flaky = _thread(spans, "flaky-search")
    outcomes = [
        (s.attributes.get(names.TASK_NODE), s.attributes.get(names.TASK_OUTCOME))
        for s in flaky
        if s.name == names.SPAN_PUT_WRITES
    ]
    assert ("tools", "error") in outcomes
    # the resumed run re-ran the node: the ok write has no span by default (ok_write_spans),
    # but the resume names the node and a put of the resumed run's trace applies it
    assert _rerun_and_applied(flaky, "error") == ("tools",)
    # only the flaky thread failed
    others = [s for t in ("weather", "approval") for s in _thread(spans, t)]
    assert "error" not in {s.attributes.get(names.TASK_OUTCOME) for s in others}


def test_interrupted_thread_is_resumed(demo: tuple[Path, str]) -> None:
    approval = _thread(_spans(demo[0]), "approval")
    outcomes = {s.attributes.get(names.TASK_OUTCOME) for s in approval}
    assert {"interrupt", "resume"} <= outcomes
    # the interrupted node finished after the resume (an ok write: no put_writes span by
    # default, but the put of the resumed run that applies it)
    assert _rerun_and_applied(approval, "interrupt") == ("approve",)


def _rerun_and_applied(spans: list[SpanRecord], kind: str) -> tuple[str, ...]:
    """The tasks the thread's one resume (of `kind`) re-ran, checked to be applied by a put of
    the resumed run (a checkpoint span of the resume's trace)."""
    (resume,) = [
        s
        for s in spans
        if s.name == names.SPAN_RESUME and s.attributes.get(names.RESUME_KIND) == kind
    ]
    rerun = tuple(resume.attributes[names.RESUME_TASKS])
    assert rerun
    applied = {
        node
        for s in spans
        if s.name == names.SPAN_PUT and s.trace_id == resume.trace_id
        for node in s.attributes.get(names.NODES, ())
    }
    assert set(rerun) <= applied, (rerun, applied)
    return rerun


def test_checkpoint_spans_are_children_of_the_run_spans(demo: tuple[Path, str]) -> None:
    spans = _spans(demo[0])
    runs = {s.span_id: s for s in spans if s.name == "demo.run"}
    assert len(runs) == 6
    checkpoint_spans = [s for s in spans if s.scope_name == names.SCOPE]
    assert checkpoint_spans
    for span in checkpoint_spans:
        parent = runs.get(span.parent_span_id or "")
        assert parent is not None, span
        assert parent.trace_id == span.trace_id
        assert parent.attributes[names.THREAD_ID] == span.attributes[names.THREAD_ID]


def test_metrics_file(demo: tuple[Path, str]) -> None:
    metrics = read_metrics(demo[0] / "metrics.jsonl")
    outcomes = {
        (p.attributes[names.TASK_NODE], p.attributes[names.TASK_OUTCOME]): p.value
        for p in metrics[names.METRIC_TASK_OUTCOMES]
        if isinstance(p, NumberPoint)
    }
    assert outcomes[("tools", "error")] == 1
    puts = [
        p
        for p in metrics[names.METRIC_OPERATION_DURATION]
        if isinstance(p, HistogramPoint) and p.attributes.get(names.OPERATION) == "put"
    ]
    put_spans = [s for s in _spans(demo[0]) if s.name == names.SPAN_PUT]
    assert sum(p.count for p in puts) == len(put_spans)


def test_timeline_mentions_each_thread(demo: tuple[Path, str]) -> None:
    _, stdout = demo
    timeline = stdout.split("timeline", 1)[1]
    for scenario in SCENARIOS:
        assert f"thread {scenario.thread_id}" in timeline
    assert "outcome=ERROR" in timeline
    assert re.search(r"put +step=\d+ +source=loop +nodes=\[agent\] +hash=[0-9a-f]{8}…", timeline)
    assert "ai(tool_calls=search)" in timeline
    assert "task outcomes" in stdout and "error=1" in stdout
    assert "p50" in stdout
    assert "\x1b[" not in stdout  # NO_COLOR


class _Receiver(http.server.BaseHTTPRequestHandler):
    """A minimal OTLP/HTTP receiver: keeps each decoded request, answers 200."""

    received: ClassVar[list[tuple[str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_demo_exports_to_otlp_endpoint(tmp_path: Path) -> None:
    """With OTEL_EXPORTER_OTLP_ENDPOINT set, the demo sends OTLP http/protobuf there, writes
    no files and says that the timeline is not available."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, NO_COLOR="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "langgraph.checkpoint.otel.demo", "--out", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"OTLP http/protobuf at {endpoint}" in proc.stdout
    assert "timeline is only available" in proc.stdout
    assert not (tmp_path / "spans.jsonl").exists()

    span_names: set[str] = set()
    metric_names: set[str] = set()
    for path, body in _Receiver.received:
        if path == "/v1/traces":
            traces = ExportTraceServiceRequest.FromString(body)
            span_names.update(
                s.name for rs in traces.resource_spans for ss in rs.scope_spans for s in ss.spans
            )
        elif path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            metric_names.update(
                m.name
                for rm in request.resource_metrics
                for sm in rm.scope_metrics
                for m in sm.metrics
            )
    assert {names.SPAN_PUT, names.SPAN_PUT_WRITES} <= span_names
    assert names.METRIC_TASK_OUTCOMES in metric_names
