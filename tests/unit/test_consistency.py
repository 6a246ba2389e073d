"""Every name the operations bundle uses is one a real instrumented run emits.

Dashboards, alert rules and collector configs are scanned for telemetry names (dotted OTel
names, and the Prometheus names the OpenTelemetry Prometheus exporter derives from them); a
real run that crashes, resumes, is interrupted and diverges is exported through the SDK and
the real Prometheus exporter, and every name found must be among what it emitted. A rename in
code that breaks a dashboard fails here.
"""

from __future__ import annotations

import random
import re
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import graphs
from langgraph.checkpoint.otel import Migrations, instrument, names, record_tool_start
from suite_paths import REPO as ROOT

BUNDLE = [ROOT / "dashboards", ROOT / "alerts", ROOT / "collector-config"]
SUFFIXES = {".json", ".yaml", ".yml", ".sh", ".ts"}

# names the backends or the collector define, which the library does not emit
NOT_OURS_DOTTED = {
    names.SCOPE,  # the instrumentation scope, not an attribute
    "langgraph.checkpoint.otel.names",  # the module, named in comments
}


class State(TypedDict, total=False):
    n: int
    noise: float
    answer: str


class Emitted:
    """What a real run exported: span/event/link names and keys, metric names and labels."""

    def __init__(self) -> None:
        self.dotted: set[str] = set()
        self.prometheus_metrics: set[str] = set()
        self.prometheus_labels: set[str] = set()


@pytest.fixture(scope="module")
def emitted() -> Emitted:
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import REGISTRY, generate_latest

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    memory_reader = InMemoryMetricReader()
    prometheus_reader = PrometheusMetricReader()
    meter_provider = MeterProvider(metric_readers=[memory_reader, prometheus_reader])
    try:
        run_every_path(tracer_provider, meter_provider)
        result = Emitted()
        for span in spans.get_finished_spans():
            result.dotted.add(span.name)
            result.dotted.update((span.attributes or {}).keys())
            for event in span.events:
                result.dotted.add(event.name)
                result.dotted.update((event.attributes or {}).keys())
            for link in span.links:
                result.dotted.update((link.attributes or {}).keys())
        data = memory_reader.get_metrics_data()
        assert data is not None
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    result.dotted.add(metric.name)
                    for point in metric.data.data_points:
                        result.dotted.update((point.attributes or {}).keys())
        exposition = generate_latest(REGISTRY).decode()
        for line in exposition.splitlines():
            match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s", line)
            if match and match[1].startswith("langgraph"):
                result.prometheus_metrics.add(match[1])
                for label in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', match[3] or ""):
                    result.prometheus_labels.add(label)
        return result
    finally:
        meter_provider.shutdown()  # also unregisters the reader from the global registry
        tracer_provider.shutdown()


def run_every_path(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    """A run that errors, resumes, is interrupted, is resumed by the next release of the app
    (another schema version, migrated), and diverges on a fork; then a tool call, a thread
    continued by the graph with a node added and a thread taken by two runs at once."""
    failed = {"once": False}

    def a(state: State) -> dict[str, Any]:
        return {"n": state.get("n", 0) + 1}

    def flaky(state: State) -> dict[str, Any]:
        if not failed["once"]:
            failed["once"] = True
            raise RuntimeError("first attempt fails")
        return {"noise": random.random()}

    def ask(state: State) -> dict[str, Any]:
        return {"answer": interrupt("ok?")}

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("flaky", flaky)
    builder.add_node("ask", ask)
    builder.add_edge(START, "a")
    builder.add_edge("a", "flaky")
    builder.add_edge("flaky", "ask")
    inner = InMemorySaver()
    saver = instrument(
        inner, tracer_provider=tracer_provider, meter_provider=meter_provider, schema_version="1"
    )
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "consistency"}}
    with pytest.raises(RuntimeError):
        graph.invoke({"n": 0}, config)
    graph.invoke(None, config)  # error resume, stops at the interrupt
    migrations = Migrations()
    migrations.add("1", "2", lambda values: {**values, "n": values.get("n", 0) * 10})
    saver = instrument(
        inner,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        schema_version="2",
        migrations=migrations,
    )
    graph = builder.compile(checkpointer=saver)
    graph.invoke(Command(resume="yes"), config)  # interrupt resume, schema 1 -> 2
    after_a = next(s for s in graph.get_state_history(config) if s.next == ("flaky",))
    graph.invoke(None, after_a.config)  # fork: `noise` differs, a divergence
    list(saver.list(config))
    saver.delete_thread("consistency")
    run_a_tool_call(tracer_provider, meter_provider)
    run_a_retention_apply(tracer_provider, meter_provider)
    run_a_message_history(tracer_provider, meter_provider)
    together = graphs.LoadTogether()
    graphs.change_graph_and_write_twice(
        instrument(together, tracer_provider=tracer_provider, meter_provider=meter_provider),
        together,
        "consistency",
    )


