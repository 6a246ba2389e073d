"""Recorded threads replayed against the current code (`langgraph-otel replay`,
`assert_replays`): threads of the agent corpus recorded on SQLite through the wrapper, then
replayed by the same code with a model that raises if called and tools whose side-effect
ledgers must stay empty; and a `create_agent` app replayed by five code changes, each found
at the step where the changed code first ran."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from opentelemetry.sdk.trace import TracerProvider
from typer.testing import CliRunner

import agents
import packaged_agents
import replay_app
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.analysis.records import history_records
from langgraph.checkpoint.otel.inspector.cli import app
from langgraph.checkpoint.otel.testing import (
    ReplayFailed,
    ReplayResult,
    aassert_replays,
    assert_replays,
    replay_thread,
)


class ModelCalled(AssertionError):
    """What the replay's model raises: a replay must never call a model."""


class RaisingScript:
    """A `Script` stand-in whose every answer raises."""

    def answer(self, turn: int, name: str | None) -> Any:
        raise ModelCalled(f"the model was called (turn {turn})")


RAISING = RaisingScript()


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[SqliteSaver]:
    conn = sqlite3.connect(tmp_path / "recorded.db", check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    yield saver
    conn.close()


def record(saver: SqliteSaver, build: Callable[[Any], Any], thread_id: str, *inputs: Any) -> None:
    """Run `inputs` on a thread through the wrapper (a real SDK): the recording."""
    graph = build(instrument(saver, tracer_provider=TracerProvider()))
    for given in inputs:
        graph.invoke(given, agents.thread(thread_id))


REFUND = {"messages": [("user", f"Refund order {packaged_agents.ORDER}")]}
CORPUS: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
    # name: (record with, replay with (raising model, fresh side-effect ledger), inputs)
    "create_react_agent": (
        lambda cp: agents.react_agent(cp),
        lambda tools: agents.react_agent(None, script=RAISING, tools=tools),
        (agents.question(),),
    ),
    "create_agent": (
        lambda cp: agents.langchain_agent(cp),
        lambda tools: agents.langchain_agent(None, script=RAISING, tools=tools),
        (agents.question(),),
    ),
    "create_agent, interrupted and resumed": (
        lambda cp: agents.langchain_agent(cp, script=agents.approval_script()),
        lambda tools: agents.langchain_agent(None, script=RAISING, tools=tools),
        (agents.question(), Command(resume="yes")),
    ),
    "supervisor": (
        lambda cp: packaged_agents.supervisor_agent(cp),
        lambda effects: packaged_agents.supervisor_agent(
            None,
            scripts=dict.fromkeys(packaged_agents.supervisor_scripts(), RAISING),
            effects=effects,
        ),
        (REFUND,),
    ),
    "deep agent": (
        lambda cp: packaged_agents.deep_agent(cp),
        lambda effects: packaged_agents.deep_agent(
            None, scripts=dict.fromkeys(packaged_agents.deep_scripts(), RAISING), effects=effects
        ),
        (REFUND,),
    ),
}


@pytest.mark.parametrize("shape", list(CORPUS))
def test_unchanged_code_replays_the_recording_without_calling_a_model_or_a_tool(
    saver: SqliteSaver, shape: str
) -> None:
    recorded_with, replay_with, inputs = CORPUS[shape]
    record(saver, recorded_with, "t", *inputs)
    packaged = shape in ("supervisor", "deep agent")
    ledger = packaged_agents.Effects() if packaged else agents.Tools()
    (result,) = assert_replays(
        replay_with(ledger), saver, ["t"], packaged_agents.CONTROL_TOOLS if packaged else ()
    )
    assert result.ok and result.replayed == result.checkpoints > 0
    assert result.model_calls > 0 and result.tool_calls > 0  # all answered from the recording
    assert ledger.ledger == []  # no tool body ran


def _first_step(saver: SqliteSaver, node: str, nth: int = 1) -> int:
    """The step of the `nth` recorded root checkpoint that applies `node`'s writes."""
    tuples = [
        t
        for t in saver.list(agents.thread("trip"))
        if not t.config["configurable"].get("checkpoint_ns")
    ]
    steps = [r.step for r in history_records(tuples) if node in r.nodes]
    step = steps[nth - 1]
    assert step is not None
    return step


