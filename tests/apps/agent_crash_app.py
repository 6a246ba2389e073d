"""An instrumented agent app run as a subprocess by ``test_agents.py``, to be killed mid-run.

    python agent_crash_app.py BACKEND SHAPE SPANS_FILE INSTANCE ACTION THREAD [THREAD ...]
        [--durability sync|async] [--events FILE]
        [--crash-step K | --crash-after-checkpoint K | --crash-before-checkpoint K]

BACKEND is ``sqlite:<path>`` or ``postgres:<url>``; SHAPE is ``react`` (`agents.react_agent`)
or ``map`` (`agents.map_reduce`). ACTION ``run`` starts each THREAD with fresh input;
``resume`` continues each with ``invoke(None)`` (as ``stream``), one run (one trace) per
thread. ``--events FILE`` appends LangGraph's own stream events (`agents.stream_event`) of each
run to FILE as they happen, so the test can tell which tasks ran, even in a killed process.

``--crash-step K`` makes the model, tool or node that runs at superstep K kill its own process
with SIGKILL; ``--crash-after-checkpoint K`` kills it at the first write after the checkpoint
of step K is stored (``-1``: right after the input checkpoint, before anything else is stored);
``--crash-before-checkpoint K`` kills it as the checkpoint of step K is about to be stored
(the writes of that step's tasks stored by then stay pending; the checkpoint applying them is
never stored). No exception, no
cleanup: what the spans file and the database hold is all that is left.

There is no application span around ``invoke``: the library's own ``invoke_workflow`` span is
each run's root. Every ended span is on disk at once (SimpleSpanProcessor). Each finished
run prints one JSON line: ``{"thread": ..., "outcome": ..., "summary": ...}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator
from typing import Any

import agents
import crash_app
from langgraph.checkpoint.otel import instrument

SERVICE_NAME = "agent-crash-app"
BEFORE_CHECKPOINT_GRACE_S = 0.2
SHAPES = {"react": agents.react_agent, "map": agents.map_reduce}


def shape_input(shape: str) -> Any:
    """The fresh input of a shape's run."""
    return agents.question() if shape == "react" else dict(agents.MAP_INPUT)


def summary(shape: str, values: dict[str, Any]) -> dict[str, Any]:
    """What a finished run computed, free of run-specific ids (compared across processes)."""
    if shape == "react":
        messages = values.get("messages", [])
        return {
            "tools": sorted(agents.tool_messages(values)),
            "answer": str(messages[-1].content) if messages else None,
            "messages": [m.type for m in messages],
        }
    return {"report": values.get("report"), "drafts": sorted(values.get("drafts", []))}


def _killing(saver_type: type, after: int | None, before: int | None) -> type:
    """`saver_type` that kills the process at the first write after the checkpoint of step
    `after` is stored (that checkpoint and its put span are complete, nothing after it is), or
    as the checkpoint of step `before` is about to be stored (its tasks' writes are stored,
    the checkpoint applying them is not)."""

    class KillingSaver(saver_type):  # type: ignore[misc,valid-type]
        armed = False

        def _maybe_kill(self) -> None:
            if self.armed:
                os.kill(os.getpid(), signal.SIGKILL)

        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            if before is not None and metadata.get("step") == before:
                # LangGraph stores a step's writes from a background thread: let the ones
                # already on their way land, then die before the checkpoint is stored
                time.sleep(BEFORE_CHECKPOINT_GRACE_S)
                os.kill(os.getpid(), signal.SIGKILL)
            self._maybe_kill()
            stored = super().put(config, checkpoint, metadata, new_versions)
            self.armed = after is not None and metadata.get("step") == after
            return stored

        def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            self._maybe_kill()
            super().put_writes(config, writes, task_id, task_path)

    # the spans' langgraph.saver attribute stays the real saver's name
    KillingSaver.__name__ = saver_type.__name__
    return KillingSaver


@contextlib.contextmanager
def open_saver(
    backend: str, kill_after: int | None = None, kill_before: int | None = None
) -> Iterator[Any]:
    """A real saver for ``sqlite:<path>`` or ``postgres:<url>``, set up and ready."""
    kind, _, target = backend.partition(":")
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(target, check_same_thread=False)
        try:
            saver = _killing(SqliteSaver, kill_after, kill_before)(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        with Connection.connect(
            target, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            saver = _killing(PostgresSaver, kill_after, kill_before)(conn)
            saver.setup()
            yield saver
    else:
        raise SystemExit(f"unknown backend {backend!r} (sqlite:<path> or postgres:<url>)")


def record_event(path: str | None, thread_id: str, event: dict[str, Any]) -> None:
    """Append one stream event of `thread_id` to `path` (a JSON line), flushed at once."""
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"thread": thread_id, "event": event}) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend")
    parser.add_argument("shape", choices=sorted(SHAPES))
    parser.add_argument("spans_file")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["run", "resume"])
    parser.add_argument("threads", nargs="+")
    parser.add_argument("--durability", default="sync", choices=["sync", "async"])
    parser.add_argument("--events", default=None, help="file for LangGraph's stream events")
    crash = parser.add_mutually_exclusive_group()
    crash.add_argument("--crash-step", type=int, default=None)
    crash.add_argument("--crash-after-checkpoint", type=int, default=None)
    crash.add_argument("--crash-before-checkpoint", type=int, default=None)
    args = parser.parse_args(argv)

    tracer_provider = crash_app.span_file_provider(SERVICE_NAME, args.instance_id, args.spans_file)
    agents.crash_at_step(args.crash_step)
    build = SHAPES[args.shape]
    try:
        with open_saver(
            args.backend, args.crash_after_checkpoint, args.crash_before_checkpoint
        ) as saver:
            graph = build(instrument(saver, tracer_provider=tracer_provider))
            reader = build(saver)  # reads the result without spans: they are no part of a run
            for thread_id in args.threads:
                config = agents.thread(thread_id)
                graph_input = shape_input(args.shape) if args.action == "run" else None
                chunks = graph.stream(
                    graph_input,
                    config,
                    durability=args.durability,
                    stream_mode=agents.STREAM_MODES,
                    subgraphs=True,
                )
                for chunk in chunks:  # each event on disk before the next task can kill us
                    record_event(args.events, thread_id, agents.stream_event(chunk))
                snapshot = reader.get_state(config)
                outcome = "interrupted" if snapshot.next else "finished"
                line = {"thread": thread_id, "outcome": outcome}
                line["summary"] = summary(args.shape, dict(snapshot.values))
                print(json.dumps(line), flush=True)
    finally:
        tracer_provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
