"""The inspector reads a RedisSaver (``-s redis://...``), and only reads.

A react agent (``tests/apps/agents.py``) runs on ``instrument(RedisSaver)`` against the session's
real redis-server (RediSearch + RedisJSON); ``timeline`` must list every stored checkpoint,
oldest first, and ``threads`` every thread, without writing a key or creating an index.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import agents
from helpers import OTel
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.inspector.cli import main

THREADS = ("t-redis-1", "t-redis-2")


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    assert captured.err == "", captured.err
    return code, json.loads(captured.out)


def server_state(url: str) -> tuple[dict[bytes, Any], list[Any]]:
    """Every key (DUMP of its value, its TTL) and every search index of the server."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = {key: (client.dump(key), client.pttl(key)) for key in client.keys("*")}
        indexes = sorted(client.execute_command("FT._LIST"))
    finally:
        client.close()
    return keys, indexes


@pytest.fixture
def written(redis_url: str, otel: OTel) -> Iterator[dict[str, list[str]]]:
    """Two threads of the react agent on an instrumented RedisSaver; thread -> its checkpoint
    ids, oldest first (read with the bare saver)."""
    from langgraph.checkpoint.redis import RedisSaver

    with RedisSaver.from_conn_string(redis_url) as saver:
        saver.setup()
        wrapped = instrument(
            saver, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = agents.react_agent(wrapped)
        ids: dict[str, list[str]] = {}
        for thread_id in THREADS:
            graph.invoke(agents.question(), agents.thread(thread_id))
            listed = list(saver.list(agents.thread(thread_id)))
            ids[thread_id] = [str(t.checkpoint["id"]) for t in reversed(listed)]
        assert all(len(v) > 2 for v in ids.values())
        yield ids


def test_timeline_and_threads_read_a_redis_saver(
    capsys: pytest.CaptureFixture[str], redis_url: str, written: dict[str, list[str]]
) -> None:
    before = server_state(redis_url)
    thread_id = THREADS[0]
    ids = written[thread_id]

    code, line = run_json(capsys, "timeline", thread_id, "-s", redis_url)
    assert code == 0
    assert line["thread_id"] == thread_id
    assert line["source"]["saver"] == redis_url
    rows = line["checkpoints"]
    assert [r["checkpoint_id"] for r in rows] == ids  # every checkpoint, oldest first
    assert [r["parent_id"] for r in rows[1:]] == ids[:-1]
    assert all(r["state_hash"] for r in rows)  # the wrapper's metadata, read back from Redis
    assert any("agent" in r["nodes"] for r in rows)
    assert any("tools" in r["nodes"] for r in rows)
    assert [r["step"] for r in rows] == sorted(r["step"] for r in rows)

    code, threads = run_json(capsys, "threads", "-s", redis_url)
    assert code == 0
    by_thread = {t["thread_id"]: t for t in threads["threads"]}
    assert set(by_thread) == set(THREADS)
    for name in THREADS:
        assert by_thread[name]["checkpoints"] == len(written[name])
        assert by_thread[name]["resumes"] == 0

    assert server_state(redis_url) == before, "the inspector wrote to the Redis server"


def test_a_redis_server_without_checkpoints_is_an_error_and_stays_empty(
    capsys: pytest.CaptureFixture[str], redis_url: str
) -> None:
    code = main(["threads", "-s", redis_url, "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert "no LangGraph checkpoints on this server" in captured.err
    assert server_state(redis_url) == ({}, []), "the inspector created keys or indexes"


def test_an_unreachable_redis_server_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import _free_port

    url = f"redis://127.0.0.1:{_free_port()}"
    code = main(["threads", "-s", url, "--json"])
    captured = capsys.readouterr()
    assert code == 2
    assert f"{url}: cannot connect" in captured.err
