"""Tool idempotency keys on tool spans, and `record_tool_start` for side-effecting tools.

Real components: the SDK with in-memory and OTLP JSON file exporters, real
`create_react_agent` graphs (the scripted model of `agents.py`) through the instrumented
saver, the official GenAI LangChain instrumentation and OpenInference's (a process killed with
SIGKILL inside a tool's side effect and resumed by another one:
tests/integration/test_tool_keys_across_processes.py).

The key of a call is `records.tool_call_key(name, args)` of the AI message's tool call: what
the checkpoint's own tool-call records use.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider
from pydantic import BaseModel

import agents
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.analysis.tool_calls import (
    ToolCall,
    requested_tool_calls,
    tool_call_key,
)
from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS
from langgraph.checkpoint.otel.core.tool_key_spans import (
    ToolKeySpanProcessor,
    add_tool_key_processor,
    record_tool_start,
)
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    TOOL_CALLS.clear()
    yield
    TOOL_CALLS.clear()


def ai_keys(values: dict[str, Any]) -> dict[str, str]:
    """Call id -> key of every tool call the run's AI messages asked for."""
    return {call_id: call.key for call_id, call in requested_tool_calls(values["messages"])}


def react(checkpointer: Any, tools: list[BaseTool], script: agents.Script) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent
        return create_react_agent(
            agents.ScriptedChatModel(script=script), tools, checkpointer=checkpointer
        )


# --------------------------------------------------------------------------------------------
# the tool spans of other instrumentations
# --------------------------------------------------------------------------------------------


def _genai() -> Any:
    from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor

    return LangChainInstrumentor()


def _openinference() -> Any:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    return LangChainInstrumentor()


def _is_genai_tool(span: ReadableSpan) -> bool:
    return (span.attributes or {}).get("gen_ai.operation.name") == "execute_tool"


def _is_openinference_tool(span: ReadableSpan) -> bool:
    return (span.attributes or {}).get("openinference.span.kind") == "TOOL"


INSTRUMENTATIONS: dict[str, tuple[Callable[[], Any], Callable[[ReadableSpan], bool]]] = {
    "genai": (_genai, _is_genai_tool),
    "openinference": (_openinference, _is_openinference_tool),
}


@pytest.fixture(params=sorted(INSTRUMENTATIONS))
def instrumented(request: pytest.FixtureRequest, otel: OTel) -> Iterator[Callable[..., bool]]:
    """One LangChain instrumentation on `otel`'s provider, with the tool key processor; yields
    the test of its tool spans. Uninstrumented after the test."""
    make, is_tool = INSTRUMENTATIONS[request.param]
    assert add_tool_key_processor(otel.tracer_provider)
    instrumentor = make()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        yield is_tool
    finally:
        instrumentor.uninstrument()


def tool_span_keys(otel: OTel, is_tool: Callable[[ReadableSpan], bool]) -> dict[str, Any]:
    """Tool name -> the idempotency key on its tool span (each tool runs once)."""
    spans = [s for s in otel.spans() if is_tool(s)]
    names_ = [str((s.attributes or {}).get(names.TOOL_NAME) or s.name) for s in spans]
    assert len(set(names_)) == len(names_), names_
    return {
        n: (s.attributes or {}).get(names.TOOL_IDEMPOTENCY_KEY)
        for n, s in zip(names_, spans, strict=True)
    }


def by_name(values: dict[str, Any]) -> dict[str, str]:
    return {call.name: call.key for _, call in requested_tool_calls(values["messages"])}


def test_tool_spans_carry_the_ai_message_call_key(
    otel: OTel, instrumented: Callable[[ReadableSpan], bool], tmp_path: Path
) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = agents.react_agent(instrument(saver, tracer_provider=otel.tracer_provider))
    values = graph.invoke(agents.question(), agents.thread("keys"))
    conn.close()
    expected = by_name(values)
    assert set(expected) == {"lookup", "search", "book", "send_email"}
    assert tool_span_keys(otel, instrumented) == expected
    # GenAI names the call on its span as it ends: the key is that call's
    by_id = ai_keys(values)
    for span in (s for s in otel.spans() if instrumented(s)):
        attributes = span.attributes or {}
        if names.TOOL_CALL_ID in attributes:
            assert (
                attributes[names.TOOL_IDEMPOTENCY_KEY] == by_id[str(attributes[names.TOOL_CALL_ID])]
            )


