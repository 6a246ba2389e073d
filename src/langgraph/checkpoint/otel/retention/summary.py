"""What `langgraph-otel retention` shows: the plans of every scanned thread folded into one
`model.Retention`, in memory bounded by the top K and the distinct channel and namespace names
(never by the number of threads)."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from langgraph.checkpoint.otel._langgraph.namespaces import graph_key
from langgraph.checkpoint.otel.analysis.checkpoint_time import duration_text, id_time
from langgraph.checkpoint.otel.analysis.retention import RetentionPolicy, ThreadPlan, policy_text
from langgraph.checkpoint.otel.inspector import model

IDLE_BUCKETS = (
    timedelta(0),
    timedelta(days=1),
    timedelta(days=7),
    timedelta(days=30),
    timedelta(days=90),
    timedelta(days=365),
)
VALUES_NOT_BROKEN_DOWN = "(values not broken down)"
"""Channel values of checkpoints stored without the wrapper's channel sizes."""
CHECKPOINT_OVERHEAD = "(checkpoint metadata and bookkeeping)"
"""The rest of the checkpoints' bytes: metadata, ids, versions (`ThreadPlan`)."""
UNPROVEN_SHOWN = 200
"""Unproven checkpoints named in the output (all are counted)."""


class RetentionSummary:
    """Folds plans into the figures `model.Retention` shows; `watch` passes plans through."""

    def __init__(self, policy: RetentionPolicy, now: datetime, top: int = 10) -> None:
        self.policy = policy
        self.now = now
        self.top = top
        self.threads = self.checkpoints = self.bytes = 0
        self.remove_threads = self.whole_threads = 0
        self.remove_checkpoints = self.remove_writes = self.remove_blobs = self.reclaim = 0
        self.kept: Counter[str] = Counter()
        self.unproven: list[model.RetentionUnproven] = []
        self._heaviest: list[tuple[int, str, model.RetentionThread]] = []
        self._removing: list[tuple[int, str, model.RetentionThread]] = []
        self.channels: Counter[str] = Counter()
        self.channel_threads: Counter[str] = Counter()
        self.writes: Counter[str] = Counter()
        self.write_threads: Counter[str] = Counter()
        self.not_broken_down = self.not_broken_down_threads = 0
        self.overhead = self.overhead_threads = 0
        self.namespaces: Counter[str] = Counter()
        self.namespace_threads: Counter[str] = Counter()
        self.idle_threads: Counter[int] = Counter()
        self.idle_bytes: Counter[int] = Counter()

    def watch(self, plans: Iterable[ThreadPlan]) -> Iterator[ThreadPlan]:
        """Each plan, added to the summary on the way."""
        for plan in plans:
            self.add(plan)
            yield plan

    def add(self, plan: ThreadPlan) -> None:
        """Count one thread's plan."""
        self.threads += 1
        self.checkpoints += plan.checkpoints
        self.bytes += plan.bytes
        if plan.remove:
            self.remove_threads += 1
        self.whole_threads += plan.whole_thread
        self.remove_checkpoints += len(plan.remove)
        self.remove_writes += plan.reclaim_writes
        self.remove_blobs += len(plan.remove_blobs)
        self.reclaim += plan.reclaim_bytes
        kept = Counter(reason.value for reason in plan.kept.values())
        self.kept.update(kept)
        for ref, why in plan.unproven.items():
            if len(self.unproven) < UNPROVEN_SHOWN:
                self.unproven.append(
                    model.RetentionUnproven(
                        thread_id=ref.thread_id,
                        checkpoint_ns=ref.checkpoint_ns,
                        checkpoint_id=ref.checkpoint_id,
                        why=why,
                    )
                )
        for channel, size in plan.channel_bytes.items():
            self.channels[channel] += size
            self.channel_threads[channel] += 1
        for channel, size in plan.write_bytes.items():
            self.writes[channel] += size
            self.write_threads[channel] += 1
        if plan.values_not_broken_down:
            self.not_broken_down += plan.values_not_broken_down
            self.not_broken_down_threads += 1
        if plan.checkpoint_overhead:
            self.overhead += plan.checkpoint_overhead
            self.overhead_threads += 1
        by_graph: Counter[str] = Counter()
        for ns, size in plan.namespaces.items():
            by_graph[graph_key(ns)] += size
        for key, size in by_graph.items():
            self.namespaces[key] += size
            self.namespace_threads[key] += 1
        last = id_time(plan.last) if plan.last else None
        bucket = _bucket(self.now - last) if last is not None else 0
        self.idle_threads[bucket] += 1
        self.idle_bytes[bucket] += plan.bytes
        row: model.RetentionThread | None = None
        if self.top:
            row = self._row(plan, kept, last)
            _push(self._heaviest, (plan.bytes, plan.thread_id, row), self.top)
            if plan.remove:
                _push(self._removing, (plan.reclaim_bytes, plan.thread_id, row), self.top)

    def _row(
        self, plan: ThreadPlan, kept: Counter[str], last: datetime | None
    ) -> model.RetentionThread:
        return model.RetentionThread(
            thread_id=plan.thread_id,
            checkpoints=plan.checkpoints,
            bytes=plan.bytes,
            namespaces=len(plan.latest),
            oldest=id_time(plan.oldest) if plan.oldest else None,
            last=last,
            remove_checkpoints=len(plan.remove),
            remove_writes=plan.reclaim_writes,
            reclaim_bytes=plan.reclaim_bytes,
            whole_thread=plan.whole_thread,
            kept=dict(kept),
        )

    def view(self, source: str | None, seconds: float) -> model.Retention:
        """The summary as the command's output."""
        return model.Retention(
            source=source,
            policy=policy_text(self.policy),
            now=self.now,
            threads=self.threads,
            checkpoints=self.checkpoints,
            bytes=self.bytes,
            remove_threads=self.remove_threads,
            whole_threads=self.whole_threads,
            remove_checkpoints=self.remove_checkpoints,
            remove_writes=self.remove_writes,
            remove_blobs=self.remove_blobs,
            reclaim_bytes=self.reclaim,
            kept=dict(self.kept.most_common()),
            unproven=self.unproven,
            heaviest=[row for *_, row in sorted(self._heaviest, reverse=True)],
            removing=[row for *_, row in sorted(self._removing, reverse=True)],
            channels=_sizes(self.channels, self.channel_threads, self.top),
            writes=_sizes(self.writes, self.write_threads, self.top),
            values_not_broken_down=model.RetentionSize(
                name=VALUES_NOT_BROKEN_DOWN,
                bytes=self.not_broken_down,
                threads=self.not_broken_down_threads,
            )
            if self.not_broken_down_threads
            else None,
            checkpoint_overhead=model.RetentionSize(
                name=CHECKPOINT_OVERHEAD, bytes=self.overhead, threads=self.overhead_threads
            )
            if self.overhead_threads
            else None,
            namespaces=_sizes(self.namespaces, self.namespace_threads, self.top),
            idle=[
                model.RetentionIdle(
                    at_least=duration_text(IDLE_BUCKETS[i]) if i else "0s",
                    threads=self.idle_threads[i],
                    bytes=self.idle_bytes[i],
                )
                for i in range(len(IDLE_BUCKETS))
                if self.idle_threads[i]
            ],
            seconds=round(seconds, 3),
        )


