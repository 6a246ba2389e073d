"""A small support agent on SQLite, instrumented, with a timeline read back from its telemetry.

    python -m langgraph.checkpoint.otel.demo [--out DIR] [--db PATH]

Three threads run through ``instrument(SqliteSaver(...))``: a tool call and a follow-up turn,
a tool that times out once and is resumed with ``invoke(None)``, and a sensitive tool call that
waits for approval with ``interrupt()`` and is resumed with ``Command(resume=...)``. The model
and the tools are scripted: no network, no LLM.

Telemetry goes to ``DIR/spans.jsonl`` and ``DIR/metrics.jsonl`` (OTLP/JSON lines), or, when
``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, to that OTLP endpoint (http/protobuf, or gRPC when
``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``). The per-thread timeline and the metric totals printed at
the end are built only from the exported files.

Needs the ``sqlite`` and ``otlp`` extras and langchain-core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.otlp_json import (
    Attributes,
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
DEMO_SCOPE = "langgraph.checkpoint.otel.demo"
SPAN_RUN = "demo.run"
ATTR_RUN_INPUT = "demo.run.input"
ATTR_RUN_RESULT = "demo.run.result"
SPANS_FILE = "spans.jsonl"
METRICS_FILE = "metrics.jsonl"
DEFAULT_OUT = Path(".demo")
DB_FILE = "demo.sqlite"

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

# ----------------------------------------------------------------------------------------------
# The agent: a scripted model, two tools, an approval step
# ----------------------------------------------------------------------------------------------


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    approvals: list[str]


SENSITIVE_TOOLS = frozenset({"send_email"})
FORECASTS = {"paris": "light rain, 14°C", "lisbon": "sunny, 22°C"}


def search(query: str) -> str:
    """A scripted search backend."""
    for city, forecast in FORECASTS.items():
        if city in query.lower():
            return f"Forecast for {city.title()}: {forecast}."
    return "No results."


def send_email(to: str, subject: str) -> str:
    """A scripted mail gateway."""
    return f"Sent '{subject}' to {to}."


TOOLS: dict[str, Callable[..., str]] = {"search": search, "send_email": send_email}


@dataclass
class Faults:
    """Tools that fail on their first call in the given threads (a flaky backend)."""

    fail_once: set[tuple[str, str]] = field(default_factory=set)

    def check(self, thread_id: str, tool: str) -> None:
        if (thread_id, tool) in self.fail_once:
            self.fail_once.discard((thread_id, tool))
            raise TimeoutError(f"{tool} backend timed out")


def scripted_model(messages: Sequence[AnyMessage]) -> AIMessage:
    """What a chat model would answer, decided by the last message. Ids are explicit, so a
    replay produces equal state."""
    turn = len(messages)
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done. {last.content}", id=f"ai-{turn}")
    text = str(last.content).lower()
    if "email" in text:
        call = {"to": "team@example.com", "subject": "Weekly report"}
        return AIMessage(
            "",
            id=f"ai-{turn}",
            tool_calls=[{"name": "send_email", "args": call, "id": f"call-{turn}"}],
        )
    if "weather" in text:
        return AIMessage(
            "",
            id=f"ai-{turn}",
            tool_calls=[{"name": "search", "args": {"query": text}, "id": f"call-{turn}"}],
        )
    return AIMessage("You're welcome!", id=f"ai-{turn}")


def build_graph(faults: Faults) -> StateGraph[AgentState]:
    """START -> agent -> [approve ->] tools -> agent -> ... -> END."""

    def agent(state: AgentState) -> dict[str, Any]:
        return {"messages": [scripted_model(state["messages"])]}

    def approve(state: AgentState) -> dict[str, Any]:
        last = state["messages"][-1]
        tools = [c["name"] for c in getattr(last, "tool_calls", [])]
        decision = interrupt({"approve_tools": tools})
        return {"approvals": [*state.get("approvals", []), f"{','.join(tools)}:{decision}"]}

    def tools(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        thread_id = str(config["configurable"]["thread_id"])
        last = state["messages"][-1]
        replies: list[AnyMessage] = []
        for call in getattr(last, "tool_calls", []):
            faults.check(thread_id, call["name"])
            tool = TOOLS[call["name"]]
            replies.append(
                ToolMessage(
                    tool(**call["args"]),
                    name=call["name"],
                    tool_call_id=call["id"],
                    id=f"tool-{len(state['messages'])}",
                )
            )
        return {"messages": replies}

    def route(state: AgentState) -> str:
        calls = getattr(state["messages"][-1], "tool_calls", None) or []
        if any(c["name"] in SENSITIVE_TOOLS for c in calls):
            return "approve"
        return "tools" if calls else END

    builder = StateGraph(AgentState)
    builder.add_node("agent", agent)
    builder.add_node("approve", approve)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["approve", "tools", END])
    builder.add_edge("approve", "tools")
    builder.add_edge("tools", "agent")
    return builder


# ----------------------------------------------------------------------------------------------
# Telemetry set-up
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


def setup_telemetry(out: Path) -> Telemetry:
    """SDK providers with the demo's resource, exporting to files or to OTLP."""
    resource = Resource.create({"service.name": SERVICE_NAME})
    spans_path: Path | None = None
    metrics_path: Path | None = None
    span_exporter: SpanExporter
    metric_exporter: MetricExporter
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        span_exporter, metric_exporter, destination = _otlp_exporters()
    else:
        spans_path, metrics_path = out / SPANS_FILE, out / METRICS_FILE
        span_exporter = OtlpJsonSpanExporter(spans_path)
        metric_exporter = OtlpJsonMetricExporter(metrics_path)
        destination = f"{spans_path} and {metrics_path} (OTLP/JSON lines)"
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    meter_provider = MeterProvider(
        resource=resource,
        # one export, at shutdown
        metric_readers=[
            PeriodicExportingMetricReader(metric_exporter, export_interval_millis=600_000)
        ],
        views=[
            View(
                instrument_name=names.METRIC_OPERATION_DURATION,
                aggregation=ExplicitBucketHistogramAggregation(DURATION_BUCKETS_S),
            )
        ],
    )
    return Telemetry(tracer_provider, meter_provider, destination, spans_path, metrics_path)


