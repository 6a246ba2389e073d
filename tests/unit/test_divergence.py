"""Divergence detectors: pure comparisons, and real graphs replayed and forked online."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names, stored_history
from langgraph.checkpoint.otel.analysis.detectors import (
    DivergencePolicy,
    Finding,
    compare_branches,
    divergences,
)
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, history_records
from langgraph.checkpoint.otel.analysis.span_records import span_facts, span_records
from langgraph.checkpoint.otel.analysis.tool_calls import ToolCall

# --- pure -------------------------------------------------------------------------------------


def rec(
    cid: str,
    nodes: tuple[str, ...] = ("n",),
    hashes: dict[str, str] | None = None,
    calls: tuple[ToolCall, ...] = (),
    results: tuple[ToolCall, ...] = (),
    source: str = "loop",
    parent: str | None = None,
    ns: str = "",
) -> CheckpointRecord:
    hashes = hashes or {"x": "h1"}
    return CheckpointRecord(
        ns=ns,
        checkpoint_id=cid,
        parent_id=parent,
        step=int(cid[-1]),
        source=source,
        nodes=nodes,
        channel_hashes=hashes,
        state_hash="|".join(f"{k}={v}" for k, v in sorted(hashes.items())),
        tool_calls=calls,
        tool_results=results,
    )


SEARCH = ToolCall("search", "search:aaa")
SEARCH_OTHER_ARGS = ToolCall("search", "search:bbb")
CALENDAR = ToolCall("calendar", "calendar:ccc")


def test_identical_branches_have_no_findings() -> None:
    ref = [rec("r1"), rec("r2", calls=(SEARCH,))]
    assert (
        compare_branches(ref, [rec("b1", source="fork"), rec("b1"), rec("b2", calls=(SEARCH,))])
        == []
    )


def test_state_finding_names_step_node_and_channel() -> None:
    ref = [rec("r1", hashes={"x": "h1", "y": "same"})]
    found = compare_branches(ref, [rec("b1", hashes={"x": "h2", "y": "same"})])
    assert found == [
        Finding(
            kind="state",
            step=1,
            checkpoint_id="b1",
            reference_checkpoint_id="r1",
            node="n",
            channel="x",
            expected="h1",
            actual="h2",
        )
    ]
    ignoring = DivergencePolicy(ignore_channels=frozenset({"x"}))
    assert (
        compare_branches(ref, [rec("b1", hashes={"x": "h2", "y": "same"})], policy=ignoring) == []
    )


def test_state_is_compared_only_from_equal_parent_states() -> None:
    ref = [rec("r1", hashes={"x": "a"}), rec("r2", hashes={"x": "c"})]
    branch = [rec("b1", hashes={"x": "b"}), rec("b2", hashes={"x": "d"})]
    found = compare_branches(ref, branch)
    assert [(f.kind, f.checkpoint_id) for f in found] == [("state", "b1")]


def test_trajectory_is_the_first_departure_only() -> None:
    ref = [rec("r1", nodes=("agent",)), rec("r2", nodes=("tools",))]
    branch = [rec("b1", nodes=("agent",)), rec("b2", nodes=("answer",)), rec("b3", nodes=("x",))]
    found = compare_branches(ref, branch)
    assert [(f.kind, f.step, f.expected, f.actual) for f in found] == [
        ("trajectory", 2, "tools", "answer")
    ]


def test_tool_trajectory_and_the_argument_policy() -> None:
    ref = [rec("r1", calls=(SEARCH,))]
    found = compare_branches(ref, [rec("b1", calls=(CALENDAR,))])
    assert [(f.kind, f.expected, f.actual) for f in found] == [("trajectory", "search", "calendar")]
    other_args = compare_branches(ref, [rec("b1", calls=(SEARCH_OTHER_ARGS,))])
    assert [(f.kind, f.tool, f.expected, f.actual) for f in other_args] == [
        ("tool_arguments", "search", "search:aaa", "search:bbb")
    ]
    names_only = DivergencePolicy(compare_tool_args=False)
    assert compare_branches(ref, [rec("b1", calls=(SEARCH_OTHER_ARGS,))], policy=names_only) == []


def test_duplicate_tool_calls_against_reference_and_before_resume() -> None:
    ref = [rec("r1", results=(SEARCH,))]
    found = compare_branches(ref, [rec("b1", results=(SEARCH,))])
    assert [(f.kind, f.actual, f.reference_checkpoint_id) for f in found] == [
        ("duplicate_tool_call", "search", "r1")
    ]
    found = compare_branches([], [rec("b1", results=(SEARCH,))], completed_before={SEARCH.key})
    assert [f.kind for f in found] == ["duplicate_tool_call"]
    assert (
        compare_branches([], [rec("b1", results=(CALENDAR,))], completed_before={SEARCH.key}) == []
    )
    off = DivergencePolicy(detectors=frozenset({"state", "trajectory"}))
    assert compare_branches(ref, [rec("b1", results=(SEARCH,))], policy=off) == []


def test_a_reference_branch_that_is_itself_a_fork_branch_aligns_without_its_fork_copy() -> None:
    ref = [rec("r1", source="fork"), rec("r2"), rec("r3", calls=(SEARCH,))]
    branch = [rec("b1", source="fork"), rec("b2"), rec("b3", calls=(SEARCH,))]
    assert compare_branches(ref, branch) == []


def test_repeatable_tools_are_never_duplicates() -> None:
    lookup = ToolCall("lookup", "lookup:aaa")
    ref = [rec("r1", results=(lookup, SEARCH))]
    safe = DivergencePolicy(repeatable_tools=frozenset({"lookup"}))
    found = compare_branches(ref, [rec("b1", results=(lookup, SEARCH))], policy=safe)
    assert [(f.kind, f.actual) for f in found] == [("duplicate_tool_call", "search")]
    assert (
        compare_branches(
            [], [rec("b1", results=(lookup,))], completed_before={lookup.key}, policy=safe
        )
        == []
    )


def test_subgraph_checkpoints_are_compared_only_within_their_namespace() -> None:
    """A clean supervisor thread: the root and two sub-agent runs each start a line of their
    own (no parent); none is a fork of another."""
    records = [
        rec("r0", ("__start__",)),
        rec("r1", ("supervisor",), parent="r0"),
        rec("a0", ("__start__",), ns="alice:1"),
        rec("a1", ("agent",), {"x": "other"}, parent="a0", ns="alice:1"),
        rec("b0", ("__start__",), ns="bob:2"),
        rec("b1", ("tools",), calls=(CALENDAR,), parent="b0", ns="bob:2"),
    ]
    assert divergences(records) == []


def test_a_fork_inside_one_subgraph_namespace_is_still_compared() -> None:
    records = [
        rec("a0", ns="alice:1"),
        rec("a1", ("agent",), parent="a0", ns="alice:1"),
        rec("a2", ("tools",), parent="a0", ns="alice:1"),
    ]
    (finding,) = divergences(records)
    assert (finding.kind, finding.expected, finding.actual) == ("trajectory", "agent", "tools")


def test_a_side_effect_a_subgraph_did_in_a_step_counts_in_that_step_on_a_fork() -> None:
    """The root checkpoints applying the step that ran a sub-agent carry its tool results (as
    the wrapper stores them), so the fork's run of the sub-agent, under another namespace, is
    a duplicate of the reference branch's."""
    refund = ToolCall("issue_refund", "issue_refund:ddd")
    records = [
        rec("r0", ("supervisor",)),
        rec("r1", ("refunds",), results=(refund,), parent="r0"),
        rec("r2", ("refunds",), results=(refund,), parent="r0"),  # the fork's
        rec("s1", ("tools",), results=(refund,), ns="refunds:1"),
        rec("s2", ("tools",), results=(refund,), ns="refunds:2"),
    ]
    (finding,) = divergences(records)
    assert (finding.kind, finding.checkpoint_id, finding.node, finding.actual) == (
        "duplicate_tool_call",
        "r2",
        "refunds",
        "issue_refund",
    )


