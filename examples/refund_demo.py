"""The life of a long-running refund agent, told through its checkpoints and their telemetry.

    python examples/refund_demo.py [--out DIR] [--db PATH]    # or: make demo

A refund agent (``refund_agent.py``, beside this file: a scripted model, ``lookup_order``, a
non-deterministic ``check_stock``, ``issue_refund`` and ``send_email`` with real side effects in
a shop database) runs on ``instrument(SqliteSaver(...))`` through three threads:

1. **Crash across processes.** A worker process runs ``order-1001-crash`` and is killed with
   SIGKILL right after a step's checkpoint is stored; this process resumes the thread with
   ``invoke(None)``. The library classifies the resume ``crash`` and links it to the put span
   the dead process wrote, through the trace context stored in the checkpoint.
2. **Human in the loop.** ``order-1002-approval`` is a large refund: the run stops in
   ``interrupt()`` until a supervisor approves it with ``Command(resume=...)``.
3. **Time travel.** ``order-1003-fork`` finishes, then is replayed from the checkpoint before
   ``check_stock`` ran. The warehouse has changed since, the run diverges (the ``state`` and
   ``trajectory`` detectors), and the refund is paid a second time (``duplicate_tool_call``;
   the shop's ledger shows both payments).

Each process exports its spans to its own file in DIR (``spans.jsonl`` for this one,
``spans-<role>.jsonl`` for the workers it starts) and this one its metrics to
``metrics.jsonl`` (OTLP/JSON lines), or everything to ``OTEL_EXPORTER_OTLP_ENDPOINT`` when set
(http/protobuf, or gRPC when ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``). What the end of the run
prints is read back from those files, the checkpoint database and the shop database; then the
inspector CLI shows each thread (timeline, resumes, divergences) and writes an HTML report of
the fork (``show_inspector``), and the demo lists where to look next.

Needs the ``sqlite`` and ``otlp`` extras and langchain-core.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from refund_agent import (
    GRAPH_NAME,
    ORDERS,
    READ_ONLY_TOOLS,
    AgentState,
    Shop,
    ask,
    build_graph,
    money,
)

from langgraph.checkpoint.otel import DivergencePolicy, instrument, names
from langgraph.checkpoint.otel.analysis import Finding, divergences, history_records
from langgraph.checkpoint.otel.export import (
    HistogramPoint,
    MetricPoint,
    NumberPoint,
    OtlpJsonMetricExporter,
    OtlpJsonSpanExporter,
    SpanRecord,
    merge_histograms,
    read_metrics,
    read_spans,
)

SERVICE_NAME = "langgraph-checkpoint-otel-demo"
ROLE_ATTRIBUTE = "demo.role"
"""Resource attribute naming the demo process that exported a span (main, child-crash)."""
MAIN_ROLE = "main"
CHILD_ROLE = "child-crash"
SPANS_FILE = "spans.jsonl"
METRICS_FILE = "metrics.jsonl"
SHOP_FILE = "shop.sqlite"
REPORT_FILE = "report.html"
DEFAULT_OUT = Path(".demo")
DB_FILE = "demo.sqlite"
READY = "DEMO-CHECKPOINT-STORED"
"""What the child prints once the checkpoint it will be killed after is stored."""
CHILD_TIMEOUT_S = 30.0

CRASH_THREAD = "order-1001-crash"
APPROVAL_THREAD = "order-1002-approval"
FORK_THREAD = "order-1003-fork"
THREADS = (CRASH_THREAD, APPROVAL_THREAD, FORK_THREAD)
THREAD_ORDERS = {CRASH_THREAD: "A-1001", APPROVAL_THREAD: "A-1002", FORK_THREAD: "A-1003"}

POLICY = DivergencePolicy(repeatable_tools=READ_ONLY_TOOLS)
"""Read-only tools may run again; a refund or an email run twice is a `duplicate_tool_call`."""

# Checkpoint operations on a local SQLite file take well under a millisecond: the SDK's default
# histogram buckets (0, 5, 10, 25, ... for milliseconds) would put every one in the first bucket.
DURATION_BUCKETS_S: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.00075,
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


def say(line: str = "", indent: int = 0) -> None:
    """One progress line, flushed at once (a child's lines interleave with ours)."""
    print(" " * indent + line, flush=True)


class Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def error(self, text: str) -> str:
        return self._wrap("1;31", text)

    def warn(self, text: str) -> str:
        return self._wrap("1;33", text)

    def good(self, text: str) -> str:
        return self._wrap("1;32", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)


def _short(value: object, n: int = 8) -> str:
    text = str(value)
    return text if len(text) <= n else text[:n] + "…"


def _text(attributes: Mapping[str, Any], key: str, default: str = "?") -> str:
    """An attribute value as text (arrays comma separated)."""
    value = attributes.get(key)
    if value is None:
        return default
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


# ----------------------------------------------------------------------------------------------
# Telemetry set-up (one per process)
# ----------------------------------------------------------------------------------------------


@dataclass
class Telemetry:
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    destination: str
    spans_path: Path | None
    metrics_path: Path | None

    def shutdown(self) -> None:
        """Flush and stop both providers: every span and the final metrics are exported."""
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def _otlp_exporters() -> tuple[SpanExporter, MetricExporter, str]:
    protocol = os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip().lower()
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        return GrpcSpanExporter(), GrpcMetricExporter(), f"OTLP grpc at {endpoint}"
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(), OTLPMetricExporter(), f"OTLP http/protobuf at {endpoint}"


def spans_file(role: str) -> str:
    return SPANS_FILE if role == MAIN_ROLE else f"spans-{role}.jsonl"


def setup_telemetry(out: Path, role: str) -> Telemetry:
    """SDK providers with the demo's resource (the process's role and pid), exporting to
    files or to OTLP. Only the main process exports metrics."""
    pid = os.getpid()
    resource = Resource.create(
        {
            "service.name": SERVICE_NAME,
            "service.instance.id": f"{role}-{pid}",
            "process.pid": pid,
            ROLE_ATTRIBUTE: role,
        }
    )
    spans_path: Path | None = None
    metrics_path: Path | None = None
    span_exporter: SpanExporter
    metric_exporter: MetricExporter
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        span_exporter, metric_exporter, destination = _otlp_exporters()
    else:
        spans_path, metrics_path = out / spans_file(role), out / METRICS_FILE
        span_exporter = OtlpJsonSpanExporter(spans_path)
        metric_exporter = OtlpJsonMetricExporter(metrics_path)
        destination = f"{out}/spans*.jsonl and {metrics_path} (OTLP/JSON lines)"
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    readers = []
    if role == MAIN_ROLE:
        # one export, at shutdown
        readers.append(
            PeriodicExportingMetricReader(metric_exporter, export_interval_millis=600_000)
        )
    else:
        # a process about to be killed never gets to export its metrics: the resume counter
        # is counted by the process that resumes
        metrics_path = None
    meter_provider = MeterProvider(
        resource=resource,
        metric_readers=readers,
        views=[
            View(
                instrument_name=names.METRIC_OPERATION_DURATION,
                aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS_S),
            )
        ],
    )
    return Telemetry(tracer_provider, meter_provider, destination, spans_path, metrics_path)


