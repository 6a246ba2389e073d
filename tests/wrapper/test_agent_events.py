"""The proposed GenAI agent lifecycle events (semantic-conventions-genai PR 445), opt-in.

Real agents (`create_react_agent`, LangChain's `create_agent` with its human-in-the-loop
middleware, a plain graph with a static interrupt) on SQLite, the real SDK's tracer and logger
providers; every expectation is read from what LangGraph returned or stored, or from the spans.
"""

from __future__ import annotations

import sqlite3
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan

import agents
from helpers import OTel, is_run_span
from langgraph.checkpoint.otel import LangGraphCheckpointInstrumentor, instrument, names

OPT_IN = ("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
EVENTS = {names.EVENT_AGENT_CHECKPOINTED, names.EVENT_AGENT_PAUSED, names.EVENT_AGENT_RESUMED}


@dataclass
class Logs:
    provider: LoggerProvider
    exporter: InMemoryLogRecordExporter

    def events(self, name: str | None = None) -> list[Any]:
        records = [r.log_record for r in self.exporter.get_finished_logs()]
        return [r for r in records if r.event_name in EVENTS and name in (None, r.event_name)]


@pytest.fixture
def logs() -> Iterator[Logs]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield Logs(provider, exporter)
    provider.shutdown()


@pytest.fixture
def opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(*OPT_IN)


def saver_of(path: Any, otel: OTel, logs: Logs) -> Any:
    conn = sqlite3.connect(str(path), check_same_thread=False)
    return instrument(
        SqliteSaver(conn),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        logger_provider=logs.provider,
    )


def config(thread: str, **extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, **extra}}


def spans_named(otel: OTel, name: str) -> list[ReadableSpan]:
    return [s for s in otel.spans() if s.name == name]


def attrs(record: Any) -> dict[str, Any]:
    return dict(record.attributes or {})


def test_no_agent_event_without_the_opt_in(
    tmp_path: Any, otel: OTel, logs: Logs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    graph = agents.approval_agent(saver_of(tmp_path / "a.db", otel, logs))
    graph.invoke(agents.question(), config("t"))
    graph.invoke(Command(resume="yes"), config("t"))
    assert spans_named(otel, names.SPAN_RESUME)  # the run did resume
    assert logs.events() == []


@pytest.mark.usefixtures("opted_in")
def test_every_stored_checkpoint_is_one_checkpointed_event_in_its_put_span(
    tmp_path: Any, otel: OTel, logs: Logs
) -> None:
    saver = saver_of(tmp_path / "a.db", otel, logs)
    graph = agents.react_agent(saver)
    graph.invoke(agents.question(), config("t"))
    stored = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config("t"))]
    events = logs.events(names.EVENT_AGENT_CHECKPOINTED)
    assert sorted(attrs(e)[names.AGENT_CHECKPOINT_ID] for e in events) == sorted(stored)
    puts = {s.attributes[names.CHECKPOINT_ID]: s for s in spans_named(otel, names.SPAN_PUT)}
    for event in events:
        put = puts[attrs(event)[names.AGENT_CHECKPOINT_ID]]
        assert (event.trace_id, event.span_id) == (put.context.trace_id, put.context.span_id)
        assert attrs(event)[names.AGENT_EXECUTION_ID] == stored[-1]  # the run's first
        assert attrs(event)[names.AGENT_NAME] == "LangGraph"


@pytest.mark.usefixtures("opted_in")
def test_an_interrupt_is_one_paused_event_with_its_id_at_its_checkpoint_in_the_run(
    tmp_path: Any, otel: OTel, logs: Logs
) -> None:
    graph = agents.approval_agent(saver_of(tmp_path / "a.db", otel, logs))
    result = graph.invoke(agents.question(), config("t"))
    (interrupt,) = result["__interrupt__"]
    paused_at = graph.get_state(config("t")).config["configurable"]["checkpoint_id"]
    first = [
        t.config["configurable"]["checkpoint_id"] for t in graph.checkpointer.list(config("t"))
    ][-1]
    (event,) = logs.events(names.EVENT_AGENT_PAUSED)
    assert attrs(event) == {
        names.AGENT_EXECUTION_ID: first,
        names.AGENT_NAME: "LangGraph",
        names.AGENT_PAUSE_ID: interrupt.id,
        names.AGENT_CHECKPOINT_ID: paused_at,
    }  # no reason: LangGraph does not say who answers a plain interrupt()
    (run,) = [s for s in otel.spans() if is_run_span(s)]
    assert (event.trace_id, event.span_id) == (run.context.trace_id, run.context.span_id)


