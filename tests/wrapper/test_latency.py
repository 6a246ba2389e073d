"""`operation.duration` is the inner saver's time; the library's own time is on the span.

A graph whose every step writes a freshly built 6,000-element channel makes the wrapper's own
work (hashing) a large share of each put: the recorded durations must still match what the
inner saver itself measured, and the span must show the rest as
`langgraph.instrumentation.duration`.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from helpers import OTel
from langgraph.checkpoint.otel import instrument, names


class TimedSaver(InMemorySaver):
    """Records how long each of its own put, put_writes and get_tuple calls took."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: dict[str, list[float]] = {"put": [], "put_writes": [], "get": []}

    def _timed(self, op: str, fn: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.seconds[op].append(time.perf_counter() - started)

    def put(self, *args: Any) -> Any:  # type: ignore[override]
        return self._timed("put", super().put, *args)

    def put_writes(self, *args: Any) -> Any:  # type: ignore[override]
        return self._timed("put_writes", super().put_writes, *args)

    def get_tuple(self, *args: Any) -> Any:  # type: ignore[override]
        return self._timed("get", super().get_tuple, *args)


class Big(TypedDict):
    rows: list[dict[str, Any]]


def big_graph() -> Any:
    def make(step: int) -> Any:
        def node(state: Big) -> dict[str, Any]:
            return {"rows": [{"step": step, "i": i, "text": f"row {i}"} for i in range(6000)]}

        return node

    builder = StateGraph(Big)
    for step in range(3):
        builder.add_node(f"n{step}", make(step))
    builder.add_edge(START, "n0")
    builder.add_edge("n0", "n1")
    builder.add_edge("n1", "n2")
    builder.add_edge("n2", END)
    return builder


def recorded(otel: OTel, operation: str) -> tuple[float, int]:
    points = [
        p
        for p in otel.metrics()[names.METRIC_OPERATION_DURATION]
        if p.attributes.get(names.OPERATION) == operation
    ]
    return sum(p.sum for p in points), sum(p.count for p in points)


def test_recorded_durations_are_the_inner_calls_and_the_rest_is_on_the_span(otel: OTel) -> None:
    inner = TimedSaver()
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    graph = big_graph().compile(checkpointer=saver)
    graph.invoke({"rows": []}, {"configurable": {"thread_id": "t"}}, durability="sync")

    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    own = [float(s.attributes[names.INSTRUMENTATION_DURATION]) for s in puts]
    span_seconds = [(s.end_time - s.start_time) / 1e9 for s in puts]
    inner_put = sum(inner.seconds["put"])
    total, count = recorded(otel, "put")
    assert count == len(inner.seconds["put"]) == len(puts) >= 4
    # the metric is the inner saver's time, within 2 % (plus timer granularity)
    assert inner_put <= total <= inner_put * 1.02 + 0.0005 * count, (total, inner_put)
    # the wrapper's own time (hashing 6,000 rows per step) is on the span, and is large here
    assert sum(own) > inner_put
    for seconds, mine in zip(span_seconds, own, strict=True):
        assert 0 <= mine <= seconds + 0.0005  # (timed from just before the span starts)
    # span time = inner + own, to within the time spent ending the span
    assert abs(sum(span_seconds) - (total + sum(own))) < 0.002 * len(puts) + 0.01 * sum(own)

    for operation, key in (("put_writes", "put_writes"), ("get", "get")):
        total, count = recorded(otel, operation)
        measured = sum(inner.seconds[key])
        assert count == len(inner.seconds[key]) > 0
        assert measured <= total <= measured * 1.02 + 0.0005 * count, (operation, total, measured)