# ----------------------------------------------------------------------------------------------
# Running the scenarios
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    thread_id: str
    title: str


SCENARIOS = (
    Scenario("weather", "a search tool call, then a follow-up turn"),
    Scenario("flaky-search", "search times out once; resumed with invoke(None)"),
    Scenario("approval", "send_email waits in interrupt(); resumed with Command(resume=...)"),
)


@contextmanager
def _run_span(tracer: Tracer, thread_id: str, kind: str) -> Iterator[dict[str, str]]:
    """One application-level span per graph invocation: the checkpoint spans become its
    children. Attributes are content-free (what kind of input, how the run ended)."""
    result: dict[str, str] = {}
    with tracer.start_as_current_span(
        SPAN_RUN,
        attributes={names.THREAD_ID: thread_id, ATTR_RUN_INPUT: kind},
        record_exception=False,
    ) as span:
        try:
            yield result
        except Exception as exc:
            span.set_attribute(ATTR_RUN_RESULT, f"raised {type(exc).__name__}")
            raise
        span.set_attribute(ATTR_RUN_RESULT, result.get("result", "done"))


def _outcome(state: dict[str, Any]) -> str:
    if state.get("__interrupt__"):
        return "interrupted"
    messages = state.get("messages") or []
    return f"finished ({len(messages)} messages)"


def run_scenarios(saver: SqliteSaver, telemetry: Telemetry) -> None:
    faults = Faults({("flaky-search", "search")})
    graph = build_graph(faults).compile(
        checkpointer=instrument(
            saver,
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
        )
    )
    tracer = telemetry.tracer_provider.get_tracer(DEMO_SCOPE)

    def invoke(thread_id: str, kind: str, value: Any) -> None:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        with _run_span(tracer, thread_id, kind) as run:
            try:
                state = graph.invoke(value, config)
            except TimeoutError as exc:
                print(f"    invoke({kind}) -> raised {type(exc).__name__}: {exc}")
                run["result"] = f"raised {type(exc).__name__}"
                return
            run["result"] = _outcome(state)
            print(f"    invoke({kind}) -> {run['result']}")

    def ask(text: str, msg_id: str) -> dict[str, Any]:
        return {"messages": [HumanMessage(text, id=msg_id)]}

    weather, flaky, approval = SCENARIOS
    print(f"  {weather.thread_id}: {weather.title}")
    invoke(weather.thread_id, "input", ask("What's the weather in Paris?", "human-0"))
    invoke(weather.thread_id, "input", ask("Thanks!", "human-4"))

    print(f"  {flaky.thread_id}: {flaky.title}")
    invoke(flaky.thread_id, "input", ask("What's the weather in Lisbon?", "human-0"))
    invoke(flaky.thread_id, "None", None)

    print(f"  {approval.thread_id}: {approval.title}")
    invoke(approval.thread_id, "input", ask("Email the weekly report to the team", "human-0"))
    invoke(approval.thread_id, "Command(resume=...)", Command(resume="approve"))


# ----------------------------------------------------------------------------------------------
# The timeline, from exported spans only
# ----------------------------------------------------------------------------------------------


