"""Deleting or pruning a thread drops what the wrapper's in-process caches keep of it."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def kept(saver: Any) -> dict[str, int]:
    return {name: n for name, n in saver.observer.cache_sizes().items() if n}


def test_delete_thread_evicts_the_threads_cache_entries(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = graphs.asking().compile(checkpointer=saver)
    threads = [f"t{i}" for i in range(30)]
    for thread in threads:
        graph.invoke(graphs.user_input(), config(thread))
        graph.invoke(Command(resume="yes"), config(thread))  # a resume opens a watch session
    before = kept(saver)
    assert {"last_put", "writers", "hasher_digests", "hasher_last", "hasher_lists"} <= set(before)
    keep = threads[-1]
    for thread in threads[:-1]:
        saver.delete_thread(thread)
    after_one = kept(saver)
    saver.delete_thread(keep)
    assert kept(saver) == {}, "entries of deleted threads are left in the caches"
    # while one thread was left, the caches held that thread's entries alone (1/30 of them)
    assert all(n * 10 <= before[name] for name, n in after_one.items()), (after_one, before)


def test_prune_evicts_the_pruned_threads(otel: OTel, postgres_db: str) -> None:
    with PostgresSaver.from_conn_string(postgres_db) as inner:
        inner.setup()
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = graphs.linear().compile(checkpointer=saver)
        for thread in ("a", "b"):
            graph.invoke(graphs.user_input(), config(thread))
        before = kept(saver)
        saver.prune(["a", "b"], strategy="keep_latest")  # type: ignore[attr-defined]
        assert before and kept(saver) == {}
        # the pruned threads go on working, hashed afresh
        assert graph.invoke(graphs.user_input("again"), config("a"))["messages"]
