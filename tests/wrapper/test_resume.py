"""Every resume kind classified and linked in real graphs, sync and async, root and subgraph."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from opentelemetry.sdk.trace import ReadableSpan

from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.analysis.resume_events import resume_log
from langgraph.checkpoint.otel.analysis.span_records import span_facts


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


class Flaky:
    """Nodes that fail or interrupt on demand (per test)."""

    def __init__(self, fail_b: bool = False, ask_in_c: bool = False) -> None:
        self.fail_b = fail_b
        self.ask_in_c = ask_in_c

    def a(self, state: State) -> dict[str, Any]:
        return {"steps": ["a"]}

    def b(self, state: State) -> dict[str, Any]:
        if self.fail_b:
            self.fail_b = False
            raise RuntimeError("b failed")
        return {"steps": ["b"]}

    def c(self, state: State) -> dict[str, Any]:
        if self.ask_in_c:
            return {"steps": [f"c:{interrupt('ok?')}"]}
        return {"steps": ["c"]}


def build(nodes: Flaky) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("a", nodes.a)
    builder.add_node("b", nodes.b)
    builder.add_node("c", nodes.c)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    return builder


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def resumes(spans: list[ReadableSpan], ns: str = "") -> list[ReadableSpan]:
    return [
        s
        for s in spans
        if s.name == names.SPAN_RESUME and (s.attributes or {}).get(names.CHECKPOINT_NS) == ns
    ]


def kinds(otel: OTel) -> list[str]:
    return [str(s.attributes[names.RESUME_KIND]) for s in resumes(otel.spans())]


def assert_linked_to_writer(otel: OTel, resume: ReadableSpan) -> None:
    """The resume links to the very put span that wrote the checkpoint it loaded."""
    from_id = resume.attributes[names.RESUME_FROM_CHECKPOINT_ID]
    writers = [
        s
        for s in otel.spans()
        if s.name == names.SPAN_PUT and s.attributes[names.CHECKPOINT_ID] == from_id
    ]
    assert len(writers) == 1
    assert [(link.context.trace_id, link.context.span_id) for link in resume.links] == [
        (writers[0].context.trace_id, writers[0].context.span_id)
    ]
    assert resume.links[0].attributes == {names.LINK_TYPE: "checkpoint_writer"}
    # the first put after the resume carries where it resumed from
    later_puts = [
        s
        for s in otel.spans()
        if s.name == names.SPAN_PUT
        and s.start_time > resume.start_time
        and s.attributes[names.CHECKPOINT_NS] == resume.attributes[names.CHECKPOINT_NS]
        and s.attributes[names.THREAD_ID] == resume.attributes[names.THREAD_ID]
    ]
    if later_puts:
        first = min(later_puts, key=lambda s: s.start_time)
        assert first.attributes[names.RESUME_FROM_CHECKPOINT_ID] == from_id
        assert all(names.RESUME_FROM_CHECKPOINT_ID not in s.attributes for s in later_puts[1:])


Scenario = Callable[[BaseCheckpointSaver[Any], OTel], tuple[str, list[str]]]


def error_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    graph = build(Flaky(fail_b=True)).compile(checkpointer=saver)
    with pytest.raises(RuntimeError):
        graph.invoke({"steps": []}, CONFIG)
    assert graph.invoke(None, CONFIG)["steps"] == ["a", "b", "c"]
    return "error", ["b"]


def dynamic_interrupt_scenario(
    saver: BaseCheckpointSaver[Any], otel: OTel
) -> tuple[str, list[str]]:
    graph = build(Flaky(ask_in_c=True)).compile(checkpointer=saver)
    graph.invoke({"steps": []}, CONFIG)
    assert graph.invoke(Command(resume="yes"), CONFIG)["steps"] == ["a", "b", "c:yes"]
    return "interrupt", ["c"]


def interrupt_before_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    graph = build(Flaky()).compile(checkpointer=saver, interrupt_before=["b"])
    graph.invoke({"steps": []}, CONFIG)
    assert graph.invoke(None, CONFIG)["steps"] == ["a", "b", "c"]
    return "interrupt", ["b"]


def interrupt_after_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    graph = build(Flaky()).compile(checkpointer=saver, interrupt_after=["a"])
    graph.invoke({"steps": []}, CONFIG)
    assert graph.invoke(None, CONFIG)["steps"] == ["a", "b", "c"]
    return "interrupt", ["b"]


def crash_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    # the first run stops after `a` with `b` scheduled and nothing recorded, exactly what a
    # killed process leaves; the resuming process runs a graph with no static interrupts
    build(Flaky()).compile(checkpointer=saver, interrupt_before=["b"]).invoke({"steps": []}, CONFIG)
    graph = build(Flaky()).compile(checkpointer=saver)
    assert graph.invoke(None, CONFIG)["steps"] == ["a", "b", "c"]
    return "crash", ["b"]


def fork_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    graph = build(Flaky()).compile(checkpointer=saver)
    graph.invoke({"steps": []}, CONFIG)
    after_a = next(s for s in graph.get_state_history(CONFIG) if s.values["steps"] == ["a"])
    assert graph.invoke(None, after_a.config)["steps"] == ["a", "b", "c"]
    return "fork", ["b"]


def update_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    graph = build(Flaky()).compile(checkpointer=saver, interrupt_before=["c"])
    graph.invoke({"steps": []}, CONFIG)
    graph.update_state(CONFIG, {"steps": ["edited"]})
    assert graph.invoke(None, CONFIG)["steps"] == ["a", "b", "edited", "c"]
    return "update", ["c"]


def continue_scenario(saver: BaseCheckpointSaver[Any], otel: OTel) -> tuple[str, list[str]]:
    graph = build(Flaky()).compile(checkpointer=saver)
    graph.invoke({"steps": []}, CONFIG)
    assert graph.invoke({"steps": ["again"]}, CONFIG)["steps"][-4:] == ["again", "a", "b", "c"]
    return "continue", []


SCENARIOS = [
    error_scenario,
    dynamic_interrupt_scenario,
    interrupt_before_scenario,
    interrupt_after_scenario,
    crash_scenario,
    fork_scenario,
    update_scenario,
    continue_scenario,
]


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_each_resume_kind_sync(
    scenario: Scenario, saver_kind: str, otel: OTel, tmp_path: Any
) -> None:
    if saver_kind == "memory":
        run_scenario(scenario, InMemorySaver(), otel)
    else:
        with SqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as bare:
            run_scenario(scenario, bare, otel)


def run_scenario(scenario: Scenario, bare: BaseCheckpointSaver[Any], otel: OTel) -> None:
    saver = instrument(
        bare, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    kind, tasks = scenario(saver, otel)
    # exactly one resume, of the expected kind, in the root namespace
    found = resumes(otel.spans())
    assert [s.attributes[names.RESUME_KIND] for s in found] == [kind]
    resume = found[0]
    assert list(resume.attributes[names.RESUME_TASKS]) == tasks
    assert resume.attributes[names.OPERATION] == "resume"
    assert resume.attributes[names.RESUME_CHECKPOINT_AGE_S] >= 0
    assert_linked_to_writer(otel, resume)
    # interrupts and resumes are never errors
    if kind != "error":
        assert all(s.status.status_code.name != "ERROR" for s in otel.spans())
    counted = {
        p.attributes[names.RESUME_KIND]: p.value for p in otel.metrics()[names.METRIC_RESUMES]
    }
    assert counted == {kind: 1}
    # the resume log derived from the spans alone
    log = resume_log(span_facts(otel.spans()), thread_id="t1")
    assert [(e.kind, e.from_checkpoint_id) for e in log] == [
        (kind, resume.attributes[names.RESUME_FROM_CHECKPOINT_ID])
    ]
    assert log[0].first_node == (tasks[0] if tasks else "a")


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
async def test_each_resume_kind_async(saver_kind: str, otel: OTel, tmp_path: Any) -> None:
    async def run(bare: BaseCheckpointSaver[Any]) -> None:
        saver = instrument(
            bare, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        threads = {
            k: {"configurable": {"thread_id": k}} for k in ("e", "i", "s", "f", "n", "u", "c")
        }
        # error
        graph = build(Flaky(fail_b=True)).compile(checkpointer=saver)
        with pytest.raises(RuntimeError):
            await graph.ainvoke({"steps": []}, threads["e"])
        await graph.ainvoke(None, threads["e"])
        # dynamic interrupt
        graph = build(Flaky(ask_in_c=True)).compile(checkpointer=saver)
        await graph.ainvoke({"steps": []}, threads["i"])
        await graph.ainvoke(Command(resume="y"), threads["i"])
        # static interrupt, then a crash-like stop resumed by a graph without interrupts
        paused = build(Flaky()).compile(checkpointer=saver, interrupt_before=["b"])
        await paused.ainvoke({"steps": []}, threads["s"])
        await paused.ainvoke(None, threads["s"])
        await paused.ainvoke({"steps": []}, threads["n"])
        await build(Flaky()).compile(checkpointer=saver).ainvoke(None, threads["n"])
        # fork
        graph = build(Flaky()).compile(checkpointer=saver)
        await graph.ainvoke({"steps": []}, threads["f"])
        states = [s async for s in graph.aget_state_history(threads["f"])]
        after_a = next(s for s in states if s.values["steps"] == ["a"])
        await graph.ainvoke(None, after_a.config)
        # update, then continue
        paused_c = build(Flaky()).compile(checkpointer=saver, interrupt_before=["c"])
        await paused_c.ainvoke({"steps": []}, threads["u"])
        await paused_c.aupdate_state(threads["u"], {"steps": ["edited"]})
        await paused_c.ainvoke(None, threads["u"])
        await graph.ainvoke({"steps": []}, threads["c"])
        await graph.ainvoke({"steps": ["again"]}, threads["c"])

    if saver_kind == "memory":
        await run(InMemorySaver())
    else:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "db.sqlite")) as bare:
            await run(bare)
    by_thread = {
        s.attributes[names.THREAD_ID]: s.attributes[names.RESUME_KIND]
        for s in resumes(otel.spans())
    }
    assert by_thread == {
        "e": "error",
        "i": "interrupt",
        "s": "interrupt",
        "n": "crash",
        "f": "fork",
        "u": "update",
        "c": "continue",
    }
    for resume in resumes(otel.spans()):
        assert_linked_to_writer(otel, resume)


def test_loads_that_start_no_run_are_gets(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = build(Flaky(ask_in_c=True)).compile(checkpointer=saver)
    graph.invoke({"steps": []}, CONFIG)
    otel.clear()
    graph.get_state(CONFIG)
    graph.get_state(CONFIG, subgraphs=True)
    list(graph.get_state_history(CONFIG))
    saver.get_tuple(CONFIG)
    assert {s.name for s in otel.spans()} == {names.SPAN_GET, names.SPAN_LIST}
    assert names.METRIC_RESUMES not in otel.metrics()


class Outer(TypedDict):
    steps: Annotated[list[str], operator.add]


def test_resumes_inside_subgraphs_are_classified_and_linked(otel: OTel) -> None:
    def ask(state: Outer) -> dict[str, Any]:
        return {"steps": [f"sub:{interrupt('ok?')}"]}

    sub = StateGraph(Outer)
    sub.add_node("ask", ask)
    sub.add_edge(START, "ask")
    outer = StateGraph(Outer)
    outer.add_node("first", lambda s: {"steps": ["first"]})
    outer.add_node("sub", sub.compile())
    outer.add_edge(START, "first")
    outer.add_edge("first", "sub")
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = outer.compile(checkpointer=saver)
    graph.invoke({"steps": []}, CONFIG)
    result = graph.invoke(Command(resume="yes"), CONFIG)
    assert result["steps"][-1] == "sub:yes"
    root = resumes(otel.spans())
    assert [s.attributes[names.RESUME_KIND] for s in root] == ["interrupt"]
    nested = [
        s
        for s in otel.spans()
        if s.name == names.SPAN_RESUME and str(s.attributes[names.CHECKPOINT_NS]).startswith("sub:")
    ]
    assert [s.attributes[names.RESUME_KIND] for s in nested] == ["interrupt"]
    assert list(nested[0].attributes[names.RESUME_TASKS]) == ["ask"]
    for resume in root + nested:
        assert_linked_to_writer(otel, resume)


@pytest.mark.parametrize(
    "foreign",
    [
        "garbage",
        {"v": 1, "traceparent": "not-a-traceparent"},
        {"v": 99, "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"v": 1, "traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        {"v": 1, "traceparent": ""},
        {"uber-trace-id": "0af7651916cd43dd:b7ad6b7169203331:0:1"},
    ],
)
def test_malformed_or_foreign_carriers_give_no_link_and_no_error(foreign: Any, otel: OTel) -> None:
    # checkpoints written with the user's own value under the wrapper's metadata key
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = build(Flaky(ask_in_c=True)).compile(checkpointer=saver)
    graph.invoke({"steps": []}, {**CONFIG, "metadata": {names.METADATA_KEY: foreign}})
    assert graph.invoke(Command(resume="ok"), CONFIG)["steps"] == ["a", "b", "c:ok"]
    found = resumes(otel.spans())
    assert [s.attributes[names.RESUME_KIND] for s in found] == ["interrupt"]
    assert found[0].links == ()


def test_a_fork_from_a_config_without_a_namespace_is_a_resume_in_the_root_namespace(
    otel: OTel,
) -> None:
    """`invoke(None, {"configurable": {"thread_id", "checkpoint_id"}})`, as users write a
    fork: the resume span names the root namespace like every other resume."""
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = build(Flaky()).compile(checkpointer=saver)
    graph.invoke({"steps": []}, CONFIG)
    after_a = next(s for s in graph.get_state_history(CONFIG) if s.values["steps"] == ["a"])
    fork_id = after_a.config["configurable"]["checkpoint_id"]
    graph.invoke(
        None,
        {
            "configurable": {
                "thread_id": CONFIG["configurable"]["thread_id"],
                "checkpoint_id": fork_id,
            }
        },
    )
    (fork,) = resumes(otel.spans())
    assert fork.attributes[names.RESUME_KIND] == "fork"
    assert fork.attributes[names.CHECKPOINT_NS] == ""