Graph = CompiledStateGraph[AgentState, Any, AgentState, AgentState]


def compile_agent(
    saver: SqliteSaver,
    telemetry: Telemetry,
    shop: Shop,
    say_step: Callable[[str], None],
    *,
    before_model: Callable[[Sequence[AnyMessage]], None] | None = None,
    on_divergence: Callable[[Any], None] | None = None,
) -> Graph:
    return build_graph(shop, say_step, before_model=before_model).compile(
        name=GRAPH_NAME,
        checkpointer=instrument(
            saver,
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            divergence=POLICY,
            on_divergence=on_divergence,
        ),
    )


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _outcome(state: dict[str, Any]) -> str:
    if state.get("__interrupt__"):
        return "interrupted"
    return f"finished ({len(state.get('messages') or [])} messages)"


# ----------------------------------------------------------------------------------------------
# Live narration: what the library just recorded, as the run goes
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeenResume:
    thread_id: str
    kind: str
    from_checkpoint_id: str
    link_trace_id: str | None
    link_span_id: str | None


class Narrator(SpanProcessor):
    """Remembers each resume span this process ends (the demo prints what it says)."""

    def __init__(self) -> None:
        self.resumes: list[SeenResume] = []
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if span.name != names.SPAN_RESUME:
            return
        attributes = span.attributes or {}
        link = span.links[0].context if span.links else None
        seen = SeenResume(
            thread_id=str(attributes.get(names.THREAD_ID, "")),
            kind=str(attributes.get(names.RESUME_KIND, "?")),
            from_checkpoint_id=str(attributes.get(names.RESUME_FROM_CHECKPOINT_ID, "")),
            link_trace_id=f"{link.trace_id:032x}" if link is not None else None,
            link_span_id=f"{link.span_id:016x}" if link is not None else None,
        )
        with self._lock:
            self.resumes.append(seen)

    def last(self, thread_id: str) -> SeenResume | None:
        with self._lock:
            found = [r for r in self.resumes if r.thread_id == thread_id]
        return found[-1] if found else None

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _say_resume(narrator: Narrator, thread_id: str, style: Style) -> SeenResume | None:
    seen = narrator.last(thread_id)
    if seen is None:
        say(style.warn("otel: no resume span recorded"), 6)
        return None
    link = (
        f"span link → trace {_short(seen.link_trace_id)} span {_short(seen.link_span_id)}"
        if seen.link_trace_id
        else "no span link"
    )
    say(
        style.bold(f"otel: resume kind={seen.kind}")
        + f" from checkpoint {_short(seen.from_checkpoint_id, 13)}, {link}",
        6,
    )
    return seen


