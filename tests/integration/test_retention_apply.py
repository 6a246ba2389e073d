"""`retention --apply` and `restore` on real stores (SQLite, PostgreSQL, RedisSaver), over
seeded threads of real graphs (subgraph calls, pending interrupts, time-travel forks,
`DeltaChannel` messages; see tests/support/retention_threads.py) and a deepagents agent.

Every expectation comes from outside the apply: the plan's figures (`retention.scan`), the
store's bytes by the one measure (`thread_bytes`), LangGraph's own `get_state` on the pruned
store against an unpruned copy of the same runs (an `InMemorySaver`), and `list()` of each
thread before the apply and after the restore.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.stored_bytes import stored_kind as store_kind
from langgraph.checkpoint.otel._langgraph.stored_bytes import thread_bytes
from langgraph.checkpoint.otel.analysis.retention import CheckpointRef, RetentionPolicy, ThreadPlan
from langgraph.checkpoint.otel.inspector.sources import open_sources
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery
from langgraph.checkpoint.otel.retention import apply as apply_module
from langgraph.checkpoint.otel.retention.apply import (
    APPLIED,
    FAILED,
    SKIPPED_WRITTEN,
    ApplyError,
    apply_plans,
)
from langgraph.checkpoint.otel.retention.archive import read_archive
from langgraph.checkpoint.otel.retention.restore import restore_archive
from langgraph.checkpoint.otel.retention.scan import plan_threads
from langgraph.checkpoint.otel.retention.telemetry import RetentionTelemetry
from retention_threads import (
    ask,
    config,
    graph,
    history,
    resume,
    seed_threads,
    shape_of,
    state_hash,
)

ALL = ThreadQuery(limit=None)
FAR = datetime.now(UTC) + timedelta(days=3650)
KEEP_2 = RetentionPolicy(keep_last=2)
IDLE = RetentionPolicy(idle_longer_than=timedelta(days=1))
THREADS = 8
STORES = ("sqlite", "postgres", "redis")


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A set-up stock saver of the kind named by the test's `kind` parameter."""
    kind = request.param
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver
        conn.close()
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(request.getfixturevalue("postgres_db")) as pg:
            pg.setup()
            yield pg
    else:
        from langgraph.checkpoint.redis import RedisSaver

        with RedisSaver.from_conn_string(request.getfixturevalue("redis_url")) as redis:
            redis.setup()
            yield redis


def _plans(saver: Any, policy: RetentionPolicy) -> list[ThreadPlan]:
    return list(plan_threads(saver, policy, ALL, FAR))


