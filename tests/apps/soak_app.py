"""An instrumented 11-superstep LangGraph app run as a subprocess by ``test_crash_soak.py``.

    python soak_app.py BACKEND SPANS_FILE INSTANCE ACTION THREAD [THREAD ...] [--kill POINT]

BACKEND is ``sqlite:<path>`` or ``postgres:<url>``; ACTION ``run`` starts each THREAD with
fresh input, ``resume`` continues each with ``invoke(None)``. ``--kill POINT`` makes the
process SIGKILL itself (no exception, no cleanup) at one point:

    node:NAME           inside node NAME, before it returns (the first time it runs here)
    node:NAME:ITEM      inside the `Send` worker NAME that got ITEM
    after:K             at the first write after the checkpoint of step K is stored
                        (``-1``: right after the input checkpoint)
    before:K            as the checkpoint of step K is about to be stored (the writes of the
                        step's tasks stored by then stay pending)

The graph (superstep: nodes; ``work`` and ``audit`` are `Send` workers)::

    1 plan -> 2 work x3 -> 3 join -> 4 left | right -> 5 merge -> 6 review
    -> 7 audit x2 -> 8 tally -> 9 polish_a | polish_b -> 10 finalize -> 11 report -> END

State is deterministic: lists with ``operator.add`` reducers and messages with explicit ids.
``total`` counts the plain nodes' runs (an ``operator.add`` int).
Every ended span is on disk at once (SimpleSpanProcessor). Each finished thread prints one
JSON line: ``{"thread": ..., "values": {...}}``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import operator
import os
import signal
import sys
from collections.abc import Iterator
from typing import Annotated, Any, Final, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send

import agent_crash_app
import crash_app
from langgraph.checkpoint.otel import instrument

SERVICE_NAME = "soak-app"
DURABILITY: Final = "sync"
ITEMS = ("a", "b", "c")
AUDITS = ("0", "1")
LAST_STEP = 11


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    results: Annotated[list[str], operator.add]
    messages: Annotated[list[AnyMessage], add_messages]
    items: list[str]
    total: Annotated[int, operator.add]


def graph_input() -> dict[str, Any]:
    return {"log": ["input"], "messages": [HumanMessage("go", id="m-input")], "total": 0}


def _maybe_kill(kill: str | None, point: str) -> None:
    if kill == point:
        os.kill(os.getpid(), signal.SIGKILL)


def build(kill: str | None = None) -> StateGraph[State]:
    """The soak graph; `kill` is a ``node:...`` point (other points are the saver's)."""

    def step(name: str, message: bool = False) -> Any:
        def node(state: State) -> dict[str, Any]:
            _maybe_kill(kill, f"node:{name}")
            update: dict[str, Any] = {"log": [name], "total": 1}
            if message:
                update["messages"] = [AIMessage(f"{name} done", id=f"m-{name}")]
            return update

        return node

    def plan(state: State) -> dict[str, Any]:
        _maybe_kill(kill, "node:plan")
        return {
            "log": ["plan"],
            "items": list(ITEMS),
            "messages": [AIMessage("planned", id="m-plan")],
        }

    def worker(name: str) -> Any:
        def node(task: dict[str, str]) -> dict[str, Any]:
            item = task["item"]
            _maybe_kill(kill, f"node:{name}")
            _maybe_kill(kill, f"node:{name}:{item}")
            return {
                "results": [f"{name}:{item}"],
                "messages": [AIMessage(f"{name} {item}", id=f"m-{name}-{item}")],
            }

        return node

    def fan_out(state: State) -> list[Send]:
        return [Send("work", {"item": item}) for item in state["items"]]

    def audit_out(state: State) -> list[Send]:
        return [Send("audit", {"item": item}) for item in AUDITS]

    builder = StateGraph(State)
    builder.add_node("plan", plan)
    builder.add_node("work", worker("work"))
    builder.add_node("join", step("join", message=True))
    builder.add_node("left", step("left"))
    builder.add_node("right", step("right"))
    builder.add_node("merge", step("merge", message=True))
    builder.add_node("review", step("review"))
    builder.add_node("audit", worker("audit"))
    builder.add_node("tally", step("tally"))
    builder.add_node("polish_a", step("polish_a"))
    builder.add_node("polish_b", step("polish_b"))
    builder.add_node("finalize", step("finalize"))
    builder.add_node("report", step("report", message=True))
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["work"])
    builder.add_edge("work", "join")
    builder.add_edge("join", "left")
    builder.add_edge("join", "right")
    builder.add_edge(["left", "right"], "merge")
    builder.add_edge("merge", "review")
    builder.add_conditional_edges("review", audit_out, ["audit"])
    builder.add_edge("audit", "tally")
    builder.add_edge("tally", "polish_a")
    builder.add_edge("tally", "polish_b")
    builder.add_edge(["polish_a", "polish_b"], "finalize")
    builder.add_edge("finalize", "report")
    builder.add_edge("report", END)
    return builder


def values_json(values: dict[str, Any]) -> dict[str, Any]:
    """Channel values as plain JSON (messages as [id, type, content])."""
    out = dict(values)
    out["messages"] = [[m.id, m.type, m.content] for m in values.get("messages", [])]
    return out


@contextlib.contextmanager
def open_saver(backend: str, kill: str | None = None) -> Iterator[Any]:
    """A real saver for ``sqlite:<path>`` or ``postgres:<url>``, set up, SIGKILLing the process
    at an ``after:K`` / ``before:K`` point (agent_crash_app's killing saver)."""
    kind, _, arg = (kill or "").partition(":")
    with agent_crash_app.open_saver(
        backend,
        kill_after=int(arg) if kind == "after" else None,
        kill_before=int(arg) if kind == "before" else None,
    ) as saver:
        yield saver


def thread(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend")
    parser.add_argument("spans_file")
    parser.add_argument("instance_id")
    parser.add_argument("action", choices=["run", "resume"])
    parser.add_argument("threads", nargs="+")
    parser.add_argument("--kill", default=None, help="node:NAME[:ITEM] | after:K | before:K")
    args = parser.parse_args(argv)

    tracer_provider = crash_app.span_file_provider(SERVICE_NAME, args.instance_id, args.spans_file)
    try:
        with open_saver(args.backend, args.kill) as saver:
            graph = build(args.kill).compile(
                checkpointer=instrument(saver, tracer_provider=tracer_provider)
            )
            for thread_id in args.threads:
                start: Any = graph_input() if args.action == "run" else None
                values = graph.invoke(start, thread(thread_id), durability=DURABILITY)
                line = {"thread": thread_id, "values": values_json(dict(values))}
                print(json.dumps(line), flush=True)
    finally:
        tracer_provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