def _describe_finding(finding: Finding) -> str:
    text = f"{finding.kind} at step {finding.step}"
    if finding.node:
        text += f" (node {finding.node}"
        text += f", channel {finding.channel})" if finding.channel else ")"
    if finding.kind == "state":
        text += f": hash {_short(finding.expected)} → {_short(finding.actual)}"
    elif finding.kind == "trajectory" and finding.expected == finding.actual:
        text += f": {finding.actual} called with other arguments"
    elif finding.kind == "trajectory":
        text += f": {finding.expected} → {finding.actual}"
    elif finding.kind == "duplicate_tool_call":
        text += f": {finding.actual} answered again"
    return text


# ----------------------------------------------------------------------------------------------
# Act 1: a worker process killed with SIGKILL, resumed here
# ----------------------------------------------------------------------------------------------


@dataclass
class CrashEvidence:
    child_pid: int
    checkpoint_id: str
    traceparent: str
    resume: SeenResume | None = None


def child_crash(out: Path, db: Path, thread_id: str) -> int:
    """The worker process of act 1: runs the thread until the model call after
    ``lookup_order``, reports the stored checkpoint, then hangs until the parent kills it."""
    telemetry = setup_telemetry(out, CHILD_ROLE)
    shop = Shop(out / SHOP_FILE)
    config = _config(thread_id)
    with SqliteSaver.from_conn_string(str(db)) as saver:

        def before_model(messages: Sequence[AnyMessage]) -> None:
            last = messages[-1]
            if not (isinstance(last, ToolMessage) and last.name == "lookup_order"):
                return
            # The checkpoint with lookup_order's result is stored (durability="sync" below:
            # each step's checkpoint is written before the next step starts). Read it back
            # through the bare saver: its metadata carries the put span's trace context.
            stored = saver.get_tuple(config)
            assert stored is not None
            stored_otel = stored.metadata.get(names.METADATA_KEY)
            carrier = stored_otel if isinstance(stored_otel, dict) else {}
            # The demo's choice, not the library's need: this process knows it is about to be
            # killed, so it flushes its finished spans (the put span among them) before it
            # says so. A real process dies without warning and loses whatever its batch span
            # processor still holds; the resume's link survives anyway, because the trace
            # context travels in the checkpoint (see docs/resumes.md, "Limits").
            telemetry.tracer_provider.force_flush()
            print(
                f"{READY} {stored.checkpoint['id']} {carrier.get('traceparent', '-')}",
                flush=True,
            )
            time.sleep(CHILD_TIMEOUT_S * 2)  # the model call that never returns: SIGKILL

        graph = compile_agent(
            saver,
            telemetry,
            shop,
            lambda line: print(line, flush=True),
            before_model=before_model,
        )
        graph.invoke(ask(THREAD_ORDERS[thread_id]), config, durability="sync")
    print("the child was not killed", flush=True)
    return 1


