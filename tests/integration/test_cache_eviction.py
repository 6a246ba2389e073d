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
        # a write outside any run (update_state) keeps its list memo until bounds or delete
        graph.update_state(config(thread), {"log": ["edited"]})
    before = kept(saver)
    assert {"last_put", "hasher_digests", "hasher_lists"} <= set(before)
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
            # runs leave nothing behind; a write outside a run does
            graph.update_state(config(thread), {"log": ["edited"]})
        before = kept(saver)
        saver.prune(["a", "b"], strategy="keep_latest")  # type: ignore[attr-defined]
        assert before and kept(saver) == {}
        # the pruned threads go on working, hashed afresh
        assert graph.invoke(graphs.user_input("again"), config("a"))["messages"]


def test_a_finished_run_leaves_none_of_its_values_alive(otel: OTel) -> None:
    """200 threads of ~40 KB message histories: once each run ends, the wrapper keeps nothing of
    it (every cache empty, and tracemalloc sees nothing freed by clearing the hasher)."""
    import tracemalloc

    from langchain_core.messages import AIMessage

    inner = InMemorySaver()
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = graphs.linear().compile(checkpointer=saver)
    history = [AIMessage("x" * 400, id=f"m{i}") for i in range(100)]  # ~40 KB encoded
    tracemalloc.start()
    try:
        for i in range(200):
            graph.invoke({"messages": history, "log": []}, config(f"t{i}"))
        # a run's caches end with it: the next run starts from what it loads
        assert kept(saver) == {}, kept(saver)
        del history
        for i in range(200):
            inner.delete_thread(f"t{i}")  # bare deletes: the wrapper's caches keep what they keep
        kept_alive = freed_by_clearing_the_hasher(saver, otel)
    finally:
        tracemalloc.stop()
    # 8 MB of messages were hashed; what is left is allocator noise
    assert kept_alive < 1024 * 1024, kept_alive


def test_lists_written_outside_runs_are_bounded_in_bytes(otel: OTel) -> None:
    """`update_state` writes outside any run, so its list memos stay: 200 threads of ~40 KB
    lists under a 1 MB budget keep at most the budget referenced (by encoding, and by
    tracemalloc once the threads are gone), and hashes stay right when a memo was dropped."""
    import tracemalloc

    from langchain_core.messages import AIMessage

    budget = 1024 * 1024
    inner = InMemorySaver()
    saver = instrument(
        inner,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        hash_memo_bytes=budget,
    )
    graph = graphs.linear().compile(checkpointer=saver)
    tracemalloc.start()
    try:
        for i in range(200):
            history = [AIMessage("x" * 400, id=f"t{i}-m{j}") for j in range(100)]
            graph.update_state(config(f"t{i}"), {"messages": history})
        del history
        sizes = saver.observer.cache_sizes()
        assert 0 < sizes["hasher_list_bytes"] <= budget
        assert sizes["hasher_lists"] < 200  # most memos were dropped for the budget
        for i in range(200):
            inner.delete_thread(f"t{i}")
        kept_alive = freed_by_clearing_the_hasher(saver, otel)
    finally:
        tracemalloc.stop()
    # Python objects take more memory than their canonical encoding, which the budget counts
    assert budget // 4 < kept_alive < 3 * budget, kept_alive
    # a thread whose memo was dropped hashes from scratch, to the same digest
    again = [AIMessage("y" * 400, id=f"again-{j}") for j in range(100)]
    first = stored_state_hash(saver, "t0-again", graph, again)
    fresh = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    assert first == stored_state_hash(
        fresh, "t0-again", graphs.linear().compile(checkpointer=fresh), again
    )


def freed_by_clearing_the_hasher(saver: Any, otel: OTel) -> int:
    """Bytes tracemalloc (already tracing) sees freed when the wrapper's hasher is cleared."""
    import gc
    import tracemalloc

    otel.exporter.clear()
    gc.collect()
    with_caches, _ = tracemalloc.get_traced_memory()
    saver.observer._hasher.clear()
    gc.collect()
    without_caches, _ = tracemalloc.get_traced_memory()
    return with_caches - without_caches


def stored_state_hash(saver: Any, thread: str, graph: Any, history: list[Any]) -> str:
    from langgraph.checkpoint.otel import stored_history

    graph.invoke({"messages": history, "log": []}, config(thread))
    latest = stored_history(saver, config(thread), limit=1)[0]
    return str(latest.metadata["otel"]["state_hash"])
