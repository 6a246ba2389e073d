"""What LangGraph's own run loop tells about a load: the one module that reads Pregel internals.

A run starts by loading its checkpoint from `PregelLoop.__enter__` / `__aenter__`; loads from
anywhere else (get_state, get_state_history, update_state, LangGraph's superseded check, an
inspector) start no run. The loop also knows the graph's static interrupts, the node of each
task of its current step, when the run ends and how.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, Literal

from langgraph.checkpoint.serde.types import INTERRUPT

from langgraph.checkpoint.otel.lineage import RunStart

try:
    from langgraph.pregel._loop import PregelLoop
except ImportError:  # pragma: no cover - a LangGraph layout this version does not know
    PregelLoop = None  # type: ignore[assignment,misc]

_LOOP_ENTRIES = frozenset({"__enter__", "__aenter__"})

RunOutcome = Literal["finished", "interrupted", "error"]
_INTERRUPTED_STATUSES = frozenset({"interrupt_before", "interrupt_after"})


@dataclass(slots=True)
class LoopRun:
    """A run's load, seen from the loop that makes it."""

    start: RunStart
    graph_name: str | None
    loop: weakref.ref[Any]
    is_async: bool
    _tasks_seen: tuple[dict[Any, Any] | None, int] = (None, 0)

    def new_task_nodes(self) -> dict[str, str]:
        """Task id -> node for the tasks of the loop's current step, if they changed since the
        last call (a new step, or tasks pushed during the step), else nothing."""
        tasks = getattr(self.loop(), "tasks", None)
        if not isinstance(tasks, dict):
            return {}
        seen, count = self._tasks_seen
        if tasks is seen and len(tasks) == count:
            return {}
        self._tasks_seen = (tasks, len(tasks))
        nodes = {}
        for task_id, task in tasks.items():
            name = getattr(task, "name", None)
            if isinstance(name, str) and name:
                nodes[str(task_id)] = name
        return nodes

    def on_exit(self, callback: Callable[[RunOutcome, BaseException | None], None]) -> bool:
        """Call `callback(outcome, error)` once the loop has exited, after its own exit work
        (final checkpoint writes under durability `exit`, background writes awaited)."""
        loop = self.loop()
        stack = getattr(loop, "stack", None)
        if loop is None or stack is None:
            return False
        ref = self.loop

        def exited(
            exc_type: type[BaseException] | None,
            exc: BaseException | None,
            tb: TracebackType | None,
        ) -> None:
            callback(run_outcome(ref(), exc), exc)

        # pushed before the loop enters its executor: the stack calls it last
        stack.push(exited)
        return True


def run_start(caller: FrameType | None) -> LoopRun | None:
    """How the run whose loop is `caller` started, or None when `caller` is not a run's load.

    `explicit_checkpoint` is provisional here: it says a checkpoint id was requested; whether
    that checkpoint is older than the thread's latest is settled after the load.
    """
    if caller is None or PregelLoop is None or caller.f_code.co_name not in _LOOP_ENTRIES:
        return None
    loop: Any = caller.f_locals.get("self")
    if not isinstance(loop, PregelLoop):
        return None
    configurable = (loop.checkpoint_config or {}).get("configurable") or {}
    start = RunStart(
        explicit_checkpoint=bool(configurable.get("checkpoint_id")),
        interrupt_before=_selector(loop.interrupt_before),
        interrupt_after=_selector(loop.interrupt_after),
    )
    is_async = caller.f_code.co_name == "__aenter__"
    return LoopRun(start, _graph_name(caller.f_back), weakref.ref(loop), is_async)


def run_outcome(loop: Any, error: BaseException | None) -> RunOutcome:
    """finished | interrupted | error, for a loop that has exited (with `error`, if any).

    LangGraph suppresses a run's `GraphInterrupt` before the loop exits; the interrupt is then
    seen in the loop's status (static interrupts) or its pending `__interrupt__` writes.
    """
    if error is not None:
        return "interrupted" if type(error).__name__ == "GraphInterrupt" else "error"
    if getattr(loop, "status", None) in _INTERRUPTED_STATUSES:
        return "interrupted"
    pending = getattr(loop, "checkpoint_pending_writes", None) or ()
    if any(len(write) > 1 and write[1] == INTERRUPT for write in pending):
        return "interrupted"
    return "finished"


def _graph_name(frame: FrameType | None) -> str | None:
    """The name of the graph whose `stream`/`astream` opened the loop."""
    graph = frame.f_locals.get("self") if frame is not None else None
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name else None


def _selector(value: Any) -> tuple[str, ...] | str:
    if isinstance(value, str):
        return value
    return tuple(str(v) for v in value or ())
