"""A cancelled run keeps its own trace: the saves LangGraph still flushes after the run was
cancelled (durability `async`) are in the cancelled run's trace, marked as written after the
cancellation, never roots of their own and never in the thread's next run; on InMemory, SQLite
and PostgreSQL savers, async and sync."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from opentelemetry.sdk.trace import ReadableSpan

from helpers import OTel, is_run_span
from langgraph.checkpoint.otel import instrument, names

SAVE_DELAY = 0.1
"""Seconds each checkpoint save of the inner saver takes: a run cancelled after 0.15 s has
three nodes' saves still queued."""


class State(TypedDict):
    n: int


def _step(state: State) -> State:
    return {"n": state["n"] + 1}


def three_nodes(saver: BaseCheckpointSaver[Any]) -> Any:
    graph = StateGraph(State)
    for name in ("a", "b", "c"):
        graph.add_node(name, _step)
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", END)
    return graph.compile(checkpointer=saver)


def slow(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """The same saver, its checkpoint saves taking `SAVE_DELAY` each (as a loaded database's)."""
    cls = type(saver)

    async def aput(self: Any, *args: Any) -> Any:
        await asyncio.sleep(SAVE_DELAY)
        return await cls.aput(self, *args)

    def put(self: Any, *args: Any) -> Any:
        time.sleep(SAVE_DELAY)
        return cls.put(self, *args)

    saver.__class__ = type(f"Slow{cls.__name__}", (cls,), {"aput": aput, "put": put})
    return saver


@asynccontextmanager
async def async_saver(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
            yield saver
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        url = request.getfixturevalue("postgres_db")
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver


@contextmanager
def sync_saver(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
            yield saver
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        url = request.getfixturevalue("postgres_db")
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            yield saver


CONFIG = {"configurable": {"thread_id": "t"}}
SAVERS = ["memory", "sqlite", "postgres"]


def runs_of(otel: OTel) -> list[ReadableSpan]:
    """The library's run spans, in start order."""
    return sorted((s for s in otel.spans() if is_run_span(s)), key=lambda s: s.start_time or 0)


def saves_by_run(otel: OTel) -> tuple[list[list[ReadableSpan]], list[ReadableSpan]]:
    """Each run's put spans (by trace) in run order, and the puts in no run's trace."""
    runs = runs_of(otel)
    index = {run.context.trace_id: i for i, run in enumerate(runs)}
    by_run: list[list[ReadableSpan]] = [[] for _ in runs]
    stray = []
    for span in otel.spans():
        if span.name != names.SPAN_PUT:
            continue
        if span.context.trace_id in index:
            by_run[index[span.context.trace_id]].append(span)
        else:
            stray.append(span)
    return by_run, stray


def late(span: ReadableSpan) -> bool:
    return bool((span.attributes or {}).get(names.WRITTEN_AFTER_CANCEL))


async def cancel_a_run(graph: Any, then_run_again: bool) -> None:
    task = asyncio.create_task(graph.ainvoke({"n": 0}, CONFIG, durability="async"))
    await asyncio.sleep(1.5 * SAVE_DELAY)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    if then_run_again:
        await graph.ainvoke({"n": 0}, CONFIG, durability="async")
    await asyncio.sleep(6 * SAVE_DELAY)  # the cancelled run's queued saves finish


@pytest.mark.parametrize("then_run_again", [False, True], ids=["alone", "next-run"])
@pytest.mark.parametrize("kind", SAVERS)
async def test_async_cancelled_run_keeps_its_late_saves(
    otel: OTel, kind: str, then_run_again: bool, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    async with async_saver(kind, tmp_path, request) as inner:
        graph = three_nodes(instrument(slow(inner), tracer_provider=otel.tracer_provider))
        await cancel_a_run(graph, then_run_again)
        stored = [t async for t in inner.alist(CONFIG)]
    by_run, stray = saves_by_run(otel)
    assert stray == []
    assert len(by_run) == (2 if then_run_again else 1)
    cancelled = by_run[0]
    assert any(late(s) for s in cancelled), "the cancelled run's saves after its end"
    for span in cancelled:  # parented to the run span, which ended first when late
        assert span.parent is not None and span.parent.span_id == runs_of(otel)[0].context.span_id
        if late(span):
            assert (span.start_time or 0) >= (runs_of(otel)[0].end_time or 0)
    if then_run_again:
        assert not any(late(s) for s in by_run[1])
    # every save the inner saver stored has its span in the trace of the run that wrote it
    put_ids = {str((s.attributes or {})[names.CHECKPOINT_ID]) for run in by_run for s in run}
    assert {t.checkpoint["id"] for t in stored} <= put_ids


@pytest.mark.parametrize("kind", SAVERS)
def test_sync_stream_closed_early_keeps_its_saves(
    otel: OTel, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A sync stream abandoned after its first step: LangGraph finishes its saves before the
    loop exits; each run's saves are in its own trace, none marked late."""
    with sync_saver(kind, tmp_path, request) as inner:
        graph = three_nodes(instrument(slow(inner), tracer_provider=otel.tracer_provider))
        stream = graph.stream({"n": 0}, CONFIG, durability="async")
        next(stream)
        stream.close()
        graph.invoke({"n": 0}, CONFIG, durability="async")
    by_run, stray = saves_by_run(otel)
    assert stray == []
    assert len(by_run) == 2 and all(by_run)
    assert not any(late(s) for run in by_run for s in run)
    first_end = runs_of(otel)[0].end_time or 0
    assert all((s.end_time or 0) <= first_end for s in by_run[0])


@pytest.mark.parametrize("layer", ["delegating", "to-thread"])
async def test_a_layer_between_langgraph_and_the_wrapper_keeps_the_attribution(
    otel: OTel, layer: str
) -> None:
    """The run a save belongs to travels with LangGraph's submission, so a saver between
    LangGraph and the wrapper (one that awaits it from its own coroutine, or runs it in a
    worker thread) changes nothing."""
    from delegating_savers import Delegating
    from sync_adapter import to_thread_adapter

    inner = instrument(slow(InMemorySaver()), tracer_provider=otel.tracer_provider)
    graph = three_nodes(Delegating(inner) if layer == "delegating" else to_thread_adapter(inner))
    await cancel_a_run(graph, then_run_again=True)
    by_run, stray = saves_by_run(otel)
    assert stray == [] and len(by_run) == 2
    assert any(late(s) for s in by_run[0]) and not any(late(s) for s in by_run[1])
