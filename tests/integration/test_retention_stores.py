"""Retention plans over real savers (SQLite, PostgreSQL, Redis) written by real graphs: a loop,
a subgraph call, a pending `interrupt()`, a time-travel fork and a `DeltaChannel` thread, in
seeded shapes. Each store's plan keeps what it must, and the plans of the same threads agree
across the stores (compared by place: namespace by graph and order, checkpoint by order)."""

from __future__ import annotations

import operator
import random
import sqlite3
import string
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.otel._langgraph.namespaces import graph_key
from langgraph.checkpoint.otel.analysis.retention import (
    KeepReason,
    RetentionPolicy,
    ThreadPlan,
)
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery
from langgraph.checkpoint.otel.retention.scan import plan_threads, scan_threads

ALL = ThreadQuery(limit=None)
FAR = datetime.now(UTC) + timedelta(days=3650)
"""A `now` after every checkpoint: every thread is idle and every checkpoint old."""


def _concat(state: list[Any], writes: list[list[Any]]) -> list[Any]:
    out = list(state)
    for write in writes:
        out.extend(write)
    return out


class State(TypedDict):
    n: int
    log: Annotated[list[Any], operator.add]


class DeltaState(TypedDict):
    n: int
    log: Annotated[list[Any], DeltaChannel(_concat, snapshot_frequency=5)]


def _step(state: dict[str, Any]) -> dict[str, Any]:
    return {"n": state["n"] + 1, "log": [state["n"]]}


def _again(state: dict[str, Any]) -> str:
    return "step" if state["n"] % 3 else END


def loop_graph(saver: Any, state: type = State) -> Any:
    builder = StateGraph(state)
    builder.add_node("step", _step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", _again)
    return builder.compile(checkpointer=saver)


def subgraph_graph(saver: Any) -> Any:
    inner = StateGraph(State)
    inner.add_node("step", _step)
    inner.add_edge(START, "step")
    inner.add_conditional_edges("step", _again)
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile())
    outer.add_node("after", lambda s: {"log": ["after"]})
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "after")
    return outer.compile(checkpointer=saver)


def interrupt_graph(saver: Any) -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"question": state["n"]})
        return {"log": [answer]}

    builder = StateGraph(State)
    builder.add_node("step", _step)
    builder.add_node("ask", ask)
    builder.add_edge(START, "step")
    builder.add_edge("step", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def subgraph_interrupt_graph(saver: Any) -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"log": [interrupt({"question": state["n"]})]}

    inner = StateGraph(State)
    inner.add_node("step", _step)
    inner.add_node("ask", ask)
    inner.add_edge(START, "step")
    inner.add_edge("step", "ask")
    outer = StateGraph(State)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    return outer.compile(checkpointer=saver)


SHAPES = ("loop", "subgraph", "interrupt", "fork", "delta", "sub_interrupt")


SYNC = "sync"
"""Runs save each step before the next: RedisSaver 0.5.2 can hide a step's writes saved in the
background (under the default durability) before their checkpoint, and then re-runs the step;
the stores are compared on the same history."""


