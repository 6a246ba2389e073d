"""The stock savers' stores read and changed row by row, for retention's apply and restore.

LangGraph's saver API reads a checkpoint with its pending writes, but not each write's
`task_path` and `idx`, nor a PostgreSQL blob stored as `empty`; and it removes only whole
threads (`delete_thread`) or everything but the latest (`prune`). Retention needs the exact
rows of the checkpoints it removes and to remove exactly those, so this module knows the stock
layouts (the same ones `stored_bytes` measures):

* `SqliteSaver`: tables `checkpoints` and `writes`;
* `PostgresSaver`: `checkpoints`, `checkpoint_writes` and `checkpoint_blobs` (a blob goes only
  when no remaining checkpoint of its namespace names its channel version);
* `RedisSaver`: JSON documents `checkpoint:<thread>:<ns>:<id>` and
  `checkpoint_write:<thread>:<ns>:<id>:<task>:<idx>` (their search indexes follow the keys),
  the write-key registry `write_keys_zset:<thread>:<ns>:<id>` and the latest-checkpoint pointer
  `checkpoint_latest:<thread>:<ns>`; keys are made with the saver's own key helpers.

Each removal is one transaction per thread (SQLite `BEGIN IMMEDIATE`; PostgreSQL a transaction
that checks the latest checkpoints at its start and again before it commits; Redis `WATCH` of
the latest pointers, then `MULTI`/`EXEC`) and removes nothing when any namespace's latest
checkpoint is not the expected one.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.otel._langgraph.stored_bytes import measured_saver

RawWrite = tuple[str, str, int, str, str, bytes | None]
"""(task_id, task_path, idx, channel, type, value bytes) of one stored pending write."""
RawBlob = tuple[str, str, str, str, bytes | None]
"""(ns, channel, version, type, value bytes) of one PostgreSQL blob."""


class Written(Exception):
    """The thread's latest checkpoints are not the expected ones: it was written to."""


@dataclass(frozen=True)
class Removed:
    """What one removal took out of the store."""

    checkpoints: int
    writes: int
    blobs: int = 0


def store_of(saver: object) -> tuple[str, Any] | None:
    """(`sqlite` | `postgres` | `redis`, the stock saver) behind `saver`, or None."""
    return measured_saver(saver)


# --- reading ------------------------------------------------------------------------------------


def latest_ids(kind: str, store: Any, thread_id: str) -> dict[str, str]:
    """The latest (greatest) checkpoint id of each namespace of a thread."""
    if kind == "sqlite":
        with store.cursor(transaction=False) as cur:
            return _sqlite_latest(cur, thread_id)
    if kind == "postgres":
        with store._cursor() as cur:
            return _postgres_latest(cur, thread_id)
    return _redis_latest(store, thread_id)


def raw_writes(
    kind: str, store: Any, thread_id: str, ns: str, checkpoint_id: str
) -> list[RawWrite]:
    """The stored pending writes of one checkpoint, in the order the saver reads them back
    (SQL: by `task_id`, `idx`; Redis: as written)."""
    if kind == "sqlite":
        path = "task_path" if getattr(store, "_has_task_path", True) else "''"
        with store.cursor(transaction=False) as cur:
            cur.execute(
                f"SELECT task_id, {path}, idx, channel, type, value FROM writes"
                " WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
                " ORDER BY task_id, idx",
                (thread_id, ns, checkpoint_id),
            )
            return [(str(t), str(p), int(i), str(c), str(ty), v) for t, p, i, c, ty, v in cur]
    if kind == "postgres":
        with store._cursor() as cur:
            cur.execute(
                "SELECT task_id, task_path, idx, channel, type, blob FROM checkpoint_writes"
                " WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
                " ORDER BY task_id, idx",
                (thread_id, ns, checkpoint_id),
            )
            return [
                (
                    str(r["task_id"]),
                    str(r["task_path"]),
                    int(r["idx"]),
                    str(r["channel"]),
                    str(r["type"]),
                    None if r["blob"] is None else bytes(r["blob"]),
                )
                for r in cur.fetchall()
            ]
    docs = [
        store._redis.json().get(key)
        for key in _redis_write_keys(store, thread_id, ns, checkpoint_id)
    ]
    writes: list[RawWrite] = [
        (
            str(d.get("task_id", "")),
            str(d.get("task_path", "")),
            int(d.get("idx", 0)),
            str(d.get("channel", "")),
            str(d.get("type", "")),
            base64.b64decode(d["blob"]) if d.get("blob") is not None else None,
        )
        for d in docs
        if isinstance(d, dict)
    ]
    return writes  # in the order the index lists them (as written), as `list()` reads them


