"""`langgraph-otel restore`: put the checkpoints of a retention archive back.

Each archived checkpoint goes back through the saver's own API: `put` with its parent as the
config's checkpoint id and every channel version as the new versions (so PostgreSQL writes its
blobs), then `put_writes` per task with its task path. A checkpoint still stored is left as it
is, so restoring a record twice, or a record whose thread was never changed (the apply was
killed before its removal), changes nothing. What `put` does not write is put back by the
store's own path (`_langgraph.stored_rows`): PostgreSQL blobs stored as `empty`, and RedisSaver's
latest-checkpoint pointer, which `put` moves to the checkpoint it writes (it is set back to the
namespace's newest checkpoint).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP, BaseCheckpointSaver

from langgraph.checkpoint.otel._langgraph import stored_rows
from langgraph.checkpoint.otel.retention.apply import Telemetry
from langgraph.checkpoint.otel.retention.archive import (
    ArchivedCheckpoint,
    ArchivedWrite,
    ThreadRecord,
    read_archive,
)

logger = logging.getLogger(__name__)


@dataclass
class RestoreResult:
    """What a restore put back."""

    threads: int
    """Threads with at least one checkpoint put back."""
    checkpoints: int
    writes: int
    incomplete: int
    """Archive lines that could not be read (a torn last line, a bad checksum): skipped."""
    already_present: int = 0
    """Archived checkpoints still stored (never removed, or restored before): left as they are."""
    torn: int = 0
    corrupt: list[int] = field(default_factory=list)
    """Line numbers of the archive's corrupt lines."""


def restore_archive(
    saver: BaseCheckpointSaver[Any],
    archive: Path,
    *,
    thread_ids: Collection[str] | None = None,
    telemetry: Telemetry | None = None,
) -> RestoreResult:
    """Put every archived checkpoint (of `thread_ids`, or all) back into `saver`.

    Args:
        saver: The saver to restore into (the one the archive was made from, or a copy).
        archive: A retention archive (see `retention.archive`).
        thread_ids: Only these threads; None: every thread of the archive.
        telemetry: Spans (`RetentionTelemetry`, operation `restore`); None: none.

    Returns:
        What was put back, and how many archive lines were unreadable.
    """
    contents = read_archive(Path(archive))
    if contents.torn:
        logger.warning("%s: a line cut short (killed while writing) is ignored", archive)
    if contents.corrupt:
        logger.warning("%s: corrupt lines ignored: %s", archive, contents.corrupt)
    by_thread: dict[str, list[ThreadRecord]] = defaultdict(list)
    for record in contents.records:
        if thread_ids is None or record.thread_id in thread_ids:
            by_thread[record.thread_id].append(record)
    found = stored_rows.store_of(saver)
    kind, store = found if found is not None else ("", saver)
    result = RestoreResult(
        threads=0,
        checkpoints=0,
        writes=0,
        incomplete=contents.incomplete,
        torn=contents.torn,
        corrupt=list(contents.corrupt),
    )
    span: AbstractContextManager[Any] = (
        telemetry.apply(
            policy="restore",
            threads=len(by_thread),
            saver=type(store).__name__,
            archive=str(archive),
            operation="restore",
        )
        if telemetry is not None
        else nullcontext(None)
    )
    with span as report:
        for thread_id, records in by_thread.items():
            thread_span: AbstractContextManager[Any] = (
                report.thread(thread_id) if report is not None else nullcontext(None)
            )
            with thread_span as reporter:
                checkpoints = writes = present = 0
                for record in records:
                    c, w, p = restore_record(kind, store, record)
                    checkpoints, writes, present = checkpoints + c, writes + w, present + p
                if reporter is not None:
                    reporter.restored(checkpoints=checkpoints, writes=writes)
            result.threads += 1 if checkpoints else 0
            result.checkpoints += checkpoints
            result.writes += writes
            result.already_present += present
    return result


