"""Spans and metrics of real graphs through the wrapper, compared as whole span trees."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names, stored_history
from langgraph.checkpoint.otel.analysis.records import is_state_channel
from langgraph.checkpoint.otel.analysis.tool_calls import tool_call_key
from spantree import render


class AgentState(TypedDict):
    messages: Annotated[list[Any], add_messages]
    count: int


def agent(state: AgentState) -> dict[str, Any]:
    call = {"name": "search", "args": {"q": "weather"}, "id": "call-1"}
    return {"messages": [AIMessage("", tool_calls=[call])], "count": state["count"] + 1}


def tools(state: AgentState) -> dict[str, Any]:
    return {"messages": [ToolMessage("sunny", name="search", tool_call_id="call-1")]}


def answer(state: AgentState) -> dict[str, Any]:
    return {"messages": [AIMessage("It is sunny.")], "count": state["count"] + 1}


def agent_graph() -> StateGraph[AgentState]:
    builder = StateGraph(AgentState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_node("answer", answer)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tools")
    builder.add_edge("tools", "answer")
    builder.add_edge("answer", END)
    return builder


def config(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


INPUT = {"messages": [HumanMessage("weather?")], "count": 0}

AGENT_TREE_WITH_OK_WRITES = """\
invoke_workflow LangGraph name=LangGraph outcome=finished
  get
  put step=-1 source=input nodes=[] channels_changed=[]
  put_writes node=__start__ outcome=ok channels=[branch:to:agent,count,messages]
  put step=0 source=loop nodes=[__start__] channels_changed=[count,messages]
  put_writes node=agent outcome=ok channels=[branch:to:tools,count,messages]
  put step=1 source=loop nodes=[agent] channels_changed=[count,messages]
  put_writes node=tools outcome=ok channels=[branch:to:answer,messages]
  put step=2 source=loop nodes=[tools] channels_changed=[messages]
  put_writes node=answer outcome=ok channels=[count,messages]
  put step=3 source=loop nodes=[answer] channels_changed=[count,messages]"""
"""The agent run's tree with ``ok_write_spans=True``: a put_writes span for every task."""

AGENT_TREE = """\
invoke_workflow LangGraph name=LangGraph outcome=finished
  get
  put step=-1 source=input nodes=[] channels_changed=[]
  put step=0 source=loop nodes=[__start__] channels_changed=[count,messages]
  put step=1 source=loop nodes=[agent] channels_changed=[count,messages]
  put step=2 source=loop nodes=[tools] channels_changed=[messages]
  put step=3 source=loop nodes=[answer] channels_changed=[count,messages]"""
"""The agent run's tree by default: every task finished ok, so no put_writes span at all (each
task's node is on the put that applies its writes)."""


def instrumented(otel: OTel, bare: Any, **options: Any) -> Any:
    return instrument(
        bare,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        **options,
    )


def agent_run_tree(otel: OTel, tmp_path: Any, **options: Any) -> str:
    with SqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as bare:
        graph = agent_graph().compile(checkpointer=instrumented(otel, bare, **options))
        # durability="sync": each put finishes before the next step, so the order is fixed
        result = graph.invoke(INPUT, config(), durability="sync")
    assert result["count"] == 2
    return render(otel.spans())


def test_span_tree_of_an_agent_run(otel: OTel, tmp_path: Any) -> None:
    assert agent_run_tree(otel, tmp_path) == AGENT_TREE


def test_span_tree_of_an_agent_run_with_ok_write_spans(otel: OTel, tmp_path: Any) -> None:
    assert agent_run_tree(otel, tmp_path, ok_write_spans=True) == AGENT_TREE_WITH_OK_WRITES


