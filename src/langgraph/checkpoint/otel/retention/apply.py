"""`retention --apply`: remove what the plans say, with nothing lost.

Per thread, in this order (`on_step` is called with each point's name, for tests that kill
the process there):

1. `checked`: the thread's latest checkpoint of each namespace is read; if it is not the
   plan's (`ThreadPlan.latest`), the thread was written to since the plan: skipped.
2. `archived`: the checkpoints to remove are read through the saver's API (`get_tuple`:
   checkpoint with its channel values, metadata, parent) with their stored writes (task id,
   task path, index, value) and, on PostgreSQL, the blobs to remove; one record per thread is
   appended to the archive and fsynced.
3. `hashed`: the latest state hash of each namespace is computed (channel values by the
   library's hashing, and each delta channel's history as the saver rebuilds it).
4. `deleted`: one transaction removes the checkpoints, their writes and the blobs no remaining
   checkpoint references, after checking again that the latest checkpoints are the plan's
   (else nothing is removed and the thread is skipped).
5. `verified`: the latest state hashes are computed again; a difference fails the thread,
   which is then put back from its archive record at once (`restored`).

A process killed at any point leaves the thread as it was (before `deleted`) or as planned
(after), and the archive holds every removed checkpoint: the record is durable before the
transaction starts. Running the apply again finishes the job (checkpoints already gone are
not archived twice; a thread whose plan is now empty reports `nothing`).

The plans are consumed one at a time as the threads are applied (`retention.scan.plan_threads`
is a generator, paged): memory holds one plan and one archive record, plus one small
`ThreadOutcome` per thread changed, whatever the number of threads. The apply span's thread
count is therefore set as it ends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.otel._langgraph import stored_rows
from langgraph.checkpoint.otel._langgraph.formats import DELTA_COUNTERS_KEY
from langgraph.checkpoint.otel._langgraph.stored_bytes import thread_bytes
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, hash_value
from langgraph.checkpoint.otel.analysis.retention import RetentionPolicy, ThreadPlan, policy_text
from langgraph.checkpoint.otel.analysis.text_bounds import repr_bytes
from langgraph.checkpoint.otel.retention.archive import (
    ArchivedBlob,
    ArchivedCheckpoint,
    ArchivedWrite,
    ArchiveError,
    ArchiveWriter,
    ThreadRecord,
    read_record,
)

logger = logging.getLogger(__name__)

APPLIED = "applied"
SKIPPED_WRITTEN = "skipped_written"
FAILED = "failed"
NOTHING = "nothing"

STEPS = ("checked", "archived", "hashed", "deleted", "verified")
"""The named points of one thread's apply, in order (`on_step`); `restored` follows a failed
verification."""


class _ThreadSpan(Protocol):
    def applied(
        self,
        *,
        checkpoints_removed: int,
        writes_removed: int,
        bytes_reclaimed: int,
        checkpoints_kept: int,
    ) -> None: ...

    def skipped(self, reason: str) -> None: ...

    def restored(self, *, checkpoints: int, writes: int) -> None: ...


class _ApplySpan(Protocol):
    def thread(self, thread_id: str) -> AbstractContextManager[_ThreadSpan]: ...


class Telemetry(Protocol):
    """What apply and restore need of `retention.telemetry.RetentionTelemetry`."""

    def apply(
        self,
        *,
        policy: str,
        threads: int | None = ...,
        saver: str,
        archive: str | None,
        operation: str = ...,
    ) -> AbstractContextManager[_ApplySpan]: ...


@dataclass(slots=True)
class ThreadOutcome:
    """What the apply did to one thread (slotted: an apply keeps one per thread changed)."""

    thread_id: str
    outcome: str
    """`applied`, `skipped_written` (written to since the plan: untouched), `failed` (see
    `detail`; untouched or put back), or `nothing` (nothing left to remove)."""
    checkpoints_removed: int = 0
    writes_removed: int = 0
    bytes_reclaimed: int = 0
    detail: str | None = None
    checkpoints_kept: int = 0


@dataclass
class ApplyResult:
    """Every thread's outcome, and the archive they were written to."""

    archive: Path
    threads: list[ThreadOutcome] = field(default_factory=list)

    def _count(self, outcome: str) -> int:
        return sum(1 for t in self.threads if t.outcome == outcome)

    @property
    def applied(self) -> int:
        return self._count(APPLIED)

    @property
    def skipped(self) -> int:
        return self._count(SKIPPED_WRITTEN)

    @property
    def failed(self) -> int:
        return self._count(FAILED)

    @property
    def checkpoints_removed(self) -> int:
        return sum(t.checkpoints_removed for t in self.threads)

    @property
    def writes_removed(self) -> int:
        return sum(t.writes_removed for t in self.threads)

    @property
    def bytes_reclaimed(self) -> int:
        return sum(t.bytes_reclaimed for t in self.threads)


