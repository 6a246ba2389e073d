"""The support-desk app as a user starts it: ``opentelemetry-instrument python peer_app.py ...``
in an environment of tests/support/peer_envs.py (tests/integration/test_peers_autoload.py drives it).

The app (`support_desk.build`: `create_supervisor` over two `create_react_agent` workers) runs,
per mode, three runs on one thread, each a separate graph call: a refund that stops at the
refund tool's ``interrupt()``, the human's ``Command(resume="yes")``, then a tracking request.
``sync`` uses ``invoke``, ``invoke``, ``stream``; ``async`` uses ``ainvoke``, ``astream``,
``ainvoke``. A state read (``get_state`` / ``aget_state``) follows each run: reads outside a run.

Routes: ``instrument`` wraps the saver with ``instrument(InMemorySaver())``; ``instrumentor``
passes a bare `InMemorySaver` and relies on the ``langgraph_checkpoint`` entry point that
``opentelemetry-instrument`` loads. ``--openlit`` calls ``openlit.init()`` first, as
docs/peers.md shows (its LangGraph and LangChain instrumentors only, no metrics, local pricing).

Telemetry goes wherever the standard ``OTEL_*`` variables say (the tests: OTLP/HTTP to
tests/support/otlp_receiver.py). The app writes a JSON report to ``--out``: the interpreter, the
``opentelemetry_instrumentor`` entry points it sees, the instrumentors
``opentelemetry-instrument`` loaded, and the wall-clock window (``time.time_ns()``) of each
graph build (Traceloop and OpenLIT trace ``create_agent``), run and read, with its thread and
a run's outcome.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

APPS = Path(__file__).resolve().parent
if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))

from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402

import support_desk  # noqa: E402

REFUND = "Please refund order A17."
TRACK = "Where is my package for order B22?"
OPENLIT_INSTRUMENTORS = ("langgraph", "langchain")


def start_openlit() -> None:
    """``openlit.init()`` with its LangGraph and LangChain instrumentors only."""
    import openlit
    from openlit._instrumentors import MODULE_NAME_MAP

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as pricing:
        pricing.write("{}")
    try:
        openlit.init(
            disable_metrics=True,
            disable_events=True,
            pricing_json=pricing.name,
            disabled_instrumentors=[n for n in MODULE_NAME_MAP if n not in OPENLIT_INSTRUMENTORS],
        )
    finally:
        Path(pricing.name).unlink()


def build(route: str) -> Any:
    if route == "instrument":
        from langgraph.checkpoint.otel import instrument

        return support_desk.build(instrument(InMemorySaver()))
    return support_desk.build(InMemorySaver())


def _human(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _outcome(result: Any) -> str:
    if isinstance(result, dict) and result.get("__interrupt__"):
        return "interrupted"
    return "finished"


class Recorder:
    """Each run's and read's window, in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.mode = ""

    def timed(self, kind: str, label: str, thread: str, call: str, fn: Callable[[], Any]) -> Any:
        started = time.time_ns()
        result = fn()
        self._note(kind, label, thread, call, started, result)
        return result

    async def atimed(self, kind: str, label: str, thread: str, call: str, coro: Any) -> Any:
        started = time.time_ns()
        result = await coro
        self._note(kind, label, thread, call, started, result)
        return result

    def _note(
        self, kind: str, label: str, thread: str, call: str, started: int, result: Any
    ) -> None:
        self.events.append(
            {
                "mode": self.mode,
                "kind": kind,
                "label": label,
                "thread": thread,
                "call": call,
                "started_ns": started,
                "ended_ns": time.time_ns(),
                "outcome": _outcome(result) if kind == "run" else None,
            }
        )


def run_sync(graph: Any, rec: Recorder) -> None:
    thread = "desk-sync"
    config = {"configurable": {"thread_id": thread}}

    def stream(value: Any) -> dict[str, Any]:
        last: dict[str, Any] = {}
        for chunk in graph.stream(value, config, stream_mode="values"):
            last = chunk
        return last

    rec.timed("run", "refund", thread, "invoke", lambda: graph.invoke(_human(REFUND), config))
    rec.timed("read", "state after refund", thread, "get_state", lambda: graph.get_state(config))
    rec.timed(
        "run", "approval", thread, "invoke", lambda: graph.invoke(Command(resume="yes"), config)
    )
    rec.timed("read", "state after approval", thread, "get_state", lambda: graph.get_state(config))
    rec.timed("run", "tracking", thread, "stream", lambda: stream(_human(TRACK)))
    rec.timed("read", "state after tracking", thread, "get_state", lambda: graph.get_state(config))


async def run_async(graph: Any, rec: Recorder) -> None:
    thread = "desk-async"
    config = {"configurable": {"thread_id": thread}}

    async def astream(value: Any) -> dict[str, Any]:
        last: dict[str, Any] = {}
        async for chunk in graph.astream(value, config, stream_mode="values"):
            last = chunk
        return last

    await rec.atimed("run", "refund", thread, "ainvoke", graph.ainvoke(_human(REFUND), config))
    await rec.atimed("read", "state after refund", thread, "aget_state", graph.aget_state(config))
    await rec.atimed("run", "approval", thread, "astream", astream(Command(resume="yes")))
    await rec.atimed("read", "state after approval", thread, "aget_state", graph.aget_state(config))
    await rec.atimed("run", "tracking", thread, "ainvoke", graph.ainvoke(_human(TRACK), config))
    await rec.atimed("read", "state after tracking", thread, "aget_state", graph.aget_state(config))


def loaded_instrumentors() -> list[str]:
    """Instrumentor classes that are instrumented in this process (``opentelemetry-instrument``
    loaded them before the app started)."""
    from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore

    found = []
    for cls in _subclasses(BaseInstrumentor):
        instance = getattr(cls, "_instance", None)
        if instance is not None and getattr(instance, "_is_instrumented_by_opentelemetry", False):
            found.append(f"{cls.__module__}.{cls.__qualname__}")
    return sorted(found)


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="sync,async")
    parser.add_argument("--route", choices=("instrument", "instrumentor"), default="instrument")
    parser.add_argument("--openlit", action="store_true")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    if args.openlit:
        start_openlit()
    rec = Recorder()
    for mode in args.modes.split(","):
        rec.mode = mode
        graph = rec.timed("build", "build", "", "compile", lambda: build(args.route))
        if mode == "sync":
            run_sync(graph, rec)
        else:
            asyncio.run(run_async(graph, rec))
    report = {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "virtual_env": os.environ.get("VIRTUAL_ENV"),
        "entry_points": sorted(
            f"{e.name}={e.dist.name if e.dist else '?'}"
            for e in entry_points(group="opentelemetry_instrumentor")
        ),
        "instrumented": loaded_instrumentors(),
        "events": rec.events,
    }
    Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
