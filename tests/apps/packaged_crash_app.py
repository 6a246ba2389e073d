"""A packaged agent (`packaged_agents.py`) whose sub-agent's side effect is killed mid-call, run
as a subprocess by ``test_agents_packaged.py``.

    python packaged_crash_app.py SHAPE DB SPANS_FILE INSTANCE ACTION THREAD EFFECTS
        [--kill-after TOOL] [--async]

SHAPE is ``deep`` or ``supervisor`` (or ``swarm``); DB is a SQLite file; ACTION ``run`` starts
THREAD with fresh input, ``resume`` continues it with ``invoke(None)``. The side-effecting
tools are decorated with `record_tool_start`: the start record is exported (BatchSpanProcessor,
flushed by the decorator) before the body appends ``<INSTANCE> <tool> <arg>`` to EFFECTS. With
``--kill-after TOOL`` the process kills itself with SIGKILL right after TOOL's side effect
(`issue_refund` or `notify`): no exception, no cleanup. Spans go to SPANS_FILE as OTLP/JSON lines; durability
is ``sync``; ``--async`` runs through `AsyncSqliteSaver` and ``ainvoke``. A run that finishes prints one JSON line:
``{"thread", "outcome", "graph", "answer"}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import agents
import packaged_agents as pa
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.analysis.detectors import DivergencePolicy
from langgraph.checkpoint.otel.core.tool_key_spans import record_tool_start
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

SERVICE_NAME = "packaged-crash-app"
BATCH_DELAY_MS = 60_000
"""Long enough that only the decorator's flush exports anything before the kill."""


def _line(thread: str, graph_name: str, values: Any, state: Any) -> dict[str, Any]:
    return {
        "thread": thread,
        "outcome": "finished" if not state.next else "unfinished",
        "graph": graph_name,
        "answer": str(values["messages"][-1].content),
    }


async def _arun(
    args: argparse.Namespace,
    provider: TracerProvider,
    effects: pa.Effects,
    policy: DivergencePolicy,
    graph_input: Any,
    config: Any,
) -> dict[str, Any]:
    """The same run through `AsyncSqliteSaver` and ``ainvoke``."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(args.db) as saver:
        await saver.setup()
        wrapped = instrument(saver, tracer_provider=provider, divergence=policy)
        graph = pa.BUILDERS[args.shape](wrapped, effects=effects)
        values = await graph.ainvoke(graph_input, config, durability="sync")
        state = await pa.BUILDERS[args.shape](saver).aget_state(config)
        return _line(args.thread, graph.name, values, state)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("shape", choices=sorted(pa.BUILDERS))
    parser.add_argument("db")
    parser.add_argument("spans_file")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["run", "resume"])
    parser.add_argument("thread")
    parser.add_argument("effects")
    parser.add_argument("--kill-after", choices=sorted(pa.SIDE_EFFECTS))
    parser.add_argument("--async", dest="use_async", action="store_true", help="ainvoke")
    args = parser.parse_args(argv)

    resource = Resource.create(
        {"service.name": SERVICE_NAME, "service.instance.id": args.instance_id}
    )
    provider = TracerProvider(resource=resource)
    exporter = OtlpJsonSpanExporter(args.spans_file)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=BATCH_DELAY_MS))

    def kill(name: str) -> None:
        if name == args.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    effects = pa.Effects(
        path=Path(args.effects),
        tag=args.instance_id,
        decorate=record_tool_start(tracer_provider=provider),
        after_effect=kill,
    )
    policy = DivergencePolicy(repeatable_tools=pa.REPEATABLE)
    graph_input = agents.question(pa.QUESTION) if args.action == "run" else None
    config = agents.thread(args.thread)
    try:
        if args.use_async:
            line = asyncio.run(_arun(args, provider, effects, policy, graph_input, config))
        else:
            conn = sqlite3.connect(args.db, check_same_thread=False)
            try:
                saver = SqliteSaver(conn)
                saver.setup()
                wrapped = instrument(saver, tracer_provider=provider, divergence=policy)
                graph = pa.BUILDERS[args.shape](wrapped, effects=effects)
                values = graph.invoke(graph_input, config, durability="sync")
                # read through the bare saver: the run's spans are the only ones in the file
                state = pa.BUILDERS[args.shape](saver).get_state(config)
            finally:
                conn.close()
            line = _line(args.thread, graph.name, values, state)
        print(json.dumps(line), flush=True)
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
