"""Read what retention plans from: each thread's stored checkpoints as `StoredCheckpoint` rows,
a page of threads at a time, never a channel value.

Per store (told by class, as `inspector.thread_list` does):

* `SqliteSaver` (stock schema): threads paged in thread-id order over the primary key; per
  page one query over `checkpoints` (ids, parent, the metadata's `source`, `parents` and
  delta counters) and one over `writes` grouped by checkpoint and channel. A checkpoint's
  msgpack is decoded (keys only, no value built) only on threads whose metadata has delta
  counters, to tell which delta channels it stores without a value.
* `PostgresSaver` (stock schema): the same, plus `checkpoint_blobs`: the blobs each checkpoint
  references through its `channel_versions` (those that exist), with their sizes.
* `RedisSaver`: thread ids from its checkpoint index (search), then each thread's checkpoint,
  blob and write keys read by key (JSON documents; sizes from `MEMORY USAGE`).
* any other saver: `list()` per thread, sizes from the saver's serde.

Bytes (what an apply frees, and what `plan.bytes` counts) are the one measure of
`_langgraph.stored_bytes`, shared with the apply and the wrapper's `prune` span: SQLite
`length()` of `checkpoint` + `metadata` (a checkpoint) and of `value` (a write); PostgreSQL
`pg_column_size()` of the same columns and of each blob; Redis `MEMORY USAGE` of the
checkpoint document, of each write document and of the checkpoint's write-key registry (counted
with its writes). Other savers: the serde's bytes of the checkpoint, of its metadata (JSON) and
of each write's value. Row overhead, indexes and space a database hands back only on `VACUUM`
are not counted: a plan's `bytes` is what `stored_bytes.thread_bytes` reports for the thread,
and its `reclaim_bytes` what that figure drops by when the plan is applied.

Where the bytes are, by channel (`StoredCheckpoint.values_by_channel`; a plan's rows of
values, pending writes, values not broken down and checkpoint overhead sum to its `bytes`):
pending writes by their channel on every store; PostgreSQL blobs by their channel, and its
values stored inline in the checkpoint (`checkpoint -> 'channel_values'`) measured one by one
(`pg_column_size` of each `jsonb_each` value, scaled down to the checkpoint's own size when
they add up to more). Where values live inside the checkpoint (SQLite's msgpack, Redis's JSON
document, a `list()` saver's checkpoint) the store cannot tell them apart without reading
them: the checkpoint's own bytes (without its metadata) are split among its channels in
proportion to the sizes the wrapper stored in its metadata (`otel.channels`, the canonical
encoding's size: an estimate, here scaled to what is stored; ids and versions are folded in
pro rata). SQLite extracts those sizes in the page query (`json_extract`, sharing SQLite's
parse of the metadata with the other columns). A checkpoint without them (written without
the wrapper, or with nothing recording) counts its bytes as values not broken down. The
rest of a checkpoint's bytes (its metadata; on PostgreSQL also ids and versions; on Redis
its write-key registry, counted with its writes) is its overhead.

A thread's rows carry interrupts (an `__interrupt__` write and no `__resume__`), delta channels
(the metadata's `counters_since_delta_snapshot` channels that have a version and no value in the
checkpoint), the checkpoint a subgraph call's namespace was started by (the metadata's
`parents`), and, on PostgreSQL, the parent a pre-v4 checkpoint reads its pending sends from.
"""

from __future__ import annotations

import importlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import (
    DELTA_COUNTERS_KEY,
    RESUME_CHANNEL,
    TASKS_CHANNEL,
)
from langgraph.checkpoint.otel._langgraph.namespaces import parent_namespace
from langgraph.checkpoint.otel._langgraph.stored_bytes import (
    POSTGRES_BLOB_BYTES,
    POSTGRES_CHECKPOINT_BYTES,
    SQLITE_CHECKPOINT_BYTES,
    SQLITE_WRITE_BYTES,
    redis_key_bytes,
)
from langgraph.checkpoint.otel.analysis.retention import (
    BlobRef,
    CheckpointRef,
    RetentionPolicy,
    StoredCheckpoint,
    ThreadPlan,
    is_call_namespace,
    plan_thread,
    split_values,
    stored_channel_sizes,
)
from langgraph.checkpoint.otel.inspector.thread_list import (
    ThreadQuery,
    saver_kind,
    saver_latest,
    thread_filter,
)

