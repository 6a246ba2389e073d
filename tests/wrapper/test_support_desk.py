"""The support-desk trial of issue 29 as regression tests: a `create_supervisor` app written as
a team outside this project writes one (`support_desk.py`: a billing worker whose refund tool
asks for approval and writes a ledger row, a shipping worker, a scripted model with
deterministic tool-call ids), recorded on SQLite, and each verdict that was wrong checked
against what really happens when the thread runs on."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

import support_desk
from langgraph.checkpoint.otel import DivergencePolicy, instrument, names
from langgraph.checkpoint.otel._langgraph.graph import graph_description
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.graph_structure import GraphStructure
from langgraph.checkpoint.otel.analysis.tool_calls import argument_label
from langgraph.checkpoint.otel.inspector.cli import app
from langgraph.checkpoint.otel.inspector.compat import CompatCheck, thread_verdict
from langgraph.checkpoint.otel.testing import replay_thread
from langgraph.checkpoint.otel.testing.replay import describe

REFUND = {"messages": [("user", "Please refund order A17")]}
TRACK = {"messages": [("user", "Where is my package for order A17?")]}
YES = Command(resume="yes")


def thread(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
    SqliteSaver(conn).setup()
    yield conn
    conn.close()


def desk(conn: sqlite3.Connection, world: support_desk.World, **kw: Any) -> Any:
    """The support desk on `conn`, through the wrapper (a real SDK: hashes are stored)."""
    provider = kw.pop("tracer_provider", None) or TracerProvider()
    saver = instrument(SqliteSaver(conn), tracer_provider=provider, **kw)
    return support_desk.build(saver, world)


def copy_of(conn: sqlite3.Connection) -> SqliteSaver:
    copy = sqlite3.connect(":memory:", check_same_thread=False)
    conn.backup(copy)
    return SqliteSaver(copy)


def forked_refund(graph: Any, world: support_desk.World, thread_id: str) -> None:
    """Run, approve, change the order's amount, fork from the root checkpoint whose next node
    is `billing_agent`, approve again: the trial's fork (the refund is paid twice)."""
    graph.invoke(REFUND, thread(thread_id))
    graph.invoke(YES, thread(thread_id))
    world.amounts["A17"] = 9900
    fork_point = next(
        s for s in graph.get_state_history(thread(thread_id)) if s.next == ("billing_agent",)
    )
    graph.invoke(None, fork_point.config)
    graph.invoke(YES, thread(thread_id))


# --- 1. replay and compat see a renamed sub-agent tool --------------------------------------


def test_a_renamed_worker_tool_loses_the_approved_refund_for_real(db: sqlite3.Connection) -> None:
    """Ground truth of case 1: a thread parked at the approval, resumed by the release that
    renames `issue_refund`, fails inside the worker and pays nothing."""
    world = support_desk.World()
    desk(db, world).invoke(REFUND, thread("parked"))
    released = support_desk.World()
    resumed = support_desk.build(copy_of(db), released, refund_name="refund_order")
    out = resumed.invoke(YES, thread("parked"))
    assert released.ledger == []
    assert out["messages"][-1].content == "All done."


def test_replay_reports_the_renamed_worker_tool(db: sqlite3.Connection) -> None:
    world = support_desk.World()
    graph = desk(db, world)
    graph.invoke(REFUND, thread("finished"))
    graph.invoke(YES, thread("finished"))
    graph.invoke(REFUND, thread("parked"))
    release2 = support_desk.build(None, support_desk.World(), refund_name="refund_order")
    for thread_id in ("finished", "parked"):
        result = replay_thread(release2, SqliteSaver(db), thread_id)
        assert result.divergence is not None, describe(result)
        assert result.divergence.graph == "billing_agent"
    unchanged = replay_thread(support_desk.build(), SqliteSaver(db), "finished")
    assert unchanged.ok, describe(unchanged)


def test_compat_flags_a_parked_thread_whose_pending_tool_was_renamed(
    db: sqlite3.Connection,
) -> None:
    world = support_desk.World()
    graph = desk(db, world)
    graph.invoke(REFUND, thread("parked"))
    graph.invoke(REFUND, thread("finished"))
    graph.invoke(YES, thread("finished"))
    release2 = support_desk.build(refund_name="refund_order")
    parked = thread_verdict(CompatCheck(release2), SqliteSaver(db), "parked")
    finished = thread_verdict(CompatCheck(release2), SqliteSaver(db), "finished")
    assert parked is not None and finished is not None
    assert [(r.reason, r.subject) for r in parked.risks] == [("missing_tool", "issue_refund")]
    assert finished.risks == ()  # its next turn is offered the new name: nothing pending


