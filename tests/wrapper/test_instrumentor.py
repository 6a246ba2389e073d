"""LangGraphCheckpointInstrumentor: patching `Pregel.__init__` (compile, copies) and the functional
API, restoring them exactly, never wrapping twice (loading through ``opentelemetry-instrument``:
tests/integration/test_instrumentor_autoload.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from helpers import OTel
from langgraph.checkpoint.otel import instrument, is_instrumented, uninstrument
from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor

PUT = "langgraph.checkpoint.put"

ORIGINAL_PREGEL_INIT = Pregel.__dict__["__init__"]
ORIGINAL_ENTRYPOINT_INIT = entrypoint.__dict__["__init__"]


class Counter(TypedDict, total=False):
    n: int
    log: list[str]


def _builder() -> StateGraph[Any]:
    def a(state: Counter) -> Counter:
        return {"n": state["n"] + 1, "log": [*state.get("log", []), "a"]}

    def b(state: Counter) -> Counter:
        return {"n": state["n"] * 10, "log": [*state.get("log", []), "b"]}

    builder = StateGraph(Counter)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _run(graph: CompiledStateGraph[Any], thread: str) -> int:
    """Invoke; return how many checkpoints the run stored (= puts the saver received)."""
    assert graph.invoke({"n": 1}, _config(thread)) == {"n": 20, "log": ["a", "b"]}
    saver = graph.checkpointer
    assert isinstance(saver, BaseCheckpointSaver)
    return len(list(uninstrument(saver).list(_config(thread))))


def _puts(otel: OTel) -> int:
    return otel.span_names().count(PUT)


def _assert_restored() -> None:
    assert Pregel.__dict__["__init__"] is ORIGINAL_PREGEL_INIT
    assert entrypoint.__dict__["__init__"] is ORIGINAL_ENTRYPOINT_INIT


@pytest.fixture
def instrumentor() -> Iterator[LangGraphCheckpointInstrumentor]:
    inst = LangGraphCheckpointInstrumentor()
    assert not inst.is_instrumented_by_opentelemetry, "a previous test leaked instrumentation"
    try:
        yield inst
    finally:
        if inst.is_instrumented_by_opentelemetry:
            inst.uninstrument()
        _assert_restored()


def test_dependencies_and_singleton() -> None:
    assert LangGraphCheckpointInstrumentor().instrumentation_dependencies() == ("langgraph >= 1.2",)
    assert LangGraphCheckpointInstrumentor() is LangGraphCheckpointInstrumentor()


# --------------------------------------------------------------------------------------------
# 1. StateGraph.compile, then uninstrument
# --------------------------------------------------------------------------------------------


def test_compile_is_instrumented_then_restored(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    assert Pregel.__dict__["__init__"] is not ORIGINAL_PREGEL_INIT

    saver = InMemorySaver()
    graph = _builder().compile(checkpointer=saver)
    assert is_instrumented(graph.checkpointer)
    assert isinstance(graph.checkpointer, BaseCheckpointSaver)
    assert uninstrument(graph.checkpointer) is saver
    stored = _run(graph, "t1")
    assert stored >= 3
    assert _puts(otel) == stored
    assert any(name.startswith("langgraph.checkpoint.") for name in otel.metrics())

    instrumentor.uninstrument()
    _assert_restored()
    before = len(otel.spans())
    plain = InMemorySaver()
    graph2 = _builder().compile(checkpointer=plain)
    assert graph2.checkpointer is plain
    _run(graph2, "t2")
    assert len(otel.spans()) == before

    # the graph compiled while instrumented keeps its instrumented saver
    _run(graph, "t3")
    assert _puts(otel) == 2 * stored


def test_positional_checkpointer_and_flags(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = _builder().compile(InMemorySaver())
    assert is_instrumented(graph.checkpointer)

    assert _builder().compile().checkpointer is None
    assert _builder().compile(checkpointer=None).checkpointer is None
    assert _builder().compile(checkpointer=False).checkpointer is False
    assert _builder().compile(checkpointer=True).checkpointer is True


def test_same_saver_gets_one_wrapper(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    saver = InMemorySaver()
    g1 = _builder().compile(checkpointer=saver)
    g2 = _builder().compile(checkpointer=saver)
    assert is_instrumented(g1.checkpointer)
    assert g1.checkpointer is g2.checkpointer
    assert _builder().compile(checkpointer=InMemorySaver()).checkpointer is not g1.checkpointer


def test_subgraph_inherits_instrumented_parent_saver(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    sub = _builder().compile(checkpointer=True)  # a flag: left alone
    assert sub.checkpointer is True
    parent = StateGraph(Counter)
    parent.add_node("sub", sub)
    parent.add_edge(START, "sub")
    parent.add_edge("sub", END)
    graph = parent.compile(checkpointer=InMemorySaver())
    assert graph.invoke({"n": 1}, _config("p")) == {"n": 20, "log": ["a", "b"]}
    namespaces = {
        s.attributes.get("langgraph.checkpoint.ns")
        for s in otel.spans()
        if s.name == PUT and s.attributes is not None
    }
    # checkpointer=True keeps one history per thread under the stable namespace "sub"
    assert "sub" in {str(ns).split(":")[0] for ns in namespaces}, namespaces


def test_bad_option_fails_at_instrument(instrumentor: LangGraphCheckpointInstrumentor) -> None:
    with pytest.raises(TypeError, match="no_such_option"):
        instrumentor.instrument(no_such_option=1)
    with pytest.raises(ValueError, match="hash_cache_size"):
        instrumentor.instrument(hash_cache_size=-1)
    assert not instrumentor.is_instrumented_by_opentelemetry
    _assert_restored()


def test_options_reach_the_wrapper(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, enabled=False
    )
    graph = _builder().compile(checkpointer=InMemorySaver())
    assert is_instrumented(graph.checkpointer)
    _run(graph, "off")
    assert otel.spans() == []


# --------------------------------------------------------------------------------------------
# 2. the functional API
# --------------------------------------------------------------------------------------------


def test_functional_api(otel: OTel, instrumentor: LangGraphCheckpointInstrumentor) -> None:
    # ok_write_spans (passed through the instrumentor): the tasks here all finish ok, and the
    # point is the node their put_writes spans name (the @task's, the entrypoint's)
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        ok_write_spans=True,
    )

    @task
    def double(x: int) -> int:
        return 2 * x

    saver = InMemorySaver()

    @entrypoint(checkpointer=saver)
    def workflow(x: int) -> int:
        return double(x).result() + 1

    assert is_instrumented(workflow.checkpointer)
    assert workflow.invoke(3, _config("f1")) == 7
    names = otel.span_names()
    assert names.count(PUT) == len(list(saver.list(_config("f1"))))
    assert names.count(PUT) >= 1
    assert "langgraph.checkpoint.put_writes" in names
    # the entrypoint is one run: one trace under `invoke_workflow {name}`, with the graph's name
    assert len({span.context.trace_id for span in otel.spans()}) == 1
    [run] = [span for span in otel.spans() if span.parent is None]
    assert (run.name, run.attributes["langgraph.graph.name"]) == (
        f"invoke_workflow {workflow.name}",
        workflow.name,
    )
    writes = [span for span in otel.spans() if span.name == "langgraph.checkpoint.put_writes"]
    assert {span.attributes["langgraph.task.node"] for span in writes} >= {"double", "workflow"}

    # positional checkpointer; no checkpointer
    assert is_instrumented(entrypoint(InMemorySaver()).checkpointer)
    assert entrypoint().checkpointer is None

    instrumentor.uninstrument()
    _assert_restored()
    plain = InMemorySaver()
    assert entrypoint(checkpointer=plain).checkpointer is plain


# --------------------------------------------------------------------------------------------
# 3. no double instrumentation
# --------------------------------------------------------------------------------------------


def test_instrument_twice_is_harmless_and_quiet(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):  # a graph module the Agent Server imports once per graph
        with caplog.at_level(logging.DEBUG):
            instrumentor.instrument(
                tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
            )
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    patched = Pregel.__dict__["__init__"]
    assert patched.__wrapped__ is ORIGINAL_PREGEL_INIT  # one layer of patching, not two

    graph = _builder().compile(checkpointer=InMemorySaver())
    assert isinstance(graph.checkpointer, BaseCheckpointSaver)
    assert is_instrumented(graph.checkpointer)
    assert not is_instrumented(uninstrument(graph.checkpointer))  # wrapped once, not twice
    stored = _run(graph, "d1")
    assert stored >= 3
    assert _puts(otel) == stored  # one span per put


def test_already_instrumented_saver_is_not_wrapped_again(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    wrapped = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    g1 = _builder().compile(checkpointer=wrapped)
    g2 = _builder().compile(checkpointer=wrapped)
    assert g1.checkpointer is wrapped
    assert g2.checkpointer is wrapped

    stored = _run(g1, "w1") + _run(g2, "w2")
    assert stored >= 6
    assert _puts(otel) == stored  # exactly one span per put

    @entrypoint(checkpointer=wrapped)
    def workflow(x: int) -> int:
        return x + 1

    assert workflow.checkpointer is wrapped


# --------------------------------------------------------------------------------------------
# 4. checkpointers attached at run time (the Agent Server)
# --------------------------------------------------------------------------------------------


def test_a_checkpointer_attached_to_a_copy_is_instrumented(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    """The Agent Server compiles the graph without a checkpointer and attaches its own per run
    with ``graph.copy(update={"checkpointer": ...})``."""
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = _builder().compile()
    assert graph.checkpointer is None
    saver = InMemorySaver()
    run_copy = graph.copy(update={"checkpointer": saver, "store": None})
    assert is_instrumented(run_copy.checkpointer)
    assert uninstrument(run_copy.checkpointer) is saver
    stored = _run(run_copy, "copy")
    assert _puts(otel) == stored >= 3


def test_savers_of_one_type_share_one_telemetry(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    """The server makes a saver per run: they share the caches that link its runs."""
    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = _builder().compile()
    first = graph.copy(update={"checkpointer": InMemorySaver()}).checkpointer
    second = graph.copy(update={"checkpointer": InMemorySaver()}).checkpointer
    assert first is not second
    assert first.observer is second.observer  # type: ignore[union-attr]


def test_a_saver_delegating_to_an_instrumented_one_is_not_wrapped_again(
    otel: OTel, instrumentor: LangGraphCheckpointInstrumentor
) -> None:
    """A `langgraph.json` custom checkpointer yielding ``instrument(...)`` reaches the graph
    inside the server's own adapter: zero-code and the custom route together report once."""
    from delegating_savers import Delegating, server_adapter

    instrumentor.instrument(
        tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    wrapped = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = _builder().compile()
    for layer in (server_adapter(wrapped), Delegating(wrapped), Delegating(Delegating(wrapped))):
        attached = graph.copy(update={"checkpointer": layer}).checkpointer
        assert attached is layer
    otel.clear()
    stored = _run(graph.copy(update={"checkpointer": Delegating(Delegating(wrapped))}), "d")
    assert _puts(otel) == stored  # one span per put
