"""One trace per run: the library's spans of a run share its trace, under the app's span or
under an `invoke_workflow` span the library opens when none is current."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import graphs
from helpers import OTel, is_run_span
from langgraph.checkpoint.otel import instrument, names
from spantree import render


def config(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


def saver_for(otel: OTel, inner: Any = None, **options: Any) -> Any:
    return instrument(
        inner if inner is not None else InMemorySaver(),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        **options,
    )


def by_trace(spans: list[ReadableSpan]) -> dict[int, list[ReadableSpan]]:
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        traces.setdefault(span.context.trace_id, []).append(span)
    return traces


def run_spans(otel: OTel) -> list[ReadableSpan]:
    return [s for s in otel.spans() if is_run_span(s)]


def assert_one_trace_per_run(otel: OTel, runs: int) -> None:
    """`runs` traces, each with one root, an `invoke_workflow` span, and nothing outside it."""
    traces = by_trace(otel.spans())
    assert len(traces) == runs
    for spans in traces.values():
        roots = [s for s in spans if s.parent is None]
        assert [is_run_span(s) for s in roots] == [True]


def no_current_span() -> bool:
    return not trace.get_current_span().get_span_context().is_valid


MAP_TREE = """\
invoke_workflow LangGraph name=LangGraph outcome=finished
  get
  put step=-1 source=input nodes=[] channels_changed=[]
  put_writes node=__start__ outcome=ok channels=[__pregel_tasks,items]
  put step=0 source=loop nodes=[__start__] channels_changed=[items]
  put_writes node=worker outcome=ok channels=[results]
  put_writes node=worker outcome=ok channels=[results]
  put_writes node=worker outcome=ok channels=[results]
  put step=1 source=loop nodes=[worker] channels_changed=[results]"""
"""A map-reduce run with ``ok_write_spans=True`` (every task finishes ok)."""

MAP_TREE_DEFAULT = """\
invoke_workflow LangGraph name=LangGraph outcome=finished
  get
  put step=-1 source=input nodes=[] channels_changed=[]
  put step=0 source=loop nodes=[__start__] channels_changed=[items]
  put step=1 source=loop nodes=[worker] channels_changed=[results]"""
"""The same run by default: ok writes have no span."""


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_send_map_reduce_with_no_span_of_its_own_is_one_trace(
    durability: str, otel: OTel, tmp_path: Any
) -> None:
    # ok_write_spans: the point is that the writes of Send tasks, made on worker threads, join
    # the run's trace and name their node; they all finish ok, so by default they have no span
    with SqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as inner:
        graph = graphs.map_reduce().compile(
            checkpointer=saver_for(otel, inner, ok_write_spans=True)
        )
        for run in range(20):
            result = graph.invoke(
                {"items": ["a", "b", "c"]}, config(f"t{run}"), durability=durability
            )
            assert sorted(result["results"]) == ["A", "B", "C"]
            assert no_current_span()  # the run's context does not outlive the run
    assert_one_trace_per_run(otel, 20)
    writes = [s for s in otel.spans() if s.name == names.SPAN_PUT_WRITES]
    assert len(writes) == 20 * 4
    assert {s.attributes[names.TASK_NODE] for s in writes} == {"__start__", "worker"}
    if durability == "sync":  # the order of a run's spans is fixed only with sync writes
        first_run = by_trace(otel.spans())[run_spans(otel)[0].context.trace_id]
        assert render(first_run) == MAP_TREE


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_send_map_reduce_by_default_is_one_trace_without_ok_write_spans(
    durability: str, otel: OTel
) -> None:
    graph = graphs.map_reduce().compile(checkpointer=saver_for(otel))
    for run in range(5):
        result = graph.invoke({"items": ["a", "b", "c"]}, config(f"t{run}"), durability=durability)
        assert sorted(result["results"]) == ["A", "B", "C"]
        assert no_current_span()
    assert_one_trace_per_run(otel, 5)
    assert names.SPAN_PUT_WRITES not in otel.span_names()
    timed = [
        p.count
        for p in otel.metrics()[names.METRIC_OPERATION_DURATION]
        if p.attributes[names.OPERATION] == "put_writes"
    ]
    assert sum(timed) == 5 * 4  # every call is still timed
    if durability == "sync":
        first_run = by_trace(otel.spans())[run_spans(otel)[0].context.trace_id]
        assert render(first_run) == MAP_TREE_DEFAULT


def test_the_run_span_says_what_the_run_was_and_how_it_ended(otel: OTel) -> None:
    saver = saver_for(otel)
    asking = graphs.asking().compile(checkpointer=saver, name="asker")
    asking.invoke(graphs.user_input(), config())
    asking.invoke(Command(resume="yes"), config())
    failing = graphs.linear(graphs.Flaky(failures=1)).compile(checkpointer=saver)
    with pytest.raises(RuntimeError):
        failing.invoke(graphs.user_input(), config("t2"))
    failing.invoke(None, config("t2"))
    static = graphs.linear().compile(checkpointer=saver, interrupt_before=["c"])
    static.invoke(graphs.user_input(), config("t3"))
    assert no_current_span()
    runs = [dict(s.attributes or {}) for s in run_spans(otel)]
    assert [
        (a[names.THREAD_ID], a[names.GRAPH_NAME], a.get(names.RESUME_KIND), a[names.RUN_OUTCOME])
        for a in runs
    ] == [
        ("t1", "asker", None, "interrupted"),
        ("t1", "asker", "interrupt", "finished"),
        ("t2", "LangGraph", None, "error"),
        ("t2", "LangGraph", "error", "finished"),
        ("t3", "LangGraph", None, "interrupted"),
    ]
    assert all(a[names.CONVERSATION_ID] == a[names.THREAD_ID] for a in runs)
    failed = run_spans(otel)[2]
    assert failed.status.status_code.name == "ERROR"
    assert failed.attributes[names.ERROR_TYPE] == "RuntimeError"
    assert "failed" not in str(failed.status.description)  # no exception message
    assert_one_trace_per_run(otel, 5)


def test_the_run_span_is_the_genai_workflow_span_of_the_graph(otel: OTel) -> None:
    """`invoke_workflow {graph}` (semantic-conventions-genai's workflow span), INTERNAL, with the
    thread as conversation and session, the graph as workflow, and a chain for Phoenix."""
    saver = saver_for(otel)
    graphs.linear().compile(checkpointer=saver, name="planner").invoke(
        graphs.user_input(), config("t9")
    )
    (run,) = run_spans(otel)
    assert (run.name, run.kind.name) == ("invoke_workflow planner", "INTERNAL")
    assert {k: v for k, v in (run.attributes or {}).items() if not k.startswith("langgraph.")} == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.agent.name": "planner",
        "gen_ai.workflow.name": "planner",
        "gen_ai.conversation.id": "t9",
        "session.id": "t9",
        "openinference.span.kind": "CHAIN",
    }


def test_under_the_apps_span_the_library_opens_no_run_span(otel: OTel) -> None:
    saver = saver_for(otel)
    graph = graphs.with_subgraph().compile(checkpointer=saver)
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("request") as request:
        graph.invoke(graphs.user_input(), config())
    assert run_spans(otel) == []
    traces = by_trace(otel.spans())
    assert list(traces) == [request.get_span_context().trace_id]
    ids = {s.context.span_id: s for s in otel.spans() if s.context}
    for span in otel.spans():
        if span.name == "request":
            continue
        parent = span.parent
        while parent is not None and ids[parent.span_id].name != "request":
            parent = ids[parent.span_id].parent
        assert parent is not None, f"{span.name} is not under the app's span"
    subgraph_puts = [
        s
        for s in otel.spans()
        if s.name == names.SPAN_PUT and str(s.attributes[names.CHECKPOINT_NS]).startswith("sub:")
    ]
    assert subgraph_puts


def test_spans_of_nodes_join_a_sync_run_span(otel: OTel) -> None:
    tracer = otel.tracer_provider.get_tracer("tool")

    def lookup(state: graphs.MapState) -> dict[str, Any]:
        with tracer.start_as_current_span("tool.lookup"):
            return {"results": [state["items"][0]]}

    builder = StateGraph(graphs.MapState)
    builder.add_node("lookup", lookup)
    builder.add_conditional_edges(
        START, lambda s: [Send("lookup", {"items": [i]}) for i in s["items"]], ["lookup"]
    )
    builder.compile(checkpointer=saver_for(otel)).invoke({"items": ["a", "b"]}, config())
    [run] = run_spans(otel)
    tools = [s for s in otel.spans() if s.name == "tool.lookup"]
    assert len(tools) == 2
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in tools)


async def test_an_async_run_is_one_trace_and_leaves_no_context_behind(
    otel: OTel, tmp_path: Any
) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "a.db")) as inner:
        # ok_write_spans: the node of every write is checked below, the ok ones' included
        saver = saver_for(otel, inner, ok_write_spans=True)
        sub = graphs.with_subgraph(ask_inside=True).compile(checkpointer=saver)
        await sub.ainvoke(graphs.user_input(), config())
        assert no_current_span()
        await sub.ainvoke(Command(resume="ok"), config())
        assert no_current_span()
        fan = graphs.map_reduce().compile(checkpointer=saver)
        await fan.ainvoke({"items": ["a", "b", "c"]}, config("t2"))
        assert no_current_span()
    assert_one_trace_per_run(otel, 3)
    outcomes = [s.attributes[names.RUN_OUTCOME] for s in run_spans(otel)]
    assert outcomes == ["interrupted", "finished", "finished"]
    writes = [s for s in otel.spans() if s.name == names.SPAN_PUT_WRITES]
    assert names.TASK_NODE in writes[0].attributes
    nodes = {s.attributes[names.TASK_NODE] for s in writes}
    assert "unknown" not in nodes
    assert {"worker", "inner1", "inner_ask", "a"} <= nodes


def test_a_resume_span_carries_the_writers_ids_beside_its_link(otel: OTel) -> None:
    graph = graphs.asking().compile(checkpointer=saver_for(otel))
    graph.invoke(graphs.user_input(), config())
    graph.invoke(Command(resume="yes"), config())
    [resume] = [s for s in otel.spans() if s.name == names.SPAN_RESUME]
    [link] = resume.links
    attributes = resume.attributes or {}
    assert attributes[names.RESUME_WRITER_TRACE_ID] == f"{link.context.trace_id:032x}"
    assert attributes[names.RESUME_WRITER_SPAN_ID] == f"{link.context.span_id:016x}"
    writer = next(s for s in otel.spans() if s.context.span_id == link.context.span_id)
    assert writer.name == names.SPAN_PUT
    # the resumed run is a trace of its own, linked to the one that wrote the checkpoint
    assert writer.context.trace_id != resume.context.trace_id


def test_spans_of_a_run_carry_the_conversation_and_reads_outside_runs_do_not(otel: OTel) -> None:
    """Backends (Phoenix, MLflow, Langfuse) count the traces carrying `gen_ai.conversation.id`
    as a conversation's turns: a state or history read, or an update, between runs is no turn."""
    graph = graphs.linear().compile(checkpointer=saver_for(otel))
    graph.invoke(graphs.user_input(), config("t-reads"))
    in_run = otel.spans()
    otel.exporter.clear()
    graph.get_state(config("t-reads"))
    list(graph.get_state_history(config("t-reads")))
    graph.update_state(config("t-reads"), graphs.user_input())
    outside = otel.spans()
    assert in_run and all(s.attributes[names.CONVERSATION_ID] == "t-reads" for s in in_run)
    assert outside and all(names.CONVERSATION_ID not in s.attributes for s in outside)
    assert all(s.attributes[names.THREAD_ID] == "t-reads" for s in outside)
