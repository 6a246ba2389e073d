"""The demo end to end: real subprocesses (one killed with SIGKILL), real SQLite, real SDK,
and the story checked from what was exported: the span files of every process, the metrics,
the checkpoint database and the shop's ledger."""

from __future__ import annotations

import gzip
import http.server
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from refund_demo import (
    APPROVAL_THREAD,
    CHILD_ROLE,
    CRASH_THREAD,
    FORK_THREAD,
    POLICY,
    ROLE_ATTRIBUTE,
    THREAD_ORDERS,
    THREADS,
)

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.detectors import divergences
from langgraph.checkpoint.otel.analysis.records import history_records
from langgraph.checkpoint.otel.export.otlp_json import (
    HistogramPoint,
    NumberPoint,
    SpanRecord,
    read_metrics,
    read_spans,
)
from suite_paths import REPO

WALL_LIMIT_S = 60.0
DEMO = REPO / "examples" / "refund_demo.py"
"""`make demo` runs the demo from examples/ (it is not installed)."""


@dataclass(frozen=True)
class Demo:
    out: Path
    stdout: str
    wall_s: float

    @property
    def main_spans(self) -> list[SpanRecord]:
        return read_spans(self.out / "spans.jsonl")

    @property
    def child_spans(self) -> list[SpanRecord]:
        return read_spans(self.out / f"spans-{CHILD_ROLE}.jsonl")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(NO_COLOR="1", **extra)
    return env


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    out = tmp_path_factory.mktemp("demo")
    (out / "spans.jsonl").write_text("stale\n")  # must be replaced, not appended to
    (out / "spans-old-child.jsonl").write_text("stale\n")  # a file of an earlier run
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(DEMO), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=WALL_LIMIT_S + 30,
        env=_env(),
    )
    wall_s = time.perf_counter() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return Demo(out, proc.stdout, wall_s)


def _thread(spans: list[SpanRecord], thread_id: str) -> list[SpanRecord]:
    return [s for s in spans if s.attributes.get(names.THREAD_ID) == thread_id]


def _resumes(spans: list[SpanRecord], thread_id: str, kind: str) -> list[SpanRecord]:
    return [
        s
        for s in _thread(spans, thread_id)
        if s.name == names.SPAN_RESUME and s.attributes.get(names.RESUME_KIND) == kind
    ]


def _run_outcome(spans: list[SpanRecord], trace_id: str) -> object:
    (run,) = [s for s in spans if names.is_run_span_name(s.name) and s.trace_id == trace_id]
    return run.attributes.get(names.RUN_OUTCOME)


def test_demo_finishes_within_a_minute_and_says_so(demo: Demo) -> None:
    assert demo.wall_s < WALL_LIMIT_S, demo.wall_s
    assert "done in" in demo.stdout
    assert "demo problem" not in demo.stdout
    assert "\x1b[" not in demo.stdout  # NO_COLOR
    assert not (demo.out / "spans-old-child.jsonl").exists()
    # a progress line per step, the child's relayed with its pid
    assert "tool issue_refund: refund R-" in demo.stdout
    assert "[pid " in demo.stdout and "tool lookup_order" in demo.stdout


def test_every_process_has_its_own_span_file(demo: Demo) -> None:
    main, child = demo.main_spans, demo.child_spans
    assert main and child
    main_pids = {s.resource.get("process.pid") for s in main}
    child_pids = {s.resource.get("process.pid") for s in child}
    assert len(main_pids) == len(child_pids) == 1
    assert main_pids != child_pids
    assert {s.resource.get(ROLE_ATTRIBUTE) for s in child} == {CHILD_ROLE}
    assert all(
        s.resource.get("service.name") == "langgraph-checkpoint-otel-demo" for s in main + child
    )
    # the child worked only on the crash thread, and never finished its run
    assert {s.attributes.get(names.THREAD_ID) for s in child} == {CRASH_THREAD}
    assert not any(names.is_run_span_name(s.name) for s in child)
    for span in [s for s in main + child if s.name == names.SPAN_PUT]:
        assert isinstance(span.attributes.get(names.STATE_HASH), str), span


