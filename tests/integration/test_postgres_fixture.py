"""The PostgreSQL fixture gives a real server, and the real PostgresSaver works against it."""

from __future__ import annotations

import psycopg
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver


def test_real_server(postgres_url: str) -> None:
    assert postgres_url.startswith("postgresql://postgres@127.0.0.1:")
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT version()").fetchone()
    assert row is not None
    assert str(row[0]).startswith("PostgreSQL ")


def test_fresh_database_per_test(postgres_db: str) -> None:
    with psycopg.connect(postgres_db) as conn:
        row = conn.execute(
            "SELECT current_database(), count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
    assert row is not None
    assert str(row[0]).startswith("test_")
    assert row[1] == 0


def test_postgres_saver_roundtrip(postgres_db: str) -> None:
    with PostgresSaver.from_conn_string(postgres_db) as saver:
        saver.setup()
        config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": ["hello"]}
        checkpoint["channel_versions"] = {"messages": saver.get_next_version(None, None)}
        metadata: CheckpointMetadata = {"source": "input", "step": -1}
        stored = saver.put(config, checkpoint, metadata, checkpoint["channel_versions"])
        assert stored["configurable"]["checkpoint_id"] == checkpoint["id"]
        saver.put_writes(stored, [("messages", "pending")], task_id="task-1")

        got = saver.get_tuple(config)  # latest checkpoint of the thread
        assert got is not None
        assert got.checkpoint["id"] == checkpoint["id"]
        assert got.checkpoint["channel_values"] == {"messages": ["hello"]}
        assert got.metadata["source"] == "input"
        assert got.pending_writes == [("task-1", "messages", "pending")]
        assert [t.checkpoint["id"] for t in saver.list(config)] == [checkpoint["id"]]


async def test_async_postgres_saver_roundtrip(postgres_db: str) -> None:
    async with AsyncPostgresSaver.from_conn_string(postgres_db) as saver:
        await saver.setup()
        config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"n": 1}
        checkpoint["channel_versions"] = {"n": saver.get_next_version(None, None)}
        metadata: CheckpointMetadata = {"source": "loop", "step": 0}
        await saver.aput(config, checkpoint, metadata, checkpoint["channel_versions"])
        got = await saver.aget_tuple(config)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"n": 1}