class ApplyError(Exception):
    """An apply that cannot start (no removal path for this saver, an unwritable archive)."""


class _Failed(Exception):
    """One thread failed; its outcome says why (raised inside the thread's span)."""

    def __init__(self, outcome: ThreadOutcome) -> None:
        super().__init__(outcome.detail)
        self.outcome = outcome


def apply_plans(
    saver: BaseCheckpointSaver[Any],
    plans: Iterable[ThreadPlan],
    archive: Path,
    *,
    policy: RetentionPolicy,
    telemetry: Telemetry | None = None,
    on_step: Callable[[str], None] | None = None,
) -> ApplyResult:
    """Archive, then remove, what each plan removes; one transaction per thread.

    Args:
        saver: The (bare) saver the plans were made from: `SqliteSaver`, `PostgresSaver` or
            `RedisSaver` (or one delegating to them).
        plans: The plans (`retention.scan.plan_threads`), consumed one at a time as the
            threads are applied (none is kept); plans removing nothing are skipped.
        archive: The archive file, created or appended to (see `retention.archive`).
        policy: The policy the plans come from (recorded on the apply span).
        telemetry: Spans and counters (`RetentionTelemetry`); None: none.
        on_step: Called with each point's name (`STEPS`) per thread.

    Returns:
        Each thread's outcome. A thread that fails does not stop the others.

    Raises:
        ApplyError: The saver has no removal path here, or the archive cannot be written.
    """
    found = stored_rows.store_of(saver)
    if found is None:
        raise ApplyError(
            f"{type(saver).__name__}: no removal path (retention applies to SqliteSaver, "
            "PostgresSaver and RedisSaver stores)"
        )
    kind, store = found
    if kind == "redis":  # get_tuple and put_writes need the write-key registry setup() makes
        stored_rows.ensure_redis_registry(store)
    result = ApplyResult(archive=Path(archive))
    step = on_step or (lambda _: None)
    # the plans stream through (a list of them would grow with the store): the apply span's
    # thread count (the threads with something to remove) is set as it ends
    span: AbstractContextManager[Any] = (
        telemetry.apply(
            policy=policy_text(policy),
            saver=type(store).__name__,
            archive=str(archive),
        )
        if telemetry is not None
        else nullcontext(None)
    )
    try:
        _apply_all(kind, store, plans, Path(archive), span, step, result)
    except ArchiveError as exc:  # the archive cannot be written: stop before removing more
        done = sum(1 for t in result.threads if t.outcome == APPLIED)
        raise ApplyError(f"{exc}; stopped after {done} threads applied") from None
    return result


def _apply_all(
    kind: str,
    store: Any,
    plans: Iterable[ThreadPlan],
    archive: Path,
    span: AbstractContextManager[Any],
    step: Callable[[str], None],
    result: ApplyResult,
) -> None:
    with ArchiveWriter(archive) as writer, span as report:
        for plan in plans:
            if not (plan.remove or plan.remove_blobs):
                continue
            with _thread_span(report, plan.thread_id) as thread_span:
                outcome = _apply_thread(kind, store, plan, writer, step)
                result.threads.append(outcome)
                if outcome.outcome == FAILED:
                    logger.error("retention: thread %s failed: %s", plan.thread_id, outcome.detail)
                    if thread_span is not None:
                        raise _Failed(outcome)
                elif thread_span is None:
                    pass
                elif outcome.outcome == SKIPPED_WRITTEN:
                    thread_span.skipped(outcome.detail or "written")
                else:
                    thread_span.applied(
                        checkpoints_removed=outcome.checkpoints_removed,
                        writes_removed=outcome.writes_removed,
                        bytes_reclaimed=outcome.bytes_reclaimed,
                        checkpoints_kept=outcome.checkpoints_kept,
                    )


@contextmanager
def _thread_span(report: Any, thread_id: str) -> Iterator[Any]:
    """The thread's span (None without telemetry); a `_Failed` ends it failed and stops here."""
    if report is None:
        yield None
        return
    try:
        with report.thread(thread_id) as thread_span:
            yield thread_span
    except _Failed:
        pass


