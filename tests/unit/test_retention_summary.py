"""RetentionSummary folds plans into the command's figures (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from langgraph.checkpoint.otel.analysis.checkpoint_time import id_floor
from langgraph.checkpoint.otel.analysis.retention import (
    CheckpointRef,
    KeepReason,
    RetentionPolicy,
    ThreadPlan,
)
from langgraph.checkpoint.otel.retention import summary as summary_module
from langgraph.checkpoint.otel.retention.summary import RetentionSummary

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def plan(n: int, size: int, idle_days: float, remove: int = 0, **kw: object) -> ThreadPlan:
    last = id_floor(NOW - timedelta(days=idle_days))
    refs = tuple(CheckpointRef(f"t{n}", "", f"{last[:-4]}{i:04d}") for i in range(remove))
    return ThreadPlan(
        thread_id=f"t{n}",
        latest={"": last},
        checkpoints=remove + 1,
        bytes=size,
        remove=refs,
        reclaim_bytes=size // 2 if remove else 0,
        reclaim_writes=remove,
        oldest=last,
        last=last,
        namespaces={"": size},
        **kw,  # type: ignore[arg-type]
    )


def test_totals_and_top_threads() -> None:
    summary = RetentionSummary(RetentionPolicy(keep_last=1), NOW, top=2)
    for n, size in enumerate([10, 50, 30, 40]):
        summary.add(plan(n, size, 1, remove=n % 2))
    view = summary.view("sqlite:///x", 1.0)
    assert (view.threads, view.bytes, view.remove_threads, view.reclaim_bytes) == (4, 130, 2, 45)
    assert [t.thread_id for t in view.heaviest] == ["t1", "t3"]
    assert [t.thread_id for t in view.removing] == ["t1", "t3"]
    assert view.policy == "keep_last=1"


def test_idle_buckets() -> None:
    summary = RetentionSummary(RetentionPolicy(), NOW)
    for n, days in enumerate([0.5, 3, 40, 400]):
        summary.add(plan(n, 1, days))
    idle = {b.at_least: b.threads for b in summary.view(None, 0).idle}
    assert idle == {"0s": 1, "1d": 1, "30d": 1, "365d": 1}


def test_kept_reasons_are_counted_and_unproven_named_up_to_a_cap(monkeypatch: object) -> None:
    monkeypatch.setattr(summary_module, "UNPROVEN_SHOWN", 2)  # type: ignore[attr-defined]
    summary = RetentionSummary(RetentionPolicy(keep_last=1), NOW)
    for n in range(3):
        ref = CheckpointRef(f"t{n}", "", "x")
        summary.add(plan(n, 1, 1, kept={ref: KeepReason.UNPROVEN}, unproven={ref: "unreadable"}))
    view = summary.view(None, 0)
    assert view.kept == {"unproven": 3}
    assert [u.thread_id for u in view.unproven] == ["t0", "t1"]


def test_where_the_bytes_are_keeps_values_writes_and_the_rest_apart() -> None:
    summary = RetentionSummary(RetentionPolicy(), NOW)
    summary.add(
        plan(
            0,
            100,
            1,
            channel_bytes={"messages": 60},
            write_bytes={"messages": 5, "n": 1},
            checkpoint_overhead=34,
        )
    )
    summary.add(plan(1, 50, 1, values_not_broken_down=45, checkpoint_overhead=5))
    view = summary.view(None, 0)
    assert [(c.name, c.bytes, c.threads) for c in view.channels] == [("messages", 60, 1)]
    assert [(c.name, c.bytes) for c in view.writes] == [("messages", 5), ("n", 1)]
    assert view.values_not_broken_down is not None
    assert (view.values_not_broken_down.bytes, view.values_not_broken_down.threads) == (45, 1)
    assert view.checkpoint_overhead is not None and view.checkpoint_overhead.bytes == 39
    rows = [*view.channels, *view.writes, view.values_not_broken_down, view.checkpoint_overhead]
    assert sum(r.bytes for r in rows) == view.bytes
