"""Concurrent runs on one instrumented saver: no result changes, no attribute mixing, no deadlock.

Many graph runs on distinct threads share one ``instrument(saver, tracer_provider=...,
meter_provider=...)`` (real SDK providers, in-memory exporters) and one real store:

* 1,000 ``ainvoke`` runs through ``asyncio.gather`` (at most 100 in flight) on AsyncSqliteSaver
  (a file) and on AsyncPostgresSaver (real server, ``from_conn_string`` + ``setup()``);
* 200 sync ``invoke`` runs from a 16-worker ``ThreadPoolExecutor`` on one SqliteSaver (a file,
  ``check_same_thread=False``).

The graph's state depends on the thread: the input message carries the thread id, so every
thread's checkpoints (from step 0 on) have a state, and a state hash, no other thread has.
Asserted for every saver:

1. every run returns what the same graph returns for that thread on the bare saver of the same
   kind (a separate, fresh store, driven with the same concurrency);
2. per thread, the stored checkpoints are exactly the ones its ``put`` spans name, and for each
   ``langgraph.checkpoint.put`` span the ``langgraph.checkpoint.state_hash`` equals the
   ``otel.state_hash`` stored with that checkpoint *of the span's own thread* (read with
   ``stored_history``), the span's step equals the stored step, and that stored hash is the
   hash of the stored channel values themselves (recomputed here, no cache);
3. state hashes from step 0 on never repeat across threads;
4. one trace per run: grouping all spans by trace id, each trace carries exactly one thread id
   (on every span that has one) and each thread appears in exactly one trace;
5. no deadlock: the whole concurrent batch finishes within a timeout.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from opentelemetry.sdk.trace import ReadableSpan

import graphs
from helpers import OTel, fresh_database, is_run_span
from langgraph.checkpoint.otel import astored_history, instrument, names, stored_history
from langgraph.checkpoint.otel.analysis.encoding import serde_fallback
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, hash_value

Saver = BaseCheckpointSaver[Any]

ASYNC_THREADS = 1_000
"""Distinct threads run concurrently on each async saver (PostgreSQL included)."""
IN_FLIGHT = 100
"""At most this many ``ainvoke`` calls in flight at once (a semaphore)."""
SYNC_THREADS = 200
SYNC_WORKERS = 16
DEADLOCK_TIMEOUT_S = 45.0
"""The whole concurrent batch (all runs) must finish within this many seconds."""


def thread_ids(n: int, prefix: str) -> list[str]:
    return [f"{prefix}-{i:04d}" for i in range(n)]


def config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def thread_input(thread_id: str) -> dict[str, Any]:
    """Input whose message carries the thread id: the thread's state is its own."""
    return graphs.user_input(f"hello from {thread_id}", f"h-{thread_id}")


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


async def run_all_async(graph: Any, threads: list[str]) -> dict[str, Any]:
    """``ainvoke`` every thread concurrently (at most IN_FLIGHT at once), within the timeout."""
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one(thread_id: str) -> Any:
        async with gate:
            return await graph.ainvoke(thread_input(thread_id), config(thread_id))

    results = await asyncio.wait_for(
        asyncio.gather(*(one(t) for t in threads)), timeout=DEADLOCK_TIMEOUT_S
    )
    return dict(zip(threads, results, strict=True))


def run_all_sync(graph: Any, threads: list[str]) -> dict[str, Any]:
    """``invoke`` every thread from a SYNC_WORKERS thread pool, within the timeout."""
    pool = ThreadPoolExecutor(SYNC_WORKERS, thread_name_prefix="lgotel-conc")
    try:
        futures = {t: pool.submit(graph.invoke, thread_input(t), config(t)) for t in threads}
        _done, not_done = wait_futures(futures.values(), timeout=DEADLOCK_TIMEOUT_S)
        assert not not_done, (
            f"deadlock? {len(not_done)} of {len(threads)} sync runs unfinished after "
            f"{DEADLOCK_TIMEOUT_S}s"
        )
        return {t: f.result() for t, f in futures.items()}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