@pytest.mark.usefixtures("opted_in")
async def test_an_async_run_pauses_and_resumes_alike(tmp_path: Any, otel: OTel, logs: Logs) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as inner:
        saver = instrument(
            inner,
            tracer_provider=otel.tracer_provider,
            meter_provider=otel.meter_provider,
            logger_provider=logs.provider,
        )
        graph = agents.approval_agent(saver)
        result = await graph.ainvoke(agents.question(), config("t"))
        (interrupt,) = result["__interrupt__"]
        await graph.ainvoke(Command(resume="yes"), config("t"))
    (paused,) = logs.events(names.EVENT_AGENT_PAUSED)
    (resumed,) = logs.events(names.EVENT_AGENT_RESUMED)
    assert attrs(paused)[names.AGENT_PAUSE_ID] == interrupt.id
    assert attrs(resumed)[names.AGENT_RESUMED_FROM_ID] == interrupt.id
    # one execution across the pause and its answer (the interrupted run's first checkpoint)
    assert attrs(paused)[names.AGENT_EXECUTION_ID] == attrs(resumed)[names.AGENT_EXECUTION_ID]
    runs = sorted((s for s in otel.spans() if is_run_span(s)), key=lambda s: s.start_time or 0)
    assert [paused.trace_id, resumed.trace_id] == [r.context.trace_id for r in runs]


@pytest.mark.usefixtures("opted_in")
def test_a_resume_answering_an_interrupt_resumes_from_that_pause_naming_its_writer(
    tmp_path: Any, otel: OTel, logs: Logs
) -> None:
    graph = agents.approval_agent(saver_of(tmp_path / "a.db", otel, logs))
    (interrupt,) = graph.invoke(agents.question(), config("t"))["__interrupt__"]
    paused_at = graph.get_state(config("t")).config["configurable"]["checkpoint_id"]
    first = [
        t.config["configurable"]["checkpoint_id"] for t in graph.checkpointer.list(config("t"))
    ][-1]
    graph.invoke(Command(resume="yes"), config("t"))
    (event,) = logs.events(names.EVENT_AGENT_RESUMED)
    (resume,) = spans_named(otel, names.SPAN_RESUME)
    (writer,) = [
        s
        for s in spans_named(otel, names.SPAN_PUT)
        if s.attributes[names.CHECKPOINT_ID] == paused_at
    ]
    assert attrs(event) == {
        names.AGENT_EXECUTION_ID: first,
        names.AGENT_NAME: "LangGraph",
        names.AGENT_RESUMED_FROM_TYPE: "pause",
        names.AGENT_RESUMED_FROM_ID: interrupt.id,
        names.AGENT_CHECKPOINT_ID: paused_at,
        names.RESUME_KIND: "interrupt",
        names.RESUME_WRITER_TRACE_ID: f"{writer.context.trace_id:032x}",
        names.RESUME_WRITER_SPAN_ID: f"{writer.context.span_id:016x}",
    }
    assert (event.trace_id, event.span_id) == (resume.context.trace_id, resume.context.span_id)


@pytest.mark.usefixtures("opted_in")
def test_a_fork_resumes_from_the_checkpoint_it_forks(tmp_path: Any, otel: OTel, logs: Logs) -> None:
    saver = saver_of(tmp_path / "a.db", otel, logs)
    graph = agents.react_agent(saver)
    graph.invoke(agents.question(), config("t"))
    history = list(graph.get_state_history(config("t")))
    fork_point = next(s for s in history if s.next == ("tools",) or "tools" in s.next)
    fork_id = fork_point.config["configurable"]["checkpoint_id"]
    graph.invoke(None, config("t", checkpoint_id=fork_id))
    (event,) = logs.events(names.EVENT_AGENT_RESUMED)
    assert attrs(event)[names.AGENT_RESUMED_FROM_TYPE] == "checkpoint"
    assert attrs(event)[names.AGENT_RESUMED_FROM_ID] == fork_id
    assert attrs(event)[names.RESUME_KIND] == "fork"


class Counter(TypedDict, total=False):
    n: int