def test_async_tool_spans_carry_the_key(
    otel: OTel, instrumented: Callable[[ReadableSpan], bool]
) -> None:
    """Async tools: LangChain runs this library's handler before the instrumentations' own."""

    @tool
    async def lookup(city: str) -> str:
        """Look up a city."""
        return city

    @tool
    async def search(query: str, limit: int = 3) -> str:
        """Search flights."""
        return query * limit

    script = agents.Script(
        [
            agents.calls(("lookup", {"city": "Lisbon"}), ("search", {"query": "LIS"})),
            agents.Turn("done"),
        ]
    )
    saver = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    graph = react(saver, [lookup, search], script)
    values = asyncio.run(graph.ainvoke(agents.question(), agents.thread("async")))
    assert tool_span_keys(otel, instrumented) == by_name(values)


def test_the_noted_call_key_wins_over_the_arguments(otel: OTel) -> None:
    """The key noted for the model's call id (the AI message's) is the one used."""
    add_tool_key_processor(otel.tracer_provider)
    instrumentor = _genai()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        TOOL_CALLS.note([("call-1", ToolCall("lookup", "lookup:noted"))])
        lookup = agents.Tools().named("lookup")[0]
        lookup.invoke(
            {"name": "lookup", "args": {"city": "Porto"}, "id": "call-1", "type": "tool_call"}
        )
        lookup.invoke(
            {"name": "lookup", "args": {"city": "Faro"}, "id": "call-2", "type": "tool_call"}
        )
    finally:
        instrumentor.uninstrument()
    keys = [(s.attributes or {}).get(names.TOOL_IDEMPOTENCY_KEY) for s in otel.spans()]
    assert keys == ["lookup:noted", tool_call_key("lookup", {"city": "Faro"})]


def test_openinference_span_named_after_the_run(otel: OTel) -> None:
    """OpenInference names a tool's span after the run (`run_name`), not the tool."""
    add_tool_key_processor(otel.tracer_provider)
    instrumentor = _openinference()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        lookup = agents.Tools().named("lookup")[0]
        call = {"name": "lookup", "args": {"city": "Porto"}, "id": "c", "type": "tool_call"}
        lookup.invoke(call, {"run_name": "city facts"})
    finally:
        instrumentor.uninstrument()
    (span,) = otel.spans()
    assert span.name == "city facts"
    assert (span.attributes or {}).get(names.TOOL_IDEMPOTENCY_KEY) == tool_call_key(
        "lookup", {"city": "Porto"}
    )


def test_a_span_with_the_call_at_start_is_keyed_from_it(otel: OTel) -> None:
    """Instrumentations that put the call id or the arguments on the span at start."""
    add_tool_key_processor(otel.tracer_provider)
    tracer = otel.tracer_provider.get_tracer("some.genai.instrumentation")
    TOOL_CALLS.note([("call-9", ToolCall("book", "book:noted"))])
    start = {"gen_ai.operation.name": "execute_tool", names.TOOL_NAME: "book"}
    tracer.start_span("a", attributes={**start, names.TOOL_CALL_ID: "call-9"}).end()
    arguments = {"gen_ai.tool.call.arguments": json.dumps({"flight": "TP1"})}
    tracer.start_span("b", attributes={**start, **arguments}).end()
    tracer.start_span("c", attributes={"gen_ai.operation.name": "chat"}).end()
    keys = {s.name: (s.attributes or {}).get(names.TOOL_IDEMPOTENCY_KEY) for s in otel.spans()}
    assert keys == {"a": "book:noted", "b": tool_call_key("book", {"flight": "TP1"}), "c": None}


def test_processor_is_added_once_per_sdk_provider(otel: OTel) -> None:
    def processors() -> list[Any]:
        active = otel.tracer_provider._active_span_processor  # type: ignore[attr-defined]
        return [p for p in active._span_processors if isinstance(p, ToolKeySpanProcessor)]

    assert add_tool_key_processor(otel.tracer_provider)
    assert add_tool_key_processor(otel.tracer_provider)
    instrumentor = LangGraphCheckpointInstrumentor()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    instrumentor.uninstrument()
    assert len(processors()) == 1
    assert add_tool_key_processor(NoOpTracerProvider()) is False


def test_instrumentor_adds_the_processor() -> None:
    """Zero-code: the checkpointer instrumentor alone puts the keys on GenAI tool spans."""
    fresh = OTel()
    checkpointer_instrumentor = LangGraphCheckpointInstrumentor()
    checkpointer_instrumentor.instrument(tracer_provider=fresh.tracer_provider)
    genai = _genai()
    genai.instrument(tracer_provider=fresh.tracer_provider)
    try:
        values = agents.react_agent(InMemorySaver()).invoke(agents.question(), agents.thread("z"))
    finally:
        genai.uninstrument()
        checkpointer_instrumentor.uninstrument()
        fresh.shutdown()
    assert tool_span_keys(fresh, _is_genai_tool) == by_name(values)


