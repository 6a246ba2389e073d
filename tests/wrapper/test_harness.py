"""The resume harness (`langgraph.checkpoint.otel.testing.harness`) on real graphs.

Green on deterministic graphs (every superstep x both modes), red with a readable message on a
node that writes random or time-based values, and on a tool-calling agent whose scripted model
departs from its script; sync and async; any saver.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import operator
import random
import time
import uuid
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.analysis.detectors import DivergencePolicy
from langgraph.checkpoint.otel.testing.harness import (
    ReferenceRunFailed,
    ResumeChecker,
    ResumeCheckFailed,
    ResumeReport,
    acheck_resume,
    check_resume,
)

pytest_plugins = ["pytester"]

# --------------------------------------------------------------------------------------------
# graphs
# --------------------------------------------------------------------------------------------


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    rounds: int
    value: float


def _step(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"log": [f"{name}:{len(state.get('log', []))}"]}

    return node


def _count(state: State) -> dict[str, Any]:
    return {"rounds": state.get("rounds", 0) + 1, "log": ["count"]}


def _again(state: State) -> str:
    return "count" if state.get("rounds", 0) < 2 else "finish"


def multi_node(random_node: str | None = None) -> StateGraph[Any, Any, Any, Any]:
    """START -> plan -> (left || right) -> count (x2, a loop) -> finish [-> roll] -> END."""
    builder = StateGraph(State)
    builder.add_node("plan", _step("plan"))
    builder.add_node("left", _step("left"))
    builder.add_node("right", _step("right"))
    builder.add_node("count", _count)
    builder.add_node("finish", _step("finish"))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "left")
    builder.add_edge("plan", "right")
    builder.add_edge(["left", "right"], "count")
    builder.add_conditional_edges("count", _again, ["count", "finish"])
    if random_node == "random":
        builder.add_node("roll", lambda state: {"value": random.random()})
    elif random_node == "time":
        builder.add_node("roll", lambda state: {"value": float(time.time_ns())})
    if random_node:
        builder.add_edge("finish", "roll")
        builder.add_edge("roll", END)
    else:
        builder.add_edge("finish", END)
    return builder


MULTI_NODE_STEPS = [
    ("plan",),
    ("left", "right"),
    ("count",),
    ("count",),
    ("finish",),
]
INPUT = {"log": ["input"]}


def async_multi_node() -> StateGraph[Any, Any, Any, Any]:
    def make(name: str) -> Any:
        async def node(state: State) -> dict[str, Any]:
            await asyncio.sleep(0)
            return {"log": [f"{name}:{len(state.get('log', []))}"]}

        return node

    builder = StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, make(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge("b", END)
    builder.add_edge("c", END)
    return builder


# --- a tool-calling agent with a scripted, offline model ------------------------------------


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


@tool
def calendar(date: str) -> str:
    """Events on a date."""
    return f"{date}: free"


def _call(name: str, **args: Any) -> dict[str, Any]:
    # a real model issues a new random id on every call
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}


def agent_graph(model: Any) -> StateGraph[Any, Any, Any, Any]:
    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([search, calendar]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


def script() -> Iterator[AIMessage]:
    yield AIMessage("", tool_calls=[_call("search", query="flights to Lisbon")])
    yield AIMessage("", tool_calls=[_call("calendar", date="2025-05-03")])
    yield AIMessage("Booked TP1353.")


def scripted_agent() -> StateGraph[Any, Any, Any, Any]:
    return agent_graph(GenericFakeChatModel(messages=script()))


QUESTION = {"messages": [HumanMessage("Book me a flight to Lisbon on May 3.")]}

# --------------------------------------------------------------------------------------------
# green
# --------------------------------------------------------------------------------------------


def test_deterministic_graph_passes_at_every_step_in_both_modes() -> None:
    report = check_resume(multi_node, INPUT)

    assert report.passed, report.message()
    assert [s.nodes for s in report.reference_steps] == MULTI_NODE_STEPS
    assert [s.step for s in report.reference_steps] == [1, 2, 3, 4, 5]
    assert [(r.step, r.mode) for r in report.results] == [
        (step, mode) for step in [1, 2, 3, 4, 5] for mode in ("error", "interrupt")
    ]
    # every injection really happened, and one resume finished the run
    assert all(r.injected and r.resumes == 1 for r in report.results)
    assert {r.final_state_hash for r in report.results} == {report.reference_state_hash}
    assert report.control is not None and report.control.passed
    assert report.raise_for_failures() is report
    assert report.message().startswith("resume check passed: 10 run(s) over 5 step(s)")


def test_a_state_graph_without_per_run_state_can_be_passed_directly() -> None:
    builder = multi_node()
    before = {name: spec.runnable for name, spec in builder.nodes.items()}

    report = check_resume(builder, INPUT, modes=["interrupt"])

    assert report.passed, report.message()
    assert len(report.results) == len(MULTI_NODE_STEPS)
    # the user's builder is not modified (the harness compiles a copy with wrapped nodes)
    assert {name: spec.runnable for name, spec in builder.nodes.items()} == before
    assert not builder.compiled


def test_a_factory_may_return_a_compiled_graph() -> None:
    """Its builder is recompiled with the harness's checkpointer (its own one is not used)."""
    own_saver = InMemorySaver()

    report = check_resume(
        lambda: multi_node().compile(checkpointer=own_saver), INPUT, modes=["error"]
    )

    assert report.passed, report.message()
    assert len(report.results) == len(MULTI_NODE_STEPS)
    assert not list(own_saver.list(None))


