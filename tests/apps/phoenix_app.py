"""An instrumented ReAct agent exporting OTLP/HTTP to a trace backend, run as a subprocess by
``test_phoenix.py`` (and ``scripts/phoenix_screenshots.py``), one process per run.

    python phoenix_app.py sqlite:<path> ENDPOINT INSTANCE ACTION THREAD
        [--crash-step K] [--fork-step K] [--release 1|2] [--project NAME] [--spans-file FILE]

The agent is `agents.react_agent` (`langgraph.prebuilt.create_react_agent` with the offline
`ScriptedChatModel`: two rounds of parallel tool calls, then an answer) on a `SqliteSaver`,
instrumented with `instrument(...)`. Its spans go to ENDPOINT (an OTLP/HTTP traces URL, e.g.
Phoenix's ``http://127.0.0.1:6006/v1/traces``) through the real
``opentelemetry-exporter-otlp-proto-http`` exporter behind a `SimpleSpanProcessor`, so every
span that ended before a SIGKILL has been received. There is no application span around the
run: the library's own run span is the root of each run's trace.

ACTION ``run`` starts THREAD with fresh input; with ``--crash-step K`` the model or tool that
runs at superstep K kills the process with SIGKILL (no exception, no cleanup, no flush).
``resume`` continues THREAD with ``invoke(None)``. ``fork`` travels back in time: it
re-runs THREAD from the checkpoint of step ``--fork-step`` of the branch it finished on
(``invoke(None, config with that checkpoint_id)``). ``--release 2`` runs the agent's next
release: its state gains a ``notes`` key (a new channel; nothing else changes).
``--project`` names the Phoenix project
(resource attribute ``openinference.project.name``; Phoenix's default project otherwise).
``--spans-file`` also writes every span, as it ends, to FILE (OTLP/JSON lines, what was sent:
the test compares what Phoenix shows with it).

A run that ends prints one JSON line: ``{"thread", "action", "outcome", "tools",
"from_checkpoint_id"}`` (``from_checkpoint_id``: the checkpoint a fork started from).

`crash_resume_fork` drives the three processes of one thread (killed run, resume, fork), for
the test and for ``scripts/phoenix_screenshots.py``; `crash_then_upgrade` a killed run of
release 1 resumed by release 2.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired

from langgraph.prebuilt.chat_agent_executor import AgentState
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import agents
from agent_crash_app import open_saver
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter

SERVICE_NAME = "phoenix-app"
PROJECT_ATTRIBUTE = "openinference.project.name"
"""The resource attribute Phoenix files a span's trace under (its project)."""
CRASH_STEP = 4
"""The superstep of the second round of tool calls (`book`, `send_email`): the killed run
stored the checkpoints of steps -1..3 and dies in a side-effecting tool."""
FORK_STEP = 1
"""The fork re-runs the thread from the checkpoint after the model's first turn."""
INSTANCES = ("killed", "resume", "fork")
"""The three processes of `crash_resume_fork`, in the order they run."""


class NotedState(AgentState):
    notes: NotRequired[list[str]]
    """Release 2's new state key."""


RELEASES: dict[str, dict[str, Any]] = {"1": {}, "2": {"state_schema": NotedState}}
"""`agents.react_agent` keywords of each release."""


@dataclass(frozen=True)
class Process:
    """One finished (or killed) process of `crash_resume_fork`."""

    instance: str
    returncode: int
    result: dict[str, Any] | None
    """The JSON line the run printed (None: killed)."""
    spans_file: Path
    stderr: str


def crash_resume_fork(
    endpoint: str,
    database: Path,
    thread: str,
    files: Path,
    *,
    project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Process]:
    """Run THREAD's three processes one after another: a run killed by SIGKILL at
    `CRASH_STEP`, its resume, then a fork from `FORK_STEP`; each exports to `endpoint` and to
    ``files/<instance>.jsonl``. Raises when a process does not end as it should."""
    steps = {
        "killed": ["run", "--crash-step", str(CRASH_STEP)],
        "resume": ["resume"],
        "fork": ["fork", "--fork-step", str(FORK_STEP)],
    }
    return _run_in_turn(steps, endpoint, database, thread, files, project, env)