def test_crash_resume_links_to_the_put_span_of_the_killed_process(demo: Demo) -> None:
    main, child = demo.main_spans, demo.child_spans
    (resume,) = _resumes(main, CRASH_THREAD, "crash")
    child_puts = {(s.trace_id, s.span_id): s for s in child if s.name == names.SPAN_PUT}
    (link,) = resume.links
    assert link.attributes.get(names.LINK_TYPE) == "checkpoint_writer"
    writer = child_puts.get((link.trace_id, link.span_id))
    assert writer is not None, (link, list(child_puts))
    assert writer.resource.get("process.pid") != resume.resource.get("process.pid")
    assert resume.trace_id != writer.trace_id  # the resumed run is a trace of its own
    assert resume.attributes.get(names.RESUME_WRITER_TRACE_ID) == writer.trace_id
    # it loaded the newest checkpoint the child wrote (lookup_order's result, step 2)
    newest = max(child_puts.values(), key=lambda s: s.start_time_unix_nano)
    assert writer is newest
    assert resume.attributes.get(names.RESUME_FROM_CHECKPOINT_ID) == writer.attributes.get(
        names.CHECKPOINT_ID
    )
    assert writer.attributes.get(names.NODES) == ("tools",)
    # and the resumed run finished the thread in this process
    assert _run_outcome(main, resume.trace_id) == "finished"
    assert "SIGKILL" in demo.stdout and "resume kind=crash" in demo.stdout


def test_approval_interrupt_is_resumed_with_a_command(demo: Demo) -> None:
    spans = _thread(demo.main_spans, APPROVAL_THREAD)
    (resume,) = _resumes(spans, APPROVAL_THREAD, "interrupt")
    outcomes = {
        (s.attributes.get(names.TASK_NODE), s.attributes.get(names.TASK_OUTCOME))
        for s in spans
        if s.name == names.SPAN_PUT_WRITES
    }
    assert ("approve", "interrupt") in outcomes
    assert "resume" in {outcome for _, outcome in outcomes}  # the Command's resume value
    assert resume.attributes.get(names.RESUME_TASKS) == ("approve",)
    assert _run_outcome(spans, resume.trace_id) == "finished"
    # its link leads to the run that stopped in interrupt()
    assert _run_outcome(spans, resume.links[0].trace_id) == "interrupted"


def test_fork_diverges_online_and_offline(demo: Demo) -> None:
    spans = _thread(demo.main_spans, FORK_THREAD)
    (resume,) = _resumes(spans, FORK_THREAD, "fork")
    flagged = [
        s
        for s in spans
        if s.name == names.SPAN_PUT
        and s.trace_id == resume.trace_id
        and s.attributes.get(names.DIVERGENCE_DETECTED) is True
    ]
    kinds = {
        e.attributes.get(names.DIVERGENCE_KIND)
        for s in flagged
        for e in s.events
        if e.name == names.EVENT_DIVERGENCE
    }
    assert {"state", "duplicate_tool_call"} <= kinds, kinds
    # only the fork diverged
    others = [s for t in (CRASH_THREAD, APPROVAL_THREAD) for s in _thread(demo.main_spans, t)]
    assert not [s for s in others if s.attributes.get(names.DIVERGENCE_DETECTED)]

    with SqliteSaver.from_conn_string(str(demo.out / "demo.sqlite")) as saver:
        config: RunnableConfig = {"configurable": {"thread_id": FORK_THREAD}}
        findings = divergences(history_records(saver.list(config)), POLICY)
    assert findings
    duplicates = [f.actual for f in findings if f.kind == "duplicate_tool_call"]
    assert duplicates == ["issue_refund"]  # check_stock is declared repeatable
    assert "state" in {f.kind for f in findings}


def test_the_ledger_shows_the_refund_paid_twice(demo: Demo) -> None:
    with sqlite3.connect(demo.out / "shop.sqlite") as db:
        rows = db.execute("SELECT order_id, thread_id FROM refunds").fetchall()
    paid = Counter(order for order, _ in rows)
    assert paid == {THREAD_ORDERS[t]: 2 if t == FORK_THREAD else 1 for t in THREADS}
    # the crash thread's refund was paid once, by the resuming process
    assert {thread for _, thread in rows} == set(THREADS)
    assert "paid again" in demo.stdout.split("ledger", 1)[1]