def raw_blobs(
    kind: str, store: Any, thread_id: str, blobs: Iterable[tuple[str, str, str]]
) -> list[RawBlob]:
    """The stored rows of PostgreSQL blobs given as (ns, channel, version); [] elsewhere."""
    if kind != "postgres":
        return []
    found: list[RawBlob] = []
    with store._cursor() as cur:
        for ns, channel, version in blobs:
            cur.execute(
                "SELECT type, blob FROM checkpoint_blobs WHERE thread_id = %s"
                " AND checkpoint_ns = %s AND channel = %s AND version = %s",
                (thread_id, ns, channel, version),
            )
            row = cur.fetchone()
            if row is not None:
                blob = row["blob"]
                found.append(
                    (ns, channel, version, str(row["type"]), None if blob is None else bytes(blob))
                )
    return found


def exact_checkpoint(
    kind: str, store: Any, thread_id: str, ns: str, checkpoint_id: str, checkpoint: Any
) -> Any:
    """`checkpoint` as `get_tuple` loaded it, made to store again as it is stored now.

    PostgreSQL loads every blob its channel versions name, so a delta channel's snapshot blob
    written by a later checkpoint at the same version is loaded into an older checkpoint that
    stored no marker for it; `put` would add the marker. Such a value is left out (the blob is
    kept or archived on its own)."""
    if kind != "postgres":
        return checkpoint
    types: Any = importlib.import_module("langgraph.checkpoint.serde.types")
    snapshot = types._DeltaSnapshot
    values = checkpoint.get("channel_values") or {}
    if not any(isinstance(v, snapshot) for v in values.values()):
        return checkpoint
    with store._cursor() as cur:
        cur.execute(
            "SELECT checkpoint -> 'channel_values' AS inline FROM checkpoints"
            " WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s",
            (thread_id, ns, checkpoint_id),
        )
        row = cur.fetchone()
    inline = set((row or {}).get("inline") or {})
    kept = {k: v for k, v in values.items() if not isinstance(v, snapshot) or k in inline}
    return {**checkpoint, "channel_values": kept}


def stored_fields(
    kind: str, store: Any, thread_id: str, ns: str, checkpoint_id: str
) -> dict[str, Any]:
    """Fields of the stored checkpoint that `put` and `put_writes` would write differently
    (Redis: the `checkpoint_ts` `put` stamps with the clock when the id is not a ULID, as
    LangGraph's are not, and `has_writes`, which `put` resets when a step's writes landed
    before its checkpoint, hiding them from `get_tuple` and `list`)."""
    if kind != "redis":
        return {}
    key = store._make_redis_checkpoint_key(thread_id, ns, checkpoint_id)
    fields = {}
    for name in REDIS_STORED_FIELDS:
        found = store._redis.json().get(key, f"$.{name}")
        if found:
            fields[name] = found[0]
    return fields


REDIS_STORED_FIELDS = ("checkpoint_ts", "has_writes")
"""RedisSaver checkpoint document fields an archive keeps as they were stored."""


def set_stored_fields(
    kind: str, store: Any, thread_id: str, ns: str, checkpoint_id: str, fields: Mapping[str, Any]
) -> None:
    """Set back what `stored_fields` read, after `put` wrote the checkpoint again."""
    if kind != "redis":
        return
    key = store._make_redis_checkpoint_key(thread_id, ns, checkpoint_id)
    for name in REDIS_STORED_FIELDS:
        if name in fields:
            store._redis.json().set(key, f"$.{name}", fields[name])