def test_interrupt_mode_stops_before_the_right_occurrence_of_a_repeated_node() -> None:
    report = check_resume(multi_node, INPUT, modes=["interrupt"], steps=[4], control=False)

    (result,) = report.results
    assert (result.step, result.nodes, result.injected) == (4, ("count",), True)
    assert result.passed


def test_async_graph_passes() -> None:
    report = asyncio.run(acheck_resume(async_multi_node, INPUT))

    assert report.passed, report.message()
    assert [s.nodes for s in report.reference_steps] == [("a",), ("b", "c")]
    assert all(r.injected for r in report.results)


def test_tool_calling_agent_with_a_deterministic_script_passes() -> None:
    report = check_resume(scripted_agent, QUESTION)

    assert report.passed, report.message()
    assert [s.nodes for s in report.reference_steps] == [
        ("agent",),
        ("tools",),
        ("agent",),
        ("tools",),
        ("agent",),
    ]
    assert report.reference_tool_calls == ("search", "calendar")
    assert len(report.results) == 10 and all(r.injected for r in report.results)


def test_works_with_an_instrumented_saver_and_sqlite(otel: Any) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    def instrumented() -> Any:
        return instrument(
            InMemorySaver(),
            tracer_provider=otel.tracer_provider,
            meter_provider=otel.meter_provider,
        )

    assert check_resume(scripted_agent, QUESTION, saver_factory=instrumented).passed
    assert otel.spans(), "the instrumented saver emitted spans"
    sqlite = check_resume(
        scripted_agent, QUESTION, saver_factory=lambda: SqliteSaver.from_conn_string(":memory:")
    )
    assert sqlite.passed, sqlite.message()


def test_async_saver_from_an_async_context_manager() -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    report = asyncio.run(
        acheck_resume(
            scripted_agent,
            QUESTION,
            saver_factory=lambda: AsyncSqliteSaver.from_conn_string(":memory:"),
            modes=["error"],
        )
    )
    assert report.passed, report.message()


