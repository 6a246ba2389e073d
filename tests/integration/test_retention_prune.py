"""LangGraph's own `prune` through the wrapper reports what retention reports: the stored bytes
it reclaimed (`langgraph.retention.bytes_reclaimed` on the prune span) and the retention
counters with `langgraph.retention.by` = `prune`, on real PostgreSQL and Redis servers.

The bytes are checked against the store itself, summed over every row or key before and after
(not through `_langgraph.stored_bytes`, whose measure they are)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel._langgraph.stored_bytes import thread_bytes


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def prune_span(otel: OTel) -> dict[str, Any]:
    (span,) = [s for s in otel.spans() if s.name == names.SPAN_PRUNE]
    return dict(span.attributes or {})


def retention_counters(otel: OTel) -> dict[str, list[tuple[dict[str, Any], int]]]:
    found = otel.metrics()
    return {
        name: [(dict(p.attributes), p.value) for p in found.get(name, [])]
        for name in (
            names.METRIC_RETENTION_CHECKPOINTS_REMOVED,
            names.METRIC_RETENTION_BYTES_RECLAIMED,
        )
    }


POSTGRES_STORED = """
SELECT (SELECT coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0)
        FROM checkpoints)
     + (SELECT coalesce(sum(pg_column_size(blob)), 0) FROM checkpoint_blobs)
     + (SELECT coalesce(sum(pg_column_size(blob)), 0) FROM checkpoint_writes) AS total
"""


def postgres_stored(saver: PostgresSaver) -> int:
    """Every value PostgreSQL keeps for the database's checkpoints, writes and blobs."""
    with saver._cursor() as cur:
        cur.execute(POSTGRES_STORED)
        row = cur.fetchone()
    assert row is not None
    return int(row["total"])


def test_a_postgres_prune_reports_the_bytes_the_database_lost(otel: OTel, postgres_db: str) -> None:
    with PostgresSaver.from_conn_string(postgres_db) as inner:
        inner.setup()
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = graphs.linear().compile(checkpointer=saver)
        for thread in ("a", "b", "c"):
            graph.invoke(graphs.user_input(), config(thread))
        before, untouched = postgres_stored(inner), thread_bytes(inner, ["c"])
        saver.prune(["a", "b"], strategy="keep_latest")  # type: ignore[attr-defined]
        lost = before - postgres_stored(inner)
        assert thread_bytes(inner, ["c"]) == untouched
    attributes = prune_span(otel)
    assert lost > 0
    assert attributes[names.RETENTION_BYTES_RECLAIMED] == lost
    assert attributes[names.PRUNE_CHECKPOINTS_REMOVED] == 8
    by = {names.RETENTION_BY: "prune", names.SAVER: "PostgresSaver"}
    assert retention_counters(otel) == {
        names.METRIC_RETENTION_CHECKPOINTS_REMOVED: [(by, 8)],
        names.METRIC_RETENTION_BYTES_RECLAIMED: [(by, lost)],
    }


@pytest.mark.asyncio
async def test_an_async_postgres_prune_reports_the_bytes_too(otel: OTel, postgres_db: str) -> None:
    async with AsyncPostgresSaver.from_conn_string(postgres_db) as inner:
        await inner.setup()
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = graphs.async_linear().compile(checkpointer=saver)
        await graph.ainvoke(graphs.user_input(), config("a"))
        with PostgresSaver.from_conn_string(postgres_db) as reader:
            before = postgres_stored(reader)
            await saver.aprune(["a"], strategy="delete")  # type: ignore[attr-defined]
            assert postgres_stored(reader) == 0
    attributes = prune_span(otel)
    assert before > 0 and attributes[names.RETENTION_BYTES_RECLAIMED] == before
    by = {names.RETENTION_BY: "prune", names.SAVER: "AsyncPostgresSaver"}
    assert retention_counters(otel)[names.METRIC_RETENTION_BYTES_RECLAIMED] == [(by, before)]


def redis_stored(client: Any) -> int:
    """`MEMORY USAGE` of every key the server holds (the search indexes are not keys)."""
    return sum(int(client.memory_usage(key, samples=0) or 0) for key in client.scan_iter())


def test_a_redis_prune_reports_the_bytes_the_server_lost(otel: OTel, redis_url: str) -> None:
    from langgraph.checkpoint.redis import RedisSaver

    with RedisSaver.from_conn_string(redis_url) as inner:
        inner.setup()
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = graphs.linear().compile(checkpointer=saver)
        for thread in ("a", "b"):
            graph.invoke(graphs.user_input(), config(thread))
        before, untouched = redis_stored(inner._redis), thread_bytes(inner, ["b"])
        saver.prune(["a"], strategy="keep_latest")  # type: ignore[attr-defined]
        lost = before - redis_stored(inner._redis)
        assert thread_bytes(inner, ["b"]) == untouched
        assert len(list(inner.list(config("a")))) == 1
    attributes = prune_span(otel)
    assert lost > 0
    assert attributes[names.RETENTION_BYTES_RECLAIMED] == lost
    removed = attributes[names.PRUNE_CHECKPOINTS_REMOVED]
    assert removed == attributes[names.PRUNE_CHECKPOINTS_BEFORE] - 1
    by = {names.RETENTION_BY: "prune", names.SAVER: "RedisSaver"}
    assert retention_counters(otel) == {
        names.METRIC_RETENTION_CHECKPOINTS_REMOVED: [(by, removed)],
        names.METRIC_RETENTION_BYTES_RECLAIMED: [(by, lost)],
    }


@pytest.mark.asyncio
async def test_an_async_redis_prune_reports_the_bytes_too(otel: OTel, redis_url: str) -> None:
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver

    async with AsyncRedisSaver.from_conn_string(redis_url) as inner:
        await inner.asetup()
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = graphs.async_linear().compile(checkpointer=saver)
        await graph.ainvoke(graphs.user_input(), config("a"))
        import redis

        client = redis.Redis.from_url(redis_url)
        try:
            before = redis_stored(client)
            await saver.aprune(["a"], strategy="keep_latest")  # type: ignore[attr-defined]
            lost = before - redis_stored(client)
        finally:
            client.close()
    attributes = prune_span(otel)
    assert lost > 0 and attributes[names.RETENTION_BYTES_RECLAIMED] == lost
    by = {names.RETENTION_BY: "prune", names.SAVER: "AsyncRedisSaver"}
    assert retention_counters(otel)[names.METRIC_RETENTION_BYTES_RECLAIMED] == [(by, lost)]


def test_metrics_alone_get_the_figures(otel: OTel, postgres_db: str) -> None:
    """No tracer provider recording: the counters are still counted (the prune is measured)."""
    with PostgresSaver.from_conn_string(postgres_db) as inner:
        inner.setup()
        saver = instrument(inner, meter_provider=otel.meter_provider)
        graph = graphs.linear().compile(checkpointer=saver)
        graph.invoke(graphs.user_input(), config("a"))
        before = postgres_stored(inner)
        saver.prune(["a"], strategy="keep_latest")  # type: ignore[attr-defined]
        lost = before - postgres_stored(inner)
    assert otel.spans() == []
    by = {names.RETENTION_BY: "prune", names.SAVER: "PostgresSaver"}
    assert retention_counters(otel) == {
        names.METRIC_RETENTION_CHECKPOINTS_REMOVED: [(by, 4)],
        names.METRIC_RETENTION_BYTES_RECLAIMED: [(by, lost)],
    }