# --- removing -----------------------------------------------------------------------------------


def remove(
    kind: str,
    store: Any,
    thread_id: str,
    refs: Sequence[tuple[str, str]],
    blobs: Sequence[tuple[str, str, str]],
    expected_latest: Mapping[str, str],
    *,
    whole_thread: bool = False,
) -> Removed:
    """Remove checkpoints (ns, id) with their writes, and the blobs (ns, channel, version) no
    remaining checkpoint references, in one transaction; `Written` (nothing removed) when the
    latest checkpoints are not `expected_latest`."""
    if kind == "sqlite":
        return _sqlite_remove(store, thread_id, refs, expected_latest)
    if kind == "postgres":
        return _postgres_remove(store, thread_id, refs, blobs, expected_latest)
    del whole_thread  # a namespace whose latest is removed is removed whole, either way
    return _redis_remove(store, thread_id, refs, expected_latest)


def _sqlite_latest(cur: Any, thread_id: str) -> dict[str, str]:
    cur.execute(
        "SELECT checkpoint_ns, max(checkpoint_id) FROM checkpoints WHERE thread_id = ?"
        " GROUP BY checkpoint_ns",
        (thread_id,),
    )
    return {str(ns): str(cid) for ns, cid in cur.fetchall()}


def _sqlite_remove(
    store: Any, thread_id: str, refs: Sequence[tuple[str, str]], expected: Mapping[str, str]
) -> Removed:
    checkpoints = writes = 0
    with store.lock:
        store.setup()
        conn = store.conn
        if conn.in_transaction:
            conn.commit()
        cur = conn.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")  # the write lock: no put lands until COMMIT
            if _sqlite_latest(cur, thread_id) != dict(expected):
                raise Written(thread_id)
            for ns, cid in refs:
                key = (thread_id, ns, cid)
                cur.execute(
                    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ?"
                    " AND checkpoint_id = ?",
                    key,
                )
                writes += max(cur.rowcount, 0)
                cur.execute(
                    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?"
                    " AND checkpoint_id = ?",
                    key,
                )
                checkpoints += max(cur.rowcount, 0)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            cur.close()
    return Removed(checkpoints, writes)


def _postgres_latest(cur: Any, thread_id: str) -> dict[str, str]:
    cur.execute(
        "SELECT checkpoint_ns, max(checkpoint_id) AS id FROM checkpoints WHERE thread_id = %s"
        " GROUP BY checkpoint_ns",
        (thread_id,),
    )
    return {str(r["checkpoint_ns"]): str(r["id"]) for r in cur.fetchall()}


def _unchanged(
    current: Mapping[str, str], expected: Mapping[str, str], refs: Sequence[tuple[str, str]]
) -> bool:
    """Whether the latest checkpoints after a removal are the expected ones: those kept are
    still the latest, and a namespace whose latest was removed has nothing newer."""
    removed = set(refs)
    for ns, cid in current.items():
        if ns not in expected:
            return False
        if (ns, expected[ns]) in removed:
            if cid >= expected[ns]:
                return False
        elif cid != expected[ns]:
            return False
    return all(ns in current for ns, cid in expected.items() if (ns, cid) not in removed)


POSTGRES_UNREFERENCED_BLOB_SQL = """
DELETE FROM checkpoint_blobs b
WHERE b.thread_id = %s AND b.checkpoint_ns = %s AND b.channel = %s AND b.version = %s
AND NOT EXISTS (
    SELECT 1 FROM checkpoints c
    WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns
    AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version
)
"""
"""PostgreSQL: remove one blob unless a remaining checkpoint of its namespace names it."""