def test_window_bounds_the_comparison() -> None:
    ref = [rec(f"r{i}", hashes={"x": f"r{i}"}) for i in range(1, 6)]
    branch = [rec(f"b{i}", hashes={"x": f"r{i}"}) for i in range(1, 4)] + [
        rec("b4", hashes={"x": "other"})
    ]
    assert [f.checkpoint_id for f in compare_branches(ref, branch)] == ["b4"]
    assert compare_branches(ref, branch, policy=DivergencePolicy(window=3)) == []


# --- real graphs ------------------------------------------------------------------------------


def divergence_events(otel: OTel) -> list[dict[str, Any]]:
    return [
        dict(event.attributes or {})
        for span in otel.spans()
        if span.name == names.SPAN_PUT
        for event in span.events
        if event.name == names.EVENT_DIVERGENCE
    ]


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_non_deterministic_node_is_flagged_on_fork(deterministic: bool, otel: OTel) -> None:
    inner = InMemorySaver()
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = graphs.noisy(deterministic).compile(checkpointer=saver)
    graph.invoke({"start": 0}, CONFIG)
    after_a = next(s for s in graph.get_state_history(CONFIG) if s.next == ("noisy",))
    graph.invoke(None, after_a.config)
    events = divergence_events(otel)
    offline = divergences(history_records(inner.list(CONFIG)))
    if deterministic:
        assert events == []
        assert offline == []
        assert divergences(span_records(span_facts(otel.spans()))) == []
        return
    assert len(events) == 1
    event = events[0]
    assert event[names.DIVERGENCE_KIND] == "state"
    assert event[names.DIVERGENCE_CHANNEL] == "value"
    assert event[names.DIVERGENCE_EXPECTED] != event[names.DIVERGENCE_ACTUAL]
    flagged = [s for s in otel.spans() if s.attributes.get(names.DIVERGENCE_DETECTED) is True]
    assert [s.attributes[names.NODES] for s in flagged] == [("noisy",)]
    # the step of the new branch's checkpoint (after LangGraph's fork copy)
    noisy_step = flagged[0].attributes[names.STEP]
    assert event[names.DIVERGENCE_STEP] == noisy_step == after_a.metadata["step"] + 2
    counted = {
        p.attributes[names.DIVERGENCE_KIND]: p.value
        for p in otel.metrics()[names.METRIC_DIVERGENCES]
    }
    assert counted == {"state": 1}
    # the offline detector agrees, over the stored history and over the exported spans alone
    assert [(f.kind, f.channel, f.step) for f in offline] == [("state", "value", noisy_step)]
    from_spans = divergences(span_records(span_facts(otel.spans()), thread_id="t1"))
    assert [(f.kind, f.channel, f.step) for f in from_spans] == [("state", "value", noisy_step)]


