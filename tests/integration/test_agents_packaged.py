"""The wrapper on the packaged agents teams install (`packaged_agents.py`): deepagents'
`create_deep_agent`, `langgraph_supervisor.create_supervisor` and `langgraph_swarm.create_swarm`,
on real savers and the real OpenTelemetry SDK, in the spirit of `test_agents.py` (whose
helpers it reuses): every expectation comes from LangGraph itself (its stream of tasks and
checkpoints, `get_state`, `get_state_history`) or from the tools' own side-effect ledgers,
never from the library's output.

How these agents checkpoint (measured on deepagents 0.7.32, langgraph-supervisor 0.0.31,
langgraph-swarm 0.1.0, langgraph 1.2.24):

- deepagents: the main agent is a `create_agent` graph (nodes ``model``, ``tools`` and
  middleware nodes such as ``PatchToolCallsMiddleware.before_agent``; its model's messages are
  named after the graph, ``deep_support``) whose ``messages`` is a
  `DeltaChannel`: its root checkpoints hold no ``messages`` in ``channel_values``, only the
  writes do. The sub-agent is a separate compiled graph *invoked inside the `task` tool call*
  (``subagent.invoke(...)`` in deepagents.middleware.subagents), and it inherits the parent's
  checkpointer, so its checkpoints are in the same thread under the namespace of the tool
  task that ran it: ``tools:<task id>``. Its ``messages`` is a plain channel (the value is in
  ``channel_values``), and its tool messages (`issue_refund`) live only there; the main agent
  gets one ``ToolMessage`` (``task``) carrying the sub-agent's last answer. deepagents' ``files``
  is a `DeltaChannel` in both graphs (``counters_since_delta_snapshot`` in the metadata).
  Under durability ``exit``, the first run on a thread (and each sub-agent run) of a graph
  with a `DeltaChannel` stores an empty stub checkpoint first (metadata ``{"step": -2}``, no
  source, no parent: the anchor of the delta writes) and then the run's one checkpoint as its
  child; the stream does not emit the stub.
- langgraph-supervisor: the root graph has nodes ``supervisor``, ``researcher``, ``refunds``;
  each is a `create_react_agent` subgraph checkpointed under ``<node>:<task id>``, the
  supervisor included (its handoff tools end its subgraph with a ``Command(graph=PARENT)``, so
  its namespace stops at the checkpoint scheduling ``tools``). The workers' tool messages
  (`lookup`, `issue_refund`) live only in their namespaces: with the default
  ``output_mode="last_message"`` the root gets the worker's last answer and the handoff-back
  messages; with ``output_mode="full_history"`` (shape ``supervisor_full``) the workers' whole
  histories, tool messages included, are in the root too.
- langgraph-swarm: root nodes ``alice`` and ``bob`` (subgraphs under ``alice:<task id>`` /
  ``bob:<task id>``) and a root ``active_agent`` channel; the whole history of each agent
  (tool messages included) is also written back to the root ``messages``.
- A subgraph checkpoint's ``metadata["parents"]`` is ``{"": <root checkpoint id>}``: the root
  checkpoint whose tasks ran the subgraph (for deepagents, the root checkpoint scheduling the
  ``tools`` task of the `task` call).
- A fork of the root re-runs the sub-agents under new task ids (new namespaces, e.g.
  ``refunds:<new id>``), after a ``source=fork`` copy of the root checkpoint. Invoking the root
  graph with a *sub-agent's* checkpoint config (``checkpoint_ns`` + ``checkpoint_id``) forks
  nothing: it runs no task and the ledger does not grow, so only root checkpoints are forked
  here (the sub-agents re-run inside those forks).

Delegation and handoff tools (`task`, ``transfer_to_*``) and `lookup` are declared repeatable
(`packaged_agents.REPEATABLE`); the side effects are `issue_refund` and `notify`.

Matrix (kept under about three minutes on two cores): the per-run checks on every shape x
{SqliteSaver: durability sync via invoke, async via stream, exit via stream;
AsyncSqliteSaver: async via ainvoke, sync via astream; PostgresSaver: async via invoke;
AsyncPostgresSaver: async via ainvoke}; the app's own span as root on SqliteSaver and
AsyncSqliteSaver; interrupts (in a sub-agent's tool, and deepagents' ``interrupt_on``) on
SqliteSaver (sync) and AsyncSqliteSaver (async); the clean-thread checks (online, offline,
``langgraph-otel diverge``) on every shape x the four savers; forks from every checkpoint on
SqliteSaver (sync) and AsyncSqliteSaver (async); departures on SqliteSaver; delta channels and
trace counts of the deep agent on SqliteSaver and AsyncSqliteSaver; a SIGKILL in a subprocess
on a SQLite file (SqliteSaver + invoke, or AsyncSqliteSaver + ainvoke) for every shape. The
module takes about one minute on this machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.types import Command

import agents
import packaged_agents as pa
from helpers import OTel
from langgraph.checkpoint.otel import names, uninstrument
from langgraph.checkpoint.otel.analysis.detectors import DivergencePolicy, divergences
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, digest_value, hash_value
from langgraph.checkpoint.otel.analysis.records import history_records
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.analysis.text_bounds import repr_bytes
from langgraph.checkpoint.otel.export.otlp_json import read_spans
from langgraph.checkpoint.otel.inspector.cli import main as inspector
from suite_paths import APPS
from test_agents import (
    Driver,
    Run,
    Saver,
    Step,
    View,
    bare_saver,
    check_metadata,
    check_nodes,
    check_one_trace,
    check_resumes,
    check_runs,
    divergence_events,
    history_checkpoint_nodes,
    instrumented,
    library_spans,
    named,
    play,
    play_step,
    view,
)

POLICY = DivergencePolicy(repeatable_tools=pa.REPEATABLE)
SHAPES = tuple(pa.BUILDERS)
ASYNC_KINDS = frozenset({"async_sqlite", "async_postgres"})
SQLITE_FILES = {"sqlite": "checkpoints.sqlite", "async_sqlite": "async.sqlite"}
"""The file `test_agents.bare_saver` opens for each SQLite kind (in `tmp_path`)."""


def ask(text: str = pa.QUESTION) -> Callable[[], Any]:
    return lambda: agents.question(text)


@contextlib.asynccontextmanager
async def saver_of(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Saver]:
    """A real, set-up saver: `test_agents.bare_saver`'s kinds and ``async_postgres``."""
    if kind != "async_postgres":
        async with bare_saver(kind, tmp_path, request) as saver:
            yield saver
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    url: str = request.getfixturevalue("postgres_db")
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        yield saver


def source_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The inspector's ``-s`` source for the database `saver_of(kind)` opened."""
    if kind in SQLITE_FILES:
        return f"sqlite:///{tmp_path / SQLITE_FILES[kind]}"
    url: str = request.getfixturevalue("postgres_db")
    return url


