"""Checkpoint growth: each thread's line of checkpoints and bytes, its largest channel, the
growth metrics, and what a prune removed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names, stored_history


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def puts(otel: OTel) -> list[dict[str, Any]]:
    return [dict(s.attributes) for s in otel.spans() if s.name == names.SPAN_PUT]


def line(put: dict[str, Any]) -> tuple[int, int] | None:
    if names.THREAD_CHECKPOINTS not in put:
        return None
    return put[names.THREAD_CHECKPOINTS], put[names.THREAD_WRITTEN_BYTES]


def running_line(spans: list[dict[str, Any]], start: tuple[int, int] = (0, 0)) -> list[Any]:
    """The line each put should report: one more checkpoint and its written bytes each."""
    expected, (count, total) = [], start
    for put in spans:
        count, total = count + 1, total + put[names.WRITTEN_BYTES]
        expected.append((count, total))
    return expected


def test_the_line_goes_on_across_processes_updates_and_forks(tmp_path: Path, otel: OTel) -> None:
    db = tmp_path / "app.db"

    def wrapper() -> Any:
        # a fresh wrapper over the same file: what a restarted process has
        conn = sqlite3.connect(db, check_same_thread=False)
        return instrument(
            SqliteSaver(conn),
            tracer_provider=otel.tracer_provider,
            meter_provider=otel.meter_provider,
        )

    first = graphs.linear().compile(checkpointer=wrapper())
    first.invoke(graphs.user_input(), config())
    run_1 = puts(otel)
    assert [line(p) for p in run_1] == running_line(run_1)
    assert len(run_1) == 5  # input, a, b, c... and the __start__ step

    otel.clear()
    second = graphs.linear().compile(checkpointer=wrapper())
    second.invoke(graphs.user_input("again", "h-2"), config())
    run_2 = puts(otel)
    assert [line(p) for p in run_2] == running_line(run_2, line(run_1[-1]))  # type: ignore[arg-type]

    otel.clear()
    second.update_state(config(), {"log": ["edited"]})
    (update,) = puts(otel)
    assert line(update) == running_line([update], line(run_2[-1]))[0]  # type: ignore[arg-type]

    # a fork counts from its fork point, not from the thread's latest checkpoint
    otel.clear()
    history = list(second.get_state_history(config()))
    fork_point = history[-3]  # after the first run's `a`
    second.invoke(None, fork_point.config)
    stored = {
        c.config["configurable"]["checkpoint_id"]: c.metadata[names.METADATA_KEY]["lineage"]
        for c in stored_history(second.checkpointer, config())
    }
    base = tuple(stored[fork_point.config["configurable"]["checkpoint_id"]])
    assert base[0] == 3
    fork = puts(otel)
    assert [line(p) for p in fork] == running_line(fork, base)  # type: ignore[arg-type]


def test_a_thread_begun_without_the_library_reports_no_line(otel: OTel) -> None:
    inner = InMemorySaver()
    graphs.linear().compile(checkpointer=inner).invoke(graphs.user_input(), config())
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graphs.linear().compile(checkpointer=saver).invoke(graphs.user_input("b", "h-2"), config())
    assert puts(otel) and all(line(p) is None for p in puts(otel))
    # ... while a new thread has one
    otel.clear()
    graphs.linear().compile(checkpointer=saver).invoke(graphs.user_input(), config("new"))
    assert [line(p) for p in puts(otel)] == running_line(puts(otel))


def test_the_largest_channel_is_named(otel: OTel) -> None:
    saver = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    graphs.linear().compile(checkpointer=saver).invoke(graphs.user_input(), config())
    last = puts(otel)[-1]
    channels = stored_history(saver, config(), limit=1)[0].metadata[names.METADATA_KEY]["channels"]
    assert last[names.LARGEST_CHANNEL] == "messages"
    assert last[names.LARGEST_CHANNEL_SIZE_BYTES] == channels["messages"][1]
    assert channels["messages"][1] == max(
        size for name, (_, size) in channels.items() if not name.startswith(("__", "branch:"))
    )


def test_growth_metrics_have_one_sample_per_run_and_no_thread_ids(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = graphs.linear().compile(checkpointer=saver)
    graph.invoke(graphs.user_input(), config("a"))
    graph.invoke(graphs.user_input("more", "h-2"), config("a"))
    graph.invoke(graphs.user_input(), config("b"))
    lines = [line(p) for p in puts(otel)]
    ends = [lines[4], lines[9], lines[14]]  # the last put of each run
    assert ends == [(5, ends[0][1]), (10, ends[1][1]), (5, ends[2][1])]  # type: ignore[index]

    metrics = otel.metrics()
    (count,) = metrics[names.METRIC_THREAD_CHECKPOINTS]
    assert count.count == 3 and count.sum == 20 and count.max == 10
    assert dict(count.attributes) == {names.SAVER: "InMemorySaver"}
    (written,) = metrics[names.METRIC_THREAD_WRITTEN]
    assert written.count == 3 and written.sum == sum(e[1] for e in ends)  # type: ignore[index]
    # bytes written per channel: the channel-size histogram's sum (no thread id either)
    written_by_channel: dict[str, int] = {}
    for span in otel.spans():
        for event in span.events if span.name == names.SPAN_PUT else ():
            if event.name == names.EVENT_CHANNEL:
                channel = event.attributes[names.CHANNEL_NAME]
                written_by_channel[channel] = (
                    written_by_channel.get(channel, 0) + event.attributes[names.CHANNEL_SIZE_BYTES]
                )
    sizes = metrics[names.METRIC_CHANNEL_SIZE]
    assert {p.attributes[names.CHANNEL_NAME]: p.sum for p in sizes} == written_by_channel
    assert all(set(p.attributes) == {names.CHANNEL_NAME} for p in sizes)


def test_the_prune_span_shows_what_was_removed(otel: OTel, postgres_db: str) -> None:
    with PostgresSaver.from_conn_string(postgres_db) as inner:
        inner.setup()
        saver = instrument(inner, tracer_provider=otel.tracer_provider)
        graph = graphs.linear().compile(checkpointer=saver)
        for thread in ("a", "b", "c"):
            graph.invoke(graphs.user_input(), config(thread))
        saver.prune(["a", "b"], strategy="keep_latest")  # type: ignore[attr-defined]
        (span,) = [s for s in otel.spans() if s.name == names.SPAN_PRUNE]
        assert span.attributes[names.PRUNE_CHECKPOINTS_BEFORE] == 10
        assert span.attributes[names.PRUNE_CHECKPOINTS_REMOVED] == 8
        assert len(list(inner.list(config("a")))) == 1
        assert len(list(inner.list(config("c")))) == 5


@pytest.mark.asyncio
async def test_the_async_prune_span_shows_what_was_removed(otel: OTel, postgres_db: str) -> None:
    async with AsyncPostgresSaver.from_conn_string(postgres_db) as inner:
        await inner.setup()
        saver = instrument(inner, tracer_provider=otel.tracer_provider)
        graph = graphs.async_linear().compile(checkpointer=saver)
        await graph.ainvoke(graphs.user_input(), config("a"))
        await saver.aprune(["a"], strategy="delete")  # type: ignore[attr-defined]
        (span,) = [s for s in otel.spans() if s.name == names.SPAN_PRUNE]
        before = span.attributes[names.PRUNE_CHECKPOINTS_BEFORE]
        assert before >= 4 and span.attributes[names.PRUNE_CHECKPOINTS_REMOVED] == before
        assert [c async for c in inner.alist(config("a"))] == []