# --------------------------------------------------------------------------------------------
# record_tool_start
# --------------------------------------------------------------------------------------------


class Batched:
    """A provider whose spans reach the exporter only when flushed (a long batch delay)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(
            BatchSpanProcessor(self.exporter, schedule_delay_millis=600_000)
        )

    def exported(self, name: str = names.SPAN_TOOL_START) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]

    def all_spans(self) -> list[ReadableSpan]:
        self.provider.force_flush()
        return list(self.exporter.get_finished_spans())


@pytest.fixture
def batched() -> Iterator[Batched]:
    b = Batched()
    yield b
    b.provider.shutdown()


BOOK_SCRIPT = agents.Script([agents.calls(("book", {"flight": "TP1353"})), agents.Turn("done")])


def _booking_tool(batched: Batched, seen: list[dict[str, Any]]) -> BaseTool:
    @tool
    @record_tool_start(tracer_provider=batched.provider)
    def book(flight: str) -> str:
        """Book a flight."""
        # the start records exported by now, before the body (only the new ones)
        seen.extend(dict(s.attributes or {}) for s in batched.exported()[len(seen) :])
        return f"booked {flight}"

    return book


def test_start_is_exported_before_the_body_with_the_calls_key(batched: Batched) -> None:
    seen: list[dict[str, Any]] = []
    book = _booking_tool(batched, seen)
    saver = instrument(InMemorySaver(), tracer_provider=batched.provider)
    values = react(saver, [book], BOOK_SCRIPT).invoke(agents.question(), agents.thread("t-1"))
    ((call_id, key),) = ai_keys(values).items()
    assert seen == [
        {
            names.TOOL_NAME: "book",
            names.TOOL_IDEMPOTENCY_KEY: key,
            names.TOOL_CALL_ID: call_id,
            names.THREAD_ID: "t-1",
            names.TOOL_RETRY: False,
            names.CHECKPOINT_ID: seen[0][names.CHECKPOINT_ID],
        }
    ]
    events = [
        (span.name, dict(e.attributes or {}))
        for span in batched.all_spans()
        for e in span.events
        if e.name == names.SPAN_TOOL_START
    ]
    assert events == [(names.run_span_name("LangGraph"), seen[0])]  # on the current span: the run's
    (start,) = batched.exported()
    assert start.parent is not None and start.kind == trace.SpanKind.INTERNAL


def test_start_checkpoint_is_the_one_asking_for_the_call(batched: Batched) -> None:
    seen: list[dict[str, Any]] = []
    saver = InMemorySaver()
    graph = react(
        instrument(saver, tracer_provider=batched.provider),
        [_booking_tool(batched, seen)],
        BOOK_SCRIPT,
    )
    graph.invoke(agents.question(), agents.thread("t-2"))
    asking = [
        s.config["configurable"]["checkpoint_id"]
        for s in graph.get_state_history(agents.thread("t-2"))
        if s.next == ("tools",)
    ]
    assert [attributes[names.CHECKPOINT_ID] for attributes in seen] == asking


def test_async_tool_records_before_its_body(batched: Batched) -> None:
    seen: list[dict[str, Any]] = []

    @tool
    @record_tool_start(tracer_provider=batched.provider)
    async def book(flight: str) -> str:
        """Book a flight."""
        seen.extend(dict(s.attributes or {}) for s in batched.exported())
        return f"booked {flight}"

    saver = instrument(InMemorySaver(), tracer_provider=batched.provider)
    graph = react(saver, [book], BOOK_SCRIPT)
    values = asyncio.run(graph.ainvoke(agents.question(), agents.thread("t-3")))
    assert [s[names.TOOL_IDEMPOTENCY_KEY] for s in seen] == list(ai_keys(values).values())
    assert [s[names.TOOL_RETRY] for s in seen] == [False]


class Flight(BaseModel):
    number: str
    seat: str = "any"


def test_key_leaves_out_injected_arguments_and_keeps_the_schema(batched: Batched) -> None:
    """InjectedState, InjectedStore, InjectedToolCallId, RunnableConfig and ToolRuntime are
    not the model's arguments; a pydantic argument is hashed as the object the model gave."""
    from langgraph.store.memory import InMemoryStore

    seen: list[dict[str, Any]] = []

    def make(decorate: bool) -> BaseTool:
        def reserve(
            flight: Flight,
            passengers: int,
            state: Annotated[dict[str, Any], InjectedState],
            store: Annotated[Any, InjectedStore()],
            call_id: Annotated[str, InjectedToolCallId],
            config: RunnableConfig,
            runtime: ToolRuntime,
            note: str = "",
        ) -> str:
            """Reserve seats."""
            assert state is not None and store is not None and call_id and runtime is not None
            seen.extend(dict(s.attributes or {}) for s in batched.exported())
            return f"reserved {flight.number} x{passengers}"

        return tool(
            record_tool_start(tracer_provider=batched.provider)(reserve) if decorate else reserve
        )

    decorated, plain = make(True), make(False)
    assert (
        decorated.tool_call_schema.model_json_schema() == plain.tool_call_schema.model_json_schema()
    )
    assert decorated.description == plain.description
    args = {"flight": {"number": "TP1353"}, "passengers": 2}
    script = agents.Script([agents.calls(("reserve", args)), agents.Turn("done")])
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(
            agents.ScriptedChatModel(script=script),
            [decorated],
            checkpointer=instrument(InMemorySaver(), tracer_provider=batched.provider),
            store=InMemoryStore(),
        )
    values = graph.invoke(agents.question(), agents.thread("t-4"))
    ((call_id, key),) = ai_keys(values).items()
    assert key == tool_call_key("reserve", args)
    assert [(s[names.TOOL_IDEMPOTENCY_KEY], s[names.TOOL_CALL_ID]) for s in seen] == [
        (key, call_id)
    ]


