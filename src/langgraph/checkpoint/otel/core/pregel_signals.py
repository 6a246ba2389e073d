"""What LangGraph's own run loop tells about a load: the one module that reads Pregel internals.

A run starts by loading its checkpoint from `PregelLoop.__enter__` / `__aenter__`; loads from
anywhere else (get_state, get_state_history, update_state, LangGraph's superseded check, an
inspector) start no run. The loop also knows the graph's static interrupts, the node of each
task of its current step, when the run ends and how.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Literal

from langgraph.checkpoint.serde.types import INTERRUPT

from langgraph.checkpoint.otel.analysis.lineage import RunStart

try:
    from langgraph.pregel._loop import PregelLoop
except ImportError:  # pragma: no cover - a LangGraph layout this version does not know
    PregelLoop = None  # type: ignore[assignment,misc]

_LOOP_ENTRIES = frozenset({"__enter__", "__aenter__"})
_REPLAY_LOADS = frozenset({"get_checkpoint", "aget_checkpoint"})
"""LangGraph's replay state, through which a subgraph's loop loads while its parent replays
(a fork): with `list(before=...)` the first time, `get_tuple` after."""

RunOutcome = Literal["finished", "interrupted", "error"]
RECENT_STEPS = 4
"""Steps whose tasks stay named: a task's pending writes can be saved (durability `async`)
after the loop has moved on by a step or two."""
_INTERRUPTED_STATUSES = frozenset({"interrupt_before", "interrupt_after"})


class LoopRun:
    """A run's load, seen from the loop that makes it; then the loop's steps as they apply.

    LangGraph asks the checkpointer for each new channel version while it applies a step's
    writes (`apply_writes`), in the loop's thread, before it moves on to the next step.
    `watch_steps` wraps the loop's `checkpointer_get_next_version` (the wrapper's own method)
    to note, at that moment, which tasks the step ran: so the nodes a checkpoint applies are
    known even where no put or pending write of the step was seen (durability `exit`), and
    a task whose writes are saved after the loop moved on is still named.
    """

    __slots__ = (
        "_applied",
        "_exit_durability",
        "_lock",
        "_recent",
        "_seen",
        "graph_name",
        "is_async",
        "loop",
        "start",
    )

    def __init__(self, start: RunStart, graph_name: str | None, loop: Any, is_async: bool) -> None:
        self.start = start
        self.graph_name = graph_name
        self.loop: weakref.ref[Any] = weakref.ref(loop)
        self.is_async = is_async
        self._lock = threading.Lock()
        self._seen: tuple[dict[Any, Any] | None, int] = (None, 0)
        self._recent: deque[dict[str, str]] = deque(maxlen=RECENT_STEPS)
        """task id -> node, for the tasks of the last steps noted."""
        self._applied: dict[str, set[str]] = {}
        """checkpoint id -> nodes of the step applied on it, until a put reads them."""
        self._exit_durability = getattr(loop, "durability", None) == "exit"

    def watch_steps(self, on_fault: Callable[[str, Exception], None]) -> None:
        """Note each step's tasks as the loop applies them (see the class docstring). A fault
        in the noting goes to `on_fault`, never to the loop."""
        loop = self.loop()
        original = getattr(loop, "checkpointer_get_next_version", None)
        if loop is None or not callable(original):
            return

        def next_version(current: Any, channel: Any) -> Any:
            try:
                self._note_step()
            except Exception as exc:
                on_fault("note step", exc)
            return original(current, channel)

        loop.checkpointer_get_next_version = next_version

    def task_node(self, task_id: str) -> str | None:
        """The node of task `task_id` of the loop's current or last `RECENT_STEPS` steps."""
        self._note_step(applying=False)
        with self._lock:
            for tasks in reversed(self._recent):
                if task_id in tasks:
                    return tasks[task_id]
        return None

    def applied_nodes(self, parent_id: str, checkpoint_id: str) -> set[str]:
        """Nodes of the steps applied since checkpoint `parent_id` that checkpoint
        `checkpoint_id` stores, forgotten once read: the one step applied on the parent, or
        under durability `exit` every step since the last put (not the writes LangGraph
        applies to the stored checkpoint itself on exit, to emit its last values)."""
        with self._lock:
            if self._exit_durability:
                nodes = set().union(
                    *(n for key, n in self._applied.items() if key != checkpoint_id)
                )
                self._applied.clear()
                return nodes
            return self._applied.pop(parent_id, set())

    def _note_step(self, applying: bool = True) -> None:
        """Note the nodes of the loop's current tasks (once per step, or per task pushed), and
        when `applying`, that they are the step applied on the loop's current checkpoint."""
        loop = self.loop()
        tasks = getattr(loop, "tasks", None)
        if not isinstance(tasks, dict):
            return
        with self._lock:
            seen, count = self._seen
            changed = tasks is not seen or len(tasks) != count
            if changed:
                self._seen = (tasks, len(tasks))
                nodes = {
                    str(task_id): task.name
                    # a copy taken at once: the loop's thread may be adding tasks meanwhile
                    for task_id, task in list(tasks.items())
                    if isinstance(getattr(task, "name", None), str) and task.name
                }
                if tasks is seen and self._recent:
                    self._recent[-1] = nodes  # tasks pushed during the step
                elif nodes:
                    self._recent.append(nodes)
            if not applying or not self._recent:
                return
            checkpoint_id = str((getattr(loop, "checkpoint", None) or {}).get("id", ""))
            if changed or checkpoint_id not in self._applied:
                self._applied.setdefault(checkpoint_id, set()).update(self._recent[-1].values())

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
    if caller is not None and caller.f_code.co_name in _REPLAY_LOADS:
        caller = caller.f_back
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
    return LoopRun(start, _graph_name(caller.f_back), loop, is_async)


_UPDATE_WRITERS = frozenset({"_store_or_fork_delta_writes", "_astore_or_fork_delta_writes"})
"""Where `update_state` stores the writes of the node it applies them as."""


def update_node(caller: FrameType | None, task_id: str) -> str | None:
    """The node (`as_node`) whose writes `update_state` stores, when `caller` stores them."""
    if caller is None or caller.f_code.co_name not in _UPDATE_WRITERS:
        return None
    local = caller.f_locals
    task = local.get("task")
    name = getattr(task, "name", None)
    if local.get("task_id") != task_id or not isinstance(name, str) or not name:
        return None
    return name


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