class Style:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def error(self, text: str) -> str:
        return self._wrap("1;31", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)


def human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def _short(value: object, n: int = 8) -> str:
    text = str(value)
    return text if len(text) <= n else text[:n] + "…"


def _text(attributes: Attributes, key: str, default: str = "?") -> str:
    value = attributes.get(key)
    if value is None:
        return default
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _list(value: object) -> str:
    items = value if isinstance(value, tuple) else ()
    return "[" + ", ".join(str(i) for i in items) + "]"


def _is_internal_channel(channel: str) -> bool:
    return channel.startswith(("branch:", "__")) or channel in ("agent", "approve", "tools")


def _channel_summaries(span: SpanRecord) -> str:
    parts: list[str] = []
    for event in span.events:
        if event.name != names.EVENT_CHANNEL:
            continue
        channel = str(event.attributes.get(names.CHANNEL_NAME, ""))
        summary = str(event.attributes.get(names.CHANNEL_SUMMARY, ""))
        if _is_internal_channel(channel) or not summary:
            continue
        parts.append(summary if channel == "messages" else f"{channel}: {summary}")
    return "; ".join(sorted(parts, key=lambda p: p[:1] not in "+-0123456789"))


def _describe(span: SpanRecord, style: Style) -> str:
    a = span.attributes
    error = ""
    if span.status_code == "ERROR":
        error = "  " + style.error(f"✗ {_text(a, names.ERROR_TYPE, 'error')}")
    if span.name == names.SPAN_PUT:
        step = _text(a, names.STEP)
        text = (
            f"put         step={step:<3} source={_text(a, names.SOURCE):<6} "
            f"nodes={_list(a.get(names.NODES))}"
        )
        if names.STATE_HASH in a:
            size = a.get(names.SIZE_BYTES)
            text += f"  hash={_short(a[names.STATE_HASH])}"
            if isinstance(size, int):
                text += f" size={human_bytes(size)}"
        summary = _channel_summaries(span)
        if summary:
            text += f"  {summary}"
        if names.RESUME_FROM_CHECKPOINT_ID in a:
            text += f"  (resumed from {_short(a[names.RESUME_FROM_CHECKPOINT_ID])})"
        return text + error
    if span.name == names.SPAN_PUT_WRITES:
        outcome = str(a.get(names.TASK_OUTCOME, "?"))
        shown = f"outcome={outcome}"
        if outcome == "error":
            shown = style.error("outcome=ERROR ✗")
        elif outcome in ("interrupt", "resume"):
            shown = style.bold(shown)
        return (
            f"put_writes  node={_text(a, names.TASK_NODE):<9} {shown}  "
            f"writes={_list(a.get(names.WRITES_CHANNELS))}" + error
        )
    if span.name == names.SPAN_RESUME:
        text = f"resume      kind={_text(a, names.RESUME_KIND)}"
        if names.RESUME_FROM_CHECKPOINT_ID in a:
            text += f" from={_short(a[names.RESUME_FROM_CHECKPOINT_ID])}"
        if names.RESUME_TASKS in a:
            text += f" rerun={_list(a[names.RESUME_TASKS])}"
        if span.links:
            text += f" link→{_short(span.links[0].span_id)}"
        return text + error
    if span.name == names.SPAN_GET:
        if names.CHECKPOINT_ID in a:
            return f"get         loaded step={_text(a, names.STEP)}" + error
        return "get         (no checkpoint yet)" + error
    short_name = span.name.removeprefix("langgraph.checkpoint.")
    return f"{short_name:<11} " + error


def _thread_of(span: SpanRecord, by_id: dict[str, SpanRecord]) -> str | None:
    thread = span.attributes.get(names.THREAD_ID)
    if thread is not None:
        return str(thread)
    parent = by_id.get(span.parent_span_id or "")
    return _thread_of(parent, by_id) if parent is not None else None


def print_timeline(spans: Sequence[SpanRecord], style: Style) -> None:
    by_id = {s.span_id: s for s in spans}
    threads: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        thread = _thread_of(span, by_id)
        threads[thread or "(no thread)"].append(span)
    for thread_spans in threads.values():
        thread_spans.sort(key=lambda s: (s.start_time_unix_nano, s.name != SPAN_RUN))
    order = sorted(threads, key=lambda t: threads[t][0].start_time_unix_nano)
    for thread in order:
        thread_spans = threads[thread]
        t0 = thread_spans[0].start_time_unix_nano
        puts = sum(1 for s in thread_spans if s.name == names.SPAN_PUT)
        runs = sum(1 for s in thread_spans if s.name == SPAN_RUN)
        print()
        print(style.bold(f"thread {thread}") + style.dim(f"  ({runs} runs, {puts} checkpoints)"))
        for span in thread_spans:
            offset = f"+{(span.start_time_unix_nano - t0) / 1e9:.3f}s"
            if span.name == SPAN_RUN:
                result = str(span.attributes.get(ATTR_RUN_RESULT, ""))
                if result.startswith("raised"):
                    result = style.error(result)
                print(
                    f"  {offset:>8}  "
                    + style.bold(f"run invoke({_text(span.attributes, ATTR_RUN_INPUT)})")
                    + f" -> {result}"
                    + style.dim(f"  trace {span.trace_id[:8]}… {span.duration_s * 1e3:.1f} ms")
                )
                continue
            print(f"  {offset:>8}    {_describe(span, style)}")


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