async def bare_results_async(saver: Saver, threads: list[str]) -> dict[str, Any]:
    """What the same graph returns per thread on the bare saver (a separate, fresh store)."""
    return await run_all_async(graphs.async_linear().compile(checkpointer=saver), threads)


def bare_results_sync(saver: Saver, threads: list[str]) -> dict[str, Any]:
    return run_all_sync(graphs.linear().compile(checkpointer=saver), threads)


# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------


def recomputed_state_hash(saver: Saver, tup: CheckpointTuple) -> str:
    """The state hash of a stored checkpoint, from its channel values (no wrapper cache)."""
    fallback = serde_fallback(saver.serde)
    values = tup.checkpoint["channel_values"]
    return combine_state_hash({ch: hash_value(v, fallback=fallback) for ch, v in values.items()})


def check_results(got: dict[str, Any], bare: dict[str, Any], threads: list[str]) -> None:
    assert set(got) == set(bare) == set(threads)
    wrong = [t for t in threads if got[t] != bare[t]]
    assert not wrong, f"{len(wrong)} runs differ from bare, e.g. {wrong[0]}: {got[wrong[0]]!r}"
    for t in threads[:3]:  # the state really is per thread
        assert any(f"hello from {t}" == m.content for m in got[t]["messages"])


def check_spans(
    spans: list[ReadableSpan],
    history: dict[str, list[CheckpointTuple]],
    saver: Saver,
) -> None:
    """Checks 2-4 of the module docstring; ``history`` is thread -> stored checkpoints."""
    threads = set(history)
    # what was stored, per thread: checkpoint id -> (stored state hash, step)
    stored: dict[str, dict[str, tuple[str, int]]] = {}
    owner_of_hash: dict[str, set[str]] = defaultdict(set)
    for thread, tuples in history.items():
        assert tuples, f"nothing stored for {thread}"
        per: dict[str, tuple[str, int]] = {}
        for tup in tuples:
            stored_thread = tup.config["configurable"]["thread_id"]
            assert stored_thread == thread, f"history of {thread} holds {stored_thread}'s"
            telemetry = tup.metadata.get(names.METADATA_KEY)
            assert isinstance(telemetry, dict), f"{thread}: no {names.METADATA_KEY!r} metadata"
            state_hash = telemetry[names.META_STATE_HASH]
            step = tup.metadata["step"]
            cid = tup.config["configurable"]["checkpoint_id"]
            assert state_hash == recomputed_state_hash(saver, tup), (
                f"{thread} step {step} checkpoint {cid}: stored state hash {state_hash} is not "
                "the hash of the stored state"
            )
            per[cid] = (state_hash, step)
            if step >= 0:
                owner_of_hash[state_hash].add(thread)
        stored[thread] = per
    shared = {h: sorted(ts) for h, ts in owner_of_hash.items() if len(ts) > 1}
    assert not shared, f"state hashes shared across threads: {list(shared.items())[:3]}"

    puts = [s for s in spans if s.name == names.SPAN_PUT]
    assert len(puts) == sum(len(per) for per in stored.values()), (
        f"{len(puts)} put spans for {sum(len(p) for p in stored.values())} stored checkpoints"
    )
    seen: dict[str, set[str]] = defaultdict(set)
    mixed: list[str] = []
    for span in puts:
        attrs = span.attributes or {}
        thread = str(attrs.get(names.THREAD_ID))
        cid = str(attrs.get(names.CHECKPOINT_ID))
        assert thread in threads, f"put span with unknown thread id {thread!r}"
        seen[thread].add(cid)
        if cid not in stored[thread]:
            owners = [t for t, per in stored.items() if cid in per]
            mixed.append(f"put span of {thread} names checkpoint {cid} stored for {owners}")
            continue
        state_hash, step = stored[thread][cid]
        if attrs.get(names.STATE_HASH) != state_hash or attrs.get(names.STEP) != step:
            owners = sorted(owner_of_hash.get(str(attrs.get(names.STATE_HASH)), ()))
            mixed.append(
                f"put span of {thread} checkpoint {cid}: state hash "
                f"{attrs.get(names.STATE_HASH)} step {attrs.get(names.STEP)}, stored "
                f"{state_hash} step {step} (span's hash belongs to {owners})"
            )
    assert not mixed, f"{len(mixed)} put spans mixed attributes:\n" + "\n".join(mixed[:10])
    for thread, per in stored.items():
        assert seen[thread] == set(per), f"{thread}: put spans {seen[thread]} != stored {per}"

    # one trace per run, each trace one thread
    by_trace: dict[int, set[str]] = defaultdict(set)
    for span in spans:
        by_trace.setdefault(span.context.trace_id, set())
        thread = (span.attributes or {}).get(names.THREAD_ID)
        if thread is not None:
            by_trace[span.context.trace_id].add(str(thread))
    bad = {f"{k:032x}": sorted(v) for k, v in by_trace.items() if len(v) != 1}
    assert not bad, f"{len(bad)} traces with != 1 thread id, e.g. {list(bad.items())[:3]}"
    traces_per_thread = Counter(next(iter(v)) for v in by_trace.values())
    assert set(traces_per_thread) == threads
    several = {t: n for t, n in traces_per_thread.items() if n != 1}
    assert not several, f"threads spread over several traces: {list(several.items())[:5]}"
    runs = [s for s in spans if is_run_span(s)]
    assert len(runs) == len(threads), f"{len(runs)} run spans for {len(threads)} runs"