# --------------------------------------------------------------------------------------------
# findings, online and offline
# --------------------------------------------------------------------------------------------


def online(spans: Iterable[View]) -> list[tuple[Any, Any, Any]]:
    """(kind, node, actual) of the `langgraph.divergence` events, sorted."""
    return sorted(
        (
            e.get(names.DIVERGENCE_KIND),
            e.get(names.DIVERGENCE_NODE),
            e.get(names.DIVERGENCE_ACTUAL),
        )
        for e in divergence_events(spans)
    )


def offline(stored: Sequence[Any], policy: DivergencePolicy = POLICY) -> list[tuple[Any, ...]]:
    """(kind, node, actual) of `divergences` over the records of every checkpoint of the
    thread, all namespaces (root and sub-agents), sorted."""
    return sorted((f.kind, f.node, f.actual) for f in divergences(history_records(stored), policy))


def _ns_summary(stored: Sequence[Any]) -> dict[str, int]:
    return dict(
        Counter(str(t.config["configurable"]["checkpoint_ns"]).split(":")[0] for t in stored)
    )


def check_online_is_offline(spans: Sequence[View], stored: Sequence[Any], what: str) -> None:
    on, off = online(spans), offline(stored)
    assert on == off, (
        f"{what}: the findings online (langgraph.divergence events) and offline (divergences "
        f"over history_records of all {len(stored)} checkpoints, namespaces "
        f"{_ns_summary(stored)}) differ:\n  online:  {on}\n  offline: {off}"
    )


def repeated_side_effects(ledger: Sequence[tuple[str, str]]) -> set[str]:
    """Side-effecting tools the ledger shows done more than once with the same argument."""
    return {name for (name, _), n in Counter(ledger).items() if n > 1 and name in pa.SIDE_EFFECTS}


# --------------------------------------------------------------------------------------------
# scenarios
# --------------------------------------------------------------------------------------------

SCENARIO = (
    Step(ask(), "error"),  # `issue_refund` (inside a sub-agent) fails once
    Step(None, "finished", "error"),
    Step(ask("Thanks!"), "finished", "continue"),
)
CLEAN = (Step(ask(), "finished"), Step(ask("Thanks!"), "finished", "continue"))

RUN_MATRIX = [
    # (saver kind, durability, stream): stream runs use stream / astream with the task and
    # checkpoint events (`test_agents.Driver`), the others invoke / ainvoke
    ("sqlite", "sync", False),
    ("sqlite", "async", True),
    ("sqlite", "exit", True),
    ("async_sqlite", "async", False),
    ("async_sqlite", "sync", True),
    ("postgres", "async", False),
    ("async_postgres", "async", False),
]


async def with_exit_stubs(driver: Driver, runs: Sequence[Run]) -> list[Run]:
    """`runs` with the checkpoint events LangGraph's stream leaves out: under durability
    ``exit`` a graph with a `DeltaChannel` (deepagents' messages), on a thread with no stored
    checkpoint yet, first stores an empty stub (metadata ``{"step": -2}``, no source: the
    anchor of the run's delta writes, `_put_exit_delta_writes` in langgraph/pregel/_loop.py)
    and then the run's one checkpoint as its child. The stub applies no task's writes: its
    event goes first in the run that stored it, so the run's tasks count for its last."""
    bare = uninstrument(driver.saver)
    listed = await driver.listing(bare, agents.thread(runs[0].thread_id))
    stubs = {
        str(t.checkpoint["id"])
        for t in listed
        if "source" not in t.metadata and t.metadata.get("step") == -2
    }
    out = []
    for run in runs:
        extra = [
            {
                "type": "checkpoint",
                "ns": p.ns,
                "id": checkpoint_id,
                "next": [],
                "source": None,
                "step": -2,
            }
            for p in named(run.spans, names.SPAN_PUT)
            if (checkpoint_id := str(p.attributes.get(names.CHECKPOINT_ID))) in stubs
        ]
        out.append(dataclasses.replace(run, events=[*extra, *run.events]))
    return out


def build(shape: str, saver: Saver | None, effects: pa.Effects | None = None, **kw: Any) -> Any:
    return pa.BUILDERS[shape](saver, effects=effects or pa.Effects(), **kw)


# --------------------------------------------------------------------------------------------
# 0. the checkpoint layout the module docstring describes (LangGraph alone, no library)
# --------------------------------------------------------------------------------------------

SUB_AGENT_PLACES = {
    "deep": {"tools"},
    "supervisor": {"supervisor", "researcher", "refunds"},
    "supervisor_full": {"supervisor", "researcher", "refunds"},
    "swarm": {"alice", "bob"},
}
"""The root nodes under whose task namespaces (``<node>:<task id>``) each shape checkpoints
its sub-agents."""
REFUND_PLACE = {
    "deep": "tools",
    "supervisor": "refunds",
    "supervisor_full": "refunds",
    "swarm": "bob",
}
"""Where `issue_refund` runs."""