def print_metric_totals(metrics: dict[str, list[MetricPoint]]) -> None:
    durations = metrics.get(names.METRIC_OPERATION_DURATION, [])
    by_op = {
        op: _count(_where(durations, names.OPERATION, op)) for op in ("put", "put_writes", "get")
    }
    print(
        f"  checkpoint writes   {by_op['put']} puts, {by_op['put_writes']} put_writes, "
        f"{by_op['get']} loads"
    )
    outcomes: Counter[str] = Counter()
    for p in metrics.get(names.METRIC_TASK_OUTCOMES, []):
        if isinstance(p, NumberPoint):
            outcomes[str(p.attributes.get(names.TASK_OUTCOME, "?"))] += int(p.value)
    print(
        "  task outcomes       "
        + ", ".join(f"{outcome}={n}" for outcome, n in sorted(outcomes.items()))
    )
    puts = [p for p in _where(durations, names.OPERATION, "put") if isinstance(p, HistogramPoint)]
    if puts:
        merged = merge_histograms(puts, {names.OPERATION: "put"})
        print(
            f"  put latency         p50 ≈ {_ms(merged.quantile(0.5))}, "
            f"p95 ≈ {_ms(merged.quantile(0.95))}, max {_ms(merged.max)} "
            "(from the duration histogram)"
        )
    sizes = [
        p for p in metrics.get(names.METRIC_CHECKPOINT_SIZE, []) if isinstance(p, HistogramPoint)
    ]
    if sizes:
        merged = merge_histograms(sizes, {})
        if merged.count and merged.max is not None:
            print(
                f"  checkpoint size     mean {human_bytes(int(merged.sum / merged.count))}, "
                f"max {human_bytes(int(merged.max))}"
            )


# ----------------------------------------------------------------------------------------------
# main
# ----------------------------------------------------------------------------------------------


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m langgraph.checkpoint.otel.demo",
        description="Run an instrumented example agent on SQLite and print its telemetry.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="directory for spans.jsonl and metrics.jsonl (default: .demo)",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="SQLite checkpoint database (default: OUT/demo.sqlite, recreated on every run; "
        "in a database given here only the demo's threads are replaced)",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    db: Path = args.db if args.db is not None else out / DB_FILE

    started = time.perf_counter()
    for stale in (out / SPANS_FILE, out / METRICS_FILE):
        _remove(stale)
    if args.db is None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            _remove(db.with_name(db.name + suffix))
    db.parent.mkdir(parents=True, exist_ok=True)

    style = Style(sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    telemetry = setup_telemetry(out)
    print(style.bold("langgraph-checkpoint-otel demo"))
    print(f"  checkpoints: instrument(SqliteSaver) on {db}")
    print(f"  telemetry:   {telemetry.destination}")
    print()
    print(style.bold("runs"))
    try:
        with SqliteSaver.from_conn_string(str(db)) as saver:
            for scenario in SCENARIOS:
                saver.delete_thread(scenario.thread_id)  # uninstrumented: a clean slate
            run_scenarios(saver, telemetry)
    finally:
        telemetry.shutdown()

    if telemetry.spans_path is None or telemetry.metrics_path is None:
        print()
        print(
            f"Spans and metrics went to {telemetry.destination} (service.name="
            f"{SERVICE_NAME}); the timeline is only available when exporting to files "
            "(unset OTEL_EXPORTER_OTLP_ENDPOINT)."
        )
        return 0

    spans = read_spans(telemetry.spans_path)
    print()
    print(
        style.bold("timeline")
        + style.dim(f"  (read back from {telemetry.spans_path}: {len(spans)} spans)")
    )
    print_timeline(spans, style)
    print()
    print(style.bold("metrics") + style.dim(f"  (read back from {telemetry.metrics_path})"))
    print_metric_totals(read_metrics(telemetry.metrics_path))
    print()
    print(style.dim(f"done in {time.perf_counter() - started:.2f}s"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