def restore_record(kind: str, store: Any, record: ThreadRecord) -> tuple[int, int, int]:
    """Put one record back: (checkpoints put, writes put, checkpoints already stored)."""
    thread_id = record.thread_id
    serde = store.serde
    if kind == "redis":
        stored_rows.ensure_redis_registry(store)
        namespaces = {c.ns for c in record.checkpoints} | set(record.latest)
        pointers = stored_rows.redis_pointers(store, thread_id, namespaces)
    checkpoints = writes = present = 0
    restored: dict[str, list[str]] = defaultdict(list)
    for archived in sorted(record.checkpoints, key=lambda c: (c.ns, c.id)):
        config = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": archived.ns,
                "checkpoint_id": archived.id,
            }
        }
        if store.get_tuple(config) is not None:
            present += 1
            continue
        _put(store, serde, thread_id, archived)
        writes += _put_writes(store, serde, config, archived.writes)
        stored_rows.set_stored_fields(
            kind, store, thread_id, archived.ns, archived.id, archived.stored
        )
        checkpoints += 1
        restored[archived.ns].append(archived.id)
    stored_rows.restore_blobs(
        kind,
        store,
        thread_id,
        [(b.ns, b.channel, b.version, b.value[0], b.value[1]) for b in record.blobs],
    )
    if kind == "redis" and restored:
        newest = {}
        for ns, ids in restored.items():
            before = pointers.get(ns)
            newest[ns] = max([*ids, *([before] if before else [])])
        stored_rows.set_redis_pointers(store, thread_id, newest)
    return checkpoints, writes, present


def _put(store: Any, serde: Any, thread_id: str, archived: ArchivedCheckpoint) -> None:
    checkpoint = serde.loads_typed(archived.checkpoint)
    metadata = serde.loads_typed(archived.metadata)
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": archived.ns}
    if archived.parent_id:
        configurable["checkpoint_id"] = archived.parent_id
    store.put(
        {"configurable": configurable},
        checkpoint,
        metadata,
        dict(checkpoint.get("channel_versions") or {}),
    )


def _put_writes(
    store: Any, serde: Any, config: dict[str, Any], writes: tuple[ArchivedWrite, ...]
) -> int:
    """Put writes back as LangGraph first wrote them (see `write_calls`)."""
    for task_id, task_path, call in write_calls(writes):
        store.put_writes(
            config,
            [(w.channel, serde.loads_typed(w.value)) for w in call],
            task_id,
            task_path,
        )
    return len(writes)


def write_calls(
    writes: Sequence[ArchivedWrite],
) -> list[tuple[str, str, list[ArchivedWrite]]]:
    """The `put_writes` calls that store `writes` (in the order the saver read them) as they
    are stored: (task id, task path, writes) in the order to make them.

    A write's index is its place in its call, except for the special channels (error,
    interrupt, resume, scheduled), whose indexes are fixed. So a task's ordinary writes go in
    one call at their places, and a place no ordinary write holds (a resume written in the
    same call, say) is filled by one of the task's special writes, the nearest before in read
    order; the other special writes go alone. The calls are made in the order of their first
    write as read (RedisSaver reads writes in the order they were written, and scores each
    write-key registry entry by its place in its call)."""
    by_task: dict[tuple[str, str], list[tuple[int, ArchivedWrite]]] = defaultdict(list)
    for place, write in enumerate(writes):
        by_task[(write.task_id, write.task_path)].append((place, write))
    calls: list[tuple[int, tuple[str, str], list[ArchivedWrite]]] = []
    for key, items in by_task.items():
        ordinary = sorted((i for i in items if i[1].channel not in WRITES_IDX_MAP), key=_idx)
        special = [i for i in items if i[1].channel in WRITES_IDX_MAP]
        used: set[int] = set()
        if ordinary:
            slots = {w.idx: (place, w) for place, w in ordinary}
            gaps = [i for i in range(max(slots) + 1) if i not in slots]
            if min(slots) >= 0 and len(gaps) <= len(special):
                first = min(place for place, _ in ordinary)
                before = [i for i in special if i[0] < first][::-1]
                fillers = sorted((before + [i for i in special if i[0] > first])[: len(gaps)])
                slots.update(zip(gaps, fillers, strict=True))
                used = {place for place, _ in fillers}
                call = [slots[i] for i in range(len(slots))]
            else:  # cannot be rebuilt: the order is kept, the indexes close up
                call = ordinary
            calls.append((min(place for place, _ in call), key, [w for _, w in call]))
        calls += [(place, key, [w]) for place, w in special if place not in used]
    calls.sort(key=lambda c: c[0])
    return [(task_id, task_path, call) for _, (task_id, task_path), call in calls]


def _idx(item: tuple[int, ArchivedWrite]) -> int:
    return item[1].idx


__all__ = ["RestoreResult", "restore_archive", "restore_record", "write_calls"]