def write_thread(saver: Any, shape: str, thread_id: str, runs: int) -> None:
    """One thread of `shape`, `runs` invocations long (the interrupt left pending)."""
    config = {"configurable": {"thread_id": thread_id}}
    if shape == "loop":
        graph = loop_graph(saver)
        for _ in range(runs):
            graph.invoke({"n": 1, "log": []}, config, durability=SYNC)
    elif shape == "subgraph":
        graph = subgraph_graph(saver)
        for _ in range(runs):
            graph.invoke({"n": 1, "log": []}, config, durability=SYNC)
    elif shape == "interrupt":
        graph = interrupt_graph(saver)
        for i in range(runs):
            graph.invoke({"n": i, "log": []}, config, durability=SYNC)
            if i < runs - 1:
                graph.invoke(Command(resume=f"answer {i}"), config, durability=SYNC)
    elif shape == "fork":
        graph = loop_graph(saver)
        for _ in range(runs):
            graph.invoke({"n": 1, "log": []}, config, durability=SYNC)
        history = list(graph.get_state_history(config))
        graph.invoke(None, history[len(history) // 2].config, durability=SYNC)
    elif shape == "delta":
        graph = loop_graph(saver, DeltaState)
        for _ in range(runs):
            graph.invoke({"n": 1, "log": ["x"]}, config, durability=SYNC)
    elif shape == "sub_interrupt":
        graph = subgraph_interrupt_graph(saver)
        for i in range(runs):
            graph.invoke({"n": i, "log": []}, config, durability=SYNC)
            if i < runs - 1:
                graph.invoke(Command(resume=f"answer {i}"), config, durability=SYNC)
    else:  # pragma: no cover
        raise ValueError(shape)


def write_seeded(saver: Any, seed: int, threads: int) -> list[tuple[str, str]]:
    """`threads` threads of seeded shapes and lengths: (thread id, shape)."""
    rng = random.Random(seed)
    written = []
    for i in range(threads):
        shape = SHAPES[i % len(SHAPES)] if i < len(SHAPES) else rng.choice(SHAPES)
        thread_id = f"t{seed}-{i:03d}-{shape}"
        write_thread(saver, shape, thread_id, rng.randint(1, 4))
        written.append((thread_id, shape))
    return written


def canonical(plan: ThreadPlan, rows: list[Any]) -> dict[str, Any]:
    """A plan by place, not by id: namespaces by graph and order of first checkpoint,
    checkpoints by order in their namespace."""
    by_ns: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda r: r.ref.checkpoint_id):
        by_ns.setdefault(row.ref.checkpoint_ns, []).append(row.ref.checkpoint_id)
    order = sorted(by_ns, key=lambda ns: by_ns[ns][0])
    seen: dict[str, int] = {}
    names = {}
    for ns in order:
        key = graph_key(ns)
        names[ns] = f"{key}#{seen.get(key, 0)}"
        seen[key] = seen.get(key, 0) + 1

    def place(ref: Any) -> tuple[str, int]:
        return names[ref.checkpoint_ns], by_ns[ref.checkpoint_ns].index(ref.checkpoint_id)

    return {
        "checkpoints": plan.checkpoints,
        "remove": sorted(place(r) for r in plan.remove),
        "kept": sorted((place(r), reason.value) for r, reason in plan.kept.items()),
        "whole": plan.whole_thread,
        "writes": plan.reclaim_writes,
    }


POLICIES = {
    "keep_last_2": RetentionPolicy(keep_last=2),
    "older": RetentionPolicy(older_than=timedelta(days=1)),
    "idle": RetentionPolicy(idle_longer_than=timedelta(days=1)),
}


def plans_by_place(saver: Any, policy: RetentionPolicy) -> dict[str, dict[str, Any]]:
    rows = {r[0].ref.thread_id: r for r in scan_threads(saver, ALL)}
    return {
        plan.thread_id: canonical(plan, rows[plan.thread_id])
        for plan in plan_threads(saver, policy, ALL, FAR)
    }


# --- the savers ------------------------------------------------------------------------------


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    yield saver
    conn.close()


@pytest.fixture
def postgres_saver(postgres_db: str) -> Iterator[Any]:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(postgres_db) as saver:
        saver.setup()
        yield saver


@pytest.fixture
def redis_saver(redis_url: str) -> Iterator[Any]:
    from langgraph.checkpoint.redis import RedisSaver

    with RedisSaver.from_conn_string(redis_url) as saver:
        saver.setup()
        yield saver


STORES = ("sqlite_saver", "postgres_saver", "redis_saver")


def _plans(saver: Any, policy: RetentionPolicy) -> dict[str, ThreadPlan]:
    return {p.thread_id: p for p in plan_threads(saver, policy, ALL, FAR)}


# --- keep reasons, per store -----------------------------------------------------------------


@pytest.mark.parametrize("store", STORES)
def test_a_pending_interrupt_keeps_an_idle_thread_whole(store: str, request: Any) -> None:
    saver = request.getfixturevalue(store)
    write_thread(saver, "interrupt", "asking", 2)
    write_thread(saver, "loop", "done", 2)
    plans = _plans(saver, POLICIES["idle"])
    assert plans["done"].whole_thread and plans["done"].reclaim_bytes > 0
    asking = plans["asking"]
    assert asking.remove == () and not asking.whole_thread
    assert set(asking.kept.values()) == {KeepReason.PENDING_INTERRUPT}
    assert len(asking.kept) == asking.checkpoints


@pytest.mark.parametrize("store", STORES)
def test_keep_last_keeps_the_latest_of_each_namespace(store: str, request: Any) -> None:
    saver = request.getfixturevalue(store)
    write_thread(saver, "loop", "loop", 3)
    plan = _plans(saver, POLICIES["older"])["loop"]
    assert plan.kept == {
        next(r for r in plan.kept if r.checkpoint_id == plan.latest[""]): KeepReason.LATEST
    }
    assert len(plan.remove) == plan.checkpoints - 1
    assert plan.reclaim_bytes > 0 and plan.reclaim_writes > 0


@pytest.mark.parametrize("store", STORES)
def test_subgraph_calls_go_with_the_checkpoint_that_started_them(store: str, request: Any) -> None:
    saver = request.getfixturevalue(store)
    write_thread(saver, "subgraph", "sub", 3)
    rows = next(scan_threads(saver, ALL))
    calls = {r.ref.checkpoint_ns for r in rows if r.ref.checkpoint_ns}
    assert len(calls) == 3 and all(r.started_by is not None for r in rows if r.ref.checkpoint_ns)
    plan = _plans(saver, POLICIES["older"])["sub"]
    kept_ns = {ns for ns in calls if any(r.checkpoint_ns == ns for r in plan.kept)}
    removed_ns = {r.checkpoint_ns for r in plan.remove if r.checkpoint_ns}
    # the root's latest checkpoint started no call (the last call started from an older one)
    assert removed_ns == calls and kept_ns == set()


@pytest.mark.parametrize("store", STORES)
def test_a_fork_keeps_the_checkpoint_it_was_forked_from(store: str, request: Any) -> None:
    saver = request.getfixturevalue(store)
    write_thread(saver, "fork", "forked", 2)
    plan = _plans(saver, POLICIES["keep_last_2"])["forked"]
    assert KeepReason.REFERENCED in plan.kept.values()


@pytest.mark.parametrize("store", STORES)
def test_delta_threads_keep_their_writes_back_to_the_snapshot(store: str, request: Any) -> None:
    saver = request.getfixturevalue(store)
    write_thread(saver, "delta", "delta", 3)
    rows = next(scan_threads(saver, ALL))
    assert any(r.delta_channels == frozenset({"log"}) for r in rows)
    plan = _plans(saver, RetentionPolicy(keep_last=1))["delta"]
    assert KeepReason.DELTA_BASE in plan.kept.values()
    kept_ids = {r.ref.checkpoint_id for r in rows} - {r.checkpoint_id for r in plan.remove}
    latest = max(rows, key=lambda r: r.ref.checkpoint_id)
    # the latest's parent chain is kept back to a checkpoint holding the channel's value
    by_id = {r.ref.checkpoint_id: r for r in rows}
    cursor = latest
    while "log" in cursor.delta_channels:
        assert cursor.parent_id in kept_ids
        cursor = by_id[cursor.parent_id]


# --- the same threads, the same plan, on every store -----------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_plans_agree_across_stores(seed: int, request: Any) -> None:
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for store in STORES:
        saver = request.getfixturevalue(store)
        write_seeded(saver, seed, 8)
        for name, policy in POLICIES.items():
            found[f"{store} {name}"] = plans_by_place(saver, policy)
    for name in POLICIES:
        sqlite = found[f"sqlite_saver {name}"]
        assert len(sqlite) == 8
        for store in STORES[1:]:
            assert found[f"{store} {name}"] == sqlite, (store, name)


@pytest.mark.parametrize("policy", ["keep_last_1", "older"])
def test_removing_what_a_plan_removes_keeps_every_latest_state(
    sqlite_saver: Any, policy: str
) -> None:
    """The plan, removed by hand (SQL on SQLite's stock tables): every thread's latest state,
    delta channels rebuilt included, reads as before."""
    chosen = RetentionPolicy(keep_last=1) if policy == "keep_last_1" else POLICIES["older"]
    written = write_seeded(sqlite_saver, 3, 10)
    graphs = {
        "loop": loop_graph(sqlite_saver),
        "fork": loop_graph(sqlite_saver),
        "subgraph": subgraph_graph(sqlite_saver),
        "interrupt": interrupt_graph(sqlite_saver),
        "delta": loop_graph(sqlite_saver, DeltaState),
        "sub_interrupt": subgraph_interrupt_graph(sqlite_saver),
    }

    def states() -> dict[str, Any]:
        out = {}
        for thread_id, shape in written:
            snapshot = graphs[shape].get_state({"configurable": {"thread_id": thread_id}})
            out[thread_id] = (snapshot.values, snapshot.next, len(snapshot.interrupts))
        return out

    before = states()
    plans = list(plan_threads(sqlite_saver, chosen, ALL, FAR))
    assert sum(len(p.remove) for p in plans) > 0
    with sqlite_saver.cursor() as cur:
        for plan in plans:
            for ref in plan.remove:
                key = (ref.thread_id, ref.checkpoint_ns, ref.checkpoint_id)
                where = "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
                cur.execute(f"DELETE FROM checkpoints WHERE {where}", key)
                cur.execute(f"DELETE FROM writes WHERE {where}", key)
    assert states() == before
    waiting = [(t, shape) for t, shape in written if shape in ("interrupt", "sub_interrupt")]
    assert waiting
    for thread_id, shape in waiting:  # the pending interrupts still resume
        config = {"configurable": {"thread_id": thread_id}}
        done = graphs[shape].invoke(Command(resume="late answer"), config)
        assert done["log"][-1] == "late answer"


def test_postgres_blobs_only_removed_checkpoints_use_are_freed(postgres_saver: Any) -> None:
    write_thread(postgres_saver, "loop", "loop", 3)
    rows = next(scan_threads(postgres_saver, ALL))
    plan = _plans(postgres_saver, POLICIES["older"])["loop"]
    latest = next(r for r in rows if r.ref.checkpoint_id == plan.latest[""])
    assert plan.remove_blobs and not set(plan.remove_blobs) & latest.blobs
    removed = [r for r in rows if r.ref in set(plan.remove)]
    assert plan.reclaim_bytes == sum(r.bytes + r.writes_bytes for r in removed) + sum(
        b.bytes for b in plan.remove_blobs
    )
    stored = sum(r.bytes + r.writes_bytes for r in rows) + sum(
        b.bytes for b in {b for r in rows for b in r.blobs}
    )
    assert plan.bytes == stored


@pytest.mark.parametrize("store", STORES)
def test_a_plan_counts_the_bytes_the_shared_measure_counts(store: str, request: Any) -> None:
    """plan.bytes per thread is `stored_bytes.thread_bytes` (the apply's and prune's measure),
    and what the plan reclaims is what that measure drops by once the plan is removed."""
    from langgraph.checkpoint.otel._langgraph.stored_bytes import thread_bytes

    saver = request.getfixturevalue(store)
    written = write_seeded(saver, 4, 6)
    plans = _plans(saver, POLICIES["older"])
    for thread_id, _ in written:
        assert plans[thread_id].bytes == thread_bytes(saver, [thread_id]), thread_id


# --- the command ------------------------------------------------------------------------------


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    """A SQLite file of seeded threads (closed: the command opens it itself)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "threads.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    write_seeded(saver, 5, 10)
    conn.close()
    return path


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    import json

    from langgraph.checkpoint.otel.inspector.cli import main

    code = main(args)
    out = capsys.readouterr().out
    return code, json.loads(out) if "--json" in args and out.strip() else out


def test_cli_read_only_plan_as_json(sqlite_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sqlite_file.read_bytes()
    code, view = run_cli(
        ["retention", f"sqlite:///{sqlite_file}", "--keep-last", "2", "--json", "--top", "3"],
        capsys,
    )
    assert code == 1  # the policy removes something
    assert view["policy"] == "keep_last=2" and view["threads"] == 10
    assert view["remove_checkpoints"] > 0 and view["reclaim_bytes"] > 0
    assert len(view["heaviest"]) == 3 and len(view["removing"]) == 3
    assert view["heaviest"][0]["bytes"] >= view["heaviest"][-1]["bytes"]
    assert {n["name"] for n in view["namespaces"]} >= {"", "inner"}
    assert view["kept"].get("pending_interrupt", 0) >= 0
    assert sqlite_file.read_bytes() == before  # read only


def test_cli_figures_are_the_plans(sqlite_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    code, view = run_cli(["retention", str(sqlite_file), "--keep-last", "2", "--json"], capsys)
    conn = sqlite3.connect(sqlite_file, check_same_thread=False)
    plans = list(plan_threads(SqliteSaver(conn), POLICIES["keep_last_2"], ALL, FAR))
    conn.close()
    assert code == 1
    assert view["checkpoints"] == sum(p.checkpoints for p in plans)
    assert view["bytes"] == sum(p.bytes for p in plans)
    assert view["remove_checkpoints"] == sum(len(p.remove) for p in plans)
    assert view["reclaim_bytes"] == sum(p.reclaim_bytes for p in plans)
    assert view["remove_writes"] == sum(p.reclaim_writes for p in plans)


def test_cli_without_a_policy_shows_where_the_bytes_are(
    sqlite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["retention", str(sqlite_file)], capsys)
    assert code == 0
    assert "heaviest threads" in out and "where the bytes are" in out and "no policy" in out


def test_cli_policy_file_and_options(
    sqlite_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "retention.toml"
    policy.write_text('keep_last = 50\nidle_longer_than = "3650d"\n')
    code, view = run_cli(
        ["retention", str(sqlite_file), "--policy", str(policy), "--keep-last", "100", "--json"],
        capsys,
    )
    assert code == 0 and view["policy"] == "keep_last=100 idle_longer_than=3650d"
    assert view["remove_checkpoints"] == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--older-than", "soon"],
        ["--keep-last", "2", "--apply"],
        ["--archive", "x.jsonl"],
        ["--apply", "--archive", "x.jsonl"],
        ["--keep-last", "0"],
    ],
)
def test_cli_bad_input_exits_2(
    sqlite_file: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run_cli(["retention", str(sqlite_file), *args], capsys)
    assert code == 2


def test_cli_limit_and_prefix(sqlite_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, view = run_cli(["retention", str(sqlite_file), "--limit", "3", "--json"], capsys)
    assert view["threads"] == 3
    _, view = run_cli(["retention", str(sqlite_file), "--thread-prefix", "t5-00", "--json"], capsys)
    assert view["threads"] == 10
    _, view = run_cli(
        ["retention", str(sqlite_file), "--thread-prefix", "t5-001", "--json"], capsys
    )
    assert view["threads"] == 1


def _latest_states(path: Path, written: list[tuple[str, str]]) -> dict[str, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    graphs = {
        "loop": loop_graph(saver),
        "fork": loop_graph(saver),
        "subgraph": subgraph_graph(saver),
        "interrupt": interrupt_graph(saver),
        "delta": loop_graph(saver, DeltaState),
        "sub_interrupt": subgraph_interrupt_graph(saver),
    }
    out = {}
    for thread_id, shape in written:
        config = {"configurable": {"thread_id": thread_id}}
        snapshot = graphs[shape].get_state(config)
        history = len(list(graphs[shape].get_state_history(config)))
        out[thread_id] = (snapshot.values, snapshot.next, len(snapshot.interrupts), history)
    conn.close()
    return out


def test_cli_apply_then_restore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--apply removes what the read-only run said (archived first), every latest state reads
    as before; restore puts the history back."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "apply.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    SqliteSaver(conn).setup()
    written = write_seeded(SqliteSaver(conn), 6, 10)
    conn.close()
    before = _latest_states(path, written)
    source, archive = f"sqlite:///{path}", tmp_path / "archive.jsonl"
    _, planned = run_cli(["retention", source, "--keep-last", "2", "--json"], capsys)
    code, done = run_cli(
        ["retention", source, "--keep-last", "2", "--apply", "--archive", str(archive), "--json"],
        capsys,
    )
    assert code == 0, done["applied"]
    assert done["applied"]["checkpoints_removed"] == planned["remove_checkpoints"]
    assert done["applied"]["writes_removed"] == planned["remove_writes"]
    assert done["applied"]["bytes_reclaimed"] == planned["reclaim_bytes"]
    after = _latest_states(path, written)
    assert {t: s[:3] for t, s in after.items()} == {t: s[:3] for t, s in before.items()}
    assert sum(s[3] for s in after.values()) < sum(s[3] for s in before.values())
    code, again = run_cli(["retention", source, "--keep-last", "2", "--json"], capsys)
    assert code == 0 and again["remove_checkpoints"] == 0
    code, restored = run_cli(["restore", str(archive), source, "--json"], capsys)
    assert code == 0 and restored["checkpoints"] == planned["remove_checkpoints"]
    assert _latest_states(path, written) == before


def test_any_other_saver_is_planned_through_list(sqlite_saver: Any) -> None:
    """InMemorySaver (no query of its own: `list()` per thread, sizes from the serde) plans
    the same threads as SQLite does."""
    from langgraph.checkpoint.memory import InMemorySaver

    memory = InMemorySaver()
    for saver in (memory, sqlite_saver):
        write_seeded(saver, 7, 8)
    for policy in POLICIES.values():
        assert plans_by_place(memory, policy) == plans_by_place(sqlite_saver, policy)
    assert all(p.bytes > 0 for p in _plans(memory, POLICIES["older"]).values())


@pytest.mark.parametrize("store", ["postgres_db", "redis_url"])
def test_cli_reads_postgres_and_redis(
    store: str, request: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`retention postgresql://...` and `redis://...`: the same figures as the plans."""
    saver = request.getfixturevalue(store.replace("_db", "_saver").replace("_url", "_saver"))
    write_seeded(saver, 8, 6)
    url = request.getfixturevalue(store)
    code, view = run_cli(["retention", url, "--keep-last", "2", "--json"], capsys)
    plans = list(plan_threads(saver, POLICIES["keep_last_2"], ALL, FAR))
    assert code == 1 and view["threads"] == 6
    assert view["remove_checkpoints"] == sum(len(p.remove) for p in plans)
    assert view["reclaim_bytes"] == sum(p.reclaim_bytes for p in plans)
    kept: dict[str, int] = {}
    for plan in plans:
        for reason in plan.kept.values():
            kept[reason.value] = kept.get(reason.value, 0) + 1
    assert view["kept"] == kept and kept  # the delta and fork threads keep some


def test_a_deep_agent_plans_alike_on_every_store(request: Any) -> None:
    """deepagents' `create_deep_agent` (messages as a `DeltaChannel`, a sub-agent through
    `task`, scripted models), three runs on one thread: every store keeps the checkpoints the
    messages are rebuilt from, and the plans agree by place."""
    from langchain_core.messages import HumanMessage

    from packaged_agents import deep_agent

    found = {}
    for store in STORES:
        saver = request.getfixturevalue(store)
        for run in range(3):
            message = HumanMessage(f"Refund order A1 ({run})", id=f"h{run}")
            deep_agent(saver).invoke(
                {"messages": [message]}, {"configurable": {"thread_id": "deep"}}, durability=SYNC
            )
        rows = next(scan_threads(saver, ALL))
        assert any("messages" in r.delta_channels for r in rows), store
        (plan,) = list(plan_threads(saver, RetentionPolicy(keep_last=2), ALL, FAR))
        assert KeepReason.DELTA_BASE in plan.kept.values(), store
        found[store] = canonical(plan, rows)
    assert found["postgres_saver"] == found["sqlite_saver"]
    assert found["redis_saver"] == found["sqlite_saver"]


@pytest.mark.parametrize("store", STORES)
def test_limit_and_prefix_select_the_same_threads_everywhere(store: str, request: Any) -> None:
    saver = request.getfixturevalue(store)
    written = sorted(t for t, _ in write_seeded(saver, 9, 7))
    first = [r[0].ref.thread_id for r in scan_threads(saver, ThreadQuery(limit=3))]
    assert first == written[:3]
    one = [r[0].ref.thread_id for r in scan_threads(saver, ThreadQuery(None, prefix=written[4]))]
    assert one == [written[4]]


def _states_of(saver: Any, written: list[tuple[str, str]]) -> dict[str, Any]:
    graphs = {
        "loop": loop_graph(saver),
        "fork": loop_graph(saver),
        "subgraph": subgraph_graph(saver),
        "interrupt": interrupt_graph(saver),
        "delta": loop_graph(saver, DeltaState),
        "sub_interrupt": subgraph_interrupt_graph(saver),
    }
    out = {}
    for thread_id, shape in written:
        config = {"configurable": {"thread_id": thread_id}}
        snapshot = graphs[shape].get_state(config)
        history = len(list(graphs[shape].get_state_history(config)))
        out[thread_id] = (snapshot.values, snapshot.next, len(snapshot.interrupts), history)
    return out


@pytest.mark.parametrize("store", ["postgres_db", "redis_url"])
def test_cli_apply_then_restore_on_postgres_and_redis(
    store: str, request: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saver = request.getfixturevalue(store.replace("_db", "_saver").replace("_url", "_saver"))
    url = request.getfixturevalue(store)
    written = write_seeded(saver, 10, 6)
    before = _states_of(saver, written)
    archive = tmp_path / "archive.jsonl"
    time.sleep(1.1)  # every checkpoint older than a second
    _, planned = run_cli(["retention", url, "--older-than", "1s", "--json"], capsys)
    code, done = run_cli(
        ["retention", url, "--older-than", "1s", "--apply", "--archive", str(archive), "--json"],
        capsys,
    )
    assert code == 0, done["applied"]
    assert done["applied"]["checkpoints_removed"] == planned["remove_checkpoints"] > 0
    assert done["applied"]["bytes_reclaimed"] == planned["reclaim_bytes"]
    after = _states_of(saver, written)
    assert {t: s[:3] for t, s in after.items()} == {t: s[:3] for t, s in before.items()}
    code, restored = run_cli(["restore", str(archive), url, "--json"], capsys)
    assert code == 0 and restored["checkpoints"] == planned["remove_checkpoints"]
    assert _states_of(saver, written) == before


# --- where the bytes are, by channel ----------------------------------------------------------


class ChatState(TypedDict):
    messages: Annotated[list[Any], operator.add]
    n: int


def _talk(state: dict[str, Any]) -> dict[str, Any]:
    # random letters: PostgreSQL would compress a repeated text to almost nothing
    reply = "".join(random.Random(state["n"]).choices(string.ascii_letters, k=4000))
    return {"messages": [reply], "n": state["n"] + 1}


def write_chat(saver: Any, wrapped: bool, turns: int = 4) -> ThreadPlan:
    """A thread whose `messages` channel is big and `n` small, written through the wrapper
    (with a recording SDK, so it stores each channel's size) or bare; its plan."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from langgraph.checkpoint.otel import instrument

    spans = InMemorySpanExporter()
    if wrapped:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        saver_used = instrument(saver, tracer_provider=provider)
    else:
        saver_used = saver
    builder = StateGraph(ChatState)
    builder.add_node("talk", _talk)
    builder.add_edge(START, "talk")
    builder.add_edge("talk", END)
    graph = builder.compile(checkpointer=saver_used)
    config = {"configurable": {"thread_id": "chat"}}
    for turn in range(turns):
        graph.invoke({"messages": [f"ask {turn}"], "n": turn}, config, durability=SYNC)
    assert bool(spans.get_finished_spans()) is wrapped
    (plan,) = plan_threads(saver, RetentionPolicy(), ALL, FAR)
    return plan


def _rows_total(plan: ThreadPlan) -> int:
    return (
        sum(plan.channel_bytes.values())
        + sum(plan.write_bytes.values())
        + plan.values_not_broken_down
        + plan.checkpoint_overhead
    )


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapped", "bare"])
@pytest.mark.parametrize("store", STORES)
def test_channel_rows_sum_to_the_threads_bytes(store: str, wrapped: bool, request: Any) -> None:
    plan = write_chat(request.getfixturevalue(store), wrapped)
    assert plan.bytes > 0 and plan.checkpoint_overhead >= 0
    assert _rows_total(plan) == plan.bytes


@pytest.mark.parametrize(
    ("store", "wrapped"),
    [
        ("sqlite_saver", True),
        ("postgres_saver", True),
        ("postgres_saver", False),
        ("redis_saver", True),
    ],
    ids=["sqlite-wrapped", "postgres-wrapped", "postgres-bare", "redis-wrapped"],
)
def test_the_big_messages_channel_is_the_largest_row(
    store: str, wrapped: bool, request: Any
) -> None:
    """Its values, inline (SQLite: split by the stored sizes) or blobs (PostgreSQL), are
    attributed to it: the largest of every row, most of the thread's bytes."""
    plan = write_chat(request.getfixturevalue(store), wrapped)
    rows = {
        **{f"values {c}": b for c, b in plan.channel_bytes.items()},
        **{f"writes {c}": b for c, b in plan.write_bytes.items()},
        "not broken down": plan.values_not_broken_down,
        "overhead": plan.checkpoint_overhead,
    }
    assert max(rows, key=lambda k: rows[k]) == "values messages"
    assert plan.channel_bytes["messages"] > plan.bytes / 2
    assert 0 < plan.channel_bytes["n"] < plan.channel_bytes["messages"] / 20
    assert plan.values_not_broken_down == 0


def test_sqlite_values_written_bare_are_not_broken_down(sqlite_saver: Any) -> None:
    """Without the wrapper's stored sizes, SQLite's inline values go to one row, not lost."""
    plan = write_chat(sqlite_saver, wrapped=False)
    assert plan.channel_bytes == {}
    assert plan.values_not_broken_down > plan.bytes / 2


def test_cli_shows_values_and_pending_writes_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = tmp_path / "chat.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    plan = write_chat(saver, wrapped=True)
    conn.close()
    code, view = run_cli(["retention", str(path), "--json"], capsys)
    assert code == 0
    assert view["channels"][0]["name"] == "messages"
    assert view["channels"][0]["bytes"] == plan.channel_bytes["messages"]
    assert {w["name"] for w in view["writes"]} >= {"messages", "n"}
    rows = view["channels"] + view["writes"] + [view["checkpoint_overhead"]]
    assert view["values_not_broken_down"] is None
    assert sum(r["bytes"] for r in rows) == view["bytes"]
    _, out = run_cli(["retention", str(path)], capsys)
    assert "values of messages" in out and "pending writes to messages" in out