def act_crash(graph: Graph, out: Path, db: Path, narrator: Narrator, style: Style) -> CrashEvidence:
    thread_id = CRASH_THREAD
    say(style.bold(f"1. crash across processes: {thread_id}"))
    say(f"refund {THREAD_ORDERS[thread_id]}; a worker process runs the agent and dies", 3)
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child-crash",
        "--out",
        str(out),
        "--db",
        str(db),
        "--thread",
        thread_id,
    ]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    watchdog = threading.Timer(CHILD_TIMEOUT_S, child.kill)
    watchdog.start()
    say(f"worker pid {child.pid} started: {' '.join(command[1:4])} …", 3)
    ready: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith(READY):
                ready = line.split()[1:]
                break
            say(f"[pid {child.pid}] {line.rstrip()}", 6)
    finally:
        watchdog.cancel()
    if len(ready) != 2:
        child.kill()
        child.wait()
        raise RuntimeError(f"the worker exited ({child.returncode}) before its checkpoint")
    checkpoint_id, traceparent = ready
    say(
        f"[pid {child.pid}] checkpoint {_short(checkpoint_id, 13)} stored "
        f"(traceparent {traceparent}); now hanging in the next model call",
        6,
    )
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    say(
        style.error(f"SIGKILL → pid {child.pid}")
        + f" (exit {child.returncode}): no cleanup, no error recorded",
        3,
    )
    say(f"this process (pid {os.getpid()}) resumes: graph.invoke(None, config)", 3)
    state = graph.invoke(None, _config(thread_id))
    say(f"→ {_outcome(state)}", 6)
    evidence = CrashEvidence(child.pid, checkpoint_id, traceparent)
    evidence.resume = _say_resume(narrator, thread_id, style)
    writer_trace = traceparent.split("-")[1] if traceparent.count("-") == 3 else ""
    if evidence.resume is not None and evidence.resume.link_trace_id == writer_trace:
        say(style.good(f"✓ linked to the put span the dead pid {child.pid} wrote"), 6)
    else:
        say(style.warn("✗ the resume is not linked to the worker's put span"), 6)
    return evidence


# ----------------------------------------------------------------------------------------------
# Act 2: an approval in interrupt(), resumed with Command(resume=...)
# ----------------------------------------------------------------------------------------------


def act_approval(graph: Graph, narrator: Narrator, style: Style) -> None:
    thread_id = APPROVAL_THREAD
    order = ORDERS[THREAD_ORDERS[thread_id]]
    say(style.bold(f"2. human in the loop: {thread_id}"))
    say(f"refund {order.order_id} of {money(order.amount_cents)}: above the limit", 3)
    state = graph.invoke(ask(order.order_id), _config(thread_id))
    for pending in state.get("__interrupt__") or ():
        say(f"interrupt(): {pending.value}", 6)
    say(f"→ {_outcome(state)}; the run's process may exit, the thread waits in SQLite", 6)
    decision = {"approved": True, "by": "supervisor"}
    say(f"a supervisor answers: graph.invoke(Command(resume={decision}), config)", 3)
    state = graph.invoke(Command(resume=decision), _config(thread_id))
    say(f"→ {_outcome(state)}", 6)
    _say_resume(narrator, thread_id, style)


