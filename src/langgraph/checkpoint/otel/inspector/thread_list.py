"""Which threads `langgraph-otel threads` lists: newest first, one page, each saver's cheapest way.

A thread's recency is its latest checkpoint id: LangGraph's checkpoint ids are UUID v6, whose
text sorts in time order, so `--since` is a bound on that id too. Only the page's thread ids
(and their latest ids) are read here; the rows are then built from each thread's own
checkpoints.

* `SqliteSaver`, `PostgresSaver` (and their subclasses, also from `module:factory`): one SQL
  query, `MAX(checkpoint_id) ... GROUP BY thread_id ORDER BY ... LIMIT`, over the primary-key
  index (`thread_id, checkpoint_ns, checkpoint_id`): the index is read, never a checkpoint.
* `RedisSaver`: its checkpoint index searched newest first (two ids a checkpoint), until the
  page's threads are found.
* `InMemorySaver`: the keys of its storage.
* any other saver: one pass over `saver.list(None)`, keeping only the latest id per thread:
  time grows with the checkpoints, memory with the number of threads.
* span files: read whole; a thread's latest id is that of its latest put span.
"""

from __future__ import annotations

import heapq
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.stored_bytes import stored_kind
from langgraph.checkpoint.otel.analysis.checkpoint_time import id_floor, parse_duration
from langgraph.checkpoint.otel.inspector.sources import SourceError, Sources, _why

DEFAULT_LIMIT = 50


@dataclass(frozen=True)
class ThreadQuery:
    """Which threads, and which page of them."""

    limit: int | None = DEFAULT_LIMIT
    """Threads per page; None for all."""
    offset: int = 0
    """How many of the most recent matching threads to skip."""
    since: datetime | None = None
    """Only threads whose latest checkpoint is at least this recent."""
    prefix: str = ""
    """Only thread ids starting with this."""

    def matches(self, thread_id: str, latest: str) -> bool:
        """Whether a thread with this latest checkpoint id is selected (before paging)."""
        floor = self.id_floor
        return thread_id.startswith(self.prefix) and (floor is None or latest >= floor)

    @property
    def id_floor(self) -> str | None:
        """The smallest checkpoint id written at or after `since`."""
        return None if self.since is None else id_floor(self.since)


@dataclass(frozen=True)
class ThreadPage:
    """One page of thread ids, most recently active first."""

    ids: list[str]
    more: bool
    """More threads match after this page."""
    total: int | None
    """How many threads match, when counted on the way (else None)."""


