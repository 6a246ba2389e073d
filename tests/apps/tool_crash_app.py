"""A `create_react_agent` whose side-effecting tool is killed mid-call, run as a subprocess by
``test_tool_keys_across_processes.py``.

    python tool_crash_app.py DB SPANS_FILE INSTANCE ACTION THREAD SIDE_EFFECTS [--block]

DB is a SQLite file; ACTION ``run`` starts THREAD with fresh input, ``resume`` continues it
with ``invoke(None)``. The tool ``book`` is decorated with `record_tool_start`: its start
record is exported (BatchSpanProcessor, flushed by the decorator) before its body appends one
line to SIDE_EFFECTS (the side effect) and, with ``--block``, waits there until the parent
kills the process with SIGKILL. A run that finishes prints one JSON line:
``{"thread": ..., "answer": ...}``. Runs use durability ``sync``: under ``async`` a process
killed while a loaded machine has not yet saved the checkpoint the tool runs from loses it, and
the resume then starts a step earlier (the model asks again), which is not what is tested.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import threading
import warnings
from pathlib import Path

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import agents
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.core.tool_key_spans import record_tool_start
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

SERVICE_NAME = "tool-crash-app"
FLIGHT = "TP1353"
BATCH_DELAY_MS = 60_000
"""Long enough that only the decorator's flush exports anything before the kill."""


def script() -> agents.Script:
    """Book one flight, then answer."""
    return agents.Script([agents.calls(("book", {"flight": FLIGHT})), agents.Turn("Booked.")])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("spans_file")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["run", "resume"])
    parser.add_argument("thread")
    parser.add_argument("side_effects")
    parser.add_argument("--block", action="store_true", help="wait inside the tool to be killed")
    args = parser.parse_args(argv)

    resource = Resource.create(
        {"service.name": SERVICE_NAME, "service.instance.id": args.instance_id}
    )
    provider = TracerProvider(resource=resource)
    exporter = OtlpJsonSpanExporter(args.spans_file)
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=BATCH_DELAY_MS))

    @tool
    @record_tool_start(tracer_provider=provider)
    def book(flight: str) -> str:
        """Book a flight (a side effect: charges the card)."""
        with Path(args.side_effects).open("a", encoding="utf-8") as f:
            f.write(f"{args.instance_id} booked {flight}\n")
            f.flush()
            os.fsync(f.fileno())
        if args.block:
            threading.Event().wait()  # until SIGKILL
        return f"booked {flight}"

    conn = sqlite3.connect(args.db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent
            graph = create_react_agent(
                agents.ScriptedChatModel(script=script()),
                [book],
                checkpointer=instrument(saver, tracer_provider=provider),
            )
        graph_input = agents.question() if args.action == "run" else None
        values = graph.invoke(graph_input, agents.thread(args.thread), durability="sync")
        answer = str(values["messages"][-1].content)
        print(json.dumps({"thread": args.thread, "answer": answer}), flush=True)
    finally:
        provider.shutdown()
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
