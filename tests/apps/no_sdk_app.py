"""Runs under `test_no_sdk.py` in a fresh process, where no OpenTelemetry SDK is set up.

    python no_sdk_app.py SCENARIO

Prints one JSON line of what it saw. ``delegate``: a graph on `instrument(InMemorySaver())`
with the API's providers only, beside a bare saver. ``strict``: the same with an
`on_divergence` callback and a fork of a non-deterministic node. ``later``: a run before and
a run after the app sets a global SDK tracer provider.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

import graphs
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.analysis import Finding

CONFIG: dict[str, Any] = {"configurable": {"thread_id": "t1"}}


def stored_keys(saver: InMemorySaver, thread: str) -> list[bool]:
    """Whether each stored checkpoint of `thread` carries the library's metadata key."""
    config = {"configurable": {"thread_id": thread}}
    return [names.METADATA_KEY in t.metadata for t in saver.list(config)]


def delegate() -> dict[str, Any]:
    bare, inner = InMemorySaver(), InMemorySaver()
    results = []
    for saver in (bare, instrument(inner)):
        graph = graphs.linear().compile(checkpointer=saver)
        results.append(graph.invoke(graphs.user_input(), CONFIG))
    return {
        "same_result": results[0] == results[1],
        "stored": [len(list(s.list(CONFIG))) for s in (bare, inner)],
        "otel_keys": stored_keys(inner, "t1"),
    }


def strict() -> dict[str, Any]:
    found: list[Finding] = []
    saver = instrument(InMemorySaver(), on_divergence=found.append)
    graph = graphs.noisy(False).compile(checkpointer=saver)
    graph.invoke({"start": 0}, CONFIG)
    before = next(s for s in graph.get_state_history(CONFIG) if s.next == ("noisy",))
    graph.invoke(None, before.config)
    return {"findings": [f.kind for f in found]}


def later() -> dict[str, Any]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    inner = InMemorySaver()
    graph = graphs.linear().compile(checkpointer=instrument(inner))
    graph.invoke(graphs.user_input(), {"configurable": {"thread_id": "before"}})
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    graph.invoke(graphs.user_input(), {"configurable": {"thread_id": "after"}})
    return {
        "before": stored_keys(inner, "before"),
        "after": stored_keys(inner, "after"),
        "spans": sorted({s.name for s in exporter.get_finished_spans()}),
    }


if __name__ == "__main__":
    print(json.dumps({"delegate": delegate, "strict": strict, "later": later}[sys.argv[1]]()))