def _tool_names(values: dict[str, Any]) -> set[str]:
    return {str(m.name) for m in values.get("messages", []) if isinstance(m, ToolMessage)}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_checkpoint_layout_of_the_packaged_agents(shape: str) -> None:
    """What the module docstring says about namespaces, ``messages`` channels, where the
    sub-agents' tool messages live, ``metadata["parents"]``, and forks (sub-agents re-run
    under new namespaces; a sub-agent's checkpoint config forks nothing)."""
    from langgraph.channels.delta import DeltaChannel
    from langgraph.checkpoint.memory import InMemorySaver

    saver, effects = InMemorySaver(), pa.Effects()
    graph = build(shape, saver, effects)
    graph.invoke(agents.question(pa.QUESTION), agents.thread("t"))
    tuples = list(saver.list(agents.thread("t")))
    root = {
        str(t.checkpoint["id"]): t
        for t in tuples
        if t.config["configurable"]["checkpoint_ns"] == ""
    }
    subs = [t for t in tuples if t.config["configurable"]["checkpoint_ns"] != ""]
    places = {_place(str(t.config["configurable"]["checkpoint_ns"])) for t in subs}
    assert places == SUB_AGENT_PLACES[shape]
    assert isinstance(graph.channels["messages"], DeltaChannel) == (shape == "deep")
    with_messages = [t for t in root.values() if "messages" in t.checkpoint["channel_values"]]
    if shape == "deep":
        assert not with_messages, "a DeltaChannel stores no value in the root checkpoints"
    else:
        assert with_messages
    assert all(
        "messages" in t.checkpoint["channel_values"] for t in subs if t.metadata["step"] >= 0
    )
    # parents: the root checkpoint whose tasks ran the sub-agent
    for t in subs:
        (parent,) = t.metadata["parents"].values()
        assert set(t.metadata["parents"]) == {""} and parent in root
        ns = str(t.config["configurable"]["checkpoint_ns"])
        task_id = ns.split(":", 1)[1]
        snapshot = graph.get_state(agents.thread("t", checkpoint_id=parent))
        assert [task.name for task in snapshot.tasks if task.id == task_id] == [_place(ns)]
    # issue_refund's tool message: in its sub-agent's namespace; in the root only for the
    # swarm and the full-history supervisor
    latest = graph.get_state(agents.thread("t")).values
    refund_ns = [
        t
        for t in subs
        if _place(str(t.config["configurable"]["checkpoint_ns"])) == REFUND_PLACE[shape]
    ]
    assert any("issue_refund" in _tool_names(t.checkpoint["channel_values"]) for t in refund_ns)
    assert ("issue_refund" in _tool_names(latest)) == (shape in ("swarm", "supervisor_full"))
    if shape == "deep":
        assert "task" in _tool_names(latest)

    # a sub-agent's checkpoint config given to the root graph runs nothing
    count, done = len(tuples), list(effects.ledger)
    (sub_start,) = [t for t in refund_ns if t.metadata["step"] == 0][:1]
    graph.invoke(None, sub_start.config)
    assert len(list(saver.list(agents.thread("t")))) == count and effects.ledger == done, (
        "a sub-agent's checkpoint config forks nothing"
    )
    # a fork of the root re-runs the sub-agents under new task ids: new namespaces
    first_step = min(root.values(), key=lambda t: t.metadata["step"])
    graph.invoke(None, first_step.config)
    after = list(saver.list(agents.thread("t")))
    old_ns = {t.config["configurable"]["checkpoint_ns"] for t in subs}
    new_ns = {t.config["configurable"]["checkpoint_ns"] for t in after} - old_ns - {""}
    assert {_place(str(ns)) for ns in new_ns} == SUB_AGENT_PLACES[shape]
    assert Counter(effects.ledger) == Counter(done * 2)