EXPECTED = {
    # change: (kind, node, channel, (node whose recorded run the finding is at, nth run))
    # the guard ends the run where the recorded run went on
    "route": ("trajectory", "Guard.after_model", None, ("Guard.after_model", 2)),
    # the recorded answer asks for `search`, which the new graph does not offer the model
    "rename_tool": ("trajectory", "search", None, ("model", 1)),
    "change_argument": ("tool_arguments", "lookup", None, ("tools", 1)),
    "rename_state_key": (
        "state",
        "TurnCounter.after_model",
        "model_turns",
        ("TurnCounter.after_model", 1),
    ),
    "add_node": ("trajectory", "Trim.before_model", None, ("model", 1)),
}


@pytest.mark.parametrize("change", replay_app.CHANGES)
def test_a_code_change_is_found_at_the_step_it_changes(saver: SqliteSaver, change: str) -> None:
    record(saver, lambda cp: replay_app.build(checkpointer=cp), "trip", agents.question())
    tools = agents.Tools()
    model = agents.ScriptedChatModel(script=RAISING)
    result = replay_thread(replay_app.build(change, tools=tools, model=model), saver, "trip")
    kind, node, channel, (at_node, nth) = EXPECTED[change]
    assert result.divergence is not None and result.unreplayable is None
    found = result.divergence
    assert (found.kind, found.node, found.channel) == (kind, node, channel)
    assert found.step == _first_step(saver, at_node, nth)
    assert tools.ledger == []


def test_the_unchanged_app_has_no_finding(saver: SqliteSaver) -> None:
    record(saver, lambda cp: replay_app.build(checkpointer=cp), "trip", agents.question())
    model = agents.ScriptedChatModel(script=RAISING)
    (result,) = assert_replays(replay_app.build(model=model), saver, ["trip"])
    assert result.ok


def test_a_recording_without_its_steps_is_reported_unreplayable(saver: SqliteSaver) -> None:
    graph = agents.react_agent(instrument(saver, tracer_provider=TracerProvider()))
    graph.invoke(agents.question(), agents.thread("exit"), durability="exit")
    result = replay_thread(agents.react_agent(None, script=RAISING), saver, "exit")
    assert result.divergence is None
    assert result.unreplayable is not None and "input" in result.unreplayable


def test_a_model_call_the_recording_has_no_answer_for_is_reported_unreplayable(
    saver: SqliteSaver,
) -> None:
    # recorded: the model's second turn failed (a provider outage) and the thread was left
    # there; the replay reaches that call and has nothing to answer it with
    script = agents.travel_script()
    script.fail_once(1)
    graph = agents.react_agent(instrument(saver, tracer_provider=TracerProvider()), script=script)
    with pytest.raises(agents.ModelUnavailable):
        graph.invoke(agents.question(), agents.thread("outage"))
    tools = agents.Tools()
    result = replay_thread(agents.react_agent(None, script=RAISING, tools=tools), saver, "outage")
    assert result.divergence is None
    assert result.unreplayable == "a model call in graph '(root)' has no recorded answer"
    assert tools.ledger == []


def test_assert_replays_names_each_divergence(saver: SqliteSaver) -> None:
    record(saver, lambda cp: replay_app.build(checkpointer=cp), "trip", agents.question())
    model = agents.ScriptedChatModel(script=RAISING)
    with pytest.raises(ReplayFailed, match=r"trip: trajectory divergence at step 1, node Trim"):
        assert_replays(replay_app.build("add_node", model=model), saver, ["trip"])


def test_the_replay_command_gates_on_divergence(saver: SqliteSaver, tmp_path: Path) -> None:
    for thread_id in ("trip-1", "trip-2"):
        record(saver, lambda cp: replay_app.build(checkpointer=cp), thread_id, agents.question())
    url = f"sqlite:///{tmp_path / 'recorded.db'}"
    runner = CliRunner()
    same = runner.invoke(
        app, ["replay", "replay_app:release_1", "trip-1", "trip-2", "-s", url, "--json"]
    )
    changed = runner.invoke(
        app, ["replay", "replay_app:route", "trip-1", "trip-2", "-s", url, "--json"]
    )
    assert same.exit_code == 0, same.stdout
    assert [t["ok"] for t in json.loads(same.stdout)["threads"]] == [True, True]
    assert changed.exit_code == 1
    rows = json.loads(changed.stdout)["threads"]
    assert [row["divergence"]["node"] for row in rows] == ["Guard.after_model"] * 2


class Quota(TypedDict):
    count: int