class Chat(TypedDict):
    messages: Annotated[list[Any], add_messages]


class Outage(RuntimeError):
    pass


def make_agent(script: list[AIMessage], tool_runs: list[str], fail_on_call: int = 0) -> Any:
    """A scripted tool-calling agent; its model call number `fail_on_call` raises `Outage`."""
    model = FakeMessagesListChatModel(responses=script)
    calls = {"n": 0}

    def agent(state: Chat) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == fail_on_call:
            raise Outage("model endpoint down")
        return {"messages": [model.invoke(state["messages"])]}

    def tools(state: Chat) -> dict[str, Any]:
        results = []
        for call in state["messages"][-1].tool_calls:
            tool_runs.append(call["name"])  # the side effect
            results.append(
                ToolMessage(f"{call['name']} ok", name=call["name"], tool_call_id=call["id"])
            )
        return {"messages": results}

    def route(state: Chat) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    builder = StateGraph(Chat)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_replay_before_a_side_effecting_tool_flags_a_duplicate(otel: OTel) -> None:
    inner = InMemorySaver()
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    runs: list[str] = []
    first = make_agent([call("send_email", "id-1", to="bob"), AIMessage("sent")], runs)
    first.compile(checkpointer=saver).invoke({"messages": [HumanMessage("email bob")]}, CONFIG)
    # replay from the checkpoint after the model asked for the tool, before the tool ran; the
    # model issues the same call again (another call id) and the email is sent again
    replay = make_agent([AIMessage("sent")], runs).compile(checkpointer=saver)
    before_tool = next(s for s in replay.get_state_history(CONFIG) if s.next == ("tools",))
    replay.invoke(None, before_tool.config)
    assert runs == ["send_email", "send_email"]
    events = divergence_events(otel)
    assert [(e[names.DIVERGENCE_KIND], e[names.DIVERGENCE_ACTUAL]) for e in events] == [
        ("duplicate_tool_call", "send_email")
    ]
    offline = divergences(history_records(inner.list(CONFIG)))
    assert [(f.kind, f.actual) for f in offline] == [("duplicate_tool_call", "send_email")]


