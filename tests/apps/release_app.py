"""Two releases of one LangGraph app, for deploy safety (`test_deploy_safety.py`).

Release 1: ``plan`` fans out to ``research_a`` and ``research_b``, which ``merge`` joins;
then ``write``, ``review`` (an `interrupt()`) and ``publish``. Release 2 is release 1 with one
change (`CHANGES`): a node removed, a node renamed, a required channel added, a channel's type
changed, or ``defer`` toggled on the fan-in node. Each release-2 factory
(``release_app:remove_node`` ...) returns the compiled graph, as ``langgraph-otel compat`` and
``replay`` load it.

    python release_app.py write BACKEND PREFIX...        # parked and finished threads
    python release_app.py crash BACKEND NODE PREFIX...   # threads SIGKILLed inside NODE

``write`` leaves ``{PREFIX}parked`` at the review interrupt and ``{PREFIX}finished`` done, for
each prefix; ``crash`` runs ``{PREFIX}crashed-{NODE}`` for every prefix at once, in threads,
until every one is inside NODE, then the process kills itself with SIGKILL (the checkpoint
before NODE is stored: durability ``sync``).
"""

from __future__ import annotations

import argparse
import operator
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

sys.path.insert(0, str(Path(__file__).parent))

from crash_app import open_saver
from langgraph.checkpoint.otel import instrument

CHANGES = (
    "remove_node",
    "rename_node",
    "add_required_channel",
    "change_channel_type",
    "toggle_defer",
)
_crash_at: str | None = None
_inside: threading.Barrier | None = None


class State(TypedDict):
    topic: str
    notes: Annotated[list[str], operator.add]
    draft: str
    approved: bool


class StateWithAudience(State):
    audience: str
    """Release 2 (`add_required_channel`): required, no default; `publish` reads it."""


class StateWithTextNotes(TypedDict):
    topic: str
    notes: str
    """Release 2 (`change_channel_type`): text, last value wins (was a list, appended to)."""
    draft: str
    approved: bool


def _maybe_crash(node: str) -> None:
    if node == _crash_at and _inside is not None:
        _inside.wait(timeout=60)  # every thread is inside the node: die now
        os.kill(os.getpid(), signal.SIGKILL)


def plan(state: State) -> dict[str, Any]:
    return {"notes": [f"plan:{state['topic']}"], "draft": ""}


def research_a(state: State) -> dict[str, Any]:
    return {"notes": ["a"]}


def research_b(state: State) -> dict[str, Any]:
    return {"notes": ["b"]}


def merge(state: State) -> dict[str, Any]:
    _maybe_crash("merge")
    return {"draft": "+".join(state["notes"])}


def write(state: Any) -> dict[str, Any]:
    _maybe_crash("write")
    return {"draft": state["draft"] + "!"}


def review(state: Any) -> dict[str, Any]:
    return {"approved": bool(interrupt("approve?"))}


def publish(state: State) -> dict[str, Any]:
    return {"notes": ["published"]}


# --- release 2's own nodes ------------------------------------------------------------------


def publish_to_audience(state: StateWithAudience) -> dict[str, Any]:
    """`add_required_channel`: reads the new channel."""
    return {"notes": [f"published:{state['audience']}"]}


def plan_text(state: StateWithTextNotes) -> dict[str, Any]:
    return {"notes": f"plan:{state['topic']}", "draft": ""}


def research_text(state: StateWithTextNotes) -> dict[str, Any]:
    return {}


def merge_text(state: StateWithTextNotes) -> dict[str, Any]:
    return {"draft": state["notes"]}


def publish_text(state: StateWithTextNotes) -> dict[str, Any]:
    return {"notes": state["notes"] + " published"}


def build(change: str | None = None) -> Any:
    """The graph of release 1 (`change` None) or of release 2 with `change`, uncompiled."""
    text = change == "change_channel_type"
    schema: Any = {
        "add_required_channel": StateWithAudience,
        "change_channel_type": StateWithTextNotes,
    }.get(change or "", State)
    builder = StateGraph(schema)
    writer = "compose" if change == "rename_node" else "write"
    builder.add_node("plan", plan_text if text else plan)
    builder.add_node("research_a", research_text if text else research_a)
    builder.add_node("research_b", research_text if text else research_b)
    builder.add_node("merge", merge_text if text else merge, defer=change == "toggle_defer")
    builder.add_node(writer, write)
    if change != "remove_node":
        builder.add_node("review", review)
    builder.add_node(
        "publish",
        publish_to_audience
        if change == "add_required_channel"
        else (publish_text if text else publish),
    )
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "research_a")
    builder.add_edge("plan", "research_b")
    builder.add_edge("research_a", "merge")
    builder.add_edge("research_b", "merge")
    builder.add_edge("merge", writer)
    if change == "remove_node":
        builder.add_edge(writer, "publish")
    else:
        builder.add_edge(writer, "review")
        builder.add_edge("review", "publish")
    builder.add_edge("publish", END)
    return builder


def release_1() -> Any:
    return build().compile()


def remove_node() -> Any:
    return build("remove_node").compile()


def rename_node() -> Any:
    return build("rename_node").compile()


def add_required_channel() -> Any:
    return build("add_required_channel").compile()


def change_channel_type() -> Any:
    return build("change_channel_type").compile()


def toggle_defer() -> Any:
    return build("toggle_defer").compile()


def config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def main() -> None:
    global _crash_at, _inside
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    write_mode = sub.add_parser("write")
    write_mode.add_argument("backend")
    write_mode.add_argument("prefixes", nargs="+")
    crash_mode = sub.add_parser("crash")
    crash_mode.add_argument("backend")
    crash_mode.add_argument("node", choices=["merge", "write"])
    crash_mode.add_argument("prefixes", nargs="+")
    args = parser.parse_args()
    from opentelemetry.sdk.trace import TracerProvider

    with open_saver(args.backend) as inner:
        saver = instrument(inner, tracer_provider=TracerProvider())
        graph = build().compile(checkpointer=saver)
        if args.mode == "write":
            from langgraph.types import Command

            for prefix in args.prefixes:
                for kind in ("parked", "finished"):
                    graph.invoke({"topic": kind}, config(prefix + kind), durability="sync")
                graph.invoke(Command(resume=True), config(prefix + "finished"), durability="sync")
            return
        _crash_at, _inside = args.node, threading.Barrier(len(args.prefixes))
        runs = [
            threading.Thread(
                target=graph.invoke,
                args=({"topic": "crash"}, config(f"{prefix}crashed-{args.node}")),
                kwargs={"durability": "sync"},
            )
            for prefix in args.prefixes
        ]
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=60)
        raise SystemExit("the crash node was never reached")


if __name__ == "__main__":
    main()
