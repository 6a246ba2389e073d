"""A session of runs on one thread, with state and history reads between them made outside any
run, as the Agent Server's API makes them: one process, for ``test_phoenix.py`` and
``test_mlflow.py``. It exports like ``phoenix_app.py`` (`phoenix_app.tracer_provider`: OTLP/HTTP
to ENDPOINT, span by span, plus a span file); OTLP headers come from
``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, the library's options from ``LANGGRAPH_OTEL_*``.

    python session_app.py sqlite:<path> ENDPOINT THREAD [--project NAME] [--spans-file FILE]

`agents.approval_agent` on a `SqliteSaver`, instrumented, in `STEPS` order: a question (the
``approve`` tool interrupts), the human's answer (``Command(resume=...)``), two more questions;
before each run after the first, reads through the instrumented graph with no span current:
``get_state``, ``get_state_history`` and, once, ``update_state`` (an operator's note). Prints
one JSON line: ``{"thread", "runs": [[step, outcome], ...], "reads": [step, ...]}``;
`run_session` runs it, `traces_sent` sorts what it sent into runs and reads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

import agents
import phoenix_app
from agent_crash_app import open_saver
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord

ANSWER = "approved"
STEPS = (
    ("run", "ask"),
    ("read", "state"),
    ("read", "history"),
    ("run", "answer"),
    ("read", "state"),
    ("read", "history"),
    ("read", "update"),
    ("run", "ask again"),
    ("read", "state"),
    ("read", "history"),
    ("run", "thank"),
)
"""What the session does, in order: four runs, reads outside runs between them."""
RUNS = sum(1 for kind, _ in STEPS if kind == "run")


def run_session(
    endpoint: str,
    database: Path,
    thread: str,
    spans_file: Path,
    *,
    project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> phoenix_app.Process:
    """Run the session in a process of its own; raises when it fails."""
    command = [sys.executable, str(Path(__file__)), f"sqlite:{database}", endpoint, thread]
    command += ["--spans-file", str(spans_file)] + (["--project", project] if project else [])
    finished = subprocess.run(
        command,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ if env is None else env),
        timeout=120,
        check=False,
    )
    if finished.returncode != 0:
        raise RuntimeError(f"session exited {finished.returncode}:\n{finished.stderr}")
    result = json.loads(finished.stdout.strip().splitlines()[-1])
    return phoenix_app.Process("session", 0, result, spans_file, finished.stderr)


def run_spans(spans: list[SpanRecord]) -> list[SpanRecord]:
    """The library's run spans among `spans`."""
    return [s for s in spans if names.is_run_span_name(s.name) and s.scope_name == names.SCOPE]


def traces_sent(spans: list[SpanRecord]) -> tuple[list[str], list[str]]:
    """(the runs' trace ids, the ids of the other traces: the reads') among `spans`, each in
    the order they started."""
    runs = [s.trace_id for s in sorted(run_spans(spans), key=lambda s: s.start_time_unix_nano)]
    first: dict[str, SpanRecord] = {}
    for s in sorted(spans, key=lambda s: s.start_time_unix_nano):
        first.setdefault(s.trace_id, s)
    return runs, [t for t in first if t not in runs]


def graph_input(step: str) -> Any:
    """The input of a run step."""
    if step == "answer":
        return Command(resume=ANSWER)
    if step == "ask again":
        return agents.question("And the weather in Porto?")
    if step == "thank":
        return agents.question("Thanks!")
    return agents.question()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", help="sqlite:<path>")
    parser.add_argument("endpoint", help="OTLP/HTTP traces URL")
    parser.add_argument("thread")
    parser.add_argument("--project", default=None)
    parser.add_argument("--spans-file", default=None)
    args = parser.parse_args(argv)

    provider = phoenix_app.tracer_provider(args.endpoint, "session", args.project, args.spans_file)
    config = agents.thread(args.thread)
    runs: list[tuple[str, str]] = []
    reads: list[str] = []
    try:
        with open_saver(args.backend) as saver:
            graph = agents.approval_agent(instrument(saver, tracer_provider=provider))
            reader = agents.approval_agent(saver)  # the outcomes, read without spans
            for kind, step in STEPS:
                if kind == "run":
                    graph.invoke(graph_input(step), config, durability="sync")
                    outcome = "interrupted" if reader.get_state(config).next else "finished"
                    runs.append((step, outcome))
                    continue
                if step == "state":
                    graph.get_state(config)
                elif step == "history":
                    list(graph.get_state_history(config))
                else:
                    graph.update_state(config, {"messages": [HumanMessage("Operator: VIP.")]})
                reads.append(step)
        print(json.dumps({"thread": args.thread, "runs": runs, "reads": reads}), flush=True)
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