INTERRUPT_CHANNEL = "__interrupt__"
PAGE = 500
"""Threads read per query (SQL stores)."""

Advance = Callable[[], None] | None


def scan_threads(
    saver: BaseCheckpointSaver[Any], query: ThreadQuery, advance: Advance = None
) -> Iterator[list[StoredCheckpoint]]:
    """Each selected thread's stored checkpoints (all namespaces), one list per thread.

    `query.prefix` and `query.since` select threads (since: by their newest checkpoint);
    `query.limit` caps how many (None: all); `advance` is called once per thread.
    """
    kind = saver_kind(saver)
    if kind == "sqlite":
        threads: Iterator[list[StoredCheckpoint]] = _SqliteScan(saver, query).threads()
    elif kind == "postgres":
        threads = _PostgresScan(saver, query).threads()
    elif kind == "redis":
        threads = _redis_threads(saver, query)
    else:
        threads = _listed_threads(saver, query)
    for rows in threads:
        if rows:
            yield rows
            if advance is not None:
                advance()


def plan_threads(
    saver: BaseCheckpointSaver[Any],
    policy: RetentionPolicy,
    query: ThreadQuery,
    now: datetime,
    advance: Advance = None,
) -> Iterator[ThreadPlan]:
    """`plan_thread` of each thread `scan_threads` reads."""
    for rows in scan_threads(saver, query, advance):
        yield plan_thread(rows, policy, now)


# --- what the rows say, whatever the store ---------------------------------------------------


class _Writes:
    """A checkpoint's writes: count, bytes, channels."""

    __slots__ = ("by_channel", "count", "size")

    def __init__(self) -> None:
        self.count = 0
        self.size = 0
        self.by_channel: dict[str, int] = {}

    def add(self, channel: str, count: int, size: int) -> None:
        self.count += count
        self.size += size
        self.by_channel[channel] = self.by_channel.get(channel, 0) + size