def _root_ids(saver: Any, thread_id: str) -> list[str]:
    return sorted(
        t.config["configurable"]["checkpoint_id"]
        for t in saver.list(config(thread_id))
        if not t.config["configurable"]["checkpoint_ns"]
    )


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_apply_reclaims_the_plan_and_every_thread_resumes(store: Any, tmp_path: Path) -> None:
    """The apply removes exactly the plan (checkpoints, writes, bytes by the scan's measure);
    every thread's state, an older kept checkpoint's (time travel) and a resumed run read as
    on an unpruned copy of the same runs."""
    ids = seed_threads(store, THREADS)
    copy = InMemorySaver()
    assert seed_threads(copy, THREADS) == ids
    roots_before = {t: _root_ids(store, t) for t in ids}
    plans = _plans(store, KEEP_2)
    assert sum(len(p.remove) for p in plans) > THREADS  # the policy has work to do
    bytes_before = thread_bytes(store, ids)
    spans, metrics = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = RetentionTelemetry(tracer_provider, MeterProvider(metric_readers=[metrics]))

    result = apply_plans(
        store, plans, tmp_path / "archive.jsonl", policy=KEEP_2, telemetry=telemetry
    )

    by_thread = {o.thread_id: o for o in result.threads}
    for plan in plans:
        if not plan.remove:
            continue
        outcome = by_thread[plan.thread_id]
        assert outcome.outcome == APPLIED, outcome
        assert outcome.checkpoints_removed == len(plan.remove), plan.thread_id
        assert outcome.writes_removed == plan.reclaim_writes, plan.thread_id
        assert outcome.bytes_reclaimed == plan.reclaim_bytes, plan.thread_id
    assert bytes_before - (thread_bytes(store, ids) or 0) == sum(p.reclaim_bytes for p in plans)
    archived = read_archive(tmp_path / "archive.jsonl")
    assert archived.incomplete == 0
    assert sorted(len(r.checkpoints) for r in archived.records) == sorted(
        len(p.remove) for p in plans if p.remove
    )
    # telemetry: one apply span, a thread span per changed thread with the same figures
    finished = spans.get_finished_spans()
    apply_span = next(s for s in finished if s.name == names.SPAN_RETENTION_APPLY)
    assert apply_span.attributes is not None
    assert apply_span.attributes[names.RETENTION_BYTES_RECLAIMED] == result.bytes_reclaimed
    thread_spans = [s for s in finished if s.name == names.SPAN_RETENTION_THREAD]
    assert len(thread_spans) == result.applied

    for thread_id in ids:  # the latest state, as LangGraph materialises it
        assert state_hash(store, thread_id) == state_hash(copy, thread_id), thread_id
    for thread_id in ids:  # time travel from the oldest kept root checkpoint
        kept = _root_ids(store, thread_id)
        assert len(kept) >= 2 or shape_of(thread_id) == "fork", thread_id
        place = roots_before[thread_id].index(kept[0])
        copy_id = _root_ids(copy, thread_id)[place]
        assert state_hash(store, thread_id, kept[0]) == state_hash(copy, thread_id, copy_id)
        if shape_of(thread_id) != "interrupt":
            app, copy_app = graph(store, shape_of(thread_id)), graph(copy, shape_of(thread_id))
            travelled = ask(app, thread_id, 50, kept[0])
            assert travelled == ask(copy_app, thread_id, 50, copy_id), thread_id
    for thread_id in ids:  # and a run resumed from the latest
        assert resume(store, thread_id) == resume(copy, thread_id), thread_id
        assert state_hash(store, thread_id) == state_hash(copy, thread_id), thread_id


STORED_SQL = {
    "sqlite": (
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,"
        " checkpoint, metadata FROM checkpoints ORDER BY 1, 2, 3",
        "SELECT * FROM writes ORDER BY 1, 2, 3, 4, 6",
    ),
    "postgres": (
        "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,"
        " checkpoint::text, metadata::text FROM checkpoints ORDER BY 1, 2, 3",
        "SELECT * FROM checkpoint_blobs ORDER BY 1, 2, 3, 4",
        "SELECT * FROM checkpoint_writes ORDER BY 1, 2, 3, 4, 5",
    ),
}


def _stored(saver: Any) -> dict[str, Any]:
    """Every row (SQLite, PostgreSQL) or key (Redis: JSON documents, registry sets with their
    scores, pointers) the saver stores, as stored."""
    kind = store_kind(saver)
    if kind == "sqlite":
        with saver.cursor(transaction=False) as cur:
            return {sql: cur.execute(sql).fetchall() for sql in STORED_SQL["sqlite"]}
    if kind == "postgres":
        with saver._cursor() as cur:
            found = {}
            for sql in STORED_SQL["postgres"]:
                cur.execute(sql)
                found[sql] = cur.fetchall()
            return found
    client = saver._redis
    documents: dict[str, Any] = {}
    for key in client.scan_iter(count=1000):
        name = key.decode() if isinstance(key, bytes) else str(key)
        kind = client.type(name)
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "ReJSON-RL":
            documents[name] = client.json().get(name)
        elif kind == "zset":
            documents[name] = client.zrange(name, 0, -1, withscores=True)
        elif kind == "string":
            documents[name] = client.get(name)
    return documents