def _postgres_remove(
    store: Any,
    thread_id: str,
    refs: Sequence[tuple[str, str]],
    blobs: Sequence[tuple[str, str, str]],
    expected: Mapping[str, str],
) -> Removed:
    checkpoints = writes = removed_blobs = 0
    by_ns: dict[str, list[str]] = {}
    for ns, cid in refs:
        by_ns.setdefault(ns, []).append(cid)
    with store._cursor() as cur:
        if getattr(store, "pipe", None):
            store.pipe.sync()
        with cur.connection.transaction():
            if _postgres_latest(cur, thread_id) != dict(expected):
                raise Written(thread_id)
            for ns, ids in by_ns.items():
                cur.execute(
                    "DELETE FROM checkpoint_writes WHERE thread_id = %s AND checkpoint_ns = %s"
                    " AND checkpoint_id = ANY(%s)",
                    (thread_id, ns, ids),
                )
                writes += max(cur.rowcount, 0)
                cur.execute(
                    "DELETE FROM checkpoints WHERE thread_id = %s AND checkpoint_ns = %s"
                    " AND checkpoint_id = ANY(%s)",
                    (thread_id, ns, ids),
                )
                checkpoints += max(cur.rowcount, 0)
            for ns, channel, version in blobs:
                cur.execute(POSTGRES_UNREFERENCED_BLOB_SQL, (thread_id, ns, channel, version))
                removed_blobs += max(cur.rowcount, 0)
            # a put committed meanwhile (a run resumed, a fork) is seen here: undo everything
            if not _unchanged(_postgres_latest(cur, thread_id), expected, refs):
                raise Written(thread_id)
    return Removed(checkpoints, writes, removed_blobs)


def _redis_modules() -> tuple[Any, Any, Any]:
    # optional packages, typed or not depending on their versions: imported by name
    filters: Any = importlib.import_module("redisvl.query.filter")
    query: Any = importlib.import_module("redisvl.query")
    util: Any = importlib.import_module("langgraph.checkpoint.redis.util")
    return filters, query, util


def _redis_checkpoint_docs(store: Any, thread_id: str) -> list[tuple[str, str]]:
    filters, query, util = _redis_modules()
    tag = filters.Tag("thread_id") == str(util.to_storage_safe_id(thread_id))
    search = query.FilterQuery(
        filter_expression=tag, return_fields=["checkpoint_ns", "checkpoint_id"]
    )
    found = []
    for page in store.checkpoints_index.paginate(search, page_size=1000):
        for doc in page:
            found.append(
                (
                    str(util.from_storage_safe_str(doc["checkpoint_ns"])),
                    str(util.from_storage_safe_id(doc["checkpoint_id"])),
                )
            )
    return found


def _redis_latest(store: Any, thread_id: str) -> dict[str, str]:
    latest: dict[str, str] = {}
    for ns, cid in _redis_checkpoint_docs(store, thread_id):
        if cid > latest.get(ns, ""):
            latest[ns] = cid
    return latest


def _redis_write_keys(store: Any, thread_id: str, ns: str, checkpoint_id: str) -> list[str]:
    filters, query, util = _redis_modules()
    expression = (
        (filters.Tag("thread_id") == str(util.to_storage_safe_id(thread_id)))
        & (filters.Tag("checkpoint_ns") == str(util.to_storage_safe_str(ns)))
        & (filters.Tag("checkpoint_id") == str(util.to_storage_safe_id(checkpoint_id)))
    )
    search = query.FilterQuery(filter_expression=expression, return_fields=["task_id", "idx"])
    keys = []
    for page in store.checkpoint_writes_index.paginate(search, page_size=1000):
        for doc in page:
            keys.append(str(doc["id"]))
    return keys


def _redis_registry_key(thread_id: str, ns: str, checkpoint_id: str) -> str:
    registry: Any = importlib.import_module("langgraph.checkpoint.redis.key_registry")
    return str(
        registry.CheckpointKeyRegistry.make_write_keys_zset_key(thread_id, ns, checkpoint_id)
    )