def _metadata(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The metadata as a dict, or why it cannot be read."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    try:
        text = (
            bytes(raw).decode("utf-8") if isinstance(raw, bytes | bytearray | memoryview) else raw
        )
        value = json.loads(text) if text else {}
    except (ValueError, TypeError, UnicodeDecodeError):
        return None, "its metadata is not readable JSON"
    return (value, None) if isinstance(value, dict) else (None, "its metadata is not an object")


def _started_by(thread_id: str, ns: str, metadata: Mapping[str, Any]) -> CheckpointRef | None:
    """The parent namespace's checkpoint that ran this subgraph call (metadata `parents`)."""
    if not is_call_namespace(ns):
        return None
    parents = metadata.get("parents")
    if not isinstance(parents, Mapping):
        return None
    parent_ns = parent_namespace(ns)
    starter = parents.get(parent_ns)
    return None if not isinstance(starter, str) else CheckpointRef(thread_id, parent_ns, starter)


def _delta_channels(
    metadata: Mapping[str, Any], versions: Iterable[str], values: Iterable[str]
) -> frozenset[str]:
    """Delta channels written at least once and stored without a value here."""
    counters = metadata.get(DELTA_COUNTERS_KEY)
    if not isinstance(counters, Mapping):
        return frozenset()
    return frozenset(set(counters) & set(versions) - set(values))


def _row(
    ref: CheckpointRef,
    parent_id: str | None,
    metadata: Mapping[str, Any] | None,
    size: int,
    writes: _Writes | None,
    *,
    why: str | None = None,
    blobs: frozenset[BlobRef] = frozenset(),
    delta: frozenset[str] = frozenset(),
    references: frozenset[CheckpointRef] = frozenset(),
    inline: tuple[tuple[tuple[str, int], ...], int] = ((), 0),
) -> StoredCheckpoint:
    writes = writes or _Writes()
    source = metadata.get("source") if metadata is not None else None
    channels = writes.by_channel
    return StoredCheckpoint(
        ref=ref,
        parent_id=parent_id,
        source=source if isinstance(source, str) else None,
        bytes=size,
        writes=writes.count,
        writes_bytes=writes.size,
        blobs=blobs,
        pending_interrupt=INTERRUPT_CHANNEL in channels and RESUME_CHANNEL not in channels,
        delta_channels=delta,
        references=references,
        unproven=why,
        started_by=None
        if metadata is None
        else _started_by(ref.thread_id, ref.checkpoint_ns, metadata),
        writes_by_channel=tuple(sorted(channels.items())),
        values_by_channel=inline[0],
        values_not_broken_down=inline[1],
    )


def _inline(
    sizes: Sequence[tuple[str, int]] | None, stored: int
) -> tuple[tuple[tuple[str, int], ...], int]:
    """(values by channel, values not broken down) of a checkpoint whose values take `stored`
    bytes (its own, without the metadata): split in proportion to the sizes the wrapper
    stored (`[hash, size]` per channel, its canonical encoding: an estimate of the stored
    size, scaled here to what is stored), or, without them, all not broken down."""
    if sizes is None:
        return (), max(stored, 0)
    return split_values(sizes, stored), 0


def _msgpack_keys(kind: str | None, blob: bytes | None) -> tuple[list[str], list[str]] | None:
    """(channel_versions keys, channel_values keys) of a msgpack checkpoint, no value built."""
    if kind != "msgpack" or blob is None:
        return None
    try:
        data = ormsgpack.unpackb(bytes(blob), ext_hook=lambda code, data: None)
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError):
        return None
    versions, values = data.get("channel_versions"), data.get("channel_values")
    if not isinstance(versions, dict) or not isinstance(values, dict):
        return None
    return list(versions), list(values)


# --- SQLite and PostgreSQL (stock schemas) ---------------------------------------------------