@pytest.mark.parametrize("store", STORES, indirect=True)
@pytest.mark.parametrize("policy", [KEEP_2, IDLE], ids=["keep_last_2", "idle"])
def test_restore_brings_back_every_removed_checkpoint(
    store: Any, policy: RetentionPolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a restore `list()` reads every thread exactly as before the apply (ids, parents,
    metadata, versions, values, pending writes), and every stored row or key is as it was; the
    latest is what `get_tuple` loads again; a second restore changes nothing; the plan
    afterwards is the plan before. Records hold at
    most 4 checkpoints here, so a thread is archived as several."""
    monkeypatch.setattr(apply_module, "RECORD_CHECKPOINTS", 4)
    ids = seed_threads(store, THREADS, seed=7)
    before = {t: history(store, t) for t in ids}
    stored_before = _stored(store)
    latest = {t: store.get_tuple(config(t)).config for t in ids}
    plans = _plans(store, policy)
    result = apply_plans(store, plans, tmp_path / "archive.jsonl", policy=policy)
    assert result.applied == sum(1 for p in plans if p.remove)
    assert result.failed == 0
    if policy is IDLE:  # whole threads go, but a pending interrupt keeps its thread
        gone = [p.thread_id for p in plans if p.whole_thread and p.remove]
        assert gone
        assert all(store.get_tuple(config(t)) is None for t in gone)
        assert all(not list(store.list(config(t))) for t in gone)
    assert any(history(store, t) != before[t] for t in ids)

    records = read_archive(tmp_path / "archive.jsonl").records
    assert max(len(r.checkpoints) for r in records) == 4
    assert len(records) > len({r.thread_id for r in records})

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = RetentionTelemetry(tracer_provider, MeterProvider())

    restored = restore_archive(store, tmp_path / "archive.jsonl", telemetry=telemetry)

    (restore_span,) = [
        s for s in spans.get_finished_spans() if s.name == names.SPAN_RETENTION_APPLY
    ]
    assert restore_span.attributes is not None
    assert restore_span.attributes[names.OPERATION] == "restore"
    assert restore_span.attributes[names.RETENTION_CHECKPOINTS_RESTORED] == restored.checkpoints
    assert restore_span.attributes[names.RETENTION_WRITES_RESTORED] == restored.writes
    assert restored.checkpoints == result.checkpoints_removed
    assert restored.writes == result.writes_removed
    assert restored.incomplete == 0
    for thread_id in ids:
        assert history(store, thread_id) == before[thread_id], thread_id
        assert store.get_tuple(config(thread_id)).config == latest[thread_id], thread_id
    # every row or key as it was stored, indexes, task paths and registry scores included
    assert _stored(store) == stored_before
    again = restore_archive(store, tmp_path / "archive.jsonl")
    assert (again.checkpoints, again.writes) == (0, 0)
    assert again.already_present == result.checkpoints_removed
    assert {t: history(store, t) for t in ids} == before
    replanned = {p.thread_id: p for p in _plans(store, policy)}
    for plan in plans:
        again_plan = replanned[plan.thread_id]
        assert (again_plan.remove, again_plan.reclaim_writes) == (plan.remove, plan.reclaim_writes)
        if store_kind(store) == "redis":  # MEMORY USAGE of a rewritten key moves by a few bytes
            assert again_plan.reclaim_bytes == pytest.approx(plan.reclaim_bytes, rel=0.005)
        else:
            assert again_plan.reclaim_bytes == plan.reclaim_bytes


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_thread_written_to_is_skipped_and_intact(store: Any, tmp_path: Path) -> None:
    """A thread that got a checkpoint between the plan and the apply, and one written from
    another thread while the apply runs (after its archive record, before its removal), are
    skipped and reported; nothing of theirs is removed; the others are applied."""
    ids = seed_threads(store, 4, seed=11)
    early, during = ids[0], ids[1]
    plans = _plans(store, KEEP_2)
    assert all(p.remove for p in plans)
    ask(graph(store, shape_of(early)), early, 60)  # written between plan and apply
    before = {t: history(store, t) for t in ids}
    seen: list[str] = []

    def write_during(point: str) -> None:
        seen.append(point)
        if point == "archived" and seen.count("checked") == 2:  # the second thread's record
            writer = threading.Thread(target=lambda: resume(store, during))
            writer.start()
            writer.join()

    result = apply_plans(
        store, plans, tmp_path / "archive.jsonl", policy=KEEP_2, on_step=write_during
    )

    outcomes = {o.thread_id: o.outcome for o in result.threads}
    assert outcomes[early] == SKIPPED_WRITTEN
    assert outcomes[during] == SKIPPED_WRITTEN
    assert [outcomes[t] for t in ids[2:]] == [APPLIED, APPLIED]
    assert history(store, early) == before[early]
    after = history(store, during)
    # every checkpoint is still there as it was (the resumed one got its resume write)
    assert {r[:6] for r in before[during]} <= {r[:6] for r in after}
    assert len(after) > len(before[during])
    # the skipped thread's archive record is harmless: restoring it changes nothing
    restore_archive(store, tmp_path / "archive.jsonl", thread_ids=[during])
    assert history(store, during) == after


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_removal_that_changes_the_latest_state_is_put_back(
    store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan made by hand that removes what a `DeltaChannel` is rebuilt from (the planner
    keeps those): the apply sees the latest state hash change, fails the thread and puts it
    back at once from its archive records (2 checkpoints each here); the thread reads as
    before."""
    monkeypatch.setattr(apply_module, "RECORD_CHECKPOINTS", 2)
    ids = seed_threads(store, 4, seed=5)
    delta = next(t for t in ids if shape_of(t) == "delta")
    # stopped mid-run: the latest checkpoint holds no snapshot of its messages, only deltas
    mid = HumanMessage("stop before tally", id="mid")
    app = graph(store, "delta")
    app.invoke({"messages": [mid]}, config(delta), interrupt_before=["tally"], durability="sync")
    before = history(store, delta)
    root = [r for r in before if r[0] == ""]
    latest = {ns: max(r[1] for r in before if r[0] == ns) for ns in {r[0] for r in before}}
    remove = tuple(CheckpointRef(delta, "", r[1]) for r in root[:-1])
    plan = ThreadPlan(
        thread_id=delta, latest=latest, checkpoints=len(before), bytes=0, remove=remove
    )
    wanted = state_hash(store, delta)

    result = apply_plans(store, [plan], tmp_path / "archive.jsonl", policy=KEEP_2)

    (outcome,) = result.threads
    assert outcome.outcome == FAILED
    assert outcome.detail is not None and "put back" in outcome.detail
    assert history(store, delta) == before
    assert state_hash(store, delta) == wanted


@pytest.mark.parametrize("kind", STORES)
def test_the_command_line_sources_apply_only_when_writable(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """`open_sources(..., writable=True)` (what `retention --apply` and `restore` open) applies
    and restores; the read-only sources the other commands open remove nothing (SQLite opened
    `mode=ro`, PostgreSQL in a read-only session: the thread fails, untouched)."""
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(tmp_path / "cli.sqlite")) as saver:
            ids = seed_threads(saver, 2, seed=3)
    elif kind == "postgres":
        url = request.getfixturevalue("postgres_db")
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            ids = seed_threads(saver, 2, seed=3)
    else:
        url = request.getfixturevalue("redis_url")
        from langgraph.checkpoint.redis import RedisSaver

        with RedisSaver.from_conn_string(url) as saver:
            saver.setup()
            ids = seed_threads(saver, 2, seed=3)
    if kind != "redis":  # Redis has no read-only session: the inspector never writes to it
        with open_sources([url]) as readonly:
            plans = _plans(readonly.saver, KEEP_2)
            before = {t: history(readonly.saver, t) for t in ids}
            result = apply_plans(readonly.saver, plans, tmp_path / "ro.jsonl", policy=KEEP_2)
            assert [o.outcome for o in result.threads] == [FAILED, FAILED]
            assert {t: history(readonly.saver, t) for t in ids} == before
    with open_sources([url], writable=True) as sources:
        saver = sources.saver
        before = {t: history(saver, t) for t in ids}
        plans = _plans(saver, KEEP_2)
        result = apply_plans(saver, plans, tmp_path / "archive.jsonl", policy=KEEP_2)
        assert [o.outcome for o in result.threads] == [APPLIED, APPLIED]
        assert restore_archive(saver, tmp_path / "archive.jsonl").checkpoints == sum(
            len(p.remove) for p in plans
        )
        assert {t: history(saver, t) for t in ids} == before


def test_a_deep_agent_stays_rebuildable(tmp_path: Path) -> None:
    """deepagents' `create_deep_agent` (messages as a `DeltaChannel` that has not snapshotted
    yet, a sub-agent through `task`, scripted models), two runs on one thread: the plan keeps
    every checkpoint the messages are rebuilt from (nothing to apply), and a plan made by hand
    that removes the oldest half anyway is caught by the apply's state check and put back:
    `get_state` of every checkpoint gives the same messages as before."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from packaged_agents import deep_agent

    conn = sqlite3.connect(tmp_path / "deep.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    for run in range(2):
        message = HumanMessage(f"Refund order A1 ({run})", id=f"h{run}")
        deep_agent(saver).invoke({"messages": [message]}, config("deep"))
    agent = deep_agent(saver)
    states = {
        t.config["configurable"]["checkpoint_id"]: t.values["messages"]
        for t in agent.get_state_history(config("deep"))
    }
    (plan,) = _plans(saver, KEEP_2)
    assert plan.remove == ()
    assert {reason.value for reason in plan.kept.values()} == {"delta_base"}
    assert apply_plans(saver, [plan], tmp_path / "archive.jsonl", policy=KEEP_2).threads == []

    roots = sorted(states)[: len(states) // 2]
    forced = ThreadPlan(
        thread_id="deep",
        latest=plan.latest,
        checkpoints=plan.checkpoints,
        bytes=plan.bytes,
        remove=tuple(CheckpointRef("deep", "", cid) for cid in roots),
    )
    result = apply_plans(saver, [forced], tmp_path / "archive.jsonl", policy=KEEP_2)

    assert [o.outcome for o in result.threads] == [FAILED]
    after = {
        t.config["configurable"]["checkpoint_id"]: t.values["messages"]
        for t in agent.get_state_history(config("deep"))
    }
    assert after == states
    conn.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_routine_through_the_command_line(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A team's routine with the console command: plan (read only), apply with an archive,
    restore; the figures agree, the threads resume as an unpruned copy, the restore brings the
    history back."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "routine.sqlite"
    url = f"sqlite:///{path}" if kind == "sqlite" else request.getfixturevalue("postgres_db")

    def opened() -> Any:
        if kind == "sqlite":
            return SqliteSaver.from_conn_string(str(path))
        return PostgresSaver.from_conn_string(url)

    copy = InMemorySaver()
    ids = seed_threads(copy, 3, seed=4)
    with opened() as saver:
        saver.setup()
        seed_threads(saver, 3, seed=4)
        before = {t: history(saver, t) for t in ids}
    script = str(Path(sys.executable).with_name("langgraph-otel"))
    archive = tmp_path / "routine.archive"

    def run(*args: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            [script, *args, "--json"], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.stdout, done.stderr[-2000:]
        return done.returncode, json.loads(done.stdout)

    code, planned = run("retention", url, "--keep-last", "2")
    assert code == 1 and planned["reclaim_bytes"] > 0 and planned["applied"] is None
    code, applied = run("retention", url, "--keep-last", "2", "--apply", "--archive", str(archive))
    assert code == 0, applied
    done = applied["applied"]
    assert (done["applied"], done["skipped"], done["failed"]) == (3, 0, 0)
    assert done["bytes_reclaimed"] == planned["reclaim_bytes"]
    assert done["checkpoints_removed"] == planned["remove_checkpoints"]
    with opened() as saver:
        for thread_id in ids:
            assert state_hash(saver, thread_id) == state_hash(copy, thread_id), thread_id
        code, restored = run("restore", str(archive), url)
        assert code == 0 and restored["checkpoints"] == done["checkpoints_removed"]
        assert {t: history(saver, t) for t in ids} == before
        for thread_id in ids:
            assert resume(saver, thread_id) == resume(copy, thread_id), thread_id


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_an_archive_that_cannot_be_written_stops_the_apply(store: Any, tmp_path: Path) -> None:
    """No archive, no removal: an archive path that cannot be created is an `ApplyError`
    before any thread is touched."""
    ids = seed_threads(store, 2, seed=9)
    before = {t: history(store, t) for t in ids}
    (tmp_path / "not-a-directory").write_text("")
    with pytest.raises(ApplyError, match="cannot write the archive"):
        apply_plans(
            store,
            _plans(store, KEEP_2),
            tmp_path / "not-a-directory" / "archive.jsonl",
            policy=KEEP_2,
        )
    assert {t: history(store, t) for t in ids} == before


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_a_thread_written_all_through_the_apply_is_never_corrupted(
    store: Any, tmp_path: Path
) -> None:
    """A writer keeps running turns on one thread from another Python thread for as long as
    the apply runs: that thread is applied or skipped, never broken (its state is the copy's
    after as many turns, every checkpoint gone from it is archived), the others are applied."""
    ids = seed_threads(store, 6, seed=13)
    copy = InMemorySaver()
    seed_threads(copy, 6, seed=13)
    busy = ids[0]
    stored_before = _checkpoint_ids(store, busy)
    plans = _plans(store, KEEP_2)
    started, stop = threading.Event(), threading.Event()
    turns: list[int] = []

    def write() -> None:
        app, n = graph(store, shape_of(busy)), 0
        while n < 60 and (n < 1 or not stop.is_set()):
            ask(app, busy, 200 + n)
            n += 1
            started.set()
        turns.append(n)

    writer = threading.Thread(target=write)
    writer.start()
    started.wait(30)
    result = apply_plans(store, plans, tmp_path / "archive.jsonl", policy=KEEP_2)
    stop.set()
    writer.join()

    outcomes = {o.thread_id: o.outcome for o in result.threads}
    assert outcomes[busy] in (APPLIED, SKIPPED_WRITTEN)
    assert [outcomes[t] for t in ids[1:]] == [APPLIED] * (len(ids) - 1)
    copy_app = graph(copy, shape_of(busy))
    for n in range(turns[0]):
        ask(copy_app, busy, 200 + n)
    assert state_hash(store, busy) == state_hash(copy, busy)
    archived = {
        (c.ns, c.id)
        for r in read_archive(tmp_path / "archive.jsonl").records
        for c in r.checkpoints
    }
    assert stored_before - _checkpoint_ids(store, busy) <= archived


def _checkpoint_ids(saver: Any, thread_id: str) -> set[tuple[str, str]]:
    return {
        (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
        for t in saver.list(config(thread_id))
    }


@pytest.mark.parametrize("store", STORES, indirect=True)
def test_the_apply_streams_its_plans(
    store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plans are read one at a time as the threads are applied (each thread is archived
    before the next plan is read, across the scan's pages, with the store changing under the
    scan); the apply span's thread count, set as it ends, is the threads that had something to
    remove (not the thread with a single checkpoint); each thread reclaims its plan."""
    from langgraph.checkpoint.base import empty_checkpoint

    from langgraph.checkpoint.otel.retention import scan

    monkeypatch.setattr(scan, "PAGE", 2)  # several pages of threads
    ids = seed_threads(store, 5, seed=12)
    single = "t12-2a-single"  # one checkpoint: its plan removes nothing
    at = {"configurable": {"thread_id": single, "checkpoint_ns": ""}}
    store.put(at, empty_checkpoint(), {"source": "input", "step": -1}, {})
    consumed: list[ThreadPlan] = []
    archived_after: list[int] = []

    def stream() -> Iterator[ThreadPlan]:
        for plan in plan_threads(store, KEEP_2, ALL, FAR):
            consumed.append(plan)
            yield plan

    def on_step(name: str) -> None:
        if name == "archived":
            archived_after.append(len(consumed))

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    result = apply_plans(
        store,
        stream(),
        tmp_path / "archive.jsonl",
        policy=KEEP_2,
        telemetry=RetentionTelemetry(tracer_provider, MeterProvider()),
        on_step=on_step,
    )

    assert sorted(p.thread_id for p in consumed) == sorted([*ids, single])
    changing = [n for n, p in enumerate(consumed, 1) if p.remove or p.remove_blobs]
    assert len(changing) == len(ids)  # every seeded thread, not the single checkpoint
    assert archived_after == changing  # thread n archived when n plans had been read
    assert [o.thread_id for o in result.threads] == [consumed[n - 1].thread_id for n in changing]
    for outcome in result.threads:
        plan = next(p for p in consumed if p.thread_id == outcome.thread_id)
        assert outcome.outcome == APPLIED, outcome
        assert outcome.checkpoints_removed == len(plan.remove)
        assert outcome.bytes_reclaimed == plan.reclaim_bytes
    (apply_span,) = [s for s in spans.get_finished_spans() if s.name == names.SPAN_RETENTION_APPLY]
    assert apply_span.attributes is not None
    assert apply_span.attributes[names.RETENTION_THREADS] == len(ids)
    assert apply_span.attributes[names.RETENTION_CHECKPOINTS_REMOVED] == result.checkpoints_removed
    assert len(_checkpoint_ids(store, single)) == 1