def _bucket(idle: timedelta) -> int:
    found = 0
    for index, floor in enumerate(IDLE_BUCKETS):
        if idle >= floor:
            found = index
    return found


def _push(
    heap: list[tuple[int, str, model.RetentionThread]],
    item: tuple[int, str, model.RetentionThread],
    size: int,
) -> None:
    if len(heap) < size:
        heapq.heappush(heap, item)
    elif item[:2] > heap[0][:2]:
        heapq.heapreplace(heap, item)


def _sizes(sizes: Counter[str], threads: Counter[str], top: int) -> list[model.RetentionSize]:
    return [
        model.RetentionSize(name=name, bytes=size, threads=threads[name])
        for name, size in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[: max(top, 1)]
    ]


def applied_view(result: object, top: int) -> model.RetentionApply:
    """`apply.ApplyResult` as the command's output: every thread not applied, and the top
    `top` applied by bytes reclaimed."""
    threads = list(getattr(result, "threads", []))
    applied = [t for t in threads if t.outcome == "applied"]
    others = [t for t in threads if t.outcome not in ("applied", "nothing")]
    shown = others + sorted(applied, key=lambda t: -t.bytes_reclaimed)[:top]
    return model.RetentionApply(
        archive=str(getattr(result, "archive", "")),
        applied=len(applied),
        skipped=sum(1 for t in threads if t.outcome == "skipped_written"),
        failed=sum(1 for t in threads if t.outcome == "failed"),
        checkpoints_removed=sum(t.checkpoints_removed for t in threads),
        writes_removed=sum(t.writes_removed for t in threads),
        bytes_reclaimed=sum(t.bytes_reclaimed for t in threads),
        threads=[
            model.RetentionApplied(
                thread_id=t.thread_id,
                outcome=t.outcome,
                checkpoints_removed=t.checkpoints_removed,
                writes_removed=t.writes_removed,
                bytes_reclaimed=t.bytes_reclaimed,
                detail=t.detail,
            )
            for t in shown
        ],
    )