# ----------------------------------------------------------------------------------------------
# Act 3: time travel to before check_stock; the replay diverges and refunds again
# ----------------------------------------------------------------------------------------------


def act_fork(graph: Graph, saver: SqliteSaver, narrator: Narrator, style: Style) -> list[Finding]:
    thread_id = FORK_THREAD
    config = _config(thread_id)
    say(style.bold(f"3. time travel: {thread_id}"))
    say(f"refund {THREAD_ORDERS[thread_id]}, start to finish", 3)
    state = graph.invoke(ask(THREAD_ORDERS[thread_id]), config)
    say(f"→ {_outcome(state)}", 6)
    earlier = None
    for snapshot in graph.get_state_history(config):
        messages = snapshot.values.get("messages") or []
        calls = getattr(messages[-1], "tool_calls", None) if messages else None
        if snapshot.next == ("tools",) and calls and calls[0]["name"] == "check_stock":
            earlier = snapshot
            break
    if earlier is None:
        raise RuntimeError("no checkpoint before check_stock in the thread's history")
    checkpoint_id = str(earlier.config["configurable"]["checkpoint_id"])
    step = (earlier.metadata or {}).get("step")
    say(
        f"back to checkpoint {_short(checkpoint_id, 13)} (step {step}, "
        "next: tools, before check_stock ran): graph.invoke(None, earlier.config)",
        3,
    )
    state = graph.invoke(None, earlier.config)
    say(f"→ {_outcome(state)}", 6)
    _say_resume(narrator, thread_id, style)
    findings = divergences(history_records(saver.list(config)), POLICY)
    say(
        f"offline: divergences(history_records(saver.list(config))) → {len(findings)} finding(s)",
        3,
    )
    for finding in findings:
        say(style.warn(_describe_finding(finding)), 6)
    return findings


# ----------------------------------------------------------------------------------------------
# Read back: the traces of each thread, from every process's span file
# ----------------------------------------------------------------------------------------------


def read_all_spans(out: Path) -> list[SpanRecord]:
    """Every span of every demo process (``spans*.jsonl`` in `out`)."""
    return [s for path in sorted(out.glob("spans*.jsonl")) for s in read_spans(path)]


def _process(span: SpanRecord) -> str:
    return f"{_text(span.resource, ROLE_ATTRIBUTE)} pid {_text(span.resource, 'process.pid')}"