def crash_then_upgrade(
    endpoint: str, database: Path, thread: str, files: Path, *, project: str | None = None
) -> dict[str, Process]:
    """THREAD's run by release 1 killed at `CRASH_STEP` (``killed``), then resumed by release 2
    (``upgraded``), as `crash_resume_fork` runs its processes."""
    steps = {
        "killed": ["run", "--crash-step", str(CRASH_STEP)],
        "upgraded": ["resume", "--release", "2"],
    }
    return _run_in_turn(steps, endpoint, database, thread, files, project, None)


def _run_in_turn(
    steps: Mapping[str, list[str]],
    endpoint: str,
    database: Path,
    thread: str,
    files: Path,
    project: str | None,
    env: Mapping[str, str] | None,
) -> dict[str, Process]:
    """Each instance's process in turn (the one named ``killed`` must die by SIGKILL)."""
    done: dict[str, Process] = {}
    for instance, (action, *extra) in steps.items():
        spans_file = files / f"{instance}.jsonl"
        command = [sys.executable, str(Path(__file__)), f"sqlite:{database}", endpoint]
        command += [instance, action, thread, "--spans-file", str(spans_file), *extra]
        if project:
            command += ["--project", project]
        finished = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ if env is None else env),
            timeout=120,
            check=False,
        )
        expected = -signal.SIGKILL if instance == "killed" else 0
        if finished.returncode != expected:
            raise RuntimeError(
                f"{instance} exited {finished.returncode}, not {expected}:\n{finished.stderr}"
            )
        lines = finished.stdout.strip().splitlines()
        result = json.loads(lines[-1]) if lines else None
        done[instance] = Process(instance, finished.returncode, result, spans_file, finished.stderr)
    return done


def tracer_provider(
    endpoint: str, instance: str, project: str | None, spans_file: str | None
) -> TracerProvider:
    """Spans exported one by one, as they end, to the OTLP/HTTP `endpoint` (and `spans_file`)."""
    attributes = {"service.name": SERVICE_NAME, "service.instance.id": instance}
    if project:
        attributes[PROJECT_ATTRIBUTE] = project
    provider = TracerProvider(resource=Resource.create(attributes))
    if spans_file:
        provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(spans_file)))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def checkpoint_at(reader: Any, thread_id: str, step: int) -> str:
    """The id of the checkpoint of `step` on the branch the thread's latest checkpoint is on."""
    for snapshot in reader.get_state_history(agents.thread(thread_id)):
        if snapshot.metadata.get("step") == step:
            return str(snapshot.config["configurable"]["checkpoint_id"])
    raise SystemExit(f"thread {thread_id!r} has no checkpoint of step {step}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", help="sqlite:<path>")
    parser.add_argument("endpoint", help="OTLP/HTTP traces URL")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["run", "resume", "fork"])
    parser.add_argument("thread")
    parser.add_argument("--crash-step", type=int, default=None)
    parser.add_argument("--fork-step", type=int, default=1)
    parser.add_argument("--release", choices=sorted(RELEASES), default="1")
    parser.add_argument("--project", default=None)
    parser.add_argument("--spans-file", default=None)
    args = parser.parse_args(argv)

    provider = tracer_provider(args.endpoint, args.instance_id, args.project, args.spans_file)
    agents.crash_at_step(args.crash_step)
    try:
        with open_saver(args.backend) as saver:
            release = RELEASES[args.release]
            graph = agents.react_agent(instrument(saver, tracer_provider=provider), **release)
            reader = agents.react_agent(saver, **release)  # reads without spans: not in a run
            config: dict[str, Any] = agents.thread(args.thread)
            graph_input: Any = None
            from_checkpoint_id = None
            if args.action == "run":
                graph_input = agents.question()
            elif args.action == "fork":
                from_checkpoint_id = checkpoint_at(reader, args.thread, args.fork_step)
                config = agents.thread(args.thread, checkpoint_id=from_checkpoint_id)
            graph.invoke(graph_input, config, durability="sync")
            snapshot = reader.get_state(agents.thread(args.thread))
            line = {
                "thread": args.thread,
                "action": args.action,
                "outcome": "interrupted" if snapshot.next else "finished",
                "tools": [name for name, _ in agents.tool_messages(dict(snapshot.values))],
                "from_checkpoint_id": from_checkpoint_id,
            }
            print(json.dumps(line), flush=True)
    finally:
        provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