def test_a_fork_where_the_model_picks_another_tool_is_a_trajectory_departure(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    runs: list[str] = []
    first = make_agent([call("search", "a", q="weather"), AIMessage("sunny")], runs)
    first.compile(checkpointer=saver).invoke({"messages": [HumanMessage("weather?")]}, CONFIG)
    other = make_agent([call("calendar", "b", day="today"), AIMessage("busy")], runs)
    graph = other.compile(checkpointer=saver)
    before_agent = [s for s in graph.get_state_history(CONFIG) if s.next == ("agent",)][-1]
    graph.invoke(None, before_agent.config)
    events = divergence_events(otel)
    assert [
        (e[names.DIVERGENCE_KIND], e[names.DIVERGENCE_EXPECTED], e[names.DIVERGENCE_ACTUAL])
        for e in events
    ] == [("trajectory", "search", "calendar")]


def test_strict_mode_callback_stops_the_run_after_the_checkpoint_is_stored(otel: OTel) -> None:
    class NonDeterminism(Exception):
        pass

    seen: list[Finding] = []

    def strict(finding: Finding) -> None:
        seen.append(finding)
        raise NonDeterminism(f"{finding.kind} at step {finding.step}")

    inner = InMemorySaver()
    saver = instrument(inner, tracer_provider=otel.tracer_provider, on_divergence=strict)
    graph = graphs.noisy(deterministic=False).compile(checkpointer=saver)
    graph.invoke({"start": 0}, CONFIG, durability="sync")
    after_a = next(s for s in graph.get_state_history(CONFIG) if s.next == ("noisy",))
    with pytest.raises(NonDeterminism):
        graph.invoke(None, after_a.config, durability="sync")
    assert [f.kind for f in seen] == ["state"]
    assert any(t.checkpoint["id"] == seen[0].checkpoint_id for t in inner.list(CONFIG))


class CountingSaver(InMemorySaver):
    """A real InMemorySaver that counts loads."""

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def get_tuple(self, config: Any) -> Any:
        self.loads += 1
        return super().get_tuple(config)


def loads_for(scenario: str, wrapped: bool, otel: OTel) -> int:
    inner = CountingSaver()
    saver = (
        instrument(inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
        if wrapped
        else inner
    )
    graph = graphs.noisy(deterministic=True).compile(checkpointer=saver)
    graph.invoke({"start": 0}, CONFIG)
    history = list(graph.get_state_history(CONFIG))
    inner.loads = 0
    if scenario == "plain":
        graph.invoke({"start": 5}, CONFIG)
    elif scenario == "latest":  # an explicit checkpoint with no earlier descendant
        graph.invoke(None, history[0].config)
    else:  # a fork with an earlier branch after it
        graph.invoke(None, next(s for s in history if s.next == ("noisy",)).config)
    return inner.loads


def test_reference_reads_are_paid_only_when_an_earlier_branch_exists(otel: OTel) -> None:
    assert loads_for("plain", True, otel) == loads_for("plain", False, otel)
    # classifying an explicit-checkpoint run costs one read of the latest checkpoint, nothing more
    assert loads_for("latest", True, otel) == loads_for("latest", False, otel) + 1
    # a real fork also reads the earlier branch back (bounded by the policy's window)
    extra = loads_for("fork", True, otel) - loads_for("fork", False, otel)
    assert 1 < extra <= 1 + DivergencePolicy().window


def test_a_call_answered_before_an_error_and_answered_again_after_the_resume(otel: OTel) -> None:
    inner = InMemorySaver()
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    runs: list[str] = []

    # the model asks for a search, the tool runs, then the model endpoint fails
    first = make_agent([call("search", "a", q="flights"), AIMessage("-")], runs, fail_on_call=2)
    with pytest.raises(Outage):
        first.compile(checkpointer=saver).invoke({"messages": [HumanMessage("book")]}, CONFIG)
    # on resume the model has forgotten and asks for the very same search: it runs again
    again = make_agent([call("search", "b", q="flights"), AIMessage("booked")], runs)
    again.compile(checkpointer=saver).invoke(None, CONFIG)
    assert runs == ["search", "search"]
    online = [
        (e[names.DIVERGENCE_KIND], e[names.DIVERGENCE_ACTUAL]) for e in divergence_events(otel)
    ]
    assert online == [("duplicate_tool_call", "search")]
    offline = divergences(history_records(inner.list(CONFIG)))
    assert [(f.kind, f.actual) for f in offline] == [("duplicate_tool_call", "search")]


def test_forks_of_a_deterministic_agent_give_no_finding_and_events_name_the_node(
    otel: OTel,
) -> None:
    """Two forks from the same checkpoint, and a fork of a fork: the reference branch of the
    later forks is itself a fork branch. A read-only tool declared repeatable is re-run on
    every fork without a finding; a model that changes its answer is named as the node."""
    inner = InMemorySaver()
    policy = DivergencePolicy(repeatable_tools=frozenset({"search"}))
    saver = instrument(
        inner,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        divergence=policy,
    )
    runs: list[str] = []

    def script() -> list[AIMessage]:
        return [call("search", "x", q="weather"), AIMessage("sunny")]

    make_agent(script(), runs).compile(checkpointer=saver).invoke(
        {"messages": [HumanMessage("weather?", id="h")]}, CONFIG
    )
    fork_point = next(
        s
        for s in make_agent([], runs).compile(checkpointer=saver).get_state_history(CONFIG)
        if s.next == ("agent",) and s.metadata["step"] == 0
    )
    for _ in range(2):  # two forks from the same checkpoint
        make_agent(script(), runs).compile(checkpointer=saver).invoke(None, fork_point.config)
    graph = make_agent(script()[1:], runs).compile(checkpointer=saver)
    on_fork = next(s for s in graph.get_state_history(CONFIG) if s.next == ("tools",))
    graph.invoke(None, on_fork.config)  # a fork of the latest fork branch
    assert runs == ["search"] * 4
    assert divergence_events(otel) == []
    stored = divergences(history_records(stored_history(saver, CONFIG)), policy)
    assert stored == []
    # a model that now answers otherwise: the finding names the node that wrote it
    other = make_agent([call("calendar", "y", day="mon"), AIMessage("busy")], runs)
    other.compile(checkpointer=saver).invoke(None, fork_point.config)
    [event] = divergence_events(otel)
    assert (event[names.DIVERGENCE_KIND], event[names.DIVERGENCE_NODE]) == ("trajectory", "agent")


def test_a_repeatable_tool_may_be_named_by_a_pattern() -> None:
    policy = DivergencePolicy(
        repeatable_tools=frozenset({"transfer_to_*", "lookup"}), control_tools=frozenset()
    )
    assert policy.is_repeatable("transfer_to_refunds")
    assert policy.is_repeatable("lookup")
    assert not policy.is_repeatable("issue_refund")
    assert not policy.is_repeatable("transfer_back_to_supervisor")
    handoff = ToolCall("transfer_to_refunds", "transfer_to_refunds:eee")
    refund = ToolCall("issue_refund", "issue_refund:fff")
    reference = [rec("c1", results=(handoff, refund))]
    again = [rec("d1", results=(handoff, refund))]
    findings = compare_branches(reference, again, policy=policy)
    assert [f.actual for f in findings] == ["issue_refund"]


def test_a_fork_of_a_checkpoint_off_the_latest_branch_is_compared_with_its_own_branch(
    otel: OTel,
) -> None:
    """Forks from the latest checkpoint back to the first, then again from a middle one: the
    thread's latest checkpoint is then on a branch that does not descend from the fork point,
    and the reference is the fork point's earliest branch (as offline). Each fork that runs
    a side effect (`book`, `send_email`) again gives its `duplicate_tool_call`."""
    import agents

    policy = DivergencePolicy(repeatable_tools=frozenset({"lookup", "search"}))
    saver = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider, divergence=policy)
    tools = agents.Tools()
    graph = agents.react_agent(saver, tools=tools)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(agents.question(), config)
    history = list(graph.get_state_history(config))
    points = [s.config for s in history[1:]]  # newest first: the last fork is from the first
    middle = points[len(points) // 2]
    for point in [*points, middle]:
        otel.clear()
        booked = len(tools.ledger)
        graph.invoke(None, point)
        again = sorted(
            name for name, _ in tools.ledger[booked:] if name not in ("lookup", "search")
        )
        found = sorted(
            e.attributes[names.DIVERGENCE_ACTUAL]
            for s in otel.spans()
            for e in s.events
            if e.name == names.EVENT_DIVERGENCE
        )
        assert found == again, (point["configurable"]["checkpoint_id"], found, again)


def test_handoff_and_delegation_tools_are_repeatable_unless_the_policy_says_otherwise() -> None:
    default = DivergencePolicy()
    for tool in ("transfer_to_billing_agent", "transfer_back_to_supervisor", "task"):
        assert default.is_repeatable(tool) and default.is_control(tool)
    assert not default.is_repeatable("issue_refund")
    strict = DivergencePolicy(control_tools=frozenset())
    assert not strict.is_repeatable("transfer_to_billing_agent")
    handoff = ToolCall("transfer_to_refunds", "transfer_to_refunds:eee")
    again = compare_branches([rec("c1", results=(handoff,))], [rec("d1", results=(handoff,))])
    assert again == []
    assert [
        f.kind
        for f in compare_branches(
            [rec("c1", results=(handoff,))], [rec("d1", results=(handoff,))], policy=strict
        )
    ] == ["duplicate_tool_call"]


REFUND_8900 = ToolCall("issue_refund", "issue_refund:111", {"order": "a1", "amount": "h89"})
REFUND_9900 = ToolCall("issue_refund", "issue_refund:222", {"order": "a1", "amount": "h99"})
REFUND_OTHER_ORDER = ToolCall("issue_refund", "issue_refund:333", {"order": "b2", "amount": "h15"})


def test_a_side_effect_run_again_with_other_arguments_is_a_repeated_side_effect() -> None:
    """The branch the fork left refunded order a1; the fork refunds a1 for another amount:
    both keys, and the argument that differs; another order is another call."""
    reference = [rec("r1", results=(REFUND_8900,))]
    found = compare_branches(reference, [rec("b1", results=(REFUND_9900,))])
    repeated = [f for f in found if f.kind == "repeated_side_effect"]
    assert [(f.tool, f.expected, f.actual, f.arguments) for f in repeated] == [
        ("issue_refund", "issue_refund:111", "issue_refund:222", ("amount",))
    ]
    assert repeated[0].reference_checkpoint_id == "r1"
    other = compare_branches(reference, [rec("b1", results=(REFUND_OTHER_ORDER,))])
    assert [f.kind for f in other] == []
    same = compare_branches(reference, [rec("b1", results=(REFUND_8900,))])
    assert [f.kind for f in same] == ["duplicate_tool_call"]


def test_a_run_that_ends_where_the_reference_went_on_departs() -> None:
    reference = [rec("r1", nodes=("billing",)), rec("r2", nodes=("wrap_up",))]
    ends = [
        CheckpointRecord("b1", None, 1, "loop", ("billing",), scheduled=()),
    ]
    reference[0] = CheckpointRecord("r1", None, 1, "loop", ("billing",), scheduled=("wrap_up",))
    (found,) = compare_branches(reference, ends)
    assert (found.kind, found.expected, found.actual) == ("trajectory", "then wrap_up", "(end)")