def print_traces(spans: Sequence[SpanRecord], style: Style) -> None:
    """Per thread, one line per trace (a run): which process, how it started and ended, the
    nodes each checkpoint applied, the resume's link, the divergences flagged."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    runs: dict[str, dict[str, list[SpanRecord]]] = defaultdict(lambda: defaultdict(list))
    for span in spans:
        thread = span.attributes.get(names.THREAD_ID)
        if thread is not None:
            runs[str(thread)][span.trace_id].append(span)
    for thread in [t for t in THREADS if t in runs]:
        say()
        say(style.bold(f"thread {thread}"), 2)
        traces = sorted(
            runs[thread].values(), key=lambda ss: min(s.start_time_unix_nano for s in ss)
        )
        for trace_spans in traces:
            puts = sorted(
                (s for s in trace_spans if s.name == names.SPAN_PUT),
                key=lambda s: s.start_time_unix_nano,
            )
            resumes = [s for s in trace_spans if s.name == names.SPAN_RESUME]
            if not puts and not resumes:
                continue  # a get_state_history listing: no run
            run = next((s for s in trace_spans if names.is_run_span_name(s.name)), None)
            start = (
                f"resume kind={_text(resumes[0].attributes, names.RESUME_KIND)}"
                if resumes
                else "new input"
            )
            if run is not None:
                end = f"outcome={_text(run.attributes, names.RUN_OUTCOME)}"
            else:
                end = style.error("no end: the run span died with its process")
            say(f"trace {_short(trace_spans[0].trace_id)} in {_process(trace_spans[0])}", 4)
            say(f"{start} → {end}", 6)
            steps = [
                _text(p.attributes, names.NODES, "") or f"({_text(p.attributes, names.SOURCE)})"
                for p in puts
            ]
            say("checkpoints: " + " → ".join(steps), 6)
            for resume in resumes:
                for link in resume.links:
                    target = by_id.get((link.trace_id, link.span_id))
                    where = (
                        f"put step={_text(target.attributes, names.STEP)} in {_process(target)}"
                        if target is not None
                        else "a span no file holds"
                    )
                    say(f"link → trace {_short(link.trace_id)}: {where}", 6)
            for put in puts:
                for event in put.events:
                    if event.name == names.EVENT_DIVERGENCE:
                        a = event.attributes
                        say(
                            style.warn(
                                f"divergence {_text(a, names.DIVERGENCE_KIND)} "
                                f"step={_text(a, names.DIVERGENCE_STEP)} "
                                f"node={_text(a, names.DIVERGENCE_NODE)}"
                            ),
                            6,
                        )


# ----------------------------------------------------------------------------------------------
# Metric totals, from exported metrics only
# ----------------------------------------------------------------------------------------------


def _where(points: Sequence[MetricPoint], key: str, value: str) -> list[MetricPoint]:
    return [p for p in points if p.attributes.get(key) == value]


def _count(points: Sequence[MetricPoint]) -> int:
    total = 0
    for p in points:
        total += p.count if isinstance(p, HistogramPoint) else int(p.value)
    return total


def _ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.2f} ms"


def _by(metrics: dict[str, list[MetricPoint]], metric: str, key: str) -> str:
    counts: Counter[str] = Counter()
    for p in metrics.get(metric, []):
        if isinstance(p, NumberPoint):
            counts[str(p.attributes.get(key, "?"))] += int(p.value)
    return ", ".join(f"{k}={n}" for k, n in sorted(counts.items())) or "none"


def print_metric_totals(metrics: dict[str, list[MetricPoint]]) -> None:
    durations = metrics.get(names.METRIC_OPERATION_DURATION, [])
    by_op = {
        op: _count(_where(durations, names.OPERATION, op)) for op in ("put", "put_writes", "get")
    }
    say(
        f"checkpoint writes   {by_op['put']} puts, {by_op['put_writes']} put_writes, "
        f"{by_op['get']} loads",
        2,
    )
    say(f"task outcomes       {_by(metrics, names.METRIC_TASK_OUTCOMES, names.TASK_OUTCOME)}", 2)
    say(f"resumes             {_by(metrics, names.METRIC_RESUMES, names.RESUME_KIND)}", 2)
    say(
        f"divergences         {_by(metrics, names.METRIC_DIVERGENCES, names.DIVERGENCE_KIND)}",
        2,
    )
    puts = [p for p in _where(durations, names.OPERATION, "put") if isinstance(p, HistogramPoint)]
    if puts:
        merged = merge_histograms(puts, {names.OPERATION: "put"})
        say(
            f"put latency         p50 ≈ {_ms(merged.quantile(0.5))}, "
            f"p95 ≈ {_ms(merged.quantile(0.95))}, max {_ms(merged.max)}",
            2,
        )


# ----------------------------------------------------------------------------------------------
# The ledger: side effects, from the shop database
# ----------------------------------------------------------------------------------------------


def print_ledger(shop: Shop, style: Style) -> list[str]:
    """The refunds paid; returns the orders refunded more than once."""
    refunds = shop.refunds()
    paid: Counter[str] = Counter()
    for r in refunds:
        paid[r.order_id] += 1
        line = (
            f"R-{r.refund_id}  {r.order_id}  {money(r.amount_cents):>8}  "
            f"thread {r.thread_id:<20} pid {r.pid}"
        )
        if paid[r.order_id] > 1:
            line = style.error(
                f"{line}  ← paid again: {r.order_id} refunded {paid[r.order_id]} times"
            )
        say(line, 2)
    for recipient, subject, _ in shop.emails():
        say(f"email to {recipient}: {subject}", 2)
    return sorted(order for order, n in paid.items() if n > 1)


# ----------------------------------------------------------------------------------------------
# The inspector, and where to look next
# ----------------------------------------------------------------------------------------------


def show_inspector(
    db: Path,
    out_dir: Path,
    threads: Sequence[str],
    report_thread: str | None = None,
    style: Style | None = None,
) -> Path | None:
    """Run the inspector (``python -m langgraph.checkpoint.otel``, the `langgraph-otel`
    command) on each thread (timeline, resumes, diverge) and write the HTML report of
    `report_thread` (default: the last thread). Returns the report's path, or None when the
    inspector is not installed."""
    if importlib.util.find_spec("typer") is None or importlib.util.find_spec("jinja2") is None:
        say("inspector not available: install the [inspector] extra (README, Install)", 2)
        return None
    dim = (style or Style(False)).dim
    sources = ["-s", f"sqlite:///{db}"]
    if any(out_dir.glob("spans*.jsonl")):
        sources += ["-s", str(out_dir)]

    def run(args: list[str]) -> int:
        say()
        say(dim(f"$ langgraph-otel {' '.join(args)}"), 2)
        sys.stdout.flush()
        code = subprocess.run([sys.executable, "-m", "langgraph.checkpoint.otel", *args]).returncode
        if code:
            say(dim(f"(exit {code})"), 2)
        return code

    # the tools the agent's divergence policy may run again (the same policy as online)
    repeatable = [arg for tool in sorted(POLICY.repeatable_tools) for arg in ("--repeatable", tool)]
    for thread in threads:
        run(["timeline", thread, *sources, *repeatable])
        run(["resumes", thread, *sources])
        run(["diverge", thread, *sources, *repeatable])  # exits 1 when it finds any
    report = out_dir / REPORT_FILE
    run(["report", report_thread or threads[-1], "--html", str(report), *sources, *repeatable])
    return report if report.exists() else None


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def where_next(db: Path, out: Path, report: Path | None, style: Style) -> None:
    cli = _shown(Path(sys.executable).parent / "langgraph-otel")
    source = f"-s sqlite:///{_shown(db)}"
    spans = f"-s {_shown(out)}"
    say(style.bold("where to look next"))
    if report is not None:
        say(f"the report      open {_shown(report)}  (thread {FORK_THREAD})", 2)
    else:
        say(f"the report      {_shown(out / REPORT_FILE)}, once the inspector is installed", 2)
    say("a collector     OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 make demo", 2)
    say(f"the inspector   {cli} threads {source}", 2)
    say(f"                {cli} timeline {CRASH_THREAD} {source} {spans}", 2)
    say(f"                {cli} resumes {CRASH_THREAD} {source} {spans}", 2)
    say(f"                {cli} diverge {FORK_THREAD} {source} {spans}", 2)
    say(f"the ledger      sqlite3 {_shown(out / SHOP_FILE)} 'SELECT * FROM refunds'", 2)
    say(
        "the docs        docs/resumes.md (resume kinds, following the link), "
        "docs/divergence.md, docs/telemetry.md, docs/inspector.md",
        2,
    )


# ----------------------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    crash: CrashEvidence | None = None
    findings: list[Finding] = field(default_factory=list)


def run_story(db: Path, out: Path, telemetry: Telemetry, shop: Shop, style: Style) -> Outcome:
    narrator = Narrator()
    telemetry.tracer_provider.add_span_processor(narrator)
    outcome = Outcome()

    def on_divergence(finding: Any) -> None:
        say(style.warn(f"otel: divergence flagged: {_describe_finding(finding)}"), 6)

    with SqliteSaver.from_conn_string(str(db)) as saver:
        for thread in THREADS:
            saver.delete_thread(thread)  # uninstrumented: a clean slate
        graph = compile_agent(
            saver, telemetry, shop, lambda line: say(line, 6), on_divergence=on_divergence
        )
        outcome.crash = act_crash(graph, out, db, narrator, style)
        say()
        act_approval(graph, narrator, style)
        say()
        outcome.findings = act_fork(graph, saver, narrator, style)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python examples/refund_demo.py",
        description="Run an instrumented refund agent on SQLite through a crash, an approval "
        "and a time-travel fork, and show what its telemetry recorded.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory for the span, metric and shop files (default: .demo)",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="SQLite checkpoint database (default: OUT/demo.sqlite, recreated on every run; "
        "in a database given here only the demo's threads are replaced)",
    )
    parser.add_argument("--child-crash", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--thread", default=CRASH_THREAD, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    db: Path = args.db if args.db is not None else out / DB_FILE
    if args.child_crash:
        return child_crash(out, db, args.thread)

    started = time.perf_counter()
    for stale in [*out.glob("spans*.jsonl"), out / METRICS_FILE, out / REPORT_FILE]:
        stale.unlink(missing_ok=True)
    if args.db is None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    shop = Shop(out / SHOP_FILE)
    shop.reset()

    style = Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    telemetry = setup_telemetry(out, MAIN_ROLE)
    say(style.bold("langgraph-checkpoint-otel demo: a refund agent's long life"))
    say(f"checkpoints  instrument(SqliteSaver) on {db}", 2)
    say(f"telemetry    {telemetry.destination}", 2)
    say(f"side effects {shop.path} (refund ledger, email outbox, warehouse stock)", 2)
    say()
    try:
        outcome = run_story(db, out, telemetry, shop, style)
    finally:
        telemetry.shutdown()

    problems: list[str] = []
    if outcome.crash is None or outcome.crash.resume is None:
        problems.append("no crash resume was recorded")
    elif outcome.crash.resume.kind != "crash":
        problems.append(f"the crash resume was classified {outcome.crash.resume.kind!r}")
    if not outcome.findings:
        problems.append(f"no divergence found on {FORK_THREAD}")

    say()
    if telemetry.spans_path is not None and telemetry.metrics_path is not None:
        spans = read_all_spans(out)
        say(
            style.bold("what the telemetry recorded")
            + style.dim(f"  (read back from {out}/spans*.jsonl: {len(spans)} spans)")
        )
        print_traces(spans, style)
        say()
        say(style.bold("metrics") + style.dim(f"  (read back from {telemetry.metrics_path})"))
        print_metric_totals(read_metrics(telemetry.metrics_path))
    else:
        say(
            f"Spans and metrics went to {telemetry.destination} (service.name={SERVICE_NAME}); "
            "the read-back is only available when exporting to files "
            "(unset OTEL_EXPORTER_OTLP_ENDPOINT)."
        )
    say()
    say(style.bold("ledger") + style.dim(f"  (read back from {shop.path})"))
    twice = print_ledger(shop, style)
    if ORDERS[THREAD_ORDERS[FORK_THREAD]].order_id not in twice:
        problems.append("the fork did not pay the refund a second time")
    say()
    say(style.bold("inspector"))
    report = show_inspector(db, out, THREADS, FORK_THREAD, style)
    say()
    where_next(db, out, report, style)
    say()
    for problem in problems:
        say(style.error(f"demo problem: {problem}"))
    say(style.dim(f"done in {time.perf_counter() - started:.2f}s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