def test_put_span_attributes_and_channel_events(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = agent_graph().compile(checkpointer=saver)
    graph.invoke(INPUT, config("thread-a"))
    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    last = puts[-1]
    attrs = dict(last.attributes or {})
    stored = graph.get_state(config("thread-a"))
    assert attrs[names.THREAD_ID] == attrs[names.CONVERSATION_ID] == "thread-a"
    assert attrs[names.CHECKPOINT_NS] == ""
    assert attrs[names.CHECKPOINT_ID] == stored.config["configurable"]["checkpoint_id"]
    assert attrs[names.PARENT_ID] == stored.parent_config["configurable"]["checkpoint_id"]
    assert attrs[names.SAVER] == "InMemorySaver"
    assert attrs[names.OPERATION] == "put"
    assert attrs[names.VERSION] >= 1
    # the stored hashes are the ones on the span; callers of the wrapper do not see them
    assert names.METADATA_KEY not in stored.metadata
    meta = stored_history(saver, config("thread-a"), limit=1)[0].metadata[names.METADATA_KEY]
    assert attrs[names.STATE_HASH] == meta["state_hash"]
    assert attrs[names.SIZE_BYTES] == sum(size for _, size in meta["channels"].values())
    events = {
        e.attributes[names.CHANNEL_NAME]: e.attributes
        for e in last.events
        if e.name == names.EVENT_CHANNEL
    }
    assert events["messages"][names.CHANNEL_HASH] == meta["channels"]["messages"][0]
    assert events["messages"][names.CHANNEL_SUMMARY] == "+1 message: ai"
    assert attrs[names.WRITTEN_BYTES] == sum(e[names.CHANNEL_SIZE_BYTES] for e in events.values())
    first_agent_put = puts[2]
    summary = {
        e.attributes[names.CHANNEL_NAME]: e.attributes
        for e in first_agent_put.events
        if e.name == names.EVENT_CHANNEL
    }
    assert summary["messages"][names.CHANNEL_SUMMARY] == "+1 message: ai(tool_calls=search)"
    assert summary["count"][names.CHANNEL_SUMMARY] == "int"
    # the put that holds the tool call names it with its idempotency key; no other put does
    tool_calls = [
        (put.attributes[names.CHECKPOINT_ID], dict(e.attributes))
        for put in puts
        for e in put.events
        if e.name == names.EVENT_TOOL_CALL
    ]
    request = stored_history(saver, config("thread-a"))[-3].checkpoint["channel_values"]
    ai = request["messages"][-1]
    assert ai.tool_calls[0]["name"] == "search"
    assert tool_calls == [
        (
            first_agent_put.attributes[names.CHECKPOINT_ID],
            {
                names.TOOL_NAME: "search",
                names.TOOL_CALL_ID: ai.tool_calls[0]["id"],
                names.TOOL_IDEMPOTENCY_KEY: tool_call_key("search", ai.tool_calls[0]["args"]),
            },
        )
    ]
    # growth: the line of checkpoints so far, and the largest channel
    assert [p.attributes[names.THREAD_CHECKPOINTS] for p in puts] == list(range(1, len(puts) + 1))
    written = [p.attributes[names.WRITTEN_BYTES] for p in puts]
    assert [p.attributes[names.THREAD_WRITTEN_BYTES] for p in puts] == [
        sum(written[: i + 1]) for i in range(len(puts))
    ]
    assert (
        attrs[names.LARGEST_CHANNEL]
        == max(
            (size, name) for name, (_, size) in meta["channels"].items() if is_state_channel(name)
        )[1]
    )
    assert meta["lineage"] == [len(puts), sum(written)]


def test_no_content_in_telemetry(otel: OTel) -> None:
    secret = "SECRET-PASSPHRASE-42"

    class S(TypedDict):
        messages: Annotated[list[Any], add_messages]
        notes: dict[str, str]

    def node(state: S) -> dict[str, Any]:
        return {"messages": [AIMessage(secret)], "notes": {secret: secret}}

    builder = StateGraph(S)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    builder.compile(checkpointer=saver).invoke(
        {"messages": [HumanMessage(secret)], "notes": {}}, config(secret)
    )
    for span in otel.spans():
        values = [*span.attributes.values()] if span.attributes else []
        for event in span.events:
            values += list((event.attributes or {}).values())
        # the thread id is the user's own identifier and is reported; content never is
        text = repr([v for v in values if v != secret])
        assert secret not in text, span.name


class Items(TypedDict):
    items: Annotated[list[str], operator.add]


class Count(TypedDict):
    n: int


def test_put_writes_outcomes_and_send_nodes(otel: OTel) -> None:
    def fan_out(state: Items) -> list[Send]:
        return [Send("work", {"items": ["x"]}), Send("work", {"items": ["y"]})]

    def work(state: Items) -> dict[str, Any]:
        return {"items": ["done"]}

    def ask(state: Items) -> dict[str, Any]:
        return {"items": [interrupt("ok?")]}

    builder = StateGraph(Items)
    builder.add_node("work", work)
    builder.add_node("ask", ask)
    builder.add_conditional_edges(START, fan_out)
    builder.add_edge("work", "ask")
    # the point is the node and outcome of every write, ok ones included: give them all a span
    saver = instrumented(otel, InMemorySaver(), ok_write_spans=True)
    graph = builder.compile(checkpointer=saver)
    graph.invoke({"items": []}, config(), durability="sync")
    graph.invoke(Command(resume="yes"), config(), durability="sync")
    writes = [
        (s.attributes[names.TASK_NODE], s.attributes[names.TASK_OUTCOME])
        for s in otel.spans()
        if s.name == names.SPAN_PUT_WRITES
    ]
    assert writes == [
        ("__start__", "ok"),
        ("work", "ok"),
        ("work", "ok"),
        ("ask", "interrupt"),
        ("__input__", "resume"),
        ("ask", "ok"),
    ]
    # an interrupt is not an error: no span says ERROR
    assert all(s.status.status_code.name != "ERROR" for s in otel.spans())
    outcomes = {
        (p.attributes[names.TASK_NODE], p.attributes[names.TASK_OUTCOME]): p.value
        for p in otel.metrics()[names.METRIC_TASK_OUTCOMES]
    }
    assert outcomes == {
        ("__start__", "ok"): 1,
        ("work", "ok"): 2,
        ("ask", "interrupt"): 1,
        ("__input__", "resume"): 1,
        ("ask", "ok"): 1,
    }


def test_node_error_is_an_error_write_not_an_error_span(otel: OTel) -> None:
    class Boom(RuntimeError):
        pass

    def fail(state: Count) -> dict[str, Any]:
        raise Boom("no")

    builder = StateGraph(Count)
    builder.add_node("fail", fail)
    builder.add_edge(START, "fail")
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    with pytest.raises(Boom):
        builder.compile(checkpointer=saver).invoke({"n": 0}, config(), durability="sync")
    # by default the ok write of __start__ has no span; the failed task's error write has one
    assert render(otel.spans(), keys=["langgraph.task.node", "langgraph.task.outcome"]) == (
        "invoke_workflow LangGraph ERROR\n  get\n  put\n  put\n  put_writes node=fail outcome=error"
    )


def test_subgraph_checkpoints_carry_their_namespace(otel: OTel) -> None:
    inner_builder = StateGraph(Count)
    inner_builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    inner_builder.add_edge(START, "inc")
    outer = StateGraph(Count)
    outer.add_node("sub", inner_builder.compile())
    outer.add_edge(START, "sub")
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    assert outer.compile(checkpointer=saver).invoke({"n": 1}, config()) == {"n": 2}
    namespaces = {
        s.attributes[names.CHECKPOINT_NS] for s in otel.spans() if s.name == names.SPAN_PUT
    }
    assert "" in namespaces
    sub = [ns for ns in namespaces if ns.startswith("sub:")]
    assert len(sub) == 1
    sub_nodes = [
        s.attributes[names.NODES]
        for s in otel.spans()
        if s.name == names.SPAN_PUT and s.attributes[names.CHECKPOINT_NS] == sub[0]
    ]
    assert ("inc",) in sub_nodes


@pytest.mark.parametrize(
    ("options", "tree"),
    [({}, AGENT_TREE), ({"ok_write_spans": True}, AGENT_TREE_WITH_OK_WRITES)],
    ids=["default", "ok_write_spans"],
)
async def test_async_graph_gives_one_span_per_call(
    otel: OTel, options: dict[str, Any], tree: str
) -> None:
    # InMemorySaver.aput calls self.put (and aput_writes self.put_writes): delegation must
    # still give one span per call (with ok_write_spans, per put_writes call too)
    saver = instrumented(otel, InMemorySaver(), **options)
    graph = agent_graph().compile(checkpointer=saver)
    result = await graph.ainvoke(INPUT, config(), durability="sync")
    assert result["count"] == 2
    assert render(otel.spans()) == tree
    # and one duration measurement per call, spans or not (4 tasks, 5 checkpoints)
    durations = {
        p.attributes[names.OPERATION]: p.count
        for p in otel.metrics()[names.METRIC_OPERATION_DURATION]
    }
    assert durations["put_writes"] == 4
    assert durations["put"] == 5


def test_metrics_never_carry_unbounded_ids(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = agent_graph().compile(checkpointer=saver)
    for i in range(3):
        graph.invoke(INPUT, config(f"thread-{i}"))
    data = otel.metrics()
    assert set(data) >= {
        names.METRIC_OPERATION_DURATION,
        names.METRIC_CHECKPOINT_SIZE,
        names.METRIC_CHANNEL_SIZE,
        names.METRIC_TASK_OUTCOMES,
    }
    allowed = {
        names.OPERATION,
        names.SAVER,
        names.ERROR_TYPE,
        names.CHANNEL_NAME,
        names.TASK_NODE,
        names.TASK_OUTCOME,
        names.RESUME_KIND,
        names.DIVERGENCE_KIND,
        names.GEN_AI_OPERATION_NAME,  # invoke_workflow, on the run duration
        names.AGENT_NAME,  # the graph's name (bounded: graphs are code)
    }
    for metric, points in data.items():
        for point in points:
            assert set(point.attributes) <= allowed, metric
    durations = {
        p.attributes[names.OPERATION]: p.count for p in data[names.METRIC_OPERATION_DURATION]
    }
    assert durations["put"] == 15  # 5 checkpoints x 3 threads
    (runs,) = data[names.METRIC_RUN_DURATION]  # one point: invoke_workflow of the one graph
    assert runs.count == 3
    assert runs.attributes == {
        names.GEN_AI_OPERATION_NAME: "invoke_workflow",
        names.AGENT_NAME: "LangGraph",
    }
    assert durations["put_writes"] == 12
    sizes = {p.attributes[names.CHANNEL_NAME] for p in data[names.METRIC_CHANNEL_SIZE]}
    assert {"messages", "count"} <= sizes


class CallRecordingSaver(InMemorySaver):
    """An InMemorySaver that records the channels of every put_writes call it receives (its
    aput_writes calls put_writes, so async calls are recorded too): the ground truth of how
    many calls the wrapper delegated."""

    def __init__(self) -> None:
        super().__init__()
        self.write_calls: list[list[str]] = []

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.write_calls.append([channel for channel, _ in writes])
        super().put_writes(config, writes, task_id, task_path)


FAIL_INTERRUPT_RESUME_WRITES = [
    ("__start__", "ok"),
    ("a", "ok"),
    ("b", "error"),  # first run: b fails
    ("b", "ok"),  # second run: b is retried and succeeds
    ("ask", "interrupt"),  # ... and ask interrupts
    ("__input__", "resume"),  # third run: Command(resume=...)
    ("ask", "ok"),  # ... and ask finishes
]
"""(node, outcome) of every put_writes call of `run_fail_interrupt_resume`, in order."""


async def run_fail_interrupt_resume(saver: Any) -> None:
    """async_linear(flaky, ask=True): a run failing at b, a retry stopping at the interrupt in
    ask, and its resume."""
    graph = graphs.async_linear(flaky=graphs.Flaky(failures=1), ask=True).compile(
        checkpointer=saver
    )
    cfg = config("fail-interrupt-resume")
    with pytest.raises(RuntimeError, match="b failed"):
        await graph.ainvoke(graphs.user_input(), cfg, durability="sync")
    await graph.ainvoke(None, cfg, durability="sync")
    assert graph.get_state(cfg).next == ("ask",)
    result = await graph.ainvoke(Command(resume="yes"), cfg, durability="sync")
    assert result["last"] == "yes"


def put_writes_spans(otel: OTel) -> list[tuple[str, str]]:
    return [
        (s.attributes[names.TASK_NODE], s.attributes[names.TASK_OUTCOME])
        for s in otel.spans()
        if s.name == names.SPAN_PUT_WRITES
    ]


def put_writes_metrics(otel: OTel) -> tuple[int, dict[tuple[str, str], int]]:
    """put_writes calls timed in operation.duration; task.outcomes values by (node, outcome)."""
    data = otel.metrics()
    timed = sum(
        p.count
        for p in data[names.METRIC_OPERATION_DURATION]
        if p.attributes[names.OPERATION] == "put_writes"
    )
    outcomes: dict[tuple[str, str], int] = {}
    for p in data[names.METRIC_TASK_OUTCOMES]:
        key = (p.attributes[names.TASK_NODE], p.attributes[names.TASK_OUTCOME])
        outcomes[key] = outcomes.get(key, 0) + p.value
    return timed, outcomes


async def test_put_writes_spans_only_for_error_interrupt_and_resume_by_default(
    otel: OTel,
) -> None:
    bare = CallRecordingSaver()
    await run_fail_interrupt_resume(instrumented(otel, bare))
    calls = len(FAIL_INTERRUPT_RESUME_WRITES)
    assert len(bare.write_calls) == calls
    # the calls the inner saver got that are not ok writes (an error, an interrupt, a resume)
    special = [
        i
        for i, channels in enumerate(bare.write_calls)
        if {ERROR, INTERRUPT} & set(channels) or channels == [RESUME]
    ]
    assert special == [2, 4, 5]
    # a span for exactly the error, interrupt and resume writes; none for the ok ones
    assert put_writes_spans(otel) == [
        (node, outcome) for node, outcome in FAIL_INTERRUPT_RESUME_WRITES if outcome != "ok"
    ]
    error = next(s for s in otel.spans() if s.name == names.SPAN_PUT_WRITES)
    assert error.attributes[names.TASK_OUTCOME] == "error"
    assert error.status.status_code.name != "ERROR"  # the node failed, not the saver call
    assert error.attributes[names.INSTRUMENTATION_DURATION] >= 0.0
    # every call is still timed and counted, spans or not
    timed, outcomes = put_writes_metrics(otel)
    assert timed == calls
    assert outcomes == {pair: 1 for pair in FAIL_INTERRUPT_RESUME_WRITES}
    totals: dict[str, int] = {}
    for (_, outcome), value in outcomes.items():
        totals[outcome] = totals.get(outcome, 0) + value
    assert totals == {"ok": 4, "error": 1, "interrupt": 1, "resume": 1}


async def test_ok_write_spans_gives_every_put_writes_call_a_span(otel: OTel) -> None:
    bare = CallRecordingSaver()
    await run_fail_interrupt_resume(instrumented(otel, bare, ok_write_spans=True))
    assert len(bare.write_calls) == len(FAIL_INTERRUPT_RESUME_WRITES)
    assert put_writes_spans(otel) == FAIL_INTERRUPT_RESUME_WRITES
    timed, outcomes = put_writes_metrics(otel)
    assert timed == len(FAIL_INTERRUPT_RESUME_WRITES)
    assert outcomes == {pair: 1 for pair in FAIL_INTERRUPT_RESUME_WRITES}
