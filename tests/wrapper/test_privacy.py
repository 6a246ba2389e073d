"""Privacy canary: one string planted everywhere application data enters a LangGraph app never
reaches telemetry (spans, metrics, logs through `logging` and the OTel logs signal) or the
wrapper's stored `otel` metadata. The opt-in content path applies the redaction hook."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from pydantic import BaseModel

from helpers import OTel
from langgraph.checkpoint.otel import instrument, names, stored_history
from langgraph.checkpoint.otel.analysis.checkpoint_diff import ContentPolicy, diff
from langgraph.checkpoint.otel.core import telemetry
from langgraph.checkpoint.otel.options import InstrumentOptions

CANARY = "canary-7Zq"
LIBRARY_LOGGER = "langgraph.checkpoint.otel"
THREAD = "thread-privacy"  # the thread id is reported by design: it is not the canary


class Note(BaseModel):
    text: str
    tags: list[str] = []


class Unreadable(dict):  # type: ignore[type-arg]
    """A mapping the hasher cannot read: its `items()` raises with the canary in the message."""

    def items(self) -> Any:
        raise ValueError(f"cannot list the items of {CANARY}")


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    data: dict[str, Any]
    note: Note
    results: Annotated[list[str], operator.add]
    answer: Any
    record: Any


@dataclass
class Flaky:
    """A node that raises once (the message holds the canary), then succeeds."""

    calls: list[int] = field(default_factory=list)

    def __call__(self, state: State) -> dict[str, Any]:
        self.calls.append(1)
        if len(self.calls) == 1:
            raise RuntimeError(f"upstream rejected {CANARY}")
        return {"data": {**state.get("data", {}), f"{CANARY}-flaky": CANARY}}


def agent(state: State) -> dict[str, Any]:
    call = {"name": "search", "args": {"query": CANARY, CANARY: [CANARY]}, "id": "call-1"}
    return {
        "messages": [AIMessage(f"let me look up {CANARY}", tool_calls=[call])],
        "data": {CANARY: CANARY, "nested": {CANARY: [CANARY, {"k": CANARY}]}},
        "note": Note(text=CANARY, tags=[CANARY]),
    }


def tool(state: State) -> dict[str, Any]:
    return {"messages": [ToolMessage(f"found {CANARY}", name="search", tool_call_id="call-1")]}


def fan_out(state: State) -> list[Send]:
    return [Send("work", {"results": [f"{CANARY}-{i}"]}) for i in range(3)]


def work(state: State) -> dict[str, Any]:
    return {"results": [f"done {state['results'][0]}"]}


def ask(state: State) -> dict[str, Any]:
    reply = interrupt({"question": CANARY, CANARY: CANARY})
    return {"answer": {"reply": reply}, "messages": [AIMessage(f"you said {reply}")]}


def finish(state: State) -> dict[str, Any]:
    return {"record": Unreadable(name=CANARY)}


def build(saver: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tool", tool)
    builder.add_node("work", work)
    builder.add_node("flaky", Flaky())
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tool")
    builder.add_conditional_edges("tool", fan_out, ["work"])
    builder.add_edge("work", "flaky")
    builder.add_edge("flaky", "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", END)
    return builder.compile(checkpointer=saver)


def run_config() -> Any:
    return {
        "configurable": {"thread_id": THREAD, "user_secret": CANARY},
        "metadata": {"note": CANARY, CANARY: "x"},
        "tags": [CANARY],
        "run_name": CANARY,
    }


INPUT = {"messages": [HumanMessage(f"hello {CANARY}")], "data": {}, "results": []}


def run_sync(graph: Any) -> Any:
    cfg = run_config()
    with pytest.raises(RuntimeError, match=CANARY):  # the node raises once: the run fails
        graph.invoke(INPUT, cfg, durability="sync")
    graph.invoke(None, cfg, durability="sync")  # resumed: stops at the interrupt
    assert graph.get_state(cfg).interrupts[0].value["question"] == CANARY
    result = graph.invoke(Command(resume=CANARY), cfg, durability="sync")
    graph.update_state(cfg, {"data": {CANARY: f"edited {CANARY}"}, "answer": CANARY})
    return result


async def run_async(graph: Any) -> Any:
    cfg = run_config()
    with pytest.raises(RuntimeError, match=CANARY):
        await graph.ainvoke(INPUT, cfg, durability="sync")
    await graph.ainvoke(None, cfg, durability="sync")
    result = await graph.ainvoke(Command(resume=CANARY), cfg, durability="sync")
    await graph.aupdate_state(cfg, {"data": {CANARY: f"edited {CANARY}"}, "answer": CANARY})
    return result


# --- capture and search ----------------------------------------------------------------------


@dataclass
class Logs:
    caplog: pytest.LogCaptureFixture
    exporter: InMemoryLogRecordExporter

    def records(self) -> list[logging.LogRecord]:
        return [r for r in self.caplog.records if r.name.startswith(LIBRARY_LOGGER)]

    def texts(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for r in self.records():
            out.append((f"log record {r.levelname}", r.getMessage()))
            out.append(("log record args", repr(r.args)))
            out.append(("log record exc_text", repr(r.exc_text)))
            out.append(("log record exc_info", repr(r.exc_info)))
        for log in self.exporter.get_finished_logs():
            rec = log.log_record
            out.append(("exported log body", repr(rec.body)))
            out.append(("exported log attributes", repr(dict(rec.attributes or {}))))
        return out


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Logs]:
    telemetry._FAULTS_LOGGED.clear()  # faults are logged once per process
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    handler = LoggingHandler(level=logging.DEBUG, logger_provider=provider)
    library_logger = logging.getLogger(LIBRARY_LOGGER)
    library_logger.addHandler(handler)
    try:
        with caplog.at_level(logging.DEBUG, logger=LIBRARY_LOGGER):
            yield Logs(caplog, exporter)
    finally:
        library_logger.removeHandler(handler)
        provider.shutdown()


def telemetry_texts(otel: OTel) -> list[tuple[str, str]]:
    """(where, text) for every string a backend would receive from spans and metrics."""
    out: list[tuple[str, str]] = []
    for span in otel.spans():
        where = f"span {span.name}"
        out.append((f"{where} name", span.name))
        for key, value in (span.attributes or {}).items():
            out.append((f"{where} attribute {key}", f"{key}={value!r}"))
        for event in span.events:
            out.append((f"{where} event name", event.name))
            for key, value in (event.attributes or {}).items():
                out.append((f"{where} event {event.name} attribute {key}", f"{key}={value!r}"))
        for link in span.links:
            for key, value in (link.attributes or {}).items():
                out.append((f"{where} link attribute {key}", f"{key}={value!r}"))
        out.append((f"{where} status description", repr(span.status.description)))
    data = otel.reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.append(("metric name", metric.name))
                for point in metric.data.data_points:
                    for key, value in (point.attributes or {}).items():
                        out.append((f"metric {metric.name} attribute {key}", f"{key}={value!r}"))
    return out


def stored_texts(saver: BaseCheckpointSaver[Any]) -> list[tuple[str, str]]:
    out = []
    for tup in stored_history(saver, {"configurable": {"thread_id": THREAD}}):
        otel_value = (tup.metadata or {}).get(names.METADATA_KEY)
        out.append((f"stored otel of {tup.config['configurable']['checkpoint_id']}",
                    json.dumps(otel_value, default=repr)))  # fmt: skip
    return out


def assert_no_canary(otel: OTel, logs: Logs, saver: BaseCheckpointSaver[Any]) -> None:
    texts = telemetry_texts(otel) + logs.texts() + stored_texts(saver)
    leaks = [where for where, text in texts if CANARY in text]
    assert leaks == []


def assert_exercised(otel: OTel, logs: Logs, saver: BaseCheckpointSaver[Any], result: Any) -> None:
    """The search covered real telemetry: spans with events, metrics, a logged fault, hashes."""
    assert result["answer"] == {"reply": CANARY}
    assert sorted(result["results"]) == [f"done {CANARY}-{i}" for i in range(3)]
    assert isinstance(result["record"], Unreadable)  # the fault did not break the graph
    spans = otel.spans()
    span_names = {s.name for s in spans}
    assert {names.SPAN_PUT, names.SPAN_PUT_WRITES} <= span_names
    assert any(map(names.is_run_span_name, span_names))
    assert any(e.name == names.EVENT_CHANNEL for s in spans for e in s.events)
    assert any(s.status.description or s.status.status_code.name == "ERROR" for s in spans)
    assert otel.metrics()  # metrics were recorded and searched
    messages = [r.getMessage() for r in logs.records()]
    assert any("ValueError" in m for m in messages), messages  # the planted fault was logged
    assert logs.exporter.get_finished_logs()  # ... and exported through the logs signal
    stored = stored_texts(saver)
    assert any(names.META_STATE_HASH in text for _, text in stored)  # hashes were stored


def test_the_canary_never_reaches_telemetry_in_memory(otel: OTel, logs: Logs) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    result = run_sync(build(saver))
    assert_exercised(otel, logs, saver, result)
    assert_no_canary(otel, logs, saver)


def test_the_canary_never_reaches_telemetry_sqlite(otel: OTel, logs: Logs, tmp_path: Any) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "privacy.sqlite")) as bare:
        saver = instrument(
            bare, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        result = run_sync(build(saver))
        assert_exercised(otel, logs, saver, result)
        assert_no_canary(otel, logs, saver)


def test_the_canary_never_reaches_telemetry_async(otel: OTel, logs: Logs) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    result = asyncio.run(asyncio.wait_for(run_async(build(saver)), timeout=60))
    assert_exercised(otel, logs, saver, result)
    assert_no_canary(otel, logs, saver)


def test_the_search_finds_a_planted_canary(otel: OTel, logs: Logs) -> None:
    """The search itself can fail: a canary put on a span, in a log and in a metric is found."""
    tracer = otel.tracer_provider.get_tracer("probe")
    with tracer.start_as_current_span("probe") as span:
        span.set_attribute("leak", CANARY)
    otel.meter_provider.get_meter("probe").create_counter("probe").add(1, {"leak": CANARY})
    logging.getLogger(LIBRARY_LOGGER).debug("probe %s", CANARY)
    saver = InMemorySaver()
    texts = telemetry_texts(otel) + logs.texts() + stored_texts(saver)
    wheres = {where for where, text in texts if CANARY in text}
    assert "span probe attribute leak" in wheres
    assert "metric probe attribute leak" in wheres
    assert "log record DEBUG" in wheres and "exported log body" in wheres


# --- the opt-in content path -----------------------------------------------------------------


def test_capture_content_patches_pass_through_the_redaction_hook(otel: OTel) -> None:
    """`capture_content` only affects content diffs today: the patch holds the hook's output."""
    seen: list[str] = []

    def redact(channel: str, value: Any) -> Any:
        seen.append(channel)
        return "[redacted]"

    saver = instrument(
        InMemorySaver(),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        capture_content=True,
        redact=redact,
    )
    options = InstrumentOptions.load({"capture_content": True, "redact": redact}, environ={})
    policy = ContentPolicy.from_options(options)
    assert policy is not None and policy.redact is redact
    graph = build(saver)
    run_sync(graph)
    history = list(reversed(stored_history(saver, {"configurable": {"thread_id": THREAD}})))
    assert len(history) >= 3
    patches = []
    for older, newer in itertools.pairwise(history):
        for content in (policy, options):
            changes = diff(older, newer, content=content).changes
            patches += [json.dumps(c.patch, default=repr) for c in changes if c.patch is not None]
    assert patches and seen
    assert all(CANARY not in p for p in patches)
    assert any("[redacted]" in p for p in patches)
    # without the hook the same diff carries content: the redaction is what removes it
    unredacted = ContentPolicy(max_bytes=1_048_576)
    raw = [
        json.dumps(c.patch, default=repr)
        for older, newer in itertools.pairwise(history)
        for c in diff(older, newer, content=unredacted).changes
        if c.patch is not None
    ]
    assert any(CANARY in p for p in raw)
    # and the spans of the capture_content wrapper carry no content either
    leaks = [where for where, text in telemetry_texts(otel) if CANARY in text]
    assert leaks == []
