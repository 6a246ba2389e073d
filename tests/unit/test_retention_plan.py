"""plan_thread on hand-built rows: one behaviour per test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from langgraph.checkpoint.otel.analysis.checkpoint_time import id_floor, id_time
from langgraph.checkpoint.otel.analysis.retention import (
    BlobRef,
    CheckpointRef,
    KeepReason,
    PolicyError,
    RetentionPolicy,
    StoredCheckpoint,
    load_policy_file,
    parse_policy,
    plan_thread,
    policy_text,
    split_values,
    stored_channel_sizes,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)
T = "thread-1"


def cid(days_ago: float, n: int = 0) -> str:
    """A UUID v6 checkpoint id written `days_ago` before NOW (n tells apart ids of one time)."""
    return id_floor(NOW - timedelta(days=days_ago))[:-12] + f"{n:012x}"


def ref(checkpoint_id: str, ns: str = "") -> CheckpointRef:
    return CheckpointRef(T, ns, checkpoint_id)


def row(
    checkpoint_id: str,
    parent: str | None,
    ns: str = "",
    *,
    source: str = "loop",
    size: int = 100,
    writes: int = 1,
    writes_bytes: int = 10,
    **kw: object,
) -> StoredCheckpoint:
    return StoredCheckpoint(
        ref=ref(checkpoint_id, ns),
        parent_id=parent,
        source=source,
        bytes=size,
        writes=writes,
        writes_bytes=writes_bytes,
        **kw,  # type: ignore[arg-type]
    )


def chain(days: list[float], ns: str = "", **kw: object) -> list[StoredCheckpoint]:
    """A linear history, one checkpoint per age given (oldest first)."""
    rows, parent = [], None
    for i, d in enumerate(days):
        checkpoint_id = cid(d, i)
        rows.append(row(checkpoint_id, parent, ns, **kw))
        parent = checkpoint_id
    return rows


def removed_ids(plan: object) -> list[str]:
    return [r.checkpoint_id for r in plan.remove]  # type: ignore[attr-defined]


def test_ids_carry_their_time() -> None:
    when = id_time(cid(3))
    assert when is not None and abs(when - (NOW - timedelta(days=3))) < timedelta(seconds=1)
    assert id_time("not-a-uuid") is None


def test_keep_last_removes_the_oldest_of_a_namespace() -> None:
    rows = chain([9, 8, 7, 6, 5])
    plan = plan_thread(rows, RetentionPolicy(keep_last=2), NOW)
    assert removed_ids(plan) == [r.ref.checkpoint_id for r in rows[:3]]
    assert plan.kept == {}


def test_keep_last_counts_each_namespace_apart() -> None:
    root = chain([9, 8, 7])
    sub = chain([8.5, 8.4, 8.3], ns="inner")  # a checkpointer=True subgraph: no task id
    plan = plan_thread(root + sub, RetentionPolicy(keep_last=2), NOW)
    assert {(r.checkpoint_ns, r.checkpoint_id) for r in plan.remove} == {
        ("", root[0].ref.checkpoint_id),
        ("inner", sub[0].ref.checkpoint_id),
    }


def test_older_than_removes_by_the_time_in_the_id() -> None:
    rows = chain([40, 35, 20, 1])
    plan = plan_thread(rows, RetentionPolicy(older_than=timedelta(days=30)), NOW)
    assert removed_ids(plan) == [rows[0].ref.checkpoint_id, rows[1].ref.checkpoint_id]


def test_the_latest_checkpoint_is_kept_whatever_its_age() -> None:
    rows = chain([40, 35])
    plan = plan_thread(rows, RetentionPolicy(older_than=timedelta(days=30)), NOW)
    assert removed_ids(plan) == [rows[0].ref.checkpoint_id]
    assert plan.kept == {rows[1].ref: KeepReason.LATEST}


def test_an_idle_thread_goes_whole() -> None:
    rows = chain([200, 150, 100])
    plan = plan_thread(rows, RetentionPolicy(idle_longer_than=timedelta(days=90)), NOW)
    assert plan.whole_thread and len(plan.remove) == 3 and plan.kept == {}


def test_a_thread_active_recently_is_not_idle() -> None:
    rows = chain([200, 150, 10])
    plan = plan_thread(rows, RetentionPolicy(idle_longer_than=timedelta(days=90)), NOW)
    assert plan.remove == () and not plan.whole_thread


def test_an_idle_thread_with_a_pending_interrupt_is_kept_whole() -> None:
    rows = chain([200, 150])
    rows[-1] = row(rows[-1].ref.checkpoint_id, rows[0].ref.checkpoint_id, pending_interrupt=True)
    plan = plan_thread(rows, RetentionPolicy(idle_longer_than=timedelta(days=90)), NOW)
    assert plan.remove == () and not plan.whole_thread
    assert set(plan.kept.values()) == {KeepReason.PENDING_INTERRUPT} and len(plan.kept) == 2


def test_an_unanswered_interrupt_off_the_latest_branch_is_kept() -> None:
    a, b, c = cid(9, 1), cid(8, 2), cid(7, 3)
    fork = cid(6, 4)
    rows = [
        row(a, None),
        row(b, a),
        row(c, b, pending_interrupt=True),  # nobody answered; the user forked from a instead
        row(fork, a, source="fork"),
        row(cid(5, 5), fork),
        row(cid(4, 6), cid(5, 5)),
    ]
    plan = plan_thread(rows, RetentionPolicy(keep_last=2), NOW)
    assert plan.kept[ref(c)] is KeepReason.PENDING_INTERRUPT
    assert ref(c) not in plan.remove


def test_an_answered_interrupt_is_not_pending_once_a_child_exists() -> None:
    rows = chain([9, 8, 7])
    rows[0] = row(rows[0].ref.checkpoint_id, None, pending_interrupt=True)
    plan = plan_thread(rows, RetentionPolicy(keep_last=1), NOW)
    assert ref(rows[0].ref.checkpoint_id) in plan.remove


def test_delta_channel_keeps_its_writes_back_to_the_snapshot() -> None:
    # 0 holds the snapshot; 1..4 store messages as deltas
    rows = [row(cid(9, 0), None)]
    for i in range(1, 5):
        rows.append(row(cid(9 - i, i), cid(10 - i, i - 1), delta_channels=frozenset({"messages"})))
    plan = plan_thread(rows, RetentionPolicy(keep_last=1), NOW)
    assert plan.remove == ()
    assert plan.kept[ref(cid(9, 0))] is KeepReason.DELTA_BASE
    assert plan.kept[ref(cid(6, 3))] is KeepReason.DELTA_BASE


def test_delta_channel_needs_nothing_older_than_its_snapshot() -> None:
    rows = [row(cid(10, 0), None), row(cid(9, 1), cid(10, 0))]  # 1 is a snapshot
    rows.append(row(cid(8, 2), cid(9, 1), delta_channels=frozenset({"messages"})))
    plan = plan_thread(rows, RetentionPolicy(keep_last=1), NOW)
    assert removed_ids(plan) == [cid(10, 0)]
    assert plan.kept == {ref(cid(9, 1)): KeepReason.DELTA_BASE}


def test_the_parent_of_a_kept_fork_is_kept() -> None:
    rows = chain([9, 8, 7])
    fork = row(cid(6, 9), rows[0].ref.checkpoint_id, source="fork")
    plan = plan_thread([*rows, fork], RetentionPolicy(keep_last=1), NOW)
    assert plan.kept[rows[0].ref] is KeepReason.REFERENCED
    assert removed_ids(plan) == [rows[1].ref.checkpoint_id, rows[2].ref.checkpoint_id]


def test_a_referenced_checkpoint_is_kept() -> None:
    rows = chain([9, 8, 7])
    rows[2] = row(
        rows[2].ref.checkpoint_id, rows[1].ref.checkpoint_id, references=frozenset({rows[0].ref})
    )
    plan = plan_thread(rows, RetentionPolicy(keep_last=1), NOW)
    assert plan.kept[rows[0].ref] is KeepReason.REFERENCED
    assert removed_ids(plan) == [rows[1].ref.checkpoint_id]


def test_a_subgraph_call_goes_with_the_checkpoint_that_started_it() -> None:
    root = chain([9, 8, 7])
    ns = "agent:task-1"
    starter = root[0].ref
    call = chain([8.9, 8.8], ns=ns, started_by=starter)
    plan = plan_thread(root + call, RetentionPolicy(keep_last=2), NOW)
    assert set(plan.remove) == {starter, *(r.ref for r in call)}
    assert plan.kept == {}


def test_a_subgraph_call_of_a_kept_checkpoint_keeps_its_latest() -> None:
    root = chain([9, 8, 7])
    ns = "agent:task-2"
    call = chain([7.9, 7.8, 7.7], ns=ns, started_by=root[2].ref)
    plan = plan_thread(root + call, RetentionPolicy(older_than=timedelta(days=1)), NOW)
    assert plan.kept == {root[2].ref: KeepReason.LATEST, call[-1].ref: KeepReason.LATEST}
    assert call[0].ref in plan.remove and call[-1].ref not in plan.remove


def test_a_pending_interrupt_in_a_call_keeps_the_checkpoint_that_started_it() -> None:
    root = chain([9, 8, 7])
    ns = "agent:task-3"
    call = [row(cid(8.9, 7), None, ns, started_by=root[0].ref, pending_interrupt=True)]
    plan = plan_thread(root + call, RetentionPolicy(keep_last=1), NOW)
    assert plan.kept[root[0].ref] is KeepReason.REFERENCED
    assert call[0].ref not in plan.remove


def test_unproven_checkpoints_are_kept_and_named() -> None:
    rows = chain([9, 8, 7])
    rows[0] = row(rows[0].ref.checkpoint_id, None, unproven="metadata unreadable")
    plan = plan_thread(rows, RetentionPolicy(keep_last=1), NOW)
    assert plan.kept[rows[0].ref] is KeepReason.UNPROVEN
    assert plan.unproven == {rows[0].ref: "metadata unreadable"}


def test_an_id_without_a_time_is_unproven_under_a_time_rule() -> None:
    rows = [row("custom-1", None), row("custom-2", "custom-1")]
    plan = plan_thread(rows, RetentionPolicy(older_than=timedelta(days=1)), NOW)
    assert plan.remove == ()


def test_reclaim_counts_checkpoints_writes_and_blobs_only_removed_ones_use() -> None:
    shared = BlobRef(T, "", "messages", "1", bytes=1000)
    own = BlobRef(T, "", "messages", "2", bytes=500)
    rows = chain([9, 8, 7])
    rows[0] = row(rows[0].ref.checkpoint_id, None, blobs=frozenset({shared}), writes=3)
    rows[1] = row(rows[1].ref.checkpoint_id, rows[0].ref.checkpoint_id, blobs=frozenset({own}))
    rows[2] = row(rows[2].ref.checkpoint_id, rows[1].ref.checkpoint_id, blobs=frozenset({shared}))
    plan = plan_thread(rows, RetentionPolicy(keep_last=1), NOW)
    assert plan.remove_blobs == (own,)
    assert plan.reclaim_bytes == 2 * (100 + 10) + 500
    assert plan.reclaim_writes == 4
    assert plan.bytes == 3 * 110 + 1500


def test_where_the_bytes_are() -> None:
    rows = chain([9, 8], writes_by_channel=(("messages", 10),))
    rows += chain([8.5], ns="inner", size=7, writes_bytes=0)
    plan = plan_thread(rows, RetentionPolicy(), NOW)
    assert plan.namespaces == {"": 220, "inner": 7}
    assert plan.write_bytes == {"messages": 20}
    assert plan.latest == {"": rows[1].ref.checkpoint_id, "inner": rows[2].ref.checkpoint_id}


def _rows_sum(plan: object) -> int:
    p: Any = plan
    return (
        sum(p.channel_bytes.values())
        + sum(p.write_bytes.values())
        + p.values_not_broken_down
        + p.checkpoint_overhead
    )


def test_inline_values_are_counted_by_channel_and_the_rows_sum_to_the_bytes() -> None:
    rows = chain(
        [9, 8],
        size=100,
        values_by_channel=(("messages", 80), ("n", 5)),
        writes_by_channel=(("messages", 10),),
    )
    plan = plan_thread(rows, RetentionPolicy(), NOW)
    assert plan.channel_bytes == {"messages": 160, "n": 10}
    assert plan.write_bytes == {"messages": 20}
    assert plan.checkpoint_overhead == 2 * (100 - 85)
    assert _rows_sum(plan) == plan.bytes


def test_values_without_stored_sizes_are_not_broken_down_not_lost() -> None:
    wrapped = chain([9], size=100, writes_bytes=0, values_by_channel=(("messages", 90),))
    bare = row(cid(8, 1), wrapped[0].ref.checkpoint_id, writes_bytes=0, values_not_broken_down=95)
    plan = plan_thread([*wrapped, bare], RetentionPolicy(), NOW)
    assert plan.channel_bytes == {"messages": 90}
    assert plan.values_not_broken_down == 95
    assert plan.checkpoint_overhead == 10 + 5
    assert _rows_sum(plan) == plan.bytes


def test_blobs_count_as_channel_values() -> None:
    blob = BlobRef(T, "", "messages", "1", bytes=1000)
    rows = chain([9], writes_bytes=0, blobs=frozenset({blob}), values_by_channel=(("n", 4),))
    plan = plan_thread(rows, RetentionPolicy(), NOW)
    assert plan.channel_bytes == {"messages": 1000, "n": 4}
    assert _rows_sum(plan) == plan.bytes


def test_split_values_is_proportional_and_exact() -> None:
    split = dict(split_values([("messages", 3725), ("approved", 1), ("empty", 0)], 6656))
    assert sum(split.values()) == 6656 and "empty" not in split
    assert split["messages"] > 6600 and split["approved"] in (1, 2)
    assert split_values([("a", 0)], 500) == () and split_values([("a", 5)], 0) == ()


def test_stored_channel_sizes_read_the_wrappers_metadata_and_drop_malformed_entries() -> None:
    metadata = {
        "otel": {
            "v": 2,
            "channels": {"m": ["h", 12], "bad": ["h", -1], "flag": ["h", True], "x": "y"},
        }
    }
    assert stored_channel_sizes(metadata) == [("m", 12)]
    assert stored_channel_sizes({"source": "loop"}) is None
    assert stored_channel_sizes({"otel": "user's own"}) is None


def test_no_rule_removes_nothing() -> None:
    plan = plan_thread(chain([900, 800]), RetentionPolicy(), NOW)
    assert plan.remove == () and plan.reclaim_bytes == 0


def test_policy_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "retention.toml"
    path.write_text('keep_last = 20\nolder_than = "30d"\nidle_longer_than = "90d"\n')
    policy = load_policy_file(path)
    assert policy == RetentionPolicy(20, timedelta(days=30), timedelta(days=90))
    assert policy_text(policy) == "keep_last=20 older_than=30d idle_longer_than=90d"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("keep_last = 0", "keep_last"),
        ('older_than = "soon"', "older_than"),
        ("keep = 3", "unknown key"),
        ("keep_last = ", "not TOML"),
    ],
)
def test_bad_policies_are_named(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        parse_policy(text)