def test_the_structure_hash_covers_a_worker_tools() -> None:
    before = GraphStructure.of(graph_description(support_desk.build()))
    after = GraphStructure.of(graph_description(support_desk.build(refund_name="refund_order")))
    assert before.structure_hash() != after.structure_hash()
    assert before.subgraphs["billing_agent"] != after.subgraphs["billing_agent"]


# --- 2. replay passes unchanged code on forks and bare recordings ---------------------------


def test_replay_passes_an_unchanged_forked_thread_with_reused_call_ids(
    db: sqlite3.Connection,
) -> None:
    world = support_desk.World()
    forked_refund(desk(db, world), world, "forked")
    assert world.ledger == [("refund", "A17", 8900), ("refund", "A17", 9900)]
    result = replay_thread(support_desk.build(), SqliteSaver(db), "forked")
    assert result.ok, describe(result)


def test_replay_passes_threads_recorded_before_the_library_was_installed(
    db: sqlite3.Connection,
) -> None:
    world = support_desk.World()
    bare = support_desk.build(SqliteSaver(db), world)
    bare.invoke(REFUND, thread("billing"))
    bare.invoke(YES, thread("billing"))
    bare.invoke(TRACK, thread("shipping"))
    forked_refund(bare, world, "forked")
    for thread_id in ("billing", "shipping", "forked"):
        result = replay_thread(support_desk.build(), SqliteSaver(db), thread_id)
        assert result.ok, describe(result)


# --- 3. the refund paid twice on a fork has a name ------------------------------------------


def test_a_refund_paid_again_on_a_fork_is_a_repeated_side_effect(
    db: sqlite3.Connection,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    online: list[Finding] = []
    world = support_desk.World()
    forked_refund(
        desk(db, world, tracer_provider=provider, on_divergence=online.append), world, "t"
    )
    repeated = [f for f in online if f.kind == "repeated_side_effect"]
    assert len(repeated) == 1
    finding = repeated[0]
    assert finding.tool == "issue_refund"
    assert finding.arguments == (argument_label("amount_cents"),)  # a label: never the name
    assert finding.expected != finding.actual
    assert {finding.expected, finding.actual} <= {
        f.expected for f in online if f.kind == "tool_arguments"
    } | {f.actual for f in online if f.kind == "tool_arguments"}
    events = [
        e.attributes
        for s in exporter.get_finished_spans()
        for e in s.events
        if e.name == names.EVENT_DIVERGENCE
        and e.attributes[names.DIVERGENCE_KIND] == "repeated_side_effect"
    ]
    assert [tuple(e[names.DIVERGENCE_ARGUMENTS]) for e in events] == [
        (argument_label("amount_cents"),)
    ]
    assert [e[names.DIVERGENCE_TOOL] for e in events] == ["issue_refund"]


def test_diverge_names_the_repeated_refund_offline(db: sqlite3.Connection, tmp_path: Path) -> None:
    world = support_desk.World()
    forked_refund(desk(db, world), world, "t")
    result = CliRunner().invoke(
        app, ["diverge", "t", "-s", f"sqlite:///{tmp_path / 'checkpoints.sqlite'}", "--json"]
    )
    assert result.exit_code == 1, result.output
    findings = json.loads(result.output)["findings"]
    kinds = {(f["kind"], f.get("tool")) for f in findings}
    assert ("repeated_side_effect", "issue_refund") in kinds
    named = [f["arguments"] for f in findings if f["kind"] == "repeated_side_effect"]
    assert named == [["amount_cents"]]  # the inspector names them from the stored messages
    assert ("tool_arguments", "issue_refund") in kinds
    assert not any(kind == "trajectory" for kind, _ in kinds)


# --- 4. the app's policy goes with its telemetry --------------------------------------------


def test_the_stored_policy_and_flags_apply_to_span_files(
    db: sqlite3.Connection, tmp_path: Path
) -> None:
    """Handoff tools are repeatable by default; the app declares `lookup_order` repeatable;
    `diverge` over the saver and span files lists neither, without repeating the policy."""
    from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

    spans = tmp_path / "spans"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(spans / "spans.jsonl")))
    world = support_desk.World()
    policy = DivergencePolicy(repeatable_tools=frozenset({"lookup_order"}))
    forked_refund(desk(db, world, tracer_provider=provider, divergence=policy), world, "t")
    provider.force_flush()
    source = f"sqlite:///{tmp_path / 'checkpoints.sqlite'}"
    for sources in ([source], [source, str(spans)], [str(spans)]):
        args = ["diverge", "t", *[a for s in sources for a in ("-s", s)], "--json"]
        result = CliRunner().invoke(app, args)
        tools = {f.get("tool") or f.get("actual") for f in json.loads(result.output)["findings"]}
        assert not {t for t in tools if t and t.startswith("transfer_")}, (sources, tools)
        assert "lookup_order" not in tools, (sources, tools)
    strict = DivergencePolicy(control_tools=frozenset())
    assert not strict.is_repeatable("transfer_to_billing_agent")