def _apply_thread(
    kind: str, store: Any, plan: ThreadPlan, writer: ArchiveWriter, step: Callable[[str], None]
) -> ThreadOutcome:
    thread_id = plan.thread_id
    latest = stored_rows.latest_ids(kind, store, thread_id)
    step("checked")
    if latest != plan.latest:
        return ThreadOutcome(thread_id, SKIPPED_WRITTEN, detail="written to since the plan")
    refs = [(r.checkpoint_ns, r.checkpoint_id) for r in plan.remove if r.thread_id == thread_id]
    removed_refs = set(refs)
    # a namespace whose latest goes (a subgraph call's, with the checkpoint that started it; an
    # idle thread's) is gone after; the others must read the same latest state
    kept_ns = sorted(ns for ns, cid in plan.latest.items() if (ns, cid) not in removed_refs)
    present: list[tuple[str, str]] = []
    blobs: list[tuple[str, str, str]] = []
    offsets: list[int] = []
    try:
        bytes_before = thread_bytes(store, [thread_id]) or 0
        for record in _records(kind, store, plan, refs):
            offsets.append(writer.append(record))
            present += [(c.ns, c.id) for c in record.checkpoints]
            blobs += [(b.ns, b.channel, b.version) for b in record.blobs]
    except ArchiveError:
        raise  # stops the apply: nothing more is removed without its archive
    except Exception as exc:
        detail = f"cannot read the thread: {_why(exc)}"
        return ThreadOutcome(thread_id, FAILED, detail=detail)
    step("archived")
    if not present and not blobs:
        return ThreadOutcome(thread_id, NOTHING, detail="nothing left to remove")
    try:
        before = latest_state_hashes(store, thread_id, kept_ns)
    except Exception as exc:
        return ThreadOutcome(thread_id, FAILED, detail=f"cannot hash its state: {_why(exc)}")
    step("hashed")
    try:
        removed = stored_rows.remove(
            kind, store, thread_id, present, blobs, plan.latest, whole_thread=plan.whole_thread
        )
    except stored_rows.Written:
        return ThreadOutcome(thread_id, SKIPPED_WRITTEN, detail="written to during the apply")
    except Exception as exc:
        return ThreadOutcome(thread_id, FAILED, detail=f"removal failed: {_why(exc)}")
    step("deleted")
    outcome = ThreadOutcome(
        thread_id,
        APPLIED,
        checkpoints_removed=removed.checkpoints,
        writes_removed=removed.writes,
        checkpoints_kept=max(plan.checkpoints - removed.checkpoints, 0),
    )
    try:
        outcome.bytes_reclaimed = max(bytes_before - (thread_bytes(store, [thread_id]) or 0), 0)
        changed = latest_state_hashes(store, thread_id, kept_ns) != before
        if changed and stored_rows.latest_ids(kind, store, thread_id) != {
            ns: plan.latest[ns] for ns in kept_ns
        }:
            changed = False  # written to after the removal: its state moved on by itself
            outcome.detail = "written to after the removal (state not compared)"
    except Exception as exc:  # removed and archived, but not verified: said, not failed
        outcome.detail = f"could not verify the latest state: {_why(exc)}"
        logger.warning("retention: thread %s: %s", thread_id, outcome.detail)
        changed = False
    step("verified")
    if changed:
        return _put_back(kind, store, writer.path, offsets, outcome, step)
    return outcome


def _put_back(
    kind: str,
    store: Any,
    archive: Path,
    offsets: list[int],
    outcome: ThreadOutcome,
    step: Callable[[str], None],
) -> ThreadOutcome:
    """Restore the thread from the records just written (at `offsets` of `archive`)."""
    from langgraph.checkpoint.otel.retention.restore import restore_record

    try:
        for offset in offsets:
            restore_record(kind, store, read_record(archive, offset))
        detail = "its latest state changed when its checkpoints were removed: put back"
    except Exception as exc:
        detail = (
            "its latest state changed when its checkpoints were removed, and putting them "
            f"back failed ({_why(exc)}): restore the thread from the archive"
        )
    step("restored")
    return ThreadOutcome(outcome.thread_id, FAILED, detail=detail)


RECORD_CHECKPOINTS = 200
"""Checkpoints per archive record at most: a thread with more is archived as several records
(each durable before the removal), so memory holds one record's values at a time."""
RECORD_BYTES = 32 * 1024 * 1024
"""Serialized bytes per archive record at most (a record ends at the checkpoint past it)."""