def check_metrics(otel: OTel, expected_puts: int) -> None:
    """The meter provider saw every put (the durations histogram counts them)."""
    points = otel.metrics().get(names.METRIC_OPERATION_DURATION, [])
    puts = sum(
        p.count for p in points if (p.attributes or {}).get(names.OPERATION) in {"put", "aput"}
    )
    assert puts == expected_puts, f"{puts} put durations recorded, {expected_puts} puts"


def count_puts(history: Iterable[list[CheckpointTuple]]) -> int:
    return sum(len(tuples) for tuples in history)


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


async def _async_scenario(saver: Saver, bare_saver: Saver, otel: OTel, prefix: str) -> None:
    threads = thread_ids(ASYNC_THREADS, prefix)
    wrapped = instrument(
        saver, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = graphs.async_linear().compile(checkpointer=wrapped)
    got = await run_all_async(graph, threads)
    check_results(got, await bare_results_async(bare_saver, threads), threads)
    history = {t: await astored_history(wrapped, config(t)) for t in threads}
    check_spans(otel.spans(), history, saver)
    check_metrics(otel, count_puts(history.values()))


async def test_async_sqlite_1000_concurrent_threads(tmp_path: Path, otel: OTel) -> None:
    async with (
        AsyncSqliteSaver.from_conn_string(str(tmp_path / "conc.sqlite")) as saver,
        AsyncSqliteSaver.from_conn_string(str(tmp_path / "bare.sqlite")) as bare,
    ):
        await _async_scenario(saver, bare, otel, "asqlite")


async def test_async_postgres_1000_concurrent_threads(
    postgres_db: str, postgres_url: str, otel: OTel
) -> None:
    with fresh_database(postgres_url) as bare_db:
        async with (
            AsyncPostgresSaver.from_conn_string(postgres_db) as saver,
            AsyncPostgresSaver.from_conn_string(bare_db) as bare,
        ):
            await saver.setup()
            await bare.setup()
            await _async_scenario(saver, bare, otel, "apg")


def test_sync_sqlite_thread_pool_200_threads(tmp_path: Path, otel: OTel) -> None:
    threads = thread_ids(SYNC_THREADS, "sqlite")
    conn = sqlite3.connect(str(tmp_path / "conc.sqlite"), check_same_thread=False)
    bare_conn = sqlite3.connect(str(tmp_path / "bare.sqlite"), check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        wrapped = instrument(
            saver, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        got = run_all_sync(graphs.linear().compile(checkpointer=wrapped), threads)
        check_results(got, bare_results_sync(SqliteSaver(bare_conn), threads), threads)
        history = {t: stored_history(wrapped, config(t)) for t in threads}
        check_spans(otel.spans(), history, saver)
        check_metrics(otel, count_puts(history.values()))
    finally:
        conn.close()
        bare_conn.close()
