"""A small instrumented LangGraph app run as a subprocess by ``test_cross_process.py``.

    python crash_app.py BACKEND THREAD_ID SPANS_FILE INSTANCE_ID ACTION [--crash-at NODE]

BACKEND is ``sqlite:<path>`` or ``postgres:<url>``; ACTION is ``run`` (fresh input),
``resume`` (``invoke(None)``) or ``resume-command`` (``invoke(Command(resume=...))``).
With ``--crash-at NODE`` that node kills its own process with SIGKILL mid-superstep (no
exception, no cleanup: whatever the spans file and the database hold is all that is left).

The whole invoke runs inside one application span (``crash-app <action>``), so each process
is one trace. Every ended span is on disk at once (SimpleSpanProcessor). A run that finishes or stops at
an interrupt prints one JSON line: ``{"values": {...}, "interrupts": [...]}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import operator
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

SERVICE_NAME = "crash-app"
QUESTION = "approve?"
ANSWER = "yes"


class State(TypedDict, total=False):
    count: int
    log: Annotated[list[str], operator.add]


def build_graph(crash_at: str | None) -> StateGraph[State]:
    def step(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            if name == crash_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return {"count": state.get("count", 0) + 1, "log": [name]}

        return node

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt(QUESTION)
        return {"count": state.get("count", 0) + 1, "log": [f"ask:{answer}"]}

    builder = StateGraph(State)
    builder.add_node("step1", step("step1"))
    builder.add_node("step2", step("step2"))
    builder.add_node("step3", step("step3"))
    builder.add_node("ask", ask)
    builder.add_edge(START, "step1")
    builder.add_edge("step1", "step2")
    builder.add_edge("step2", "step3")
    builder.add_edge("step3", "ask")
    builder.add_edge("ask", END)
    return builder


def span_file_provider(service: str, instance_id: str, spans_file: str) -> TracerProvider:
    """A TracerProvider writing every span to `spans_file` (OTLP JSON lines) as it ends, so a
    span ended before a SIGKILL is on disk; `service.instance.id` tells the processes apart."""
    resource = Resource.create({"service.name": service, "service.instance.id": instance_id})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(spans_file)))
    return provider


@contextlib.contextmanager
def open_saver(backend: str) -> Iterator[BaseCheckpointSaver[Any]]:
    """A bare saver for ``sqlite:<path>``, ``postgres:<url>`` or ``redis:<url>``, set up and
    ready."""
    kind, _, target = backend.partition(":")
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(target, check_same_thread=False)
        try:
            sqlite_saver = SqliteSaver(conn)
            sqlite_saver.setup()
            yield sqlite_saver
        finally:
            conn.close()
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(target) as postgres_saver:
            postgres_saver.setup()
            yield postgres_saver
    elif kind == "redis":
        from langgraph.checkpoint.redis import RedisSaver

        with RedisSaver.from_conn_string(target) as redis_saver:
            redis_saver.setup()
            yield redis_saver
    else:
        raise SystemExit(
            f"unknown backend {backend!r} (sqlite:<path>, postgres:<url> or redis:<url>)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend")
    parser.add_argument("thread_id")
    parser.add_argument("spans_file")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["run", "resume", "resume-command"])
    parser.add_argument("--crash-at", default=None, help="node that SIGKILLs its own process")
    args = parser.parse_args(argv)

    tracer_provider = span_file_provider(SERVICE_NAME, args.instance_id, args.spans_file)
    try:
        with open_saver(args.backend) as saver:
            graph = build_graph(args.crash_at).compile(
                checkpointer=instrument(saver, tracer_provider=tracer_provider)
            )
            config: RunnableConfig = {"configurable": {"thread_id": args.thread_id}}
            graph_input: Any
            if args.action == "run":
                graph_input = {"count": 0, "log": ["input"]}
            elif args.action == "resume":
                graph_input = None
            else:
                graph_input = Command(resume=ANSWER)
            # One application span per process: every checkpoint span of this run is in its trace.
            tracer = tracer_provider.get_tracer(SERVICE_NAME)
            with tracer.start_as_current_span(f"{SERVICE_NAME} {args.action}"):
                result = dict(graph.invoke(graph_input, config, durability="sync"))
    finally:
        tracer_provider.shutdown()
    interrupts = [getattr(i, "value", None) for i in result.pop("__interrupt__", ())]
    print(json.dumps({"values": result, "interrupts": interrupts}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