# --------------------------------------------------------------------------------------------
# 1. per run: traces, resumes, nodes, metadata
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("saver_kind", "durability", "stream"), RUN_MATRIX)
@pytest.mark.parametrize("shape", SHAPES)
async def test_every_run_of_every_packaged_agent(
    shape: str,
    saver_kind: str,
    durability: str,
    stream: bool,
    otel: OTel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """`issue_refund` fails inside the sub-agent, the run is resumed, then a new turn: each
    run is one trace under invoke_workflow, each resume (root and sub-agent) is linked to its
    writer, every span names the node LangGraph says ran, the app reads exactly the metadata
    of the bare saver, and the findings online and offline are the same: none, since the
    ledger shows no side effect done twice."""
    async with saver_of(saver_kind, tmp_path, request) as inner:
        is_async = saver_kind in ASYNC_KINDS
        saver = instrumented(inner, otel, divergence=POLICY)
        effects = pa.Effects(failing={"issue_refund"})
        driver = Driver(build(shape, saver, effects), saver, is_async, stream)
        runs = await play(driver, otel, "t-wrapped", SCENARIO, durability)
        spans = check_runs(runs, driver.graph.name)
        await check_nodes(driver, await with_exit_stubs(driver, runs))
        resumed = {_place(s.ns) for s in named(runs[1].spans, names.SPAN_RESUME) if s.ns}
        assert resumed == {REFUND_PLACE[shape]}, (
            f"the error resume resumes the sub-agent whose issue_refund failed "
            f"({REFUND_PLACE[shape]}); sub-agent resume spans at {sorted(resumed)}"
        )

        bare_effects = pa.Effects(failing={"issue_refund"})
        bare = Driver(build(shape, inner, bare_effects), inner, is_async, stream)
        await play(bare, None, "t-bare", SCENARIO, durability)
        stored = await check_metadata(driver, bare, "t-wrapped", "t-bare")
        assert effects.ledger == bare_effects.ledger and effects.count("issue_refund") == 1, (
            f"side effects: wrapped {effects.ledger}, bare {bare_effects.ledger}"
        )

        check_online_is_offline(spans, stored, f"{shape} on {saver_kind}")
        repeated = repeated_side_effects(effects.ledger)
        findings = online(spans)
        assert {f[2] for f in findings if f[0] == "duplicate_tool_call"} == repeated, (
            f"findings {findings}; the ledger shows {sorted(repeated) or 'nothing'} done twice"
        )
        assert [f for f in findings if f[0] != "duplicate_tool_call"] == [], findings


@pytest.mark.parametrize("saver_kind", ["sqlite", "async_sqlite"])
@pytest.mark.parametrize("shape", SHAPES)
async def test_an_app_span_is_the_root_of_every_packaged_agent_span(
    shape: str, saver_kind: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """With the app's own span current around the run there is no invoke_workflow span: every
    library span, the sub-agents' (and those of worker threads) included, is under it."""
    async with saver_of(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel, divergence=POLICY)
        driver = Driver(
            build(shape, saver, pa.Effects(failing={"issue_refund"})),
            saver,
            saver_kind in ASYNC_KINDS,
        )
        runs = await play(driver, otel, "t-app", SCENARIO, "async", app_span="agent-app")
        for run in runs:
            (app,) = [view(s) for s in run.raw if s.name == "agent-app"]
            check_one_trace(run, driver.graph.name, app_span=app)
        await check_nodes(driver, runs)
        spans = [s for run in runs for s in run.spans]
        check_online_is_offline(spans, await driver.stored(agents.thread("t-app")), shape)
        assert online(spans) == [], online(spans)


@dataclass(frozen=True)
class Interrupting:
    shape: str
    effects: dict[str, Any]
    """`pa.Effects` options (``approval``: `issue_refund` calls ``interrupt()`` first)."""
    build: dict[str, Any]
    """Builder options (deepagents' own ``interrupt_on``)."""
    answer: Any
    """The human's answer: ``Command(resume=answer)``."""
    place: str | None
    """The root node of the sub-agent that stopped (None: the root agent stopped)."""


INTERRUPTING = {
    "deep-subagent-tool": Interrupting("deep", {"approval": True}, {}, "yes", "tools"),
    "deep-interrupt_on": Interrupting(
        "deep", {}, {"interrupt_on": {"notify": True}}, {"decisions": [{"type": "approve"}]}, None
    ),
    "supervisor-worker-tool": Interrupting("supervisor", {"approval": True}, {}, "yes", "refunds"),
    "swarm-agent-tool": Interrupting("swarm", {"approval": True}, {}, "yes", "bob"),
}


@pytest.mark.parametrize(
    ("saver_kind", "durability"), [("sqlite", "sync"), ("async_sqlite", "async")]
)
@pytest.mark.parametrize("case", list(INTERRUPTING))
async def test_an_interrupt_resumes_as_interrupt(
    case: str,
    saver_kind: str,
    durability: str,
    otel: OTel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """`interrupt()` in a sub-agent's `issue_refund` (or deepagents' own ``interrupt_on`` for
    the main agent's `notify`) stops the whole run; the human's answer resumes it as
    `interrupt`, a stopped sub-agent's resume linked to its own checkpoint writer; nodes and
    metadata as in the per-run checks, and no finding online or offline (each side effect
    ran once)."""
    spec = INTERRUPTING[case]
    steps = (
        Step(ask(), "interrupted"),
        Step(lambda: Command(resume=spec.answer), "finished", "interrupt"),
        Step(ask("Thanks!"), "finished", "continue"),
    )
    async with saver_of(saver_kind, tmp_path, request) as inner:
        is_async = saver_kind in ASYNC_KINDS
        saver = instrumented(inner, otel, divergence=POLICY)
        effects = pa.Effects(**spec.effects)
        driver = Driver(build(spec.shape, saver, effects, **spec.build), saver, is_async)
        runs = await play(driver, otel, "t-wrapped", steps, durability)
        spans = check_runs(runs, driver.graph.name)
        await check_nodes(driver, runs)
        resumed = {_place(s.ns) for s in named(runs[1].spans, names.SPAN_RESUME) if s.ns != ""}
        assert resumed == ({spec.place} if spec.place else set()), (
            f"resume spans of sub-agents at {sorted(resumed)}; the run stopped in "
            f"{spec.place or 'the root agent'}"
        )
        bare_driver = build(spec.shape, inner, pa.Effects(**spec.effects), **spec.build)
        bare = Driver(bare_driver, inner, is_async)
        await play(bare, None, "t-bare", steps, durability)
        stored = await check_metadata(driver, bare, "t-wrapped", "t-bare")
        assert sorted(effects.ledger) == sorted(set(effects.ledger)) and effects.ledger
        check_online_is_offline(spans, stored, f"{case} interrupted")
        assert online(spans) == [], online(spans)


# --------------------------------------------------------------------------------------------
# 2. clean threads: no finding online, offline, or from the CLI
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("saver_kind", ["sqlite", "async_sqlite", "postgres", "async_postgres"])
@pytest.mark.parametrize("shape", SHAPES)
async def test_a_clean_thread_has_no_finding(
    shape: str,
    saver_kind: str,
    otel: OTel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A thread never resumed nor forked (a run, then a new turn): no `langgraph.divergence`
    event, no finding from `divergences(history_records(...))` over all its checkpoints (root
    and sub-agent namespaces: a sub-agent's checkpoints are no branch of the root's), and
    ``langgraph-otel diverge THREAD -s <the database>`` exits 0."""
    async with saver_of(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel, divergence=POLICY)
        effects = pa.Effects()
        driver = Driver(build(shape, saver, effects), saver, saver_kind in ASYNC_KINDS)
        runs = await play(driver, otel, "t-clean", CLEAN, "async")
        spans = check_runs(runs, driver.graph.name)
        assert not repeated_side_effects(effects.ledger), effects.ledger
        assert online(spans) == [], f"findings on a clean thread: {online(spans)}"
        stored = await driver.stored(agents.thread("t-clean"))
        assert {str(t.config["configurable"]["checkpoint_ns"]) for t in stored} != {""}, (
            "the sub-agents' checkpoints are in the thread"
        )
        found = offline(stored)
        assert found == [], (
            f"offline findings on a clean thread ({len(stored)} checkpoints, namespaces "
            f"{_ns_summary(stored)}): {found}"
        )
    source = source_of(saver_kind, tmp_path, request)
    capsys.readouterr()
    code = inspector(["diverge", "t-clean", "-s", source, "--json"])
    out = capsys.readouterr()
    assert code == 0, (
        f"langgraph-otel diverge t-clean -s {source} exited {code} on a clean thread:\n"
        f"{out.out}{out.err}"
    )


# --------------------------------------------------------------------------------------------
# 3. deterministic forks from every checkpoint: only the side effects done again
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("saver_kind", "durability"), [("sqlite", "sync"), ("async_sqlite", "async")]
)
@pytest.mark.parametrize("shape", SHAPES)
async def test_forks_from_every_checkpoint_find_only_the_side_effects_done_again(
    shape: str,
    saver_kind: str,
    durability: str,
    otel: OTel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """A finished thread (a run, then a new turn) forked from every root checkpoint but its
    last, then twice from one checkpoint, then from a checkpoint of a fork: every fork
    resumes as `fork` (linked to its writer), and its only findings are
    `duplicate_tool_call`s of the side-effecting tools the ledger shows it did again (in the
    root agent or inside a sub-agent, which a fork re-runs under a new namespace), online
    and offline alike."""
    async with saver_of(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel, divergence=POLICY)
        effects = pa.Effects()
        is_async = saver_kind in ASYNC_KINDS
        driver = Driver(build(shape, saver, effects), saver, is_async)
        runs = await play(driver, otel, "t-fork", CLEAN, durability)
        history = await driver.history(agents.thread("t-fork"))
        original = [s.config["configurable"]["checkpoint_id"] for s in history[1:]]
        steps = {s.config["configurable"]["checkpoint_id"]: s.metadata["step"] for s in history}
        assert len(original) >= 6, original
        wrong: list[str] = []
        done_again: set[str] = set()
        forks: list[tuple[str, set[str], set[str]]] = []
        """(label, side effects the ledger shows done again, checkpoints written) per fork."""

        async def fork_from(label: str, checkpoint_id: str) -> None:
            before = list(effects.ledger)
            earlier = [s for r in runs for s in r.spans]
            fork = {"checkpoint_id": checkpoint_id}
            run = await play_step(
                driver,
                otel,
                "t-fork",
                Step(None, "finished", "fork"),
                durability,
                configurable=fork,
            )
            check_one_trace(run, driver.graph.name)
            check_resumes(run, earlier)
            runs.append(run)
            again = {
                name
                for name, arg in effects.ledger[len(before) :]
                if name in pa.SIDE_EFFECTS and (name, arg) in before
            }
            done_again.update(again)
            written = {
                str(p.attributes.get(names.CHECKPOINT_ID)) for p in named(run.spans, names.SPAN_PUT)
            }
            forks.append((label, again, written))
            findings = online(run.spans)
            duplicates = {f[2] for f in findings if f[0] == "duplicate_tool_call"}
            others = [f for f in findings if f[0] != "duplicate_tool_call"]
            if duplicates != again or others:
                wrong.append(
                    f"{label}: the ledger shows {sorted(again) or 'nothing'} done again; "
                    f"online duplicate_tool_call {sorted(duplicates) or 'none'}, other findings "
                    f"{others or 'none'}"
                )

        for checkpoint_id in original:
            await fork_from(f"fork from step {steps[checkpoint_id]}", checkpoint_id)
        second = original[len(original) * 3 // 4]  # in the first turn, before its side effects
        await fork_from(f"second fork from step {steps[second]}", second)
        _latest, *older = await driver.history(agents.thread("t-fork"))
        on_forks = [
            s
            for s in older
            if s.config["configurable"]["checkpoint_id"] not in original
            and s.next
            and s.metadata.get("source") != "fork"
        ]
        assert on_forks, "fork branches store checkpoints with work left"
        deepest = min(on_forks, key=lambda s: s.metadata["step"])
        await fork_from(
            f"fork of a fork from step {deepest.metadata['step']}",
            deepest.config["configurable"]["checkpoint_id"],
        )
        assert done_again, "some fork re-ran a side effect"
        stored = await driver.stored(agents.thread("t-fork"))
        found = offline(stored)
        # offline, fork by fork: the findings revealed by the checkpoints each fork wrote
        by_checkpoint = divergences(history_records(stored), POLICY)
        for label, again, written in forks:
            revealed = [f for f in by_checkpoint if f.checkpoint_id in written]
            duplicates = {f.actual for f in revealed if f.kind == "duplicate_tool_call"}
            others = [
                (f.kind, f.node, f.actual) for f in revealed if f.kind != "duplicate_tool_call"
            ]
            if duplicates != again or others:
                wrong.append(
                    f"{label}: the ledger shows {sorted(again) or 'nothing'} done again; "
                    f"offline duplicate_tool_call {sorted(duplicates) or 'none'}, other "
                    f"findings {others or 'none'}"
                )
        assert not wrong, "\n".join(wrong)
        assert {f[2] for f in found if f[0] == "duplicate_tool_call"} == done_again, (
            f"offline findings {found}; the ledger shows {sorted(done_again)} done again"
        )
        assert [f for f in found if f[0] != "duplicate_tool_call"] == [], found
        check_online_is_offline([s for r in runs for s in r.spans], stored, f"{shape} forks")
        await check_nodes(driver, runs)


# --------------------------------------------------------------------------------------------
# 4. departures: a model that answers otherwise on a fork
# --------------------------------------------------------------------------------------------


def _content(message: BaseMessage) -> tuple[Any, ...]:
    """A message as behaviour, free of run-specific ids."""
    calls = tuple(
        (c["name"], json.dumps(c["args"], sort_keys=True))
        for c in getattr(message, "tool_calls", None) or ()
    )
    return (message.type, message.name, str(message.content), calls)


def _behaviour(snapshot: Any) -> tuple[Any, ...]:
    return tuple(_content(m) for m in snapshot.values.get("messages", []))


@dataclass(frozen=True)
class Departure:
    shape: str
    fork_at: Callable[[Any], bool]
    """Picks the root checkpoint to fork from (a StateSnapshot of the finished thread; the
    oldest of those it picks)."""
    change: Callable[[dict[str, agents.Script]], None]
    place: str
    """The root node whose subgraph (or, for `tools`, whose `task` call) the changed model is
    in; ``""`` for the root agent's own model."""


def _last(snapshot: Any) -> Any:
    messages = snapshot.values.get("messages", [])
    return messages[-1] if messages else None


def _asks_for(tool_name: str) -> Callable[[Any], bool]:
    def pick(snapshot: Any) -> bool:
        last = _last(snapshot)
        return (
            isinstance(last, AIMessage)
            and [c["name"] for c in last.tool_calls] == [tool_name]
            and bool(snapshot.next)
        )

    return pick


def _answered(tool_name: str) -> Callable[[Any], bool]:
    def pick(snapshot: Any) -> bool:
        last = _last(snapshot)
        return isinstance(last, ToolMessage) and last.name == tool_name and bool(snapshot.next)

    return pick


def _next_is(node: str) -> Callable[[Any], bool]:
    return lambda s: tuple(s.next) == (node,)


DECLINE = agents.Turn(f"I cannot refund {pa.ORDER}.")
DECLINE_AND_RETURN = agents.calls(("transfer_to_alice", {}))
"""bob hands back to alice without refunding."""
DEPARTURES: dict[str, Departure] = {
    # the sub-agent declines instead of calling issue_refund (fork: before the task call)
    "deep-subagent-declines": Departure(
        "deep", _asks_for("task"), lambda s: s["refunds"].change(0, DECLINE), "tools"
    ),
    # the main agent answers instead of emailing the customer (fork: after the task answer)
    "deep-root-skips-notify": Departure(
        "deep",
        _answered("task"),
        lambda s: s[pa.DEEP_NAME].change(2, agents.Turn(f"Refunded {pa.ORDER}.")),
        "",
    ),
    # the refunds worker declines (fork: the root checkpoint scheduling refunds)
    "supervisor-refunds-declines": Departure(
        "supervisor", _next_is("refunds"), lambda s: s["refunds"].change(0, DECLINE), "refunds"
    ),
    # the supervisor sends the researcher again instead of refunds (fork: after the researcher)
    "supervisor-routes-otherwise": Departure(
        "supervisor",
        lambda s: tuple(s.next) == ("supervisor",) and s.metadata["step"] > 0,
        lambda s: s["supervisor"].change(1, agents.calls(("transfer_to_researcher", {}))),
        "supervisor",
    ),
    # bob declines instead of refunding (fork: the root checkpoint scheduling bob)
    "swarm-bob-declines": Departure(
        "swarm", _next_is("bob"), lambda s: s["bob"].change(0, DECLINE_AND_RETURN), "bob"
    ),
}


def _place(ns: str) -> str:
    return ns.split(":")[0]


def _first_change(
    original: Sequence[Any], forked: Sequence[Any], by_id: dict[str, list[str]]
) -> tuple[int, list[str]] | None:
    """Where two branches (StateSnapshots oldest first, fork copies left out) first hold
    different messages, by LangGraph's history: (index, the nodes whose writes that checkpoint
    applies)."""
    for index, (a, b) in enumerate(zip(original, forked, strict=False)):
        if _behaviour(a) != _behaviour(b) or tuple(a.next) != tuple(b.next):
            return index, by_id[b.config["configurable"]["checkpoint_id"]]
    return None


@pytest.mark.parametrize("case", list(DEPARTURES))
async def test_a_model_that_answers_otherwise_on_a_fork_is_found(
    case: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A fork on which one model (the root's or a sub-agent's) answers otherwise: online and
    offline alike there is a `trajectory` or `state` finding naming a node LangGraph's
    history shows wrote the first changed checkpoint, in the changed model's own graph (the
    sub-agent's namespace, which the fork re-ran under a new task id) or in the root; and
    the only duplicate_tool_calls are side effects the ledger shows done again."""
    spec = DEPARTURES[case]
    scripts = pa.SCRIPTS[spec.shape]()
    async with saver_of("sqlite", tmp_path, request) as inner:
        saver = instrumented(inner, otel, divergence=POLICY)
        effects = pa.Effects()
        driver = Driver(build(spec.shape, saver, effects, scripts=scripts), saver, False)
        first = await play_step(driver, otel, "t-div", Step(ask()), "sync")
        history = await driver.history(agents.thread("t-div"))
        matches = [s for s in history if spec.fork_at(s)]
        assert matches, "the checkpoint to fork from"
        point = matches[-1]  # the oldest (the history is newest first)
        point_id = point.config["configurable"]["checkpoint_id"]
        spec.change(scripts)
        before = list(effects.ledger)
        forked = await play_step(
            driver,
            otel,
            "t-div",
            Step(None, "finished", "fork"),
            "sync",
            configurable={"checkpoint_id": point_id},
        )
        check_runs([first, forked], driver.graph.name)

        # what changed, from LangGraph's history: per place (root, sub-agent), the first
        # checkpoint of the fork whose messages (or next tasks) differ from the original's
        bare = uninstrument(saver)
        listing = list(bare.list(agents.thread("t-div")))
        namespaces = sorted({str(t.config["configurable"]["checkpoint_ns"]) for t in listing})
        snapshots: dict[str, list[Any]] = {}
        for ns in namespaces:
            snaps = list(driver.graph.get_state_history(agents.thread("t-div", checkpoint_ns=ns)))
            snapshots[ns] = sorted(snaps, key=lambda s: s.config["configurable"]["checkpoint_id"])
        by_id = history_checkpoint_nodes([s for snaps in snapshots.values() for s in snaps])
        first_ids = {
            p.attributes.get(names.CHECKPOINT_ID) for p in named(first.spans, names.SPAN_PUT)
        }
        fork_ids = {
            p.attributes.get(names.CHECKPOINT_ID) for p in named(forked.spans, names.SPAN_PUT)
        }

        def branch(ns: str, ids: set[Any]) -> list[Any]:
            return [
                s
                for s in snapshots[ns]
                if s.config["configurable"]["checkpoint_id"] in ids
                and s.metadata.get("source") != "fork"
            ]

        root_original = [
            s for s in branch("", first_ids) if s.config["configurable"]["checkpoint_id"] > point_id
        ]
        changed: dict[str, list[str]] = {}
        root_change = _first_change(root_original, branch("", fork_ids), by_id)
        if root_change is not None:
            changed[""] = root_change[1]
        if spec.place:
            old_ns = [ns for ns in namespaces if _place(ns) == spec.place and branch(ns, first_ids)]
            new_ns = [ns for ns in namespaces if _place(ns) == spec.place and branch(ns, fork_ids)]

            # the sub-agent run the fork re-did first: the first run's earliest one at that
            # place ran from a root checkpoint at or after the fork point (`parents`), and the
            # fork's earliest one
            def ran_from(ns: str, ids: set[Any]) -> str:
                return str(branch(ns, ids)[0].metadata["parents"][""])

            old = sorted(
                (ran_from(ns, first_ids), ns)
                for ns in old_ns
                if ran_from(ns, first_ids) >= point_id
            )
            new = sorted((ran_from(ns, fork_ids), ns) for ns in new_ns)
            assert old and new, (old_ns, new_ns)
            sub_change = _first_change(
                branch(old[0][1], first_ids), branch(new[0][1], fork_ids), by_id
            )
            assert sub_change is not None, "the changed model's sub-agent run is the same"
            changed[spec.place] = sub_change[1]
        assert changed, "LangGraph's history shows the fork changed something"
        acceptable = {node for nodes in changed.values() for node in nodes}
        if spec.place:
            acceptable.add(spec.place)  # the root node that ran the sub-agent

        stored = await driver.stored(agents.thread("t-div"))
        check_online_is_offline([*first.spans, *forked.spans], stored, case)
        findings = online(forked.spans)
        departures = [f for f in findings if f[0] in ("trajectory", "state")]
        named_right = [f for f in departures if set(str(f[1]).split(",")) & acceptable]
        assert named_right, (
            f"{case}: expected a trajectory or state finding naming one of {sorted(acceptable)} "
            f"(LangGraph's history: first changed checkpoint per place {changed}); "
            f"found {findings or 'nothing'}"
        )
        again = {
            name
            for name, arg in effects.ledger[len(before) :]
            if name in pa.SIDE_EFFECTS and (name, arg) in before
        }
        duplicates = {f[2] for f in findings if f[0] == "duplicate_tool_call"}
        assert duplicates == again, f"duplicate_tool_call {duplicates}, ledger shows {again} again"
        assert not [
            f for f in findings if f[0] not in ("trajectory", "state", "duplicate_tool_call")
        ]


# --------------------------------------------------------------------------------------------
# 5. deepagents' DeltaChannel messages: channel events, tool calls, state hashes, traces
# --------------------------------------------------------------------------------------------


def _describe(message: BaseMessage) -> str:
    """How a summary names a message: its type, with its tool calls or tool name."""
    calls = [c["name"] for c in getattr(message, "tool_calls", None) or ()]
    if calls:
        return f"{message.type}(tool_calls={','.join(calls)})"
    if message.type == "tool":
        return f"tool({message.name})"
    return message.type


def _added_summary(added: Sequence[BaseMessage]) -> str:
    word = "message" if len(added) == 1 else "messages"
    return f"+{len(added)} {word}: " + ", ".join(_describe(m) for m in added[:5])


def _events(span: View, name: str) -> list[dict[str, Any]]:
    return [attrs for event, attrs in span.events if event == name]


@pytest.mark.parametrize("saver_kind", ["sqlite", "async_sqlite"])
async def test_deep_agent_delta_messages_are_seen(
    saver_kind: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """deepagents' ``messages`` is a `DeltaChannel` (no value in the stored root checkpoints):
    on every root put whose checkpoint LangGraph gave a new ``messages`` version (which is then
    in its ``channels_changed``) there is a
    ``langgraph.channel`` event for it whose hash is that of the materialised messages
    (`get_state(checkpoint).values["messages"]`), whose size is the bytes the step added and
    whose summary names what the step added (docs/telemetry.md, "Delta channels");
    ``langgraph.tool_call`` events for the calls a model step asked for; the stored channel
    (hash, size) and the put's state size are those of the logical value; and the put's
    state hash is the hash of the materialised state
    (different for different numbers of messages)."""
    async with saver_of(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel, divergence=POLICY)
        is_async = saver_kind in ASYNC_KINDS
        driver = Driver(build("deep", saver), saver, is_async)
        run = await play_step(driver, otel, "t-delta", Step(ask()), "sync")
        check_one_trace(run, driver.graph.name)
        bare = uninstrument(saver)
        stored = {
            str(t.checkpoint["id"]): t
            for t in await driver.listing(bare, agents.thread("t-delta", checkpoint_ns=""))
        }
        assert not [i for i, t in stored.items() if "messages" in t.checkpoint["channel_values"]], (
            "deepagents' messages is a DeltaChannel: no stored root checkpoint holds its value"
        )
        puts = [p for p in named(run.spans, names.SPAN_PUT) if p.ns == ""]
        problems: list[str] = []
        changed = 0
        hashes: dict[int, set[str]] = {}
        for put in puts:
            checkpoint_id = str(put.attributes[names.CHECKPOINT_ID])
            step = put.attributes.get(names.STEP)
            snapshot = await driver.state(agents.thread("t-delta", checkpoint_id=checkpoint_id))
            messages = list(snapshot.values.get("messages", []))
            parent_id = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            previous: list[Any] = []
            if parent_id:
                parent = await driver.state(agents.thread("t-delta", checkpoint_id=parent_id))
                previous = list(parent.values.get("messages", []))
            values = dict(stored[checkpoint_id].checkpoint["channel_values"])
            if messages:
                values["messages"] = messages
            want_state = combine_state_hash(
                {name: hash_value(value, fallback=repr_bytes) for name, value in values.items()}
            )
            if put.attributes.get(names.STATE_HASH) != want_state:
                problems.append(
                    f"step {step}: state_hash {put.attributes.get(names.STATE_HASH)}, expected "
                    f"{want_state} (the hash of the materialised state, {len(messages)} messages)"
                )
            want_size = sum(digest_value(v, fallback=repr_bytes).size for v in values.values())
            if put.attributes.get(names.SIZE_BYTES) != want_size:
                problems.append(
                    f"step {step}: size_bytes {put.attributes.get(names.SIZE_BYTES)}, expected "
                    f"{want_size} (the size of the materialised state, {len(messages)} messages)"
                )
            hashes.setdefault(len(messages), set()).add(str(put.attributes.get(names.STATE_HASH)))
            # LangGraph's own account: the checkpoint's messages version moved from its parent's
            versions = stored[checkpoint_id].checkpoint.get("channel_versions", {})
            parent_versions = (
                stored[parent_id].checkpoint.get("channel_versions", {})
                if parent_id in stored
                else {}
            )
            if versions.get("messages") == parent_versions.get("messages"):
                continue
            changed += 1
            if "messages" not in put.attributes.get(names.CHANNELS_CHANGED, ()):
                problems.append(
                    f"step {step}: LangGraph moved the messages version ({len(previous)} -> "
                    f"{len(messages)} messages), channels_changed "
                    f"{list(put.attributes.get(names.CHANNELS_CHANGED, ()))}"
                )
            channel = [
                e
                for e in _events(put, names.EVENT_CHANNEL)
                if e.get(names.CHANNEL_NAME) == "messages"
            ]
            if len(channel) != 1:
                problems.append(
                    f"step {step}: messages changed ({len(previous)} -> {len(messages)} "
                    f"messages), {len(channel)} langgraph.channel events for it"
                )
                continue
            (event,) = channel
            if event.get(names.CHANNEL_HASH) != hash_value(messages):
                problems.append(
                    f"step {step}: channel hash is not that of the {len(messages)} messages"
                )
            # docs/telemetry.md: a delta channel's event counts the bytes the step added to it
            added_bytes = digest_value(messages).size - (
                digest_value(previous).size if previous else 0
            )
            if event.get(names.CHANNEL_SIZE_BYTES) != added_bytes:
                problems.append(
                    f"step {step}: messages size_bytes {event.get(names.CHANNEL_SIZE_BYTES)}, "
                    f"expected {added_bytes}: what the step added ({len(previous)} -> "
                    f"{len(messages)} messages)"
                )
            # ... and the stored channel sizes and the state size are of the logical value
            telemetry = read_stored_telemetry(stored[checkpoint_id].metadata)
            want_stored = (hash_value(messages), digest_value(messages).size)
            got_stored = telemetry.channels.get("messages") if telemetry else None
            if got_stored is None or tuple(got_stored) != want_stored:
                problems.append(
                    f"step {step}: stored messages (hash, size) {got_stored}, expected "
                    f"{want_stored}: those of the {len(messages)} materialised messages"
                )
            added = messages[len(previous) :]
            if previous and added and event.get(names.CHANNEL_SUMMARY) != _added_summary(added):
                problems.append(
                    f"step {step}: summary {event.get(names.CHANNEL_SUMMARY)!r}, expected "
                    f"{_added_summary(added)!r}"
                )
            want_calls = sorted(
                (c["name"], c["id"])
                for m in added
                if isinstance(m, AIMessage)
                for c in m.tool_calls
            )
            got_calls = sorted(
                (e.get(names.TOOL_NAME), e.get(names.TOOL_CALL_ID))
                for e in _events(put, names.EVENT_TOOL_CALL)
            )
            if got_calls != want_calls:
                problems.append(f"step {step}: tool_call events {got_calls}, expected {want_calls}")
        shared = [
            (n, m, sorted(hashes[n] & hashes[m]))
            for n, m in itertools.combinations(sorted(hashes), 2)
            if hashes[n] & hashes[m]
        ]
        if shared:
            problems.append(
                "puts holding different numbers of messages share a state hash "
                f"(messages, messages, hashes): {shared}"
            )
        assert not problems, "\n".join(problems)
        assert changed >= 4, "root checkpoints whose messages LangGraph changed"


@pytest.mark.parametrize("saver_kind", ["sqlite", "async_sqlite"])
async def test_deep_agent_state_reads_are_one_trace_each(
    saver_kind: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Outside any run, `get_state` (latest, and at a checkpoint) and `get_state_history` of a
    deep-agent thread each make one trace (their `get_delta_channel_history` reads included)."""
    async with saver_of(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel)
        driver = Driver(build("deep", saver), saver, saver_kind in ASYNC_KINDS)
        await play_step(driver, otel, "t-read", Step(ask()), "sync")
        history = await driver.history(agents.thread("t-read"))
        middle = history[len(history) // 2].config["configurable"]["checkpoint_id"]
        calls: dict[str, Callable[[], Any]] = {
            "get_state": lambda: driver.state(agents.thread("t-read")),
            "get_state(checkpoint_id)": lambda: driver.state(
                agents.thread("t-read", checkpoint_id=middle)
            ),
            "get_state_history": lambda: driver.history(agents.thread("t-read")),
        }
        problems = []
        for label, call in calls.items():
            otel.clear()
            await call()
            spans = library_spans(otel.spans())
            traces = Counter(s.trace_id for s in spans)
            if len(traces) != 1:
                problems.append(
                    f"{label}: {len(traces)} traces ({sorted(Counter(s.name for s in spans).items())})"
                )
        assert not problems, "each read is one trace:\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------
# 6. a real SIGKILL inside a side-effecting tool, resumed by another process
# --------------------------------------------------------------------------------------------

CRASH_APP = APPS / "packaged_crash_app.py"
CRASH_TIMEOUT_S = 90


def _app(
    shape: str, db: Path, spans: Path, instance: str, action: str, effects: Path, *extra: str
) -> list[str]:
    command = [sys.executable, str(CRASH_APP), shape, str(db), str(spans), instance, action]
    return [*command, "t-crash", str(effects), *extra]


CRASHES = [
    ("deep", "issue_refund", "sync"),  # inside the sub-agent run by `task` (plain messages)
    ("deep", "notify", "sync"),  # in the main agent, whose messages are a DeltaChannel
    ("deep", "notify", "async"),
    ("supervisor", "issue_refund", "sync"),  # inside the refunds worker
    ("supervisor", "issue_refund", "async"),
    ("swarm", "issue_refund", "sync"),  # inside bob
]
"""(shape, the tool killed, the API: invoke on SqliteSaver or ainvoke on AsyncSqliteSaver)."""
ARGUMENT = {"issue_refund": pa.ORDER, "notify": pa.CUSTOMER}


@pytest.mark.parametrize(("shape", "killed", "api"), CRASHES)
def test_sigkill_inside_a_side_effect_resumes_as_crash_and_marks_the_retry(
    shape: str, killed: str, api: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Process A is killed (SIGKILL) inside `killed` (decorated with `record_tool_start`), right
    after its side effect; process B resumes the thread with ``invoke(None)``: its run is one
    trace, a `crash` resume linked to the put span that wrote the checkpoint it loaded (the
    sub-agents' resumes too), the call is retried (the ledger holds it twice) and the retried
    call's ``langgraph.tool.start`` span says ``langgraph.tool.retry=true`` with the key of
    A's (and no other start is a retry). The findings of B's run online are those offline
    over the database (all namespaces); ``langgraph-otel diverge`` over the database and both
    span files finds exactly the side effects the ledger shows started twice, as
    ``duplicate_tool_call`` (from the two start records)."""
    db, effects = tmp_path / "db.sqlite", tmp_path / "effects.txt"
    flag = ["--async"] if api == "async" else []
    a = subprocess.run(
        _app(shape, db, tmp_path / "a.jsonl", "A", "run", effects, "--kill-after", killed, *flag),
        capture_output=True,
        text=True,
        timeout=CRASH_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert a.returncode == -signal.SIGKILL, f"A exited {a.returncode}:\n{a.stderr}"
    effect = f"{killed} {ARGUMENT[killed]}"
    by_a = effects.read_text().splitlines()
    assert by_a[-1] == f"A {effect}", by_a
    b = subprocess.run(
        _app(shape, db, tmp_path / "b.jsonl", "B", "resume", effects, *flag),
        capture_output=True,
        text=True,
        timeout=CRASH_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert b.returncode == 0, b.stderr
    result = json.loads(b.stdout.splitlines()[-1])
    lines = effects.read_text().splitlines()
    assert lines[len(by_a)] == f"B {effect}", lines  # B does the killed call first
    assert result["outcome"] == "finished", result

    raw_a, raw_b = read_spans(tmp_path / "a.jsonl"), read_spans(tmp_path / "b.jsonl")
    a_spans, b_spans = library_spans(raw_a), library_spans(raw_b)
    graph_name = result["graph"]
    check_one_trace(Run(Step(None, "finished", "crash"), "t-crash", [], b_spans), graph_name)
    check_resumes(Run(Step(None, "finished", "crash"), "t-crash", [], b_spans), a_spans)
    starts_a = [s for s in raw_a if s.name == names.SPAN_TOOL_START]
    starts_b = [s for s in raw_b if s.name == names.SPAN_TOOL_START]
    summary = [
        (who, s.attributes.get(names.TOOL_NAME), s.attributes.get(names.TOOL_RETRY))
        for who, starts in (("A", starts_a), ("B", starts_b))
        for s in starts
    ]
    killed_a = [s for s in starts_a if s.attributes.get(names.TOOL_NAME) == killed]
    killed_b = [s for s in starts_b if s.attributes.get(names.TOOL_NAME) == killed]
    assert len(killed_a) == 1 and len(killed_b) == 1, summary
    assert all(s.attributes.get(names.TOOL_RETRY) is False for s in starts_a), summary
    assert (
        killed_a[0].attributes[names.TOOL_IDEMPOTENCY_KEY]
        == killed_b[0].attributes[names.TOOL_IDEMPOTENCY_KEY]
    )
    retried = [(n, r) for who, n, r in summary if who == "B"]
    expected = [(n, n == killed) for n, _ in retried]
    problems = []
    if retried != expected:
        problems.append(
            f"B's tool.start spans (tool, retry) {retried}, expected {expected}: the {killed} "
            f"call in flight when A was killed is the retry (all starts (process, tool, "
            f"retry): {summary})"
        )

    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(db)) as bare:
        stored = list(bare.list(agents.thread("t-crash")))
    on, off = online(b_spans), offline(stored)
    if on != off:
        problems.append(f"B's findings online {on}, offline over the database {off}")
    twice = sorted(repeated_side_effects([tuple(line.split()[1:]) for line in lines]))  # type: ignore[misc]
    sources = [
        "-s",
        f"sqlite:///{db}",
        "-s",
        str(tmp_path / "a.jsonl"),
        "-s",
        str(tmp_path / "b.jsonl"),
    ]
    capsys.readouterr()
    repeatable = [arg for name in sorted(pa.REPEATABLE) for arg in ("--repeatable", name)]
    code = inspector(["diverge", "t-crash", *sources, *repeatable, "--json"])
    out = capsys.readouterr().out
    report = json.loads(out) if out.strip().startswith("{") else {"findings": out}
    found = sorted(
        (f["kind"], f["actual"]) for f in report.get("findings", []) if isinstance(f, dict)
    )
    if code != 1 or found != [("duplicate_tool_call", name) for name in twice]:
        problems.append(
            f"langgraph-otel diverge over the database and both span files: exit {code}, "
            f"findings (kind, actual) {found or report.get('findings')}; the ledger shows "
            f"{twice} started twice"
        )
    assert not problems, "\n".join(problems)