def test_bare_and_named_forms(batched: Batched) -> None:
    calls: list[str] = []

    @tool("book_flight")
    @record_tool_start(name="book_flight", tracer_provider=batched.provider)
    def book(flight: str) -> str:
        """Book a flight."""
        calls.append(flight)
        return flight

    @record_tool_start
    def plain(x: int) -> int:
        return x + 1

    assert book.invoke({"flight": "TP1"}) == "TP1" and plain(1) == 2 and calls == ["TP1"]
    (start,) = batched.exported()
    assert dict(start.attributes or {}) == {
        names.TOOL_NAME: "book_flight",
        names.TOOL_IDEMPOTENCY_KEY: tool_call_key("book_flight", {"flight": "TP1"}),
        names.TOOL_RETRY: False,  # outside a graph run: no thread
    }


def test_a_direct_call_is_keyed_by_its_bound_arguments(batched: Batched) -> None:
    """Not through LangChain: the bound arguments, without defaults and injected ones."""

    @record_tool_start(tracer_provider=batched.provider)
    def reserve(
        flight: Flight,
        config: RunnableConfig,
        passengers: int = 1,
        call_id: Annotated[str, InjectedToolCallId] = "",
        **extra: Any,
    ) -> str:
        return flight.number

    assert reserve(Flight(number="TP1"), {}, call_id="c-1", fare="flex") == "TP1"
    (start,) = batched.exported()
    expected = tool_call_key("reserve", {"flight": {"number": "TP1"}, "fare": "flex"})
    assert (start.attributes or {})[names.TOOL_IDEMPOTENCY_KEY] == expected


def test_retry_is_set_for_a_call_in_flight_at_resume(batched: Batched) -> None:
    """What the observer notes when a run resumes a checkpoint whose call was never answered."""
    seen: list[dict[str, Any]] = []
    book = _booking_tool(batched, seen)
    key = tool_call_key("book", {"flight": "TP1353"})
    TOOL_CALLS.note_in_flight("t-5", [key])
    react(InMemorySaver(), [book], BOOK_SCRIPT).invoke(agents.question(), agents.thread("t-5"))
    TOOL_CALLS.note_in_flight("t-6", ["book:other"])
    react(InMemorySaver(), [book], BOOK_SCRIPT).invoke(agents.question(), agents.thread("t-6"))
    assert [(s[names.THREAD_ID], s[names.TOOL_RETRY]) for s in seen] == [
        ("t-5", True),
        ("t-6", False),
    ]


def test_retry_after_an_error_resume(batched: Batched) -> None:
    """End to end through the observer: the tool fails after its start record, the run is
    resumed from the checkpoint whose call was never answered, and the second start is a
    retry with the same key. (Needs the observer's in-flight notes.)"""
    seen: list[dict[str, Any]] = []
    failures = [RuntimeError("card terminal offline")]

    @tool
    @record_tool_start(tracer_provider=batched.provider)
    def book(flight: str) -> str:
        """Book a flight."""
        seen.extend(dict(s.attributes or {}) for s in batched.exported()[len(seen) :])
        if failures:
            raise failures.pop()
        return f"booked {flight}"

    graph = react(
        instrument(InMemorySaver(), tracer_provider=batched.provider), [book], BOOK_SCRIPT
    )
    with pytest.raises(RuntimeError, match="offline"):
        graph.invoke(agents.question(), agents.thread("t-7"))
    values = graph.invoke(None, agents.thread("t-7"))
    assert [str(m.content) for m in values["messages"]][-1] == "done"
    (key,) = ai_keys(values).values()
    assert [(s[names.TOOL_IDEMPOTENCY_KEY], s[names.TOOL_RETRY]) for s in seen] == [
        (key, False),
        (key, True),
    ]


