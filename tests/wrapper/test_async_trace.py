"""An async run is one trace, as a sync run is: every span created while its nodes and tools
run (the app's own, `langgraph.tool.start`, the official GenAI and OpenInference tool spans) is
in the run's trace, under the app's span where one is current; and nothing of the run is left
current in the caller, after `ainvoke`, after a stream consumed across tasks, or abandoned."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import agents
from helpers import OTel, is_run_span
from langgraph.checkpoint.otel import instrument, names, record_tool_start
from langgraph.checkpoint.otel.core.tool_key_spans import add_tool_key_processor

SCRIPT = [
    agents.calls(("lookup", {"city": "Lisbon"}), ("book", {"flight": "TP1353"})),
    agents.calls(("lookup", {"city": "Porto"})),
    agents.Turn("Booked."),
]


def app_tools(otel: OTel) -> list[BaseTool]:
    """Tools that open spans of their own (as an app's HTTP or DB client would), one of them
    recording its start with `record_tool_start`."""
    tracer = otel.tracer_provider.get_tracer("app")

    @tool
    async def lookup(city: str) -> str:
        """Look up a city (read-only)."""
        with tracer.start_as_current_span("app.lookup"):
            await asyncio.sleep(0)
            return f"{city}: sunny"

    @tool
    @record_tool_start(tracer_provider=otel.tracer_provider)
    async def book(flight: str) -> str:
        """Book a flight (a side effect)."""
        with tracer.start_as_current_span("app.book"):
            return f"booked {flight}"

    return [lookup, book]


def agent(otel: OTel, saver: Any) -> Any:
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            agents.ScriptedChatModel(script=agents.Script(list(SCRIPT))),
            app_tools(otel),
            checkpointer=saver,
        )


@pytest.fixture
def saver_path(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoints.db")


async def with_saver(otel: OTel, path: str, body: Callable[[Any], Any]) -> Any:
    async with AsyncSqliteSaver.from_conn_string(path) as inner:
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        return await body(agent(otel, saver))


def traces(spans: list[ReadableSpan]) -> dict[int, list[str]]:
    by_trace: dict[int, list[str]] = {}
    for span in spans:
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span.name)
    return by_trace


def test_ainvoke_with_no_span_current_is_one_trace_with_the_tools_own_spans(
    otel: OTel, saver_path: str
) -> None:
    async def run(graph: Any) -> Any:
        return await graph.ainvoke(agents.question(), agents.thread("a"))

    asyncio.run(with_saver(otel, saver_path, run))
    (names_,) = traces(otel.spans()).values()
    assert names_.count("app.lookup") == 2 and "app.book" in names_
    assert names.SPAN_TOOL_START in names_ and any(map(names.is_run_span_name, names_))
    run_span = next(s for s in otel.spans() if is_run_span(s))
    app_spans = [s for s in otel.spans() if s.name.startswith("app.")]
    assert all(s.parent is not None for s in app_spans)
    assert run_span.parent is None


def test_ainvoke_under_the_apps_span_puts_everything_under_it(otel: OTel, saver_path: str) -> None:
    tracer = otel.tracer_provider.get_tracer("app")

    async def run(graph: Any) -> Any:
        with tracer.start_as_current_span("request"):
            return await graph.ainvoke(agents.question(), agents.thread("a"))

    asyncio.run(with_saver(otel, saver_path, run))
    (names_,) = traces(otel.spans()).values()
    assert not any(map(names.is_run_span_name, names_))  # the app's span is the run's
    request = next(s for s in otel.spans() if s.name == "request")
    assert request.parent is None
    assert "app.book" in names_ and names.SPAN_TOOL_START in names_


def test_after_ainvoke_nothing_of_the_run_is_current(otel: OTel, saver_path: str) -> None:
    async def run(graph: Any) -> tuple[Any, Any]:
        before = otel_context.get_current()
        await graph.ainvoke(agents.question(), agents.thread("a"))
        return before, otel_context.get_current()

    before, after = asyncio.run(with_saver(otel, saver_path, run))
    assert after == before
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_a_stream_abandoned_half_way_leaves_nothing_current(otel: OTel, saver_path: str) -> None:
    tracer = otel.tracer_provider.get_tracer("app")

    async def run(graph: Any) -> bool:
        stream = graph.astream(agents.question(), agents.thread("a"), stream_mode="updates")
        async for _ in stream:
            break  # the client went away
        valid = trace.get_current_span().get_span_context().is_valid
        with tracer.start_as_current_span("next request"):
            pass
        await stream.aclose()
        return valid

    assert asyncio.run(with_saver(otel, saver_path, run)) is False
    next_request = next(s for s in otel.spans() if s.name == "next request")
    assert next_request.parent is None  # a trace of its own, not the run's


def test_a_stream_consumed_across_tasks_is_one_trace(otel: OTel, saver_path: str) -> None:
    async def run(graph: Any) -> list[bool]:
        stream = graph.astream(agents.question(), agents.thread("a"), stream_mode="updates")
        current: list[bool] = []
        while True:
            try:
                await asyncio.create_task(_next(stream))  # each chunk read by another task
            except StopAsyncIteration:
                break
            current.append(trace.get_current_span().get_span_context().is_valid)
        return current

    current = asyncio.run(with_saver(otel, saver_path, run))
    assert current and not any(current)
    (names_,) = traces(otel.spans()).values()
    assert "app.book" in names_


async def _next(stream: Any) -> Any:
    return await stream.__anext__()


def _genai() -> Any:
    from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor

    return LangChainInstrumentor()


def _openinference() -> Any:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    return LangChainInstrumentor()


@pytest.fixture(params=["genai", "openinference"])
def peer(request: pytest.FixtureRequest, otel: OTel) -> Iterator[str]:
    instrumentor = {"genai": _genai, "openinference": _openinference}[request.param]()
    add_tool_key_processor(otel.tracer_provider)
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        yield request.param
    finally:
        instrumentor.uninstrument()


def test_the_peers_tool_spans_are_in_the_async_runs_trace(
    otel: OTel, saver_path: str, peer: str
) -> None:
    async def run(graph: Any) -> Any:
        return await graph.ainvoke(agents.question(), agents.thread("a"))

    asyncio.run(with_saver(otel, saver_path, run))
    spans = otel.spans()
    tool_spans = [s for s in spans if _is_tool(s)]
    assert len(tool_spans) == 3, [s.name for s in spans]
    library = {s.context.trace_id for s in spans if s.name.startswith("langgraph.")}
    assert {s.context.trace_id for s in tool_spans} <= library
    assert len(library) == 1


def _is_tool(span: ReadableSpan) -> bool:
    attributes = span.attributes or {}
    return (
        attributes.get("gen_ai.operation.name") == "execute_tool"
        or attributes.get("openinference.span.kind") == "TOOL"
    )


def test_an_uninstrumented_openinference_is_left_alone(
    otel: OTel, saver_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Imported but not instrumented (or instrumented, then not): no span joined, nothing
    printed (OpenInference's `get_span` prints a warning when it is not instrumented)."""
    instrumentor = _openinference()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    instrumentor.uninstrument()

    async def run(graph: Any) -> Any:
        return await graph.ainvoke(agents.question(), agents.thread("a"))

    asyncio.run(with_saver(otel, saver_path, run))
    assert capsys.readouterr().out == ""
    assert any(map(names.is_run_span_name, otel.span_names()))