def run_a_tool_call(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    """A model asks for a side-effecting tool, which records its start."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import ToolNode

    @tool
    @record_tool_start(tracer_provider=tracer_provider)
    def book(flight: str) -> str:
        """Book a flight."""
        return f"booked {flight}"

    def model(state: MessagesState) -> dict[str, Any]:
        call = {"name": "book", "args": {"flight": "LH 123"}, "id": "call-1"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node("tools", ToolNode([book]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "tools")
    saver = instrument(
        InMemorySaver(), tracer_provider=tracer_provider, meter_provider=meter_provider
    )
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": []}, {"configurable": {"thread_id": "tools"}})


class PruningMemorySaver(InMemorySaver):
    """An in-memory saver with LangGraph's `prune(keep_latest)`: the latest checkpoint of each
    namespace stays (PostgreSQL and Redis have it; unit tests open no connection)."""

    def prune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        for thread_id in thread_ids:
            for by_id in self.storage.get(thread_id, {}).values():
                for checkpoint_id in sorted(by_id)[:-1]:
                    del by_id[checkpoint_id]


def run_a_retention_apply(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    """A prune through the wrapper, a retention apply (one thread applied, one skipped) and a
    restore, on the same providers (the prune span's bytes need a PostgreSQL or Redis saver:
    tests/integration)."""
    from langgraph.checkpoint.otel.retention.telemetry import RetentionTelemetry

    pruned = instrument(
        PruningMemorySaver(), tracer_provider=tracer_provider, meter_provider=meter_provider
    )
    graph = graphs.linear().compile(checkpointer=pruned)
    graph.invoke(graphs.user_input(), {"configurable": {"thread_id": "pruned"}})
    pruned.prune(["pruned"])  # type: ignore[attr-defined]
    assert len(list(pruned.list({"configurable": {"thread_id": "pruned"}}))) == 1

    retention = RetentionTelemetry(tracer_provider, meter_provider)
    with retention.apply(
        policy="keep_last=2", threads=2, saver="SqliteSaver", archive="retention.archive"
    ) as report:
        with report.thread("kept-long") as thread:
            thread.applied(
                checkpoints_removed=3, writes_removed=2, bytes_reclaimed=900, checkpoints_kept=2
            )
        with report.thread("busy") as thread:
            thread.skipped("written to during the apply")
    with (
        retention.apply(
            policy="keep_last=2",
            threads=1,
            saver="SqliteSaver",
            archive="retention.archive",
            operation="restore",
        ) as report,
        report.thread("kept-long") as thread,
    ):
        thread.restored(checkpoints=3, writes=2)


def run_a_message_history(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> None:
    """A message history counted against a context window, then summarised (it shrinks)."""
    from langchain_core.messages import AIMessage, RemoveMessage, SystemMessage
    from langgraph.graph import MessagesState

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("an answer " * 10)]}

    def summarise(state: MessagesState) -> dict[str, Any]:
        old = state["messages"][:-1]
        return {"messages": [*(RemoveMessage(id=m.id) for m in old), SystemMessage("summary")]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_node("summarise", summarise)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "summarise")
    saver = instrument(
        InMemorySaver(),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        context_window=64,
    )
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"messages": [("user", "a question " * 10)]}, {"configurable": {"thread_id": "m"}})


TOKEN = re.compile(r"(?<![A-Za-z0-9_])@?((?:langgraph|gen_ai)[a-zA-Z0-9_.:]*)")


def bundle_tokens() -> dict[str, set[str]]:
    """Telemetry-looking tokens per bundle file (dotted and Prometheus-style)."""
    found: dict[str, set[str]] = {}
    for folder in BUNDLE:
        for path in folder.rglob("*"):
            if path.suffix not in SUFFIXES or "node_modules" in path.parts:
                continue
            if path.name in {"package.json", "package-lock.json", "tsconfig.json"}:
                continue
            tokens = {m.rstrip(".:") for m in TOKEN.findall(path.read_text())}
            # prose ("langgraph"), not a telemetry name
            found[str(path.relative_to(ROOT))] = {t for t in tokens if "." in t or "_" in t}
    return found


def test_the_bundle_exists_and_names_telemetry() -> None:
    tokens = bundle_tokens()
    assert len(tokens) >= 8
    used = set().union(*tokens.values())
    # each backend's files refer to the central names
    assert names.SPAN_RESUME in used
    assert names.RESUME_KIND in used
    assert any(t.startswith("langgraph_checkpoint_") for t in used)


def test_every_name_the_bundle_uses_is_emitted(emitted: Emitted) -> None:
    unknown: dict[str, list[str]] = {}
    for file, tokens in bundle_tokens().items():
        for token in sorted(tokens):
            if "." in token:
                ok = _dotted_known(token, emitted)
            else:
                ok = _prometheus_known(token, emitted)
            if not ok:
                unknown.setdefault(file, []).append(token)
    assert not unknown, f"names used in the bundle that a real run does not emit: {unknown}"


def _dotted_known(token: str, emitted: Emitted) -> bool:
    token = token.split(":", 1)[0]  # Datadog `tag:value` filters
    if token in emitted.dotted or token in NOT_OURS_DOTTED:
        return True
    # Datadog monitor template variables: {{langgraph.saver.name}} is the tag langgraph.saver
    if token.endswith(".name") and token.removesuffix(".name") in emitted.dotted:
        return True
    # a wildcard prefix (`langgraph.checkpoint.*`) of emitted names
    return any(name.startswith(token + ".") for name in emitted.dotted)


def _prometheus_known(token: str, emitted: Emitted) -> bool:
    if token in emitted.prometheus_labels or token in emitted.prometheus_metrics:
        return True
    # a recording rule or a series family name (histogram without _bucket/_sum/_count)
    families = {re.sub(r"_(bucket|sum|count|created)$", "", m) for m in emitted.prometheus_metrics}
    if token in families:
        return True
    # a regex prefix such as {__name__=~"langgraph_checkpoint_size_bytes_.*"}
    if token.endswith("_") and any(m.startswith(token) for m in emitted.prometheus_metrics):
        return True
    # recording-rule names (`langgraph_checkpoint:...`) and the spanmetrics connector's own
    # series are defined by the bundle itself, checked by their own tests
    return ":" in token


def test_the_emitted_set_is_not_vacuous(emitted: Emitted) -> None:
    for name in (
        names.SPAN_PUT,
        names.SPAN_RESUME,
        names.EVENT_DIVERGENCE,
        names.DIVERGENCE_KIND,
        names.RESUME_KIND,
        names.METRIC_DIVERGENCES,
        names.LINK_TYPE,
        names.SPAN_RETENTION_APPLY,
        names.METRIC_RETENTION_BYTES_RECLAIMED,
        names.MESSAGES_WINDOW_SHARE,
        names.EVENT_MESSAGES_SHRUNK,
        names.MESSAGES_SHRINK_KIND,
        names.METRIC_WINDOW_SHARE,
    ):
        assert name in emitted.dotted, name
    assert "langgraph_checkpoint_divergences_total" in emitted.prometheus_metrics
    assert "langgraph_checkpoint_retention_reclaimed_bytes_total" in emitted.prometheus_metrics
    assert "langgraph_checkpoint_messages_window_share_bucket" in emitted.prometheus_metrics


def test_a_misspelled_name_would_be_caught(emitted: Emitted) -> None:
    assert not _dotted_known("langgraph.resume.kinds", emitted)
    assert not _dotted_known("langgraph.checkpoint.put.latency", emitted)
    assert not _prometheus_known("langgraph_checkpoint_resume_total", emitted)
    assert not _prometheus_known("langgraph_checkpoint_duration_seconds_bucket", emitted)
    assert _prometheus_known("langgraph_checkpoint_operation_duration_seconds_bucket", emitted)