# --------------------------------------------------------------------------------------------
# red
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["random", "time"])
def test_random_node_fails_with_a_message_naming_step_node_and_channel(kind: str) -> None:
    report = check_resume(lambda: multi_node(kind), INPUT)

    with pytest.raises(ResumeCheckFailed) as raised:
        report.raise_for_failures()
    message = str(raised.value)
    # roll runs at step 6, after finish
    assert "control run (no failure injected) diverged" in message
    assert "not deterministic even without a resume" in message
    assert (
        "resume after error injected at step 1 (node 'plan') diverged: final state differs in"
        " channel 'value'; first divergence: state at step 6 (node 'roll'): channel 'value'"
        " differs" in message
    )
    assert raised.value.report is report
    assert len(report.failures) == 1 + 12  # the control run and every (step, mode)
    first = report.results[0].findings[0]
    assert (first.kind, first.step, first.node, first.channel) == ("state", 6, "roll", "value")


def test_model_that_departs_from_its_script_fails_with_expected_and_actual_tool() -> None:
    """Per-run state leaking between runs: the second tool depends on a process-wide counter."""
    runs = itertools.count()

    def leaky_agent() -> StateGraph[Any, Any, Any, Any]:
        second = "calendar" if next(runs) == 0 else "search"
        args = {"date": "2025-05-03"} if second == "calendar" else {"query": "hotels"}
        return agent_graph(
            GenericFakeChatModel(
                messages=iter(
                    [
                        AIMessage("", tool_calls=[_call("search", query="flights to Lisbon")]),
                        AIMessage("", tool_calls=[_call(second, **args)]),
                        AIMessage("Done."),
                    ]
                )
            )
        )

    report = check_resume(leaky_agent, QUESTION, modes=["error"])

    assert not report.passed
    message = report.message()
    assert (
        "- resume after error injected at step 3 (node 'agent') diverged: final state differs in"
        " channel 'messages'; first divergence: trajectory at step 3: expected 'calendar',"
        " got 'search'" in message
    ), message


class CyclingModel:
    """A scripted model that cycles through its answers, one per call (like
    `FakeMessagesListChatModel`, but every answer is a new message with new ids, as a real
    model's: the langchain fake returns the very same object, whose id then makes
    `add_messages` replace the earlier answer instead of appending)."""

    def __init__(self, *answers: tuple[str, list[tuple[str, dict[str, Any]]]]) -> None:
        self.answers = itertools.cycle(answers)

    def invoke(self, messages: Any) -> AIMessage:
        content, calls = next(self.answers)
        return AIMessage(
            content,
            id=f"run-{uuid.uuid4()}",
            tool_calls=[_call(name, **args) for name, args in calls],
        )


def test_non_idempotent_model_after_a_crash_repeats_a_tool_call() -> None:
    """inject='after': the model node ran, then crashed before its answer was saved.

    The model cycles through its answers, so re-running the crashed turn answers with the next
    one: it asks for `search` again and the search runs a second time.
    """

    def cycling_agent() -> StateGraph[Any, Any, Any, Any]:
        return agent_graph(CyclingModel(("", [("search", {"query": "flights"})]), ("Done.", [])))

    report = check_resume(
        cycling_agent, QUESTION, modes=["error"], inject="after", steps=[3], control=False
    )

    (result,) = report.results
    assert result.inject == "after" and result.injected
    assert not result.passed
    (duplicate,) = result.duplicate_tool_calls
    assert (duplicate.name, duplicate.count, duplicate.reference_count) == ("search", 2, 1)
    assert result.describe() == (
        "resume after error injected at the end of step 3 (node 'agent') diverged: final state"
        " differs in channel 'messages'; first divergence: trajectory at step 3: expected"
        " '(none)', got 'search'; duplicate tool call 'search' at step 4 (node 'tools'):"
        " answered 2 time(s), 1 in the reference"
    )


def test_policy_ignored_channels_make_a_volatile_channel_pass() -> None:
    policy = DivergencePolicy(ignore_channels=frozenset({"value"}))

    report = check_resume(lambda: multi_node("random"), INPUT, policy=policy, modes=["error"])

    assert report.passed, report.message()


