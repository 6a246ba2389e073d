"""The context cliff: a put's message history counted (messages, estimated tokens, the share of
the model's window), the `langgraph.messages.shrunk` event when a history is cut, and the
histograms the alert reads.

Real components: `create_react_agent` with the scripted chat model of `agents.py` and
LangChain's `trim_messages` in its `pre_model_hook` (returning `RemoveMessage(REMOVE_ALL_MESSAGES)`
and the kept messages), a graph with a summarising node (`RemoveMessage` by id and a summary),
a `DeltaChannel` history (deepagents' `messages`), SQLite, and the SDK's in-memory exporter and
metric reader.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately, trim_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.prebuilt import create_react_agent

import agents
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names

WINDOW = 500
"""A small context window (tokens), so a few turns come near it."""
TRIM_TO = 200
"""Tokens the pre-model hook keeps."""


@pytest.fixture
def sqlite() -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: " + "fact " * 30


def _trim(state: dict[str, Any]) -> dict[str, Any]:
    kept = trim_messages(
        state["messages"],
        max_tokens=TRIM_TO,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
        allow_partial=False,
    )
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]}


def _puts(otel: OTel) -> list[Any]:
    return [s for s in otel.spans() if s.name == names.SPAN_PUT]


def _shrinks(otel: OTel) -> list[dict[str, Any]]:
    return [
        dict(e.attributes or {})
        for s in _puts(otel)
        for e in s.events
        if e.name == names.EVENT_MESSAGES_SHRUNK
    ]


def _histogram(otel: OTel, name: str) -> Any:
    points = otel.metrics().get(name, [])
    assert len(points) == 1, points
    return points[0]


class _TurnByLastMessage(agents.ScriptedChatModel):
    """The scripted model, answering by the last message (a tool result: the text answer; else
    the tool call): the turn count of its base would restart as the hook trims the history."""

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
        turn = 1 if isinstance(messages[-1], ToolMessage) else 0
        return ChatResult(generations=[ChatGeneration(message=self.script.answer(turn, None))])


def _react_agent(saver: Any) -> Any:
    script = agents.Script(
        [
            agents.calls(("lookup", {"topic": "tides"})),
            agents.Turn("The tides follow the moon. " * 4),
        ]
    )
    model = _TurnByLastMessage(script=script)
    return create_react_agent(model, [lookup], pre_model_hook=_trim, checkpointer=saver)


def test_react_agent_with_trim_messages(otel: OTel, sqlite: SqliteSaver) -> None:
    saver = instrument(
        sqlite,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        context_window=WINDOW,
    )
    agent = _react_agent(saver)
    config = {"configurable": {"thread_id": "trimmed"}}
    for question in ("Why tides?", "And the moon?", "And the sun?"):
        agent.invoke({"messages": [HumanMessage(question + " " + "please " * 20)]}, config)

    puts = _puts(otel)
    counted = [s for s in puts if names.MESSAGES_COUNT in (s.attributes or {})]
    assert counted, "no put carried the history's counts"
    for span in counted:
        attributes = span.attributes or {}
        assert attributes[names.MESSAGES_CHANNEL] == "messages"
        assert attributes[names.MESSAGES_TOKEN_COUNTER] == "approximate"
        assert attributes[names.MESSAGES_CONTEXT_WINDOW] == WINDOW
        share = attributes[names.MESSAGES_WINDOW_SHARE]
        assert share == pytest.approx(attributes[names.MESSAGES_TOKENS] / WINDOW, abs=1e-4)

    # the last put's counts are those of the state the thread holds
    messages = agent.get_state(config).values["messages"]
    last = counted[-1].attributes or {}
    assert last[names.MESSAGES_COUNT] == len(messages)
    assert last[names.MESSAGES_TOKENS] == count_tokens_approximately(messages)

    # each counted put's figures are those of the checkpoint it wrote
    for span in counted:
        checkpoint = {
            "configurable": {
                "thread_id": "trimmed",
                "checkpoint_ns": "",
                "checkpoint_id": (span.attributes or {})[names.CHECKPOINT_ID],
            }
        }
        stored = agent.get_state(checkpoint).values["messages"]
        assert (span.attributes or {})[names.MESSAGES_TOKENS] == count_tokens_approximately(stored)

    # the hook trimmed the history: shrink events with before and after counts
    shrinks = _shrinks(otel)
    assert shrinks, "trim_messages cut the history but no shrink event was emitted"
    for event in shrinks:
        assert event[names.MESSAGES_BEFORE_COUNT] > event[names.MESSAGES_AFTER_COUNT]
        assert event[names.MESSAGES_BEFORE_TOKENS] > event[names.MESSAGES_AFTER_TOKENS]
        assert event[names.MESSAGES_SHRINK_KIND] == "removed"
        assert event[names.MESSAGES_ADDED] == 0
        assert (
            event[names.MESSAGES_REMOVED]
            == event[names.MESSAGES_BEFORE_COUNT] - event[names.MESSAGES_AFTER_COUNT]
        )
        assert event[names.MESSAGES_AFTER_TOKENS] <= TRIM_TO

    # histograms: one sample per counted put
    count = _histogram(otel, names.METRIC_MESSAGES)
    tokens = _histogram(otel, names.METRIC_MESSAGE_TOKENS)
    share = _histogram(otel, names.METRIC_WINDOW_SHARE)
    assert count.count == tokens.count == share.count == len(counted)
    assert tokens.sum == sum((s.attributes or {})[names.MESSAGES_TOKENS] for s in counted)
    assert dict(share.attributes) == {names.SAVER: "SqliteSaver"}
    assert share.max == pytest.approx(
        max((s.attributes or {})[names.MESSAGES_WINDOW_SHARE] for s in counted)
    )


def _summarising_graph(saver: Any) -> Any:
    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("an answer of some length " * 3)]}

    def summarise(state: MessagesState) -> dict[str, Any]:
        messages = state["messages"]
        if len(messages) <= 4:
            return {}
        old = messages[:-2]
        summary = SystemMessage(f"Summary of {len(old)} earlier messages.")
        return {"messages": [*(RemoveMessage(id=m.id) for m in old), summary]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", chat)
    builder.add_node("summarise", summarise)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "summarise")
    return builder.compile(checkpointer=saver)


def test_summarising_node(otel: OTel, sqlite: SqliteSaver) -> None:
    saver = instrument(
        sqlite, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = _summarising_graph(saver)
    config = {"configurable": {"thread_id": "summarised"}}
    for n in range(3):
        graph.invoke({"messages": [HumanMessage(f"question {n} " * 10)]}, config)

    shrinks = _shrinks(otel)
    assert len(shrinks) == 1, shrinks  # only the third run's history is long enough
    event = shrinks[0]
    # 3 before the summary: question, answer, question, answer, question, answer -> 6;
    # the 4 oldest replaced by one summary
    assert event[names.MESSAGES_BEFORE_COUNT] == 6
    assert event[names.MESSAGES_AFTER_COUNT] == 3
    assert event[names.MESSAGES_REMOVED] == 4
    assert event[names.MESSAGES_ADDED] == 1
    assert event[names.MESSAGES_SHRINK_KIND] == "replaced"
    messages = graph.get_state(config).values["messages"]
    assert event[names.MESSAGES_AFTER_TOKENS] == count_tokens_approximately(messages)
    # no window option: no share, no share histogram
    puts = _puts(otel)
    assert not any(names.MESSAGES_WINDOW_SHARE in (s.attributes or {}) for s in puts)
    assert names.METRIC_WINDOW_SHARE not in otel.metrics()


def _delta_reducer(current: list[AnyMessage], writes: list[Any]) -> list[AnyMessage]:
    merged = current
    for write in writes:
        merged = add_messages(merged, write)
    return merged


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_delta_reducer, snapshot_frequency=3)]


def test_delta_channel_history(otel: OTel, sqlite: SqliteSaver) -> None:
    """deepagents' `messages` is a `DeltaChannel`: no value is stored between snapshots, yet
    every put that changes it is counted from the value LangGraph held."""
    saver = instrument(
        sqlite, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )

    def chat(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage("reply " * 8)]}

    builder = StateGraph(DeltaState)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "delta"}}
    for n in range(4):
        graph.invoke({"messages": [HumanMessage(f"turn {n}")]}, config)

    counted = [s for s in _puts(otel) if names.MESSAGES_COUNT in (s.attributes or {})]
    # each run: the input put and the chat put change the history
    assert len(counted) == 8
    assert [(s.attributes or {})[names.MESSAGES_COUNT] for s in counted] == list(range(1, 9))
    messages = graph.get_state(config).values["messages"]
    last = counted[-1].attributes or {}
    assert last[names.MESSAGES_TOKENS] == count_tokens_approximately(messages)


class Plain(TypedDict):
    n: int


def test_graph_without_messages_is_unchanged(otel: OTel, sqlite: SqliteSaver) -> None:
    saver = instrument(
        sqlite,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        context_window=WINDOW,
    )
    builder = StateGraph(Plain)
    builder.add_node("step", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "step")
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"n": 0}, {"configurable": {"thread_id": "plain"}})
    for span in _puts(otel):
        assert not [k for k in (span.attributes or {}) if k.startswith("langgraph.messages.")]
    metrics = otel.metrics()
    for name in (names.METRIC_MESSAGES, names.METRIC_MESSAGE_TOKENS, names.METRIC_WINDOW_SHARE):
        assert name not in metrics


def test_off_and_custom_counter(otel: OTel, sqlite: SqliteSaver) -> None:
    """`message_history=False` counts nothing; a callable counts with the user's tokenizer,
    one message at a time."""
    seen: list[int] = []

    def words(messages: Any) -> int:
        seen.append(len(messages))
        return sum(len(str(m.content).split()) for m in messages)

    saver = instrument(
        sqlite,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        token_counter=words,
    )
    graph = _summarising_graph(saver)
    config = {"configurable": {"thread_id": "custom"}}
    graph.invoke({"messages": [HumanMessage("one two three")]}, config)
    last = [s for s in _puts(otel) if names.MESSAGES_COUNT in (s.attributes or {})][-1]
    assert (last.attributes or {})[names.MESSAGES_TOKEN_COUNTER] == "custom"
    assert (last.attributes or {})[names.MESSAGES_TOKENS] == 3 + 15
    assert set(seen) == {1}
    assert len(seen) == 2  # each message counted once: the answer added to the question

    otel.clear()
    off = instrument(
        SqliteSaver(sqlite.conn),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        message_history=False,
    )
    _summarising_graph(off).invoke(
        {"messages": [HumanMessage("again")]}, {"configurable": {"thread_id": "off"}}
    )
    assert _puts(otel)
    assert not any(names.MESSAGES_COUNT in (s.attributes or {}) for s in _puts(otel))


def test_a_faulty_counter_never_reaches_the_app(otel: OTel, sqlite: SqliteSaver) -> None:
    def broken(messages: Any) -> int:
        raise RuntimeError("tokenizer down")

    saver = instrument(
        sqlite,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        token_counter=broken,
    )
    graph = _summarising_graph(saver)
    config = {"configurable": {"thread_id": "broken"}}
    out = graph.invoke({"messages": [HumanMessage("hello")]}, config)
    assert len(out["messages"]) == 2
    puts = _puts(otel)
    assert puts and all(names.STATE_HASH in (s.attributes or {}) for s in puts)
    assert not any(names.MESSAGES_COUNT in (s.attributes or {}) for s in puts)


def test_a_resumed_run_continues_the_stored_count(
    otel: OTel, sqlite: SqliteSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each checkpoint stores its history's count (also where its step left the history as it
    was); the next run's first put continues from it and counts only the messages it adds."""
    import langchain_core.messages.utils as lc_utils

    counted: list[int] = []

    def counting(messages: Any, **kwargs: Any) -> int:
        counted.append(len(messages))
        return count_tokens_approximately(messages, **kwargs)

    monkeypatch.setattr(lc_utils, "count_tokens_approximately", counting)
    saver = instrument(
        sqlite, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = _summarising_graph(saver)  # its summarise step leaves a short history as it is
    config = {"configurable": {"thread_id": "stored"}}
    graph.invoke({"messages": [HumanMessage("first question " * 5)]}, config)
    assert len(counted) == 2
    stored = sqlite.get_tuple(config)
    assert stored is not None
    messages = graph.get_state(config).values["messages"]
    # the last checkpoint (summarise: nothing changed) carries the count forward
    assert stored.metadata["otel"]["history"] == [  # type: ignore[typeddict-item]
        "messages",
        2,
        count_tokens_approximately(messages),
        "approximate",
    ]
    counted.clear()
    otel.clear()
    graph.invoke({"messages": [HumanMessage("second question " * 5)]}, config)
    assert counted == [1, 1]  # the new question and the new answer, not the loaded history
    messages = graph.get_state(config).values["messages"]
    last = [s for s in _puts(otel) if names.MESSAGES_COUNT in (s.attributes or {})][-1]
    assert (last.attributes or {})[names.MESSAGES_COUNT] == len(messages) == 4
    assert (last.attributes or {})[names.MESSAGES_TOKENS] == count_tokens_approximately(messages)
    # the third run's summary is seen as a shrink although the history was loaded
    otel.clear()
    graph.invoke({"messages": [HumanMessage("third question " * 5)]}, config)
    (shrink,) = _shrinks(otel)
    assert shrink[names.MESSAGES_BEFORE_COUNT] == 6
    assert shrink[names.MESSAGES_SHRINK_KIND] == "replaced"


def test_a_hook_that_trims_only_the_model_input_is_not_a_shrink(
    otel: OTel, sqlite: SqliteSaver
) -> None:
    """A `pre_model_hook` returning `llm_input_messages` (LangGraph's way to trim what the
    model sees without changing the history) writes a second message list: the history stays
    `messages`, growing, and nothing shrinks."""

    def trim_input(state: dict[str, Any]) -> dict[str, Any]:
        return {"llm_input_messages": _trim(state)["messages"][1:]}

    script = agents.Script(
        [agents.calls(("lookup", {"topic": "tides"})), agents.Turn("The tides follow the moon.")]
    )
    saver = instrument(
        sqlite, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    agent = create_react_agent(
        _TurnByLastMessage(script=script), [lookup], pre_model_hook=trim_input, checkpointer=saver
    )
    config = {"configurable": {"thread_id": "hooked"}}
    for question in ("Why tides?", "And the moon?", "And the sun?"):
        agent.invoke({"messages": [HumanMessage(question + " " + "please " * 20)]}, config)
    counted = [s for s in _puts(otel) if names.MESSAGES_COUNT in (s.attributes or {})]
    assert {(s.attributes or {})[names.MESSAGES_CHANNEL] for s in counted} == {"messages"}
    counts = [(s.attributes or {})[names.MESSAGES_COUNT] for s in counted]
    assert counts == sorted(counts) and counts[-1] == 12
    assert _shrinks(otel) == []
    final = agent.get_state(config).values["messages"]
    assert (counted[-1].attributes or {})[names.MESSAGES_TOKENS] == count_tokens_approximately(
        final
    )