def test_metrics_count_the_resumes_and_divergences(demo: Demo) -> None:
    metrics = read_metrics(demo.out / "metrics.jsonl")
    resumes = Counter(
        {
            str(p.attributes[names.RESUME_KIND]): int(p.value)
            for p in metrics[names.METRIC_RESUMES]
            if isinstance(p, NumberPoint)
        }
    )
    assert resumes == {"crash": 1, "interrupt": 1, "fork": 1}
    diverged = {
        p.attributes[names.DIVERGENCE_KIND]
        for p in metrics[names.METRIC_DIVERGENCES]
        if isinstance(p, NumberPoint) and p.value
    }
    assert {"state", "duplicate_tool_call"} <= diverged
    # the main process's metrics (the killed child exported none)
    puts = [
        p
        for p in metrics[names.METRIC_OPERATION_DURATION]
        if isinstance(p, HistogramPoint) and p.attributes.get(names.OPERATION) == "put"
    ]
    put_spans = [s for s in demo.main_spans if s.name == names.SPAN_PUT]
    assert sum(p.count for p in puts) == len(put_spans)
    assert "resumes             crash=1, fork=1, interrupt=1" in demo.stdout


def test_read_back_inspector_and_where_to_look_next(demo: Demo) -> None:
    readback = demo.stdout.split("what the telemetry recorded", 1)[1]
    for thread in THREADS:
        assert f"thread {thread}" in readback
    assert "no end: the run span died with its process" in readback
    assert f"in {CHILD_ROLE} pid" in readback
    inspector = demo.stdout.split("\ninspector\n", 1)[1].split("where to look next", 1)[0]
    if "inspector not available" not in inspector:
        assert (demo.out / "report.html").exists()
        for thread in THREADS:
            assert f"langgraph-otel diverge {thread}" in inspector
    next_steps = demo.stdout.split("where to look next", 1)[1]
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 make demo" in next_steps
    assert "langgraph-otel threads -s sqlite:///" in next_steps
    for doc in ("docs/resumes.md", "docs/telemetry.md", "docs/inspector.md"):
        assert doc in next_steps


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
    """With OTEL_EXPORTER_OTLP_ENDPOINT set, both processes send OTLP http/protobuf there, no
    span file is written and the read-back says it is not available."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        proc = subprocess.run(
            [sys.executable, str(DEMO), "--out", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=WALL_LIMIT_S + 30,
            env=_env(OTEL_EXPORTER_OTLP_ENDPOINT=endpoint),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"OTLP http/protobuf at {endpoint}" in proc.stdout
    assert "read-back is only available" in proc.stdout
    assert not list(tmp_path.glob("spans*.jsonl"))

    span_names: set[str] = set()
    roles: set[str] = set()
    metric_names: set[str] = set()
    for path, body in _Receiver.received:
        if path == "/v1/traces":
            traces = ExportTraceServiceRequest.FromString(body)
            for rs in traces.resource_spans:
                roles.update(
                    a.value.string_value for a in rs.resource.attributes if a.key == ROLE_ATTRIBUTE
                )
                span_names.update(s.name for ss in rs.scope_spans for s in ss.spans)
        elif path == "/v1/metrics":
            request = ExportMetricsServiceRequest.FromString(body)
            metric_names.update(
                m.name
                for rm in request.resource_metrics
                for sm in rm.scope_metrics
                for m in sm.metrics
            )
    assert {names.SPAN_PUT, names.SPAN_PUT_WRITES, names.SPAN_RESUME} <= span_names
    assert roles == {"main", CHILD_ROLE}
    assert {names.METRIC_RESUMES, names.METRIC_DIVERGENCES} <= metric_names


def test_every_inspector_command_works_on_the_demo_output(
    demo: Demo, capsys: pytest.CaptureFixture[str]
) -> None:
    """The inspector on what `make demo` leaves: its database and its span files."""
    import json

    from refund_demo import FORK_THREAD, THREADS

    from langgraph.checkpoint.otel.inspector.cli import main

    sources = ["-s", f"sqlite:///{demo.out / 'demo.sqlite'}", "-s", str(demo.out)]

    def run(*args: str) -> tuple[int, object]:
        code = main([*args, *sources, "--json"])
        return code, json.loads(capsys.readouterr().out)

    code, threads = run("threads")
    assert code == 0
    assert {t["thread_id"] for t in threads["threads"]} >= set(THREADS)
    for thread in THREADS:
        for command in ("timeline", "diff", "resumes", "growth"):
            code, view = run(command, thread)
            assert code == 0 and view, (command, thread)
        code, resumes = run("resumes", thread)
        assert len(resumes["resumes"]) == 1
        code, _ = run("diverge", thread)
        assert code == (1 if thread == FORK_THREAD else 0), thread
    code, _ = run("report", FORK_THREAD, "--html", str(demo.out / "again.html"))
    assert code == 0 and (demo.out / "again.html").stat().st_size > 10_000