def _redis_pointer(store: Any, thread_id: str, ns: str) -> str:
    return str(store._make_redis_checkpoint_latest_key(thread_id, ns))


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _redis_remove(
    store: Any,
    thread_id: str,
    refs: Sequence[tuple[str, str]],
    expected: Mapping[str, str],
) -> Removed:
    redis_exceptions: Any = importlib.import_module("redis.exceptions")
    client = store._redis
    pointers = {ns: _redis_pointer(store, thread_id, ns) for ns in expected}
    checkpoint_keys = [store._make_redis_checkpoint_key(thread_id, ns, cid) for ns, cid in refs]
    registry_keys = [_redis_registry_key(thread_id, ns, cid) for ns, cid in refs]
    with client.pipeline(transaction=True) as pipe:
        try:
            pipe.watch(*pointers.values(), *checkpoint_keys)
            # listed once watched: a later `put_writes` marks its checkpoint and aborts EXEC
            write_keys = [
                k for ns, cid in refs for k in _redis_write_keys(store, thread_id, ns, cid)
            ]
            for ns, key in pointers.items():
                target = _text(pipe.get(key))
                if target != store._make_redis_checkpoint_key(thread_id, ns, expected[ns]):
                    raise Written(thread_id)
            if _redis_latest(store, thread_id) != dict(expected):
                raise Written(thread_id)
            checkpoints = sum(1 for key in checkpoint_keys if pipe.exists(key))
            writes = len(write_keys)
            pipe.multi()
            doomed = [*checkpoint_keys, *write_keys, *registry_keys]
            # a namespace whose latest goes (whole thread, a subgraph call's) loses its pointer
            doomed += [key for ns, key in pointers.items() if (ns, expected[ns]) in set(refs)]
            if doomed:
                pipe.delete(*doomed)
            pipe.execute()
        except redis_exceptions.WatchError:
            raise Written(thread_id) from None
    return Removed(checkpoints, writes)


# --- restoring ----------------------------------------------------------------------------------


def restore_blobs(kind: str, store: Any, thread_id: str, blobs: Sequence[RawBlob]) -> int:
    """Put back PostgreSQL blobs the saver's `put` does not write (those stored as `empty`);
    a blob already there is left as it is. Returns the blobs inserted."""
    if kind != "postgres" or not blobs:
        return 0
    inserted = 0
    with store._cursor() as cur, cur.connection.transaction():
        for ns, channel, version, type_, blob in blobs:
            cur.execute(
                "INSERT INTO checkpoint_blobs"
                " (thread_id, checkpoint_ns, channel, version, type, blob)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING",
                (thread_id, ns, channel, version, type_, blob),
            )
            inserted += max(cur.rowcount, 0)
    return inserted


def redis_pointers(store: Any, thread_id: str, namespaces: Iterable[str]) -> dict[str, str | None]:
    """The checkpoint id each namespace's latest pointer names (None: no pointer)."""
    found: dict[str, str | None] = {}
    for ns in namespaces:
        target = _text(store._redis.get(_redis_pointer(store, thread_id, ns)))
        found[ns] = target.rsplit(":", 1)[-1] if target else None
    return found


def set_redis_pointers(store: Any, thread_id: str, latest: Mapping[str, str]) -> None:
    """Point each namespace's latest pointer at the given checkpoint (a `put` of an older
    checkpoint moves it to that one)."""
    for ns, cid in latest.items():
        store._redis.set(
            _redis_pointer(store, thread_id, ns),
            store._make_redis_checkpoint_key(thread_id, ns, cid),
        )


def ensure_redis_registry(store: Any) -> None:
    """Give a RedisSaver opened without `setup()` its write-key registry, so the writes a
    restore puts back are listed where the application's saver looks for them."""
    if getattr(store, "_key_registry", "absent") is None:
        registry: Any = importlib.import_module("langgraph.checkpoint.redis.key_registry")
        store._key_registry = registry.SyncCheckpointKeyRegistry(store._redis)


__all__ = [
    "POSTGRES_UNREFERENCED_BLOB_SQL",
    "REDIS_STORED_FIELDS",
    "RawBlob",
    "RawWrite",
    "Removed",
    "Written",
    "ensure_redis_registry",
    "exact_checkpoint",
    "latest_ids",
    "raw_blobs",
    "raw_writes",
    "redis_pointers",
    "remove",
    "restore_blobs",
    "set_redis_pointers",
    "set_stored_fields",
    "store_of",
    "stored_fields",
]