def test_a_static_interrupt_pauses_at_the_checkpoint_it_stopped_at(
    tmp_path: Any, otel: OTel, logs: Logs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(*OPT_IN)
    builder = StateGraph(Counter)
    builder.add_node("one", lambda s: {"n": s.get("n", 0) + 1})
    builder.add_node("two", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    graph = builder.compile(
        checkpointer=saver_of(tmp_path / "a.db", otel, logs), interrupt_before=["two"]
    )
    graph.invoke({"n": 0}, config("t"))
    stopped_at = graph.get_state(config("t")).config["configurable"]["checkpoint_id"]
    (event,) = logs.events(names.EVENT_AGENT_PAUSED)
    assert attrs(event)[names.AGENT_PAUSE_ID] == stopped_at
    assert attrs(event)[names.AGENT_CHECKPOINT_ID] == stopped_at


@pytest.mark.usefixtures("opted_in")
def test_human_in_the_loop_middleware_pauses_for_human_input(
    tmp_path: Any, otel: OTel, logs: Logs
) -> None:
    from langchain.agents.middleware import HumanInTheLoopMiddleware

    graph = agents.langchain_agent(
        saver_of(tmp_path / "a.db", otel, logs),
        agents.Script([agents.calls(("book", {"flight": "TP1353"})), agents.Turn("Booked.")]),
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"book": True})],
    )
    (interrupt,) = graph.invoke(agents.question(), config("t"))["__interrupt__"]
    (event,) = logs.events(names.EVENT_AGENT_PAUSED)
    assert attrs(event)[names.AGENT_PAUSE_ID] == interrupt.id
    assert attrs(event)[names.AGENT_PAUSE_REASON] == "human_input"


@pytest.mark.usefixtures("opted_in")
def test_the_events_carry_no_hash_or_key_under_gen_ai(
    tmp_path: Any, otel: OTel, logs: Logs
) -> None:
    graph = agents.approval_agent(saver_of(tmp_path / "a.db", otel, logs))
    graph.invoke(agents.question(), config("t"))
    graph.invoke(Command(resume="yes"), config("t"))
    hashes = {
        str(v)
        for s in otel.spans()
        for k, v in (s.attributes or {}).items()
        if "hash" in k or k.endswith(".key")
    }
    assert hashes
    gen_ai = {(k, v) for e in logs.events() for k, v in attrs(e).items() if k.startswith("gen_ai.")}
    assert {k for k, _ in gen_ai} <= {
        names.AGENT_EXECUTION_ID,
        names.AGENT_NAME,
        names.AGENT_CHECKPOINT_ID,
        names.AGENT_PAUSE_ID,
        names.AGENT_PAUSE_REASON,
        names.AGENT_RESUMED_FROM_TYPE,
        names.AGENT_RESUMED_FROM_ID,
    }
    assert not {v for _, v in gen_ai} & hashes


@pytest.mark.usefixtures("opted_in")
def test_the_instrumentor_takes_a_logger_provider(tmp_path: Any, otel: OTel, logs: Logs) -> None:
    instrumentor = LangGraphCheckpointInstrumentor()
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        logger_provider=logs.provider,
    )
    try:
        conn = sqlite3.connect(str(tmp_path / "a.db"), check_same_thread=False)
        agents.approval_agent(SqliteSaver(conn)).invoke(agents.question(), config("t"))
    finally:
        instrumentor.uninstrument()
    assert len(logs.events(names.EVENT_AGENT_PAUSED)) == 1
    assert logs.events(names.EVENT_AGENT_CHECKPOINTED)


@pytest.fixture
def official_lifecycle_instrumented() -> Iterator[None]:
    """The official GenAI instrumentation's lifecycle support, as its draft installs it.

    The draft (a branch of opentelemetry-instrumentation-genai-langchain, not on PyPI) wraps
    `StateGraph.compile` with wrapt, from a module under
    ``opentelemetry.instrumentation.genai.langchain`` that defines the event names; this fixture
    installs exactly that shape (the compile wrapper only; its events are the draft's own).
    """
    from wrapt import wrap_function_wrapper

    module_name = "opentelemetry.instrumentation.genai.langchain._lifecycle_draft_shape"
    module = types.ModuleType(module_name)
    module.EVENT_AGENT_CHECKPOINTED = names.EVENT_AGENT_CHECKPOINTED  # type: ignore[attr-defined]

    class _CompileWrapper:
        def __call__(self, wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
            return wrapped(*args, **kwargs)

    _CompileWrapper.__module__ = module_name
    sys.modules[module_name] = module
    wrap_function_wrapper("langgraph.graph.state", "StateGraph.compile", _CompileWrapper())
    try:
        yield
    finally:
        from opentelemetry.instrumentation.utils import unwrap

        unwrap(StateGraph, "compile")
        del sys.modules[module_name]


@pytest.mark.usefixtures("opted_in", "official_lifecycle_instrumented")
def test_no_event_is_emitted_where_the_official_instrumentation_emits_them(
    tmp_path: Any, otel: OTel, logs: Logs
) -> None:
    graph = agents.approval_agent(saver_of(tmp_path / "a.db", otel, logs))
    graph.invoke(agents.question(), config("t"))
    graph.invoke(Command(resume="yes"), config("t"))
    assert spans_named(otel, names.SPAN_RESUME)
    assert logs.events() == []
