"""What a thread takes in the stock savers' stores: ONE measure of stored bytes, shared by the
wrapper's `prune` span, `langgraph-otel retention`'s scan and plan, and its apply.

The measure is the stored size of the values the saver wrote, per store:

* `SqliteSaver`: `length()` of the `checkpoint` and `metadata` columns of `checkpoints` and of
  the `value` column of `writes` (bytes, as stored).
* `PostgresSaver`: `pg_column_size()` of the `checkpoint` and `metadata` columns of
  `checkpoints`, of `blob` in `checkpoint_blobs` and in `checkpoint_writes` (the bytes the
  database keeps for each value, compressed where it compresses them).
* `RedisSaver`: `MEMORY USAGE key SAMPLES 0` of the thread's checkpoint documents, its write
  documents and each checkpoint's write-key registry set (`write_keys_zset:...`).

Row and index overhead and the space a database frees only on `VACUUM` are not counted.
`AsyncPostgresSaver` and `AsyncRedisSaver` are measured as their sync twins, by
`athread_bytes`. Other savers (in memory, MongoDB, shallow savers, `AsyncSqliteSaver`) have no
measure here: None. The stock schemas and key
layouts are LangGraph's own formats, hence this module's place in `_langgraph`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from langgraph.checkpoint.otel._langgraph.savers import delegates

STORED_KINDS: dict[tuple[str, str], str] = {
    ("langgraph.checkpoint.sqlite", "SqliteSaver"): "sqlite",
    ("langgraph.checkpoint.postgres", "PostgresSaver"): "postgres",
    ("langgraph.checkpoint.redis", "RedisSaver"): "redis",
    ("langgraph.checkpoint.postgres.aio", "AsyncPostgresSaver"): "async_postgres",
    ("langgraph.checkpoint.redis.aio", "AsyncRedisSaver"): "async_redis",
}
"""Savers with a byte measure, by the class they are or derive from (no saver package is
imported to tell)."""

SQLITE_CHECKPOINT_BYTES = (
    "coalesce(length(CAST(checkpoint AS BLOB)), 0) + coalesce(length(CAST(metadata AS BLOB)), 0)"
)
"""SQLite: the stored bytes of one `checkpoints` row (an SQL expression over its columns)."""
SQLITE_WRITE_BYTES = "coalesce(length(CAST(value AS BLOB)), 0)"
"""SQLite: the stored bytes of one `writes` row."""
POSTGRES_CHECKPOINT_BYTES = (
    "coalesce(pg_column_size(checkpoint), 0) + coalesce(pg_column_size(metadata), 0)"
)
"""PostgreSQL: the stored bytes of one `checkpoints` row."""
POSTGRES_BLOB_BYTES = "coalesce(pg_column_size(blob), 0)"
"""PostgreSQL: the stored bytes of one `checkpoint_blobs` or `checkpoint_writes` row."""

SQLITE_BATCH = 500
"""Thread ids per SQLite query (below its 999 host parameters of old builds)."""
REDIS_PAGE = 1000
"""Index results per Redis search page, and keys per pipelined `MEMORY USAGE` batch."""


def stored_kind(saver: object) -> str | None:
    """`sqlite`, `postgres` or `redis` where `saver` is (or derives from) a stock saver with a
    byte measure, else None."""
    for cls in type(saver).__mro__:
        kind = STORED_KINDS.get((cls.__module__, cls.__name__))
        if kind is not None:
            return kind
    return None


def measured_saver(saver: object) -> tuple[str, Any] | None:
    """The saver whose store is measured, with its kind: `saver` itself, or a saver it
    delegates to (an adapter, a cache layer); None where there is none."""
    kind = stored_kind(saver)
    if kind is not None:
        return kind, saver
    for inner in delegates(saver):
        kind = stored_kind(inner)
        if kind is not None:
            return kind, inner
    return None


def thread_bytes(saver: object, thread_ids: Iterable[str]) -> int | None:
    """The stored bytes of these threads (every namespace, checkpoints, writes and blobs) by
    the module's measure, or None where `saver` has none. Database errors propagate."""
    found = measured_saver(saver)
    if found is None:
        return None
    kind, store = found
    ids = list(dict.fromkeys(str(thread_id) for thread_id in thread_ids))
    if not ids:
        return 0
    if kind == "sqlite":
        return _sqlite_bytes(store, ids)
    if kind == "postgres":
        return _postgres_bytes(store, ids)
    if kind == "redis":
        return _redis_bytes(store, ids)
    return None  # an async saver: `athread_bytes`


async def athread_bytes(saver: object, thread_ids: Iterable[str]) -> int | None:
    """`thread_bytes` for an async saver (`AsyncPostgresSaver`, `AsyncRedisSaver`), None for
    any other."""
    found = measured_saver(saver)
    if found is None or found[0] not in ("async_postgres", "async_redis"):
        return None
    kind, store = found
    ids = list(dict.fromkeys(str(thread_id) for thread_id in thread_ids))
    if not ids:
        return 0
    if kind == "async_redis":
        return await _aredis_bytes(store, ids)
    async with store._cursor() as cur:
        await cur.execute(POSTGRES_THREAD_BYTES, (ids, ids, ids))
        row = await cur.fetchone()
    return _total(row)