def test_suppressed_or_without_sdk_the_body_just_runs(batched: Batched) -> None:
    calls: list[str] = []

    @record_tool_start(tracer_provider=batched.provider)
    def book(flight: str) -> str:
        calls.append(flight)
        return flight

    with suppress_instrumentation():
        assert book("TP1") == "TP1"

    @record_tool_start(tracer_provider=NoOpTracerProvider())
    def noop(flight: str) -> str:
        calls.append(flight)
        return flight

    assert noop("TP2") == "TP2"
    assert calls == ["TP1", "TP2"] and batched.all_spans() == []


class FailingFlush(SpanProcessor):
    def force_flush(self, timeout_millis: int = 30000) -> bool:
        raise OSError("exporter gone")


def test_a_failing_flush_never_reaches_the_tool(
    batched: Batched, caplog: pytest.LogCaptureFixture
) -> None:
    batched.provider.add_span_processor(FailingFlush())

    @record_tool_start(tracer_provider=batched.provider)
    def book(flight: str) -> str:
        return flight

    assert book("TP1") == "TP1" and book("TP2") == "TP2"
    assert "record_tool_start flush" in caplog.text and "exporter gone" not in caplog.text


def test_the_tools_own_error_propagates(batched: Batched) -> None:
    @record_tool_start(tracer_provider=batched.provider)
    def book(flight: str) -> str:
        raise ValueError(flight)

    with pytest.raises(ValueError, match="TP9"):
        book("TP9")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"flush_timeout_s": 0}, "flush_timeout_s must be a positive number"),
        ({"flush_timeout_s": float("inf")}, "flush_timeout_s must be a positive number"),
        ({"flush_timeout_s": "5"}, "flush_timeout_s must be a positive number"),
        ({"name": ""}, "name must be a non-empty string"),
    ],
)
def test_bad_arguments_fail_at_decoration(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        record_tool_start(**kwargs)(lambda: None)


def test_not_a_function_fails_at_decoration() -> None:
    with pytest.raises(TypeError, match="decorates a function"):
        record_tool_start(42)  # type: ignore[call-overload]


# --------------------------------------------------------------------------------------------
# a side effect started twice, read from tool-start spans (across processes:
# tests/integration/test_tool_keys_across_processes.py)
# --------------------------------------------------------------------------------------------


def _start(trace: int, checkpoint: str, key: str = "book:abc") -> SpanRecord:
    return SpanRecord(
        trace_id=f"{trace:032x}",
        span_id=f"{trace:016x}",
        parent_span_id=None,
        name=names.SPAN_TOOL_START,
        kind=1,
        start_time_unix_nano=trace,
        end_time_unix_nano=trace,
        attributes={
            names.TOOL_NAME: "book",
            names.TOOL_IDEMPOTENCY_KEY: key,
            names.CHECKPOINT_ID: checkpoint,
        },
        events=(),
        links=(),
        status_code="UNSET",
        status_message="",
        resource={},
        scope_name=names.SCOPE,
        scope_version="",
    )


def test_a_side_effect_is_twice_only_when_the_same_task_ran_again() -> None:
    from langgraph.checkpoint.otel.inspector.side_effects import side_effect_findings
    from langgraph.checkpoint.otel.options import DivergencePolicy

    policy = DivergencePolicy()
    # the killed run and its resume start the call from the same checkpoint
    (finding,) = side_effect_findings([_start(1, "cp-7"), _start(2, "cp-7")], policy)
    assert finding.traces == (f"{1:032x}", f"{2:032x}")
    assert finding.expected == "book:abc" and finding.actual == "book"
    # the model asking for the same call again in a later step (an async run, whose tool
    # starts are roots of their own traces) is not a start repeated by a resume
    assert side_effect_findings([_start(1, "cp-7"), _start(2, "cp-9")], policy) == []
    # two identical calls of one step in one trace are not either
    assert side_effect_findings([_start(1, "cp-7"), _start(1, "cp-7")], policy) == []
    assert (
        side_effect_findings(
            [_start(1, "cp-7"), _start(2, "cp-7")], DivergencePolicy(repeatable_tools={"book"})
        )
        == []
    )
