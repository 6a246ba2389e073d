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
from collections.abc import Collection
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
    """Put writes back in their archived order (the order the saver read them), a run of one
    task's ordinary writes per call (their index is their place in it, as when first written),
    each special write (error, interrupt, resume, scheduled: fixed indexes) on its own."""
    batches: list[tuple[tuple[str, str, bool], list[ArchivedWrite]]] = []
    for write in writes:
        key = (write.task_id, write.task_path, write.channel in WRITES_IDX_MAP)
        if batches and batches[-1][0] == key and not key[2]:
            batches[-1][1].append(write)
        else:
            batches.append((key, [write]))
    for (task_id, task_path, _), batch in batches:
        store.put_writes(
            config,
            [(w.channel, serde.loads_typed(w.value)) for w in batch],
            task_id,
            task_path,
        )
    return len(writes)


__all__ = ["RestoreResult", "restore_archive", "restore_record"]