class _SqlScan:
    """Threads paged in id order (keyset over the primary key), PAGE at a time."""

    postgres = False
    mark = "?"
    among = "thread_id >= ? AND thread_id <= ?"
    """The page's threads (a range on the primary key; rows of threads outside the page but
    inside the range are dropped)."""

    def among_params(self, ids: list[str]) -> list[Any]:
        return [ids[0], ids[-1]]

    def __init__(self, saver: Any, query: ThreadQuery) -> None:
        self.saver = saver
        self.query = query

    def threads(self) -> Iterator[list[StoredCheckpoint]]:
        after: str | None = None
        left = self.query.limit
        while left is None or left > 0:
            want = PAGE if left is None else min(PAGE, left)
            ids = self.page(after, want)
            if not ids:
                return
            rows = self.read(ids)
            for thread_id in ids:
                yield rows.get(thread_id, [])
            after = ids[-1]
            if left is not None:
                left -= len(ids)
            if len(ids) < want:
                return

    def page(self, after: str | None, want: int) -> list[str]:
        mark, query = self.mark, self.query
        where, params, having, having_params = thread_filter(query, postgres=self.postgres)
        if after is not None:
            where.insert(0, f"thread_id > {mark}")
            params.insert(0, after)
        params += having_params
        sql = (
            "SELECT thread_id FROM checkpoints"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " GROUP BY thread_id"
            + having
            + f" ORDER BY thread_id LIMIT {mark}"
        )
        return [str(r[0]) for r in self.fetch(sql, [*params, want])]

    def fetch(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        raise NotImplementedError

    def read(self, ids: list[str]) -> dict[str, list[StoredCheckpoint]]:
        raise NotImplementedError

    def writes(self, ids: list[str], table: str, value: str) -> dict[tuple[str, str, str], _Writes]:
        sql = (
            "SELECT thread_id, checkpoint_ns, checkpoint_id, channel, COUNT(*) AS writes, "
            f"COALESCE(SUM({value}), 0) AS size FROM {table} "
            f"WHERE {self.among} "
            "GROUP BY thread_id, checkpoint_ns, checkpoint_id, channel"
        )
        wanted = set(ids)
        found: dict[tuple[str, str, str], _Writes] = defaultdict(_Writes)
        for thread_id, ns, cid, channel, count, size in self.fetch(sql, self.among_params(ids)):
            if thread_id in wanted:
                found[(str(thread_id), str(ns), str(cid))].add(str(channel), int(count), int(size))
        return found


class _SqliteScan(_SqlScan):
    def fetch(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        with self.saver.cursor(transaction=False) as cur:
            return list(cur.execute(sql, list(params)))

    def read(self, ids: list[str]) -> dict[str, list[StoredCheckpoint]]:
        # only the metadata keys planning reads, extracted by SQLite (no JSON parsed here
        # but a subgraph call's `parents` and a delta thread's counters)
        meta = "CAST(metadata AS TEXT)"
        delta_key = f"json_type({meta}, '$.{DELTA_COUNTERS_KEY}') IS NOT NULL"
        sql = (
            "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            f"json_valid({meta}), {SQLITE_CHECKPOINT_BYTES}, "
            f"CASE WHEN json_valid({meta}) THEN json_extract({meta}, '$.source') END, "
            f"CASE WHEN json_valid({meta}) AND checkpoint_ns <> '' "
            f"THEN json_extract({meta}, '$.parents') END, "
            f"CASE WHEN json_valid({meta}) AND {delta_key} "
            f"THEN json_extract({meta}, '$.{DELTA_COUNTERS_KEY}') END, "
            f"CASE WHEN json_valid({meta}) AND {delta_key} THEN type END, "
            f"CASE WHEN json_valid({meta}) AND {delta_key} THEN checkpoint END, "
            "coalesce(length(CAST(checkpoint AS BLOB)), 0), "
            # the channel sizes the wrapper stored (`{channel: [hash, size]}`, extracted by
            # SQLite from the metadata it parsed once for every column here)
            f"CASE WHEN json_valid({meta}) AND json_type({meta}, '{SIZES_PATH}') = 'object' "
            f"THEN json_extract({meta}, '{SIZES_PATH}') END "
            f"FROM checkpoints WHERE {self.among}"
        )
        writes = self.writes(ids, "writes", SQLITE_WRITE_BYTES)
        wanted = set(ids)
        threads: dict[str, list[StoredCheckpoint]] = defaultdict(list)
        for (
            thread_id,
            ns,
            cid,
            parent,
            valid,
            size,
            source,
            parents,
            counters,
            kind,
            blob,
            checkpoint_size,
            stored_sizes,
        ) in self.fetch(sql, self.among_params(ids)):
            if thread_id not in wanted:
                continue
            metadata: dict[str, Any] | None = None
            why = None if valid else "its metadata is not readable JSON"
            if valid:
                metadata = {"source": source}
                if parents is not None:
                    metadata["parents"] = json.loads(parents)
                if counters is not None:
                    metadata[DELTA_COUNTERS_KEY] = json.loads(counters)
            ref = CheckpointRef(str(thread_id), str(ns), str(cid))
            delta: frozenset[str] = frozenset()
            if metadata is not None and blob is not None:
                keys = _msgpack_keys(kind, blob)
                if keys is None:
                    why = "a delta-channel checkpoint whose channels cannot be read"
                else:
                    delta = _delta_channels(metadata, *keys)
            threads[ref.thread_id].append(
                _row(
                    ref,
                    parent,
                    metadata,
                    int(size or 0),
                    writes.get(_key(ref)),
                    why=why,
                    delta=delta,
                    inline=_inline(
                        _sizes_json(stored_sizes),
                        int(checkpoint_size or 0),
                    ),
                )
            )
        return threads


def _measured(sizes: Sequence[tuple[str, int]], stored: int) -> tuple[tuple[str, int], ...]:
    """Values measured one by one, scaled down to `stored` (the checkpoint's own size) when
    they add up to more (compression, headers)."""
    found = tuple(sorted((channel, size) for channel, size in sizes if size > 0))
    if sum(size for _, size in found) <= stored:
        return found
    return split_values(found, stored)


SIZES_PATH = f"$.{names.METADATA_KEY}.{names.META_CHANNELS}"


def _sizes_json(text: str | None) -> list[tuple[str, int]] | None:
    """(channel, size) of the stored `{channel: [hash, size]}` (malformed entries left out)."""
    if text is None:
        return None
    channels = json.loads(text)
    return [
        (channel, pair[1])
        for channel, pair in channels.items()
        if type(pair) is list and len(pair) == 2 and type(pair[1]) is int
    ]


def _key(ref: CheckpointRef) -> tuple[str, str, str]:
    return (ref.thread_id, ref.checkpoint_ns, ref.checkpoint_id)


class _PostgresScan(_SqlScan):
    postgres = True
    mark = "%s"
    among = "thread_id = ANY(%s)"

    def among_params(self, ids: list[str]) -> list[Any]:
        return [ids]

    def fetch(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        with self.saver._cursor() as cur:
            cur.execute(sql, list(params), prepare=False)
            return [tuple(r.values()) if isinstance(r, Mapping) else r for r in cur.fetchall()]

    def read(self, ids: list[str]) -> dict[str, list[StoredCheckpoint]]:
        rows_sql = f"""
SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id,
    c.metadata::text AS metadata,
    {POSTGRES_CHECKPOINT_BYTES} AS size,
    COALESCE(
        (SELECT array_agg(k) FROM jsonb_object_keys(c.checkpoint -> 'channel_values') AS k),
        '{{}}') AS value_keys,
    c.checkpoint -> 'channel_versions' AS versions,
    CASE WHEN (c.checkpoint ->> 'v')::int < 4 AND c.parent_checkpoint_id IS NOT NULL
        AND EXISTS (SELECT 1 FROM checkpoint_writes w WHERE w.thread_id = c.thread_id
            AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.parent_checkpoint_id
            AND w.channel = '{TASKS_CHANNEL}')
        THEN c.parent_checkpoint_id END AS sends_parent,
    coalesce(pg_column_size(c.checkpoint), 0) AS checkpoint_size
FROM checkpoints c WHERE c.thread_id = ANY(%s)
"""
        # the values stored inline (primitives; the others are blobs), each measured alone
        inline_sql = """
SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, v.key, pg_column_size(v.value)
FROM checkpoints c, jsonb_each(CASE WHEN jsonb_typeof(c.checkpoint -> 'channel_values')
    = 'object' THEN c.checkpoint -> 'channel_values' END) AS v
WHERE c.thread_id = ANY(%s)
"""
        blobs_sql = f"""
SELECT thread_id, checkpoint_ns, channel, version, {POSTGRES_BLOB_BYTES} AS size
FROM checkpoint_blobs WHERE thread_id = ANY(%s)
"""
        writes = self.writes(ids, "checkpoint_writes", POSTGRES_BLOB_BYTES)
        sizes: dict[tuple[str, str, str, str], int] = {
            (str(t), str(ns), str(ch), str(v)): int(size or 0)
            for t, ns, ch, v, size in self.fetch(blobs_sql, [ids])
        }
        inline: dict[tuple[str, str, str], list[tuple[str, int]]] = defaultdict(list)
        for thread_id, ns, cid, channel, inline_size in self.fetch(inline_sql, [ids]):
            inline[(str(thread_id), str(ns), str(cid))].append((str(channel), int(inline_size)))
        threads: dict[str, list[StoredCheckpoint]] = defaultdict(list)
        for (
            thread_id,
            ns,
            cid,
            parent,
            raw,
            size,
            values,
            versions,
            sends,
            checkpoint_size,
        ) in self.fetch(rows_sql, [ids]):
            ref = CheckpointRef(str(thread_id), str(ns), str(cid))
            metadata, why = _metadata(raw)
            versions = versions if isinstance(versions, Mapping) else {}
            blobs = frozenset(
                BlobRef(ref.thread_id, ref.checkpoint_ns, str(ch), str(v), bytes=found)
                for ch, v in versions.items()
                if (found := sizes.get((ref.thread_id, ref.checkpoint_ns, str(ch), str(v))))
                is not None
            )
            delta = _delta_channels(metadata, versions, values or ()) if metadata else frozenset()
            references = (
                frozenset({CheckpointRef(ref.thread_id, ref.checkpoint_ns, str(sends))})
                if sends
                else frozenset()
            )
            threads[ref.thread_id].append(
                _row(
                    ref,
                    parent,
                    metadata,
                    int(size or 0),
                    writes.get(_key(ref)),
                    why=why,
                    blobs=blobs,
                    delta=delta,
                    references=references,
                    inline=(_measured(inline.get(_key(ref), ()), int(checkpoint_size or 0)), 0),
                )
            )
        return threads


# --- Redis ----------------------------------------------------------------------------------


def _thread_ids(saver: Any, query: ThreadQuery) -> list[str]:
    """The selected thread ids in id order (the first `query.limit`), as the SQL stores page
    them: the saver's own listing (`thread_list`), which holds one id per thread."""
    latest, _ = saver_latest(saver, ThreadQuery(None, 0, query.since, query.prefix), 0, None)
    return sorted(thread_id for _, thread_id in latest)[: query.limit]


def _redis_threads(saver: Any, query: ThreadQuery) -> Iterator[list[StoredCheckpoint]]:
    for thread_id in _thread_ids(saver, query):
        yield _redis_thread(saver, thread_id)


def _redis_thread(saver: Any, thread_id: str) -> list[StoredCheckpoint]:
    """One thread's checkpoint and write documents (searched by thread), sized by key."""
    # optional packages, typed or not depending on their versions: imported by name
    util: Any = importlib.import_module("langgraph.checkpoint.redis.util")
    registry: Any = importlib.import_module("langgraph.checkpoint.redis.key_registry")
    query_module: Any = importlib.import_module("redisvl.query")
    tag: Any = importlib.import_module("redisvl.query.filter").Tag
    safe = util.to_storage_safe_id(thread_id)

    def search(index: Any, fields: list[str]) -> list[dict[str, Any]]:
        query = query_module.FilterQuery(
            filter_expression=tag("thread_id") == safe, return_fields=fields
        )
        return [doc for batch in index.paginate(query, page_size=REDIS_PAGE) for doc in batch]

    checkpoints = search(
        saver.checkpoints_index,
        ["checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "$.metadata"],
    )
    write_docs = search(
        saver.checkpoint_writes_index, ["checkpoint_ns", "checkpoint_id", "channel"]
    )
    redis = saver._redis
    registry_keys = {
        (
            str(d["checkpoint_ns"]),
            str(d["checkpoint_id"]),
        ): registry.CheckpointKeyRegistry.make_write_keys_zset_key(
            thread_id,
            util.from_storage_safe_str(d["checkpoint_ns"]),
            util.from_storage_safe_id(d["checkpoint_id"]),
        )
        for d in checkpoints
    }
    keys = (
        [d["id"] for d in checkpoints]
        + [d["id"] for d in write_docs]
        + list(registry_keys.values())
    )
    sizes = dict(zip(keys, redis_key_bytes(redis, keys), strict=True))
    writes: dict[tuple[str, str], _Writes] = defaultdict(_Writes)
    for doc in write_docs:
        at = (str(doc["checkpoint_ns"]), str(doc["checkpoint_id"]))
        writes[at].add(str(doc["channel"]), 1, sizes.get(doc["id"], 0))
    rows = []
    for doc in checkpoints:
        at = (str(doc["checkpoint_ns"]), str(doc["checkpoint_id"]))
        ns = str(util.from_storage_safe_str(doc["checkpoint_ns"]))
        cid = str(util.from_storage_safe_id(doc["checkpoint_id"]))
        parent = util.from_storage_safe_id(doc.get("parent_checkpoint_id") or "")
        ref = CheckpointRef(thread_id, ns, cid)
        metadata, why = _metadata(doc.get("$.metadata"))
        found = writes.get(at)
        registry_size = sizes.get(registry_keys[at], 0)
        if registry_size:  # the write-key registry goes with its writes
            found = found or _Writes()
            found.size += registry_size
        delta: frozenset[str] = frozenset()
        if metadata is not None and isinstance(metadata.get(DELTA_COUNTERS_KEY), Mapping):
            keys_found = _redis_channel_keys(redis, doc["id"])
            if keys_found is None:
                why = "a delta-channel checkpoint whose channels cannot be read"
            else:
                delta = _delta_channels(metadata, *keys_found)
        size = sizes.get(doc["id"], 0)
        raw = doc.get("$.metadata")
        # the document's bytes past its metadata (as JSON text): its values, ids and versions
        meta_size = len(
            raw.encode()
            if isinstance(raw, str)
            else bytes(raw)
            if isinstance(raw, bytes | bytearray)
            else json.dumps(raw, default=str).encode()
        )
        rows.append(
            _row(
                ref,
                str(parent) or None,
                metadata,
                size,
                found,
                why=why,
                delta=delta,
                inline=_inline(stored_channel_sizes(metadata), max(size - meta_size, 0)),
            )
        )
    return rows


REDIS_PAGE = 1000


def _redis_channel_keys(redis: Any, key: str) -> tuple[list[str], list[str]] | None:
    """(channel_versions keys, channel_values keys) of a checkpoint document."""
    try:
        versions = redis.json().objkeys(key, "$.checkpoint.channel_versions")
        values = redis.json().objkeys(key, "$.checkpoint.channel_values")
    except Exception:
        return None
    if not versions or not values or versions[0] is None or values[0] is None:
        return None
    return [_text(k) for k in versions[0]], [_text(k) for k in values[0]]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# --- any other saver: list() ----------------------------------------------------------------


def _listed_threads(
    saver: BaseCheckpointSaver[Any], query: ThreadQuery
) -> Iterator[list[StoredCheckpoint]]:
    for thread_id in _thread_ids(saver, query):
        yield _listed_thread(saver, thread_id)


def _listed_thread(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[StoredCheckpoint]:
    serde = saver.serde
    rows = []
    for tup in saver.list({"configurable": {"thread_id": thread_id}}):
        configurable = tup.config.get("configurable") or {}
        ns = str(configurable.get("checkpoint_ns") or "")
        ref = CheckpointRef(thread_id, ns, str(tup.checkpoint["id"]))
        parent = ((tup.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
        metadata = dict(tup.metadata or {})
        why = None
        try:
            checkpoint_size = len(serde.dumps_typed(tup.checkpoint)[1])
            size = checkpoint_size + len(json.dumps(metadata, default=str).encode())
        except Exception:  # a value the serde cannot write back: size unknown
            size, checkpoint_size = 0, 0
            why = "its checkpoint cannot be measured through the saver's serde"
        writes = _Writes()
        for _, channel, value in tup.pending_writes or ():
            try:
                measured = len(serde.dumps_typed(value)[1])
            except Exception:
                measured = 0
            writes.add(str(channel), 1, measured)
        delta = _delta_channels(
            metadata,
            tup.checkpoint.get("channel_versions") or {},
            tup.checkpoint.get("channel_values") or {},
        )
        rows.append(
            _row(
                ref,
                str(parent) if parent else None,
                metadata,
                size,
                writes,
                why=why,
                delta=delta,
                inline=_inline(stored_channel_sizes(metadata), checkpoint_size),
            )
        )
    return rows


__all__ = ["PAGE", "plan_threads", "scan_threads"]
