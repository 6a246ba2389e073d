"""Two more threads for ``test_mlflow.py``, one process per run, exporting like
``phoenix_app.py`` (its `phoenix_app.tracer_provider`: OTLP/HTTP to ENDPOINT, span by span,
plus a span file); the OTLP headers come from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` (MLflow's
``x-mlflow-experiment-id``), the library's options from ``LANGGRAPH_OTEL_*``.

    python mlflow_app.py sqlite:<path> ENDPOINT INSTANCE ACTION THREAD [--spans-file FILE]

ACTION ``ask`` runs `agents.approval_agent` on fresh input: it stops at the ``approve`` tool's
`interrupt()`. ``answer`` resumes THREAD with ``Command(resume=ANSWER)`` (the human's answer,
in a new process). ``run`` runs `agents.react_agent` (`agents.travel_script`) to the end;
``fork-changed`` re-runs THREAD from the checkpoint of step `FORK_STEP` with a model that
answers differently from its second turn on (`agents.Script.change`: another flight booked).

A run prints one JSON line: ``{"thread", "action", "outcome", "tools"}``.
`in_turn` runs such processes one after another.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph.types import Command

import agents
import phoenix_app
from agent_crash_app import open_saver
from langgraph.checkpoint.otel import instrument

ANSWER = "approved"
FORK_STEP = phoenix_app.FORK_STEP
CHANGED_TURN = 1
CHANGED_ANSWER = agents.calls(
    ("book", {"flight": "TP1355"}), ("send_email", {"to": "me@example.com"})
)
"""The model's second turn after the fork: it books another flight."""


def in_turn(
    steps: Sequence[tuple[str, str]],
    endpoint: str,
    database: Path,
    thread: str,
    files: Path,
    env: Mapping[str, str],
) -> dict[str, phoenix_app.Process]:
    """Run each (instance, action) of `steps` in its own process, in turn, on THREAD; each
    exports to `endpoint` and to ``files/<instance>.jsonl``. Raises when one fails."""
    done: dict[str, phoenix_app.Process] = {}
    for instance, action in steps:
        spans_file = files / f"{instance}.jsonl"
        command = [sys.executable, str(Path(__file__)), f"sqlite:{database}", endpoint]
        command += [instance, action, thread, "--spans-file", str(spans_file)]
        finished = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            timeout=120,
            check=False,
        )
        if finished.returncode != 0:
            raise RuntimeError(f"{instance} exited {finished.returncode}:\n{finished.stderr}")
        lines = finished.stdout.strip().splitlines()
        result = json.loads(lines[-1]) if lines else None
        done[instance] = phoenix_app.Process(instance, 0, result, spans_file, finished.stderr)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", help="sqlite:<path>")
    parser.add_argument("endpoint", help="OTLP/HTTP traces URL")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["ask", "answer", "run", "fork-changed"])
    parser.add_argument("thread")
    parser.add_argument("--spans-file", default=None)
    args = parser.parse_args(argv)

    provider = phoenix_app.tracer_provider(args.endpoint, args.instance_id, None, args.spans_file)
    script = agents.approval_script() if args.action in ("ask", "answer") else None
    script = script or agents.travel_script()
    make = agents.approval_agent if args.action in ("ask", "answer") else agents.react_agent
    try:
        with open_saver(args.backend) as saver:
            graph = make(instrument(saver, tracer_provider=provider), script)
            reader = make(saver, script)  # reads without spans: not in a run
            config: dict[str, Any] = agents.thread(args.thread)
            graph_input: Any = None
            if args.action in ("ask", "run"):
                graph_input = agents.question()
            elif args.action == "answer":
                graph_input = Command(resume=ANSWER)
            else:
                checkpoint_id = phoenix_app.checkpoint_at(reader, args.thread, FORK_STEP)
                config = agents.thread(args.thread, checkpoint_id=checkpoint_id)
                script.change(CHANGED_TURN, CHANGED_ANSWER)
            graph.invoke(graph_input, config, durability="sync")
            snapshot = reader.get_state(agents.thread(args.thread))
            line = {
                "thread": args.thread,
                "action": args.action,
                "outcome": "interrupted" if snapshot.next else "finished",
                "tools": [name for name, _ in agents.tool_messages(dict(snapshot.values))],
            }
            print(json.dumps(line), flush=True)
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