def _sqlite_bytes(saver: Any, ids: Sequence[str]) -> int:
    total = 0
    with saver.cursor(transaction=False) as cur:
        for start in range(0, len(ids), SQLITE_BATCH):
            batch = ids[start : start + SQLITE_BATCH]
            marks = ", ".join("?" * len(batch))
            for sql in (
                f"SELECT sum({SQLITE_CHECKPOINT_BYTES}) FROM checkpoints"
                f" WHERE thread_id IN ({marks})",
                f"SELECT sum({SQLITE_WRITE_BYTES}) FROM writes WHERE thread_id IN ({marks})",
            ):
                (value,) = cur.execute(sql, batch).fetchone()
                total += int(value or 0)
    return total


POSTGRES_THREAD_BYTES = (
    f"SELECT (SELECT coalesce(sum({POSTGRES_CHECKPOINT_BYTES}), 0) FROM checkpoints"
    " WHERE thread_id = ANY(%s))"
    f" + (SELECT coalesce(sum({POSTGRES_BLOB_BYTES}), 0) FROM checkpoint_blobs"
    " WHERE thread_id = ANY(%s))"
    f" + (SELECT coalesce(sum({POSTGRES_BLOB_BYTES}), 0) FROM checkpoint_writes"
    " WHERE thread_id = ANY(%s)) AS total"
)


def _postgres_bytes(saver: Any, ids: Sequence[str]) -> int:
    with saver._cursor() as cur:
        cur.execute(POSTGRES_THREAD_BYTES, (list(ids), list(ids), list(ids)))
        row = cur.fetchone()
    return _total(row)


def _total(row: Any) -> int:
    value = row["total"] if isinstance(row, dict) else row[0]
    return int(value or 0)


def _redis_searches(saver: Any, ids: Sequence[str]) -> Iterator[tuple[Any, Any]]:
    """(index, query) pairs finding the threads' checkpoint and write documents."""
    # optional packages, typed or not depending on their versions: imported by name
    filters: Any = importlib.import_module("redisvl.query.filter")
    query_module: Any = importlib.import_module("redisvl.query")
    util: Any = importlib.import_module("langgraph.checkpoint.redis.util")
    for thread_id in ids:
        tag = filters.Tag("thread_id") == str(util.to_storage_safe_id(thread_id))
        for index in (saver.checkpoints_index, saver.checkpoint_writes_index):
            yield (
                index,
                query_module.FilterQuery(filter_expression=tag, return_fields=["thread_id"]),
            )


def _redis_keys(saver: Any, index: Any, page: Sequence[Any]) -> list[str]:
    """A page's document keys, and each checkpoint's write-key registry set."""
    prefix = str(getattr(saver, "_checkpoint_prefix", "checkpoint")) + ":"
    keys: list[str] = []
    for doc in page:
        key = str(doc["id"])
        keys.append(key)
        if index is saver.checkpoints_index and key.startswith(prefix):
            keys.append("write_keys_zset:" + key[len(prefix) :])
    return keys


def _redis_bytes(saver: Any, ids: Sequence[str]) -> int:
    keys: list[str] = []
    for index, search in _redis_searches(saver, ids):
        for page in index.paginate(search, page_size=REDIS_PAGE):
            keys += _redis_keys(saver, index, page)
    return sum(redis_key_bytes(saver._redis, keys))


async def _aredis_bytes(saver: Any, ids: Sequence[str]) -> int:
    keys: list[str] = []
    for index, search in _redis_searches(saver, ids):
        async for page in index.paginate(search, page_size=REDIS_PAGE):
            keys += _redis_keys(saver, index, page)
    total = 0
    for start in range(0, len(keys), REDIS_PAGE):
        pipe = saver._redis.pipeline(transaction=False)
        for key in keys[start : start + REDIS_PAGE]:
            pipe.memory_usage(key, samples=0)
        total += sum(int(size or 0) for size in await pipe.execute())
    return total


def redis_key_bytes(client: Any, keys: Sequence[str]) -> list[int]:
    """`MEMORY USAGE key SAMPLES 0` of each key (0 for a missing key), pipelined in batches."""
    sizes: list[int] = []
    for start in range(0, len(keys), REDIS_PAGE):
        pipe = client.pipeline(transaction=False)
        for key in keys[start : start + REDIS_PAGE]:
            pipe.memory_usage(key, samples=0)
        sizes.extend(int(size or 0) for size in pipe.execute())
    return sizes


__all__ = [
    "POSTGRES_BLOB_BYTES",
    "POSTGRES_CHECKPOINT_BYTES",
    "SQLITE_CHECKPOINT_BYTES",
    "SQLITE_WRITE_BYTES",
    "athread_bytes",
    "measured_saver",
    "redis_key_bytes",
    "stored_kind",
    "thread_bytes",
]