Latest = tuple[str, str]
"""(latest checkpoint id, thread id): sorts by recency, then by thread id."""


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A time from `2026-11-30`, an ISO date-time, or a duration back from now (`90m`, `7d`).

    A date or date-time without a time zone is local time, as the tables show times.
    """
    duration = parse_duration(text)
    if duration is not None:
        return (now or datetime.now(UTC)) - duration
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise SourceError(
            f"--since {text!r}: not a date (2026-11-30), a date-time or a duration (7d, 12h)"
        ) from None
    return when if when.tzinfo else when.astimezone()


def latest_threads(sources: Sources, query: ThreadQuery) -> ThreadPage:
    """The page of threads `query` selects from the saver and the span files, newest first."""
    end = None if query.limit is None else query.offset + query.limit
    span_threads = _span_latest(sources, query) if sources.span_files else {}
    if sources.saver is None:
        ranked = sorted(((v, k) for k, v in span_threads.items()), reverse=True)
        return _page(ranked, query.offset, end, total=len(ranked))
    # alone, the saver pages itself; with span threads to merge, it gives the top `end` + 1
    skip = 0 if span_threads else query.offset
    want = None if end is None else end - skip + 1
    try:
        rows, total = saver_latest(sources.saver, query, skip, want)
    except Exception as exc:
        raise SourceError(f"{sources.saver_url}: cannot list threads ({_why(exc)})") from None
    if not span_threads:
        return ThreadPage(
            ids=[t for _, t in rows[: query.limit]],
            more=want is not None and len(rows) == want,
            total=total,
        )
    merged = {t: v for v, t in rows}
    for thread_id, latest in span_threads.items():
        merged[thread_id] = max(latest, merged.get(thread_id, ""))
    ranked = sorted(((v, k) for k, v in merged.items()), reverse=True)
    # with the saver's list cut short, only whether more exist is known, not how many
    cut = want is not None and len(rows) == want
    return _page(ranked, query.offset, end, total=None if cut else len(ranked), more=cut)


def _page(
    ranked: Sequence[Latest], offset: int, end: int | None, total: int | None, more: bool = False
) -> ThreadPage:
    return ThreadPage(
        ids=[t for _, t in ranked[offset:end]],
        more=more or (end is not None and len(ranked) > end),
        total=total,
    )


def _span_latest(sources: Sources, query: ThreadQuery) -> dict[str, str]:
    latest: dict[str, str] = {}
    for span in sources.spans:
        thread = span.attributes.get(names.THREAD_ID)
        checkpoint_id = span.attributes.get(names.CHECKPOINT_ID)
        if span.name != names.SPAN_PUT or thread is None or checkpoint_id is None:
            continue
        thread_id, cid = str(thread), str(checkpoint_id)
        if cid > latest.get(thread_id, "") and query.matches(thread_id, cid):
            latest[thread_id] = cid
    return latest


def saver_latest(
    saver: BaseCheckpointSaver[Any], query: ThreadQuery, skip: int, want: int | None
) -> tuple[list[Latest], int | None]:
    """The threads ranked `skip` to `skip + want` (newest first), and how many match."""
    from langgraph.checkpoint.memory import InMemorySaver

    if isinstance(saver, InMemorySaver):
        return _top(_memory_latest(saver, query), skip, want)
    kind = saver_kind(saver)
    if kind in ("sqlite", "postgres"):
        return _sql_latest(saver, query, skip, want, postgres=kind == "postgres")
    if kind == "redis":
        return _redis_latest(saver, query, skip, want)
    return _top(_scan_latest(saver, query), skip, want)


QUERIED_KINDS = ("sqlite", "postgres", "redis")
"""Savers with a query of their own (`_langgraph.stored_bytes.stored_kind`: by the class they
are or derive from, no saver package imported)."""


def saver_kind(saver: BaseCheckpointSaver[Any]) -> str | None:
    """`sqlite`, `postgres` or `redis` for the sync stock savers (and subclasses), else None."""
    kind = stored_kind(saver)
    return kind if kind in QUERIED_KINDS else None


def _top(latest: dict[str, str], skip: int, want: int | None) -> tuple[list[Latest], int | None]:
    pairs = ((v, k) for k, v in latest.items())
    ranked = sorted(pairs, reverse=True) if want is None else heapq.nlargest(skip + want, pairs)
    return ranked[skip:], len(latest)


def _memory_latest(saver: Any, query: ThreadQuery) -> dict[str, str]:
    latest: dict[str, str] = {}
    for thread_id, namespaces in saver.storage.items():
        ids = [max(by_id) for by_id in namespaces.values() if by_id]
        if ids and query.matches(str(thread_id), max(ids)):
            latest[str(thread_id)] = max(ids)
    return latest


REDIS_PAGE = 1000


def _redis_latest(
    saver: Any, query: ThreadQuery, skip: int, want: int | None
) -> tuple[list[Latest], int | None]:
    """Threads in order of first appearance in the checkpoint index sorted by id, newest first
    (its search, two ids returned a checkpoint), read until `skip + want` threads are found or
    the checkpoints are older than `since`. (`RedisSaver.list(None)` stops at 10,000.)"""
    # optional packages, typed or not depending on their versions: imported by name
    safe_id: Any = importlib.import_module("langgraph.checkpoint.redis.util")
    search = importlib.import_module("redisvl.query").FilterQuery(
        filter_expression="*",
        return_fields=["thread_id", "checkpoint_id"],
        sort_by=("checkpoint_id", "DESC"),
    )
    floor, need = query.id_floor, None if want is None else skip + want
    latest: dict[str, str] = {}
    for batch in saver.checkpoints_index.paginate(search, page_size=REDIS_PAGE):
        for doc in batch:  # processed: one dict a checkpoint
            thread_id = str(safe_id.from_storage_safe_id(doc["thread_id"]))
            cid = str(safe_id.from_storage_safe_id(doc["checkpoint_id"]))
            if floor is not None and cid < floor:
                return _ranked(latest, skip), None
            if thread_id not in latest and thread_id.startswith(query.prefix):
                latest[thread_id] = cid
                if need is not None and len(latest) >= need:
                    return _ranked(latest, skip), None
    return _ranked(latest, skip), len(latest)


def _ranked(latest: dict[str, str], skip: int) -> list[Latest]:
    return sorted(((v, k) for k, v in latest.items()), reverse=True)[skip:]


def _scan_latest(saver: BaseCheckpointSaver[Any], query: ThreadQuery) -> dict[str, str]:
    latest: dict[str, str] = {}
    for tup in saver.list(None):
        configurable = tup.config.get("configurable") or {}
        thread_id = str(configurable.get("thread_id"))
        cid = str(configurable.get("checkpoint_id") or tup.checkpoint["id"])
        if cid > latest.get(thread_id, ""):
            latest[thread_id] = cid
    return {t: v for t, v in latest.items() if query.matches(t, v)}


def thread_filter(
    query: ThreadQuery, *, postgres: bool
) -> tuple[list[str], list[Any], str, list[Any]]:
    """The WHERE conditions selecting `query`'s threads by prefix and the HAVING clause
    selecting them by `since`, each with its parameters (SQLite's `?` or PostgreSQL's `%s`)."""
    mark = "%s" if postgres else "?"
    where: list[str] = []
    params: list[Any] = []
    if query.prefix and postgres:
        where.append(f"starts_with(thread_id, {mark})")  # exact under any collation
        params.append(query.prefix)
    elif query.prefix:  # a range on the index (SQLite compares text as UTF-8 bytes)
        where.append(f"thread_id >= {mark}")
        params.append(query.prefix)
        upper = after_prefix(query.prefix)
        if upper is None:
            where.append(f"substr(thread_id, 1, {len(query.prefix)}) = {mark}")
            params.append(query.prefix)
        else:
            where.append(f"thread_id < {mark}")
            params.append(upper)
    if query.id_floor is None:
        return where, params, "", []
    return where, params, f" HAVING MAX(checkpoint_id) >= {mark}", [query.id_floor]


def thread_sql(query: ThreadQuery, *, postgres: bool) -> tuple[str, list[Any]]:
    """The query ranking the threads by their latest checkpoint id, with its parameters
    (LIMIT and OFFSET last): SQLite's `?` or PostgreSQL's `%s` placeholders."""
    mark = "%s" if postgres else "?"
    where, params, having, having_params = thread_filter(query, postgres=postgres)
    sql = (
        "SELECT thread_id, MAX(checkpoint_id) AS latest FROM checkpoints"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " GROUP BY thread_id"
        + having
        + f" ORDER BY latest DESC, thread_id DESC LIMIT {mark} OFFSET {mark}"
    )
    return sql, params + having_params


def _sql_latest(
    saver: Any, query: ThreadQuery, skip: int, want: int | None, *, postgres: bool
) -> tuple[list[Latest], int | None]:
    """Not counted: a count over the groups costs as much again as the ranking (SQLite)."""
    sql, params = thread_sql(query, postgres=postgres)
    params += [-1 if want is None and not postgres else want, skip]  # SQLite: -1 is no limit
    if postgres:
        with saver._cursor() as cur:
            cur.execute(sql, params)
            ranked = [(str(r["latest"]), str(r["thread_id"])) for r in cur.fetchall()]
    else:
        with saver.cursor(transaction=False) as cur:
            ranked = [
                (str(latest), str(thread_id)) for thread_id, latest in cur.execute(sql, params)
            ]
    return ranked, None


def after_prefix(prefix: str) -> str | None:
    """The smallest text after every text starting with `prefix` (None past the last code point)."""
    following = ord(prefix[-1]) + 1
    if 0xD800 <= following < 0xE000:  # surrogates cannot be stored: skip them
        following = 0xE000
    return None if following > 0x10FFFF else prefix[:-1] + chr(following)


__all__ = [
    "DEFAULT_LIMIT",
    "ThreadPage",
    "ThreadQuery",
    "after_prefix",
    "id_floor",
    "latest_threads",
    "parse_since",
    "saver_kind",
    "saver_latest",
    "thread_filter",
    "thread_sql",
]