# --------------------------------------------------------------------------------------------
# report, errors, pytest integration
# --------------------------------------------------------------------------------------------


def test_report_is_json() -> None:
    report = check_resume(lambda: multi_node("random"), INPUT, steps=[2], modes=["interrupt"])

    data = json.loads(report.model_dump_json())
    assert data["reference_steps"][1] == {"step": 2, "nodes": ["left", "right"]}
    assert [(f["step"], f["mode"], f["passed"]) for f in data["failures"]] == [
        (None, "none", False),
        (2, "interrupt", False),
    ]
    assert data["failures"][1]["findings"][0]["channel"] == "value"
    assert ResumeReport.model_validate_json(report.model_dump_json()).message() == (
        report.message()
    )


def test_bad_arguments_fail_at_the_call() -> None:
    with pytest.raises(TypeError, match="StateGraph"):
        check_resume(42, INPUT)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="modes"):
        check_resume(multi_node, INPUT, modes=["crash"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="inject"):
        check_resume(multi_node, INPUT, inject="during")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BaseCheckpointSaver"):
        check_resume(multi_node, INPUT, saver_factory=dict)


def test_a_graph_that_fails_without_injection_is_reported_as_such() -> None:
    def broken(state: State) -> dict[str, Any]:
        raise KeyError("missing")

    def factory() -> StateGraph[Any, Any, Any, Any]:
        builder = StateGraph(State)
        builder.add_node("broken", broken)
        builder.add_edge(START, "broken")
        return builder

    with pytest.raises(ReferenceRunFailed, match=r"reference run .* KeyError"):
        check_resume(factory, INPUT)


def test_resume_checker_fails_with_the_report_message() -> None:
    messages: list[str] = []

    def fail(message: str) -> Any:
        messages.append(message)
        raise AssertionError(message)

    checker = ResumeChecker(fail=fail, modes=["error"])
    assert checker(multi_node, INPUT).passed
    with pytest.raises(AssertionError):
        checker(lambda: multi_node("random"), INPUT)
    assert messages and "state at step 6 (node 'roll'): channel 'value'" in messages[0]
    assert len(checker.reports) == 2


def test_pytest_plugin_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plugin="""
        import operator, random
        from typing import Annotated, TypedDict
        from langgraph.graph import END, START, StateGraph

        class S(TypedDict, total=False):
            log: Annotated[list[str], operator.add]
            value: float

        def build(rand):
            b = StateGraph(S)
            b.add_node("a", lambda s: {"log": ["a"]})
            b.add_node("roll", lambda s: {"value": random.random() if rand else 0.5})
            b.add_edge(START, "a")
            b.add_edge("a", "roll")
            b.add_edge("roll", END)
            return b

        def test_green(resume_checker):
            report = resume_checker(lambda: build(False), {"log": []})
            assert len(report.results) == 4

        async def test_green_async(resume_checker):
            await resume_checker.acheck(lambda: build(False), {"log": []})

        def test_red(resume_checker):
            resume_checker(lambda: build(True), {"log": []}, modes=["interrupt"])
        """
    )
    # the plugin is loaded through its pytest11 entry point, as for any user
    result = pytester.runpytest_inprocess(
        "-o",
        "asyncio_mode=auto",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*resume check failed: 3 of 3 run(s) differ from the reference*",
            "*- control run (no failure injected) diverged (the graph is not deterministic even"
            " without a resume)*",
            "*- resume after interrupt before step 2 (node 'roll') diverged: final state differs"
            " in channel 'value'; first divergence: state at step 2 (node 'roll'): channel"
            " 'value' differs*",
        ]
    )
    # pytrace=False: the failure is the message, not a traceback into the harness
    assert "testing.py" not in result.stdout.str()


def test_messages_are_plain_messages() -> None:
    """Sanity: scripted messages carry tool calls with random ids (ignored by hashing)."""
    first = next(script())
    assert isinstance(first, BaseMessage) and first.tool_calls[0]["id"].startswith("call_")
