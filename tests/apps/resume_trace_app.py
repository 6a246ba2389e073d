"""One phase of an approval thread on a SQLite file, in a process of its own, for
`test_resume_trace.py`: ``interrupt`` runs `agents.approval_agent` until its `approve` tool
interrupts; ``answer`` resumes the thread with ``Command(resume="yes")``; ``turn`` sends a new
question on the thread. Spans go to an OTLP/JSON span file (the real SDK, a simple processor);
the resume mode comes from the environment (``LANGGRAPH_OTEL_RESUME_TRACE``), as in a user's
deployment.

    python resume_trace_app.py PHASE DB SPAN_FILE [async]
"""

from __future__ import annotations

import asyncio
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import agents
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

THREAD = "approval-thread"


def graph_input(phase: str) -> object:
    if phase == "interrupt":
        return agents.question()
    if phase == "answer":
        return Command(resume="yes")
    return agents.question("And the weather in Porto?")


def main(phase: str, db: str, span_file: str, mode: str = "sync") -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(span_file)))
    config = agents.thread(THREAD)
    if mode == "async":

        async def run() -> None:
            async with AsyncSqliteSaver.from_conn_string(db) as saver:
                graph = agents.approval_agent(instrument(saver, tracer_provider=provider))
                await graph.ainvoke(graph_input(phase), config)

        asyncio.run(run())
    else:
        with SqliteSaver.from_conn_string(db) as saver:
            graph = agents.approval_agent(instrument(saver, tracer_provider=provider))
            graph.invoke(graph_input(phase), config)
    provider.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:])