def test_flags_add_to_the_policy_read_from_span_files_alone(
    db: sqlite3.Connection, tmp_path: Path
) -> None:
    from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

    spans = tmp_path / "spans"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(spans / "spans.jsonl")))
    world = support_desk.World()
    forked_refund(desk(db, world, tracer_provider=provider), world, "t")
    provider.force_flush()
    base = ["diverge", "t", "-s", str(spans), "--json"]
    before = json.loads(CliRunner().invoke(app, base).output)["findings"]
    assert any(f.get("tool") == "lookup_order" for f in before)
    after = json.loads(CliRunner().invoke(app, [*base, "--repeatable", "lookup_order"]).output)
    assert not any(f.get("tool") == "lookup_order" for f in after["findings"])


# --- 5. compat and a new key nothing reads --------------------------------------------------


def test_compat_does_not_block_a_state_key_nothing_reads() -> None:
    from typing import TypedDict

    from langgraph.graph import START, StateGraph

    class Before(TypedDict):
        order: str

    class After(Before):
        priority: str  # required, read by nothing

    class Read(Before):
        priority: str

    def step(state: Any) -> dict[str, Any]:
        return {"order": state["order"]}

    def reads(state: Any) -> dict[str, Any]:
        return {"order": state["priority"]}

    def graph(schema: Any, node: Any) -> Any:
        builder = StateGraph(schema)
        builder.add_node("step", node)
        builder.add_edge(START, "step")
        return builder.compile(
            checkpointer=instrument(InMemorySaver(), tracer_provider=TracerProvider())
        )

    old = graph(Before, step)
    old.invoke({"order": "A17"}, thread("t"))
    saver = old.checkpointer.inner
    unread = thread_verdict(CompatCheck(graph(After, step)), saver, "t")
    read = thread_verdict(CompatCheck(graph(Read, reads)), saver, "t")
    assert unread is not None and read is not None
    assert unread.risks == ()
    assert [(r.reason, r.subject) for r in read.risks] == [("new_required_channel", "priority")]


# --- 6. a later turn repeating an earlier turn's call is no duplicate -----------------------


def test_a_call_repeated_in_a_later_turn_is_not_a_duplicate() -> None:
    """Tool calls approved at ``interrupt_before=["tools"]`` with ``invoke(None)``: each turn's
    resume is an interrupt resume; turn 2 calls `lookup_order(A17)` as turn 1 did."""
    import warnings

    from langgraph.prebuilt import create_react_agent

    online: list[Finding] = []
    world = support_desk.World()
    tools = support_desk.desk_tools(world)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(
            support_desk.DeskModel(role="billing_agent"),
            [tools["lookup_order"]],
            checkpointer=instrument(
                InMemorySaver(), tracer_provider=TracerProvider(), on_divergence=online.append
            ),
            interrupt_before=["tools"],
        )
    for _turn in range(2):
        agent.invoke({"messages": [("user", "Please refund order A17")]}, thread("t"))
        while agent.get_state(thread("t")).next:
            agent.invoke(None, thread("t"))
    looked_up = [m for m in agent.get_state(thread("t")).values["messages"] if m.type == "tool"]
    assert len(looked_up) == 2  # each turn looked the order up once
    assert online == []