def _records(
    kind: str, store: Any, plan: ThreadPlan, refs: list[tuple[str, str]]
) -> Iterator[ThreadRecord]:
    """The archive records of what the plan removes that is still stored (the blobs with the
    first), each of at most `RECORD_CHECKPOINTS` checkpoints and about `RECORD_BYTES`."""
    thread_id = plan.thread_id
    serde = store.serde
    blob_rows = stored_rows.raw_blobs(
        kind, store, thread_id, [(b.checkpoint_ns, b.channel, b.version) for b in plan.remove_blobs]
    )
    blobs = tuple(
        ArchivedBlob(ns=ns, channel=ch, version=ver, value=(ty, v))
        for ns, ch, ver, ty, v in blob_rows
    )
    checkpoints: list[ArchivedCheckpoint] = []
    size = 0
    for ns, cid in sorted(refs):
        config = {
            "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": cid}
        }
        tup = store.get_tuple(config)
        if tup is None:  # removed by an earlier, interrupted apply: archived then
            continue
        parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        archived = ArchivedCheckpoint(
            ns=ns,
            id=cid,
            parent_id=str(parent) if parent else None,
            checkpoint=serde.dumps_typed(
                stored_rows.exact_checkpoint(kind, store, thread_id, ns, cid, tup.checkpoint)
            ),
            metadata=serde.dumps_typed(dict(tup.metadata or {})),
            stored=stored_rows.stored_fields(kind, store, thread_id, ns, cid),
            writes=tuple(
                ArchivedWrite(task_id=t, task_path=p, idx=i, channel=c, value=(ty, v))
                for t, p, i, c, ty, v in stored_rows.raw_writes(kind, store, thread_id, ns, cid)
            ),
        )
        checkpoints.append(archived)
        size += len(archived.checkpoint[1] or b"") + sum(
            len(w.value[1] or b"") for w in archived.writes
        )
        if len(checkpoints) >= RECORD_CHECKPOINTS or size >= RECORD_BYTES:
            yield _thread_record(kind, plan, checkpoints, blobs)
            checkpoints, blobs, size = [], (), 0
    if checkpoints or blobs:
        yield _thread_record(kind, plan, checkpoints, blobs)


def _thread_record(
    kind: str,
    plan: ThreadPlan,
    checkpoints: list[ArchivedCheckpoint],
    blobs: tuple[ArchivedBlob, ...],
) -> ThreadRecord:
    return ThreadRecord(
        thread_id=plan.thread_id,
        saver=kind,
        latest=dict(plan.latest),
        checkpoints=tuple(checkpoints),
        blobs=blobs,
    )


def latest_state_hashes(
    saver: BaseCheckpointSaver[Any], thread_id: str, namespaces: Iterable[str]
) -> dict[str, str]:
    """The state hash of each namespace's latest checkpoint: its channel values (the library's
    `hash_value`) and, for each delta channel stored without a value, the history the saver
    rebuilds it from (`get_delta_channel_history`: seed and writes)."""
    hashes: dict[str, str] = {}
    for ns in sorted(namespaces):
        tup = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        if tup is None:
            hashes[ns] = "missing"
            continue
        values = tup.checkpoint.get("channel_values") or {}
        channel_hashes = {
            str(name): hash_value(value, fallback=repr_bytes) for name, value in values.items()
        }
        counters = (tup.metadata or {}).get(DELTA_COUNTERS_KEY)
        versions = tup.checkpoint.get("channel_versions") or {}
        delta = (
            sorted(str(c) for c in (counters or {}) if c in versions and c not in values)
            if isinstance(counters, Mapping)
            else []
        )
        if delta:
            history = saver.get_delta_channel_history(config=tup.config, channels=delta)
            for name in delta:
                entry = history.get(name) or {"writes": []}
                rebuilt = {
                    "seed": entry.get("seed"),
                    "writes": [(w[1], w[2]) for w in entry.get("writes", [])],
                }
                channel_hashes["delta:" + name] = hash_value(rebuilt, fallback=repr_bytes)
        hashes[ns] = combine_state_hash(channel_hashes)
    return hashes


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


__all__ = [
    "APPLIED",
    "FAILED",
    "NOTHING",
    "SKIPPED_WRITTEN",
    "STEPS",
    "ApplyError",
    "ApplyResult",
    "Telemetry",
    "ThreadOutcome",
    "apply_plans",
    "latest_state_hashes",
]
