"""LangGraph's `DeltaChannel` through the wrapper: a channel stored as deltas is described by its
logical value, the one the graph sees (what `get_state()` materialises).

The graph is a plain `StateGraph` whose `messages` is a `DeltaChannel` (deepagents declares its
own `messages` so; its real agent is in test_agents_packaged.py), next to the same graph with an
`add_messages` list channel: every expectation comes from LangGraph's own `get_state` of each
checkpoint, never from the library.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import operator
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.analysis.hashing import hash_value

TURNS = 4


def _delta_reducer(current: list[AnyMessage], writes: list[Any]) -> list[AnyMessage]:
    merged = current
    for write in writes:
        merged = add_messages(merged, write)
    return merged


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_delta_reducer, snapshot_frequency=3)]
    turns: Annotated[int, operator.add]


class ListState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]


def _model(state: dict[str, Any]) -> dict[str, Any]:
    turn = state["turns"]
    if turn < TURNS:
        call = {"name": "lookup", "args": {"n": turn}, "id": f"call-{turn}", "type": "tool_call"}
        return {"messages": [AIMessage("", tool_calls=[call])], "turns": 1}
    return {"messages": [AIMessage("done")], "turns": 1}


def _tool(state: dict[str, Any]) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]
    answer = ToolMessage(f"n={call['args']['n']}", name="lookup", tool_call_id=call["id"])
    return {"messages": [answer]}


def _route(state: dict[str, Any]) -> str:
    return "tool" if state["messages"][-1].tool_calls else "__end__"


def graph(state: type, saver: Any) -> Any:
    builder = StateGraph(state)
    builder.add_node("model", _model)
    builder.add_node("tool", _tool)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", _route)
    builder.add_edge("tool", "model")
    return builder.compile(checkpointer=saver)


INPUT = {"messages": [HumanMessage("go")], "turns": 0}


def _puts(otel: OTel) -> list[Any]:
    return [s for s in otel.spans() if s.name == names.SPAN_PUT]


def _channel_event(span: Any, channel: str) -> dict[str, Any] | None:
    for event in span.events:
        if event.name == names.EVENT_CHANNEL and event.attributes[names.CHANNEL_NAME] == channel:
            return dict(event.attributes)
    return None


def _config_of(span: Any) -> dict[str, Any]:
    return {
        "configurable": {
            "thread_id": span.attributes[names.THREAD_ID],
            "checkpoint_ns": "",
            "checkpoint_id": span.attributes[names.CHECKPOINT_ID],
        }
    }


def _materialised(g: Any, span: Any) -> list[Any]:
    """LangGraph's own value of `messages` at the put's checkpoint."""
    return list(g.get_state(_config_of(span)).values.get("messages", []))


@contextlib.asynccontextmanager
async def saver_of(kind: str, tmp_path: Path) -> AsyncIterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        conn = sqlite3.connect(tmp_path / "delta.sqlite", check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
        conn.close()
    else:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "delta-async.sqlite")) as saver:
            await saver.setup()
            yield saver


@pytest.mark.parametrize(
    ("kind", "api"),
    [("memory", "sync"), ("memory", "async"), ("sqlite", "sync"), ("async_sqlite", "async")],
)
async def test_a_delta_channel_hashes_as_langgraph_materialises_it(
    kind: str, api: str, otel: OTel, tmp_path: Path
) -> None:
    async with saver_of(kind, tmp_path) as inner:
        g = graph(DeltaState, instrument(inner, tracer_provider=otel.tracer_provider))
        config = {"configurable": {"thread_id": "t-delta"}}
        if api == "sync":
            g.invoke(INPUT, config)
        else:
            await g.ainvoke(INPUT, config)
        changed = [p for p in _puts(otel) if "messages" in p.attributes[names.CHANNELS_CHANGED]]
        assert len(changed) == 2 * TURNS + 2  # the input, then each model and tool step
        for put in changed:
            event = _channel_event(put, "messages")
            assert event is not None, "a put that changes a delta channel has its channel event"
            values = (
                await g.aget_state(_config_of(put))
                if api == "async"
                else g.get_state(_config_of(put))
            ).values
            assert event[names.CHANNEL_HASH] == hash_value(list(values["messages"]))


def test_a_delta_channel_hashes_as_the_same_list_channel(otel: OTel) -> None:
    """The same steps on a `DeltaChannel` and on an `add_messages` list: the same channel
    hashes, step by step, snapshots or not."""
    hashes = {}
    for state in (DeltaState, ListState):
        otel.clear()
        g = graph(state, instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
        g.invoke(INPUT, {"configurable": {"thread_id": state.__name__}})
        hashes[state] = [
            (p.attributes[names.STEP], _channel_event(p, "messages")[names.CHANNEL_HASH])  # type: ignore[index]
            for p in _puts(otel)
            if "messages" in p.attributes[names.CHANNELS_CHANGED]
        ]
    assert hashes[DeltaState] == hashes[ListState]


def test_puts_that_hold_more_messages_have_other_state_hashes(otel: OTel) -> None:
    g = graph(DeltaState, instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
    g.invoke(INPUT, {"configurable": {"thread_id": "t"}})
    by_count: dict[int, set[str]] = {}
    for put in _puts(otel):
        count = len(_materialised(g, put))
        by_count.setdefault(count, set()).add(put.attributes[names.STATE_HASH])
    counts = sorted(by_count)
    assert len(counts) == 2 * TURNS + 3  # no message yet, the input, each model and tool step
    for fewer, more in itertools.pairwise(counts):
        assert not by_count[fewer] & by_count[more], (fewer, more)


def test_a_delta_channel_event_sizes_what_the_step_added(otel: OTel) -> None:
    g = graph(DeltaState, instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
    g.invoke(INPUT, {"configurable": {"thread_id": "t"}})
    changed = [p for p in _puts(otel) if "messages" in p.attributes[names.CHANNELS_CHANGED]]
    summaries = []
    for before, after in itertools.pairwise(changed):
        event = _channel_event(after, "messages")
        assert event is not None
        added = hash_value(_materialised(g, after)[len(_materialised(g, before)) :])
        assert added  # the step added messages
        assert 0 < event[names.CHANNEL_SIZE_BYTES] < after.attributes[names.SIZE_BYTES]
        assert after.attributes[names.WRITTEN_BYTES] < after.attributes[names.SIZE_BYTES]
        summaries.append(event[names.CHANNEL_SUMMARY])
    assert summaries[:2] == ["+1 message: ai(tool_calls=lookup)", "+1 message: tool(lookup)"]
    # the logical state grows, the bytes each step writes do not
    sizes = [p.attributes[names.SIZE_BYTES] for p in changed]
    assert sizes == sorted(sizes) and sizes[-1] > 3 * sizes[1]


def test_a_model_step_on_a_delta_channel_gives_its_tool_call_events(otel: OTel) -> None:
    g = graph(DeltaState, instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
    g.invoke(INPUT, {"configurable": {"thread_id": "t"}})
    calls = [
        e.attributes[names.TOOL_NAME]
        for p in _puts(otel)
        for e in p.events
        if e.name == names.EVENT_TOOL_CALL
    ]
    assert calls == ["lookup"] * TURNS


def test_get_state_and_its_history_on_a_delta_thread_are_one_trace_each(otel: OTel) -> None:
    g = graph(DeltaState, instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
    config = {"configurable": {"thread_id": "t"}}
    g.invoke(INPUT, config)
    for read in (lambda: g.get_state(config), lambda: list(g.get_state_history(config))):
        otel.clear()
        read()
        spans = otel.spans()
        assert any(s.name == names.SPAN_GET_DELTA_CHANNEL_HISTORY for s in spans)
        assert len({s.context.trace_id for s in spans}) == 1, sorted(s.name for s in spans)


def test_an_update_of_a_delta_channel_outside_runs_hashes_as_materialised(otel: OTel) -> None:
    g = graph(DeltaState, instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
    config = {"configurable": {"thread_id": "t"}}
    g.invoke(INPUT, config)
    otel.clear()
    g.update_state(config, {"messages": [HumanMessage("and again")]}, as_node="tool")
    (put,) = _puts(otel)
    event = _channel_event(put, "messages")
    assert event is not None
    assert event[names.CHANNEL_HASH] == hash_value(_materialised(g, put))


@pytest.mark.parametrize("telemetry", [True, False], ids=["hashed", "telemetry-off"])
def test_the_inspector_says_when_it_cannot_see_a_delta_channel(
    telemetry: bool, otel: OTel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A delta channel stores no value between snapshots: offline, only the hashes the wrapper
    stored describe it. Written without them, the inspector says so instead of showing an
    empty channel."""
    from langgraph.checkpoint.otel.inspector.cli import main

    path = tmp_path / "delta.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    inner = SqliteSaver(conn)
    inner.setup()
    saver = instrument(inner, tracer_provider=otel.tracer_provider) if telemetry else inner
    graph(DeltaState, saver).invoke(INPUT, {"configurable": {"thread_id": "t"}})
    conn.close()
    capsys.readouterr()
    assert main(["growth", "t", f"sqlite:///{path}", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    notes = [n for n in shown["source"]["cannot_show"] if "delta channels" in n]
    grown = {c["channel"] for c in shown["channels"]}
    if telemetry:
        assert notes == [] and "messages" in grown
    else:
        assert len(notes) == 1 and "messages" in notes[0]
