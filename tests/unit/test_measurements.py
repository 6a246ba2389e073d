"""Metric measurements are held while a run is in progress and made together (see
`core.measurements`): a reader sees every one once the run ends, with the values and
exemplars of the moment each was taken; outside a run each is made at once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from opentelemetry.context import Context
from typing_extensions import TypedDict

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.core import measurements
from langgraph.checkpoint.otel.core.measurements import Measurements


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def durations(otel: OTel, operation: str) -> int:
    points = otel.metrics().get(names.METRIC_OPERATION_DURATION, [])
    return sum(p.count for p in points if p.attributes.get(names.OPERATION) == operation)


def wrapped(otel: OTel) -> Any:
    return instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )


def test_a_runs_measurements_are_held_until_it_ends_then_all_reach_the_reader(otel: OTel) -> None:
    seen_mid_run: list[int] = []

    class State(TypedDict):
        n: int

    def look(state: State) -> dict[str, int]:
        seen_mid_run.append(durations(otel, "put"))
        return {"n": state["n"] + 1}

    builder = StateGraph(State)
    builder.add_node("look", look)
    builder.add_edge(START, "look")
    builder.add_edge("look", END)
    graph = builder.compile(checkpointer=wrapped(otel))
    graph.invoke({"n": 0}, config(), durability="sync")

    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    assert seen_mid_run == [0]  # the run's puts so far were held
    assert durations(otel, "put") == len(puts) == 3
    sizes = otel.metrics()[names.METRIC_CHECKPOINT_SIZE]
    assert sum(p.count for p in sizes) == 3


def test_an_async_runs_measurements_reach_the_reader_when_it_ends(otel: OTel) -> None:
    graph = graphs.async_linear().compile(checkpointer=wrapped(otel))
    asyncio.run(graph.ainvoke(graphs.user_input(), config()))
    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    assert durations(otel, "put") == len(puts) > 0


def test_a_call_outside_any_run_is_measured_at_once(otel: OTel) -> None:
    saver = wrapped(otel)
    graph = graphs.linear().compile(checkpointer=saver)
    graph.invoke(graphs.user_input(), config())
    before = durations(otel, "get")
    saver.get_tuple(config())  # no loop is entering: no run
    assert durations(otel, "get") == before + 1
    assert len(saver.observer.telemetry.measurements) == 0


def test_a_failing_run_still_gives_its_measurements(otel: OTel) -> None:
    saver = wrapped(otel)
    graph = graphs.linear(flaky=graphs.Flaky()).compile(checkpointer=saver)
    with pytest.raises(RuntimeError, match="b failed"):
        graph.invoke(graphs.user_input(), config())
    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    assert durations(otel, "put") == len(puts) > 0
    assert len(saver.observer.telemetry.measurements) == 0


def test_a_sampled_puts_duration_exemplar_names_that_put_span(otel: OTel) -> None:
    graph = graphs.linear().compile(checkpointer=wrapped(otel))
    graph.invoke(graphs.user_input(), config())
    put_spans = {s.context.span_id for s in otel.spans() if s.name == names.SPAN_PUT}
    points = otel.metrics()[names.METRIC_OPERATION_DURATION]
    exemplars = [
        e for p in points if p.attributes.get(names.OPERATION) == "put" for e in p.exemplars
    ]
    assert exemplars
    assert {e.span_id for e in exemplars} <= put_spans


class Recorder:
    def __init__(self) -> None:
        self.values: list[float] = []

    def record(self, value: float, attributes: Any, context: Context | None = None) -> None:
        self.values.append(value)


def test_held_measurements_are_made_once_max_held_are_waiting() -> None:
    held = Measurements(lambda where, exc: None)
    recorder = Recorder()
    held.run_started()
    for i in range(measurements.MAX_HELD - 1):
        held.take(recorder.record, i, {})
    assert recorder.values == []
    held.take(recorder.record, measurements.MAX_HELD - 1, {})
    assert recorder.values == list(range(measurements.MAX_HELD))


def test_held_measurements_wait_at_most_max_age(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(measurements.time, "perf_counter", lambda: clock[0])
    held = Measurements(lambda where, exc: None)
    recorder = Recorder()
    held.run_started()
    held.take(recorder.record, 1, {})
    clock[0] += measurements.MAX_AGE_S / 2
    held.take(recorder.record, 2, {})
    assert recorder.values == []
    clock[0] += measurements.MAX_AGE_S / 2
    held.take(recorder.record, 3, {})
    assert recorder.values == [1, 2, 3]


def test_measurements_are_held_until_the_last_of_concurrent_runs_ends() -> None:
    held = Measurements(lambda where, exc: None)
    recorder = Recorder()
    held.run_started()
    held.run_started()
    held.take(recorder.record, 1, {})
    held.run_ended()  # one run ended: what is held so far is made
    assert recorder.values == [1]
    held.take(recorder.record, 2, {})
    assert recorder.values == [1]  # the other run is still in progress
    held.run_ended()
    held.take(recorder.record, 3, {})  # no run in progress: at once
    assert recorder.values == [1, 2, 3]


def test_a_raising_instrument_is_reported_as_a_fault_and_the_rest_are_made() -> None:
    faults: list[tuple[str, type[BaseException]]] = []
    held = Measurements(lambda where, exc: faults.append((where, type(exc))))
    recorder = Recorder()

    def broken(value: float, attributes: Any, context: Context | None = None) -> None:
        raise RuntimeError("meter down")

    held.run_started()
    held.take(broken, 1, {})
    held.take(recorder.record, 2, {})
    held.run_ended()
    assert faults == [("record measurement", RuntimeError)]
    assert recorder.values == [2]


def test_a_raising_meter_never_reaches_the_graph(
    otel: OTel, caplog: pytest.LogCaptureFixture
) -> None:
    saver = wrapped(otel)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("meter down")

    saver.observer.telemetry.instruments.duration.record = broken
    graph = graphs.linear().compile(checkpointer=saver)
    with caplog.at_level(logging.WARNING, logger="langgraph.checkpoint.otel"):
        result = graph.invoke(graphs.user_input(), config())
    assert result["messages"]
    assert "meter down" not in caplog.text