def quota_graph(checkpointer: Any, limit: int) -> Any:
    """`count` goes up by one per step; `check` raises once it passes `limit` (a node's own
    bug, as deterministic as the rest of the code)."""

    def bump(state: Quota) -> dict[str, Any]:
        return {"count": state["count"] + 1}

    def check(state: Quota) -> dict[str, Any]:
        if state["count"] > limit:
            raise ValueError("over quota")
        return {}

    builder = StateGraph(Quota)
    builder.add_node("bump", bump)
    builder.add_node("check", check)
    builder.add_edge(START, "bump")
    builder.add_edge("bump", "check")
    builder.add_edge("check", END)
    return builder.compile(checkpointer=checkpointer)


def record_over_quota(saver: SqliteSaver) -> None:
    """Thread ``over``: a run whose `check` node failed (limit 0), recorded."""
    with pytest.raises(ValueError):
        quota_graph(instrument(saver, tracer_provider=TracerProvider()), 0).invoke(
            {"count": 0}, agents.thread("over")
        )


def test_a_recorded_run_that_failed_replays_as_recorded_when_the_code_fails_alike(
    saver: SqliteSaver,
) -> None:
    record_over_quota(saver)
    (result,) = assert_replays(quota_graph(None, 0), saver, ["over"])
    assert result.replayed == result.checkpoints and not result.ends_mid_run


def test_a_recorded_run_that_failed_diverges_where_the_new_code_goes_on(
    saver: SqliteSaver,
) -> None:
    record_over_quota(saver)
    result = replay_thread(quota_graph(None, 5), saver, "over")
    found = result.divergence
    assert found is not None and (found.kind, found.node) == ("trajectory", "check")


def async_agent(checkpointer: Any, script: Any, tools: agents.Tools) -> Any:
    """A tool-calling agent whose model node is `async def`: it runs only through `ainvoke`
    and `astream`, as many production apps (the Agent Server, FastAPI) are written."""
    model = agents.ScriptedChatModel(script=script)

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools.all()))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def test_an_async_only_graph_replays_through_ainvoke_without_a_model_or_a_tool(
    tmp_path: Path,
) -> None:
    recorded = InMemorySaver()
    graph = async_agent(
        instrument(recorded, tracer_provider=TracerProvider()),
        agents.travel_script(),
        agents.Tools(),
    )
    asyncio.run(graph.ainvoke(agents.question(), agents.thread("async")))
    tools = agents.Tools()
    (result,) = assert_replays(async_agent(None, RAISING, tools), recorded, ["async"])
    assert result.replayed == result.checkpoints and result.model_calls > 0
    assert result.tool_calls > 0 and tools.ledger == []


def test_a_run_continued_past_a_static_interrupt_replays_as_recorded(saver: SqliteSaver) -> None:
    # a person approves each tool step (interrupt_before), the run continued with invoke(None)
    graph = agents.react_agent(
        instrument(saver, tracer_provider=TracerProvider()), interrupt_before=["tools"]
    )
    config = agents.thread("approved")
    graph.invoke(agents.question(), config)
    while graph.get_state(config).next:
        graph.invoke(None, config)
    tools = agents.Tools()
    replaying = agents.react_agent(None, script=RAISING, tools=tools, interrupt_before=["tools"])
    (result,) = assert_replays(replaying, saver, ["approved"])
    assert result.replayed == result.checkpoints and result.tool_calls > 0
    assert tools.ledger == []


def test_a_thread_forked_back_in_time_replays_its_line_as_recorded(saver: SqliteSaver) -> None:
    # the first run finished; then the user went back to the first tool step and ran on from
    # there (time travel): the thread's line is the fork's, the first run a branch left beside
    graph = agents.react_agent(instrument(saver, tracer_provider=TracerProvider()))
    config = agents.thread("forked")
    graph.invoke(agents.question(), config)
    tool_steps = [s for s in graph.get_state_history(config) if set(s.next) == {"tools"}]
    graph.invoke(None, tool_steps[-1].config)  # the oldest
    tools = agents.Tools()
    (result,) = assert_replays(
        agents.react_agent(None, script=RAISING, tools=tools), saver, ["forked"]
    )
    assert result.replayed == result.checkpoints and tools.ledger == []


def test_a_recording_on_an_async_saver_replays_from_inside_an_event_loop(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def record_then_replay() -> list[ReplayResult]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.db")) as saver:
            graph = async_agent(
                instrument(saver, tracer_provider=TracerProvider()),
                agents.travel_script(),
                agents.Tools(),
            )
            await graph.ainvoke(agents.question(), agents.thread("served"))
            return await aassert_replays(async_agent(None, RAISING, tools), saver, ["served"])

    tools = agents.Tools()
    (result,) = asyncio.run(record_then_replay())
    assert result.replayed == result.checkpoints > 0 and tools.ledger == []
