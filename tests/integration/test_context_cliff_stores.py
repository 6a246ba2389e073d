"""The context cliff on the server-backed savers: each checkpoint's stored history count
(`"history"` in the `otel` metadata) goes through PostgreSQL (sync and async) and Redis as
written, a resumed run continues from it (its first put counts only the messages it adds), and
a summary is a `langgraph.messages.shrunk` event. Real servers (the `postgres_db` and
`redis_url` fixtures), the SDK's in-memory exporter; the graph of
tests/wrapper/test_context_cliff.py (a chat node and a summarising node)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.graph import START, MessagesState, StateGraph

from helpers import OTel, flush_redis
from langgraph.checkpoint.otel import instrument, names


def _graph(saver: Any) -> Any:
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


class Counting:
    """LangChain's `count_tokens_approximately`, put in its module's place, counting calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import langchain_core.messages.utils as lc_utils

        self.messages: list[int] = []
        monkeypatch.setattr(lc_utils, "count_tokens_approximately", self)

    def __call__(self, messages: Any, **kwargs: Any) -> int:
        self.messages.append(len(messages))
        return count_tokens_approximately(messages, **kwargs)


@contextmanager
def sync_saver(kind: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    if kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(request.getfixturevalue("postgres_db")) as saver:
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.redis import RedisSaver

        url = request.getfixturevalue("redis_url")
        flush_redis(url)
        with RedisSaver.from_conn_string(url) as saver:
            saver.setup()
            yield saver


@asynccontextmanager
async def async_saver(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if kind == "postgres":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        url = request.getfixturevalue("postgres_db")
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.redis.aio import AsyncRedisSaver

        url = request.getfixturevalue("redis_url")
        flush_redis(url)
        async with AsyncRedisSaver.from_conn_string(url) as saver:  # runs asetup()
            yield saver


def _check_runs(otel: OTel, counted: list[int], stored: list[Any], states: list[Any]) -> None:
    """What the three runs showed: the stored counts, the second run's few counts, the
    summary's shrink."""
    first, second, _ = states
    assert stored[0] == ["messages", 2, count_tokens_approximately(first), "approximate"]
    assert stored[1] == ["messages", 4, count_tokens_approximately(second), "approximate"]
    # a question and an answer a run, and the summary: never the loaded history
    assert counted == [1] * 7
    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    last = [s for s in puts if names.MESSAGES_COUNT in (s.attributes or {})][-1]
    assert (last.attributes or {})[names.MESSAGES_TOKENS] == count_tokens_approximately(states[2])
    shrinks = [
        dict(e.attributes or {})
        for s in puts
        for e in s.events
        if e.name == names.EVENT_MESSAGES_SHRUNK
    ]
    assert len(shrinks) == 1, shrinks
    shrink = shrinks[0]
    assert (shrink[names.MESSAGES_BEFORE_COUNT], shrink[names.MESSAGES_AFTER_COUNT]) == (6, 3)
    assert shrink[names.MESSAGES_SHRINK_KIND] == "replaced"


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_the_stored_count_on_a_server(
    kind: str, otel: OTel, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = Counting(monkeypatch)
    with sync_saver(kind, request) as inner:
        graph = _graph(
            instrument(
                inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
            )
        )
        config = {"configurable": {"thread_id": f"cliff-{kind}"}}
        stored, states = [], []
        for n in range(3):
            graph.invoke({"messages": [HumanMessage(f"question {n} " * 10)]}, config)
            latest = inner.get_tuple(config)
            stored.append(latest.metadata["otel"]["history"])
            states.append(graph.get_state(config).values["messages"])
    _check_runs(otel, counting.messages, stored, states)


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["postgres", "redis"])
async def test_the_stored_count_on_a_server_async(
    kind: str, otel: OTel, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = Counting(monkeypatch)
    async with async_saver(kind, request) as inner:
        graph = _graph(
            instrument(
                inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
            )
        )
        config = {"configurable": {"thread_id": f"cliff-async-{kind}"}}
        stored, states = [], []
        for n in range(3):
            await graph.ainvoke({"messages": [HumanMessage(f"question {n} " * 10)]}, config)
            latest = await inner.aget_tuple(config)
            stored.append(latest.metadata["otel"]["history"])
            states.append((await graph.aget_state(config)).values["messages"])
    _check_runs(otel, counting.messages, stored, states)
