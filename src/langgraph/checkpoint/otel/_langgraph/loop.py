"""Runs seen from LangGraph's loop: the one module that reads the loop's internals.

A run starts by loading its checkpoint while its `PregelLoop` enters (`__enter__` /
`__aenter__`); loads from anywhere else (get_state, update_state, LangGraph's superseded check,
an inspector) start no run. `install()` wraps the two entries once per process, so the loop
that is entering is known, through a context variable, to every load made during its entry:
whatever sits between LangGraph and the wrapper (the Agent Server's adapter, a cache, a retry
layer, a thread that copies the context), the first such load is the run's (`entering_run`).

`install()` also wraps LangGraph's async task runner, so the code of an async run's node tasks
can run under the run's trace (`set_task_scope`); sync runs need no such help (their trace is
current in the thread that enters the loop, and LangGraph's worker threads copy it). And it
wraps `create_checkpoint`, so the values of a graph's delta channels, which a checkpoint stores
only at snapshots, are known to the save of each checkpoint (`delta_values`), and, once a loop
has entered, the values it rebuilt them to from the loaded checkpoint (`LoopEntry.after_entry`).

When an internal is missing (another LangGraph release), the signal it gives is logged once as
missing and the wrapper goes on reporting what it knows (puts, loads).
"""

from __future__ import annotations

import logging
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, Literal

from langgraph.checkpoint.serde.types import INTERRUPT

from langgraph.checkpoint.otel._langgraph.namespaces import parent_namespace

_logger = logging.getLogger(__name__)

RunOutcome = Literal["finished", "interrupted", "error"]
RECENT_STEPS = 4
"""Steps whose tasks stay named: a task's pending writes can be saved (durability `async`)
after the loop has moved on by a step or two."""
_INTERRUPTED_STATUSES = frozenset({"interrupt_before", "interrupt_after"})


class LoopEntry:
    """A run's load, seen from the loop that makes it; then the loop's steps as they apply.

    LangGraph asks the checkpointer for each new channel version while it applies a step's
    writes (`apply_writes`), in the loop's thread, before it moves on to the next step.
    `watch_steps` wraps the loop's `checkpointer_get_next_version` to note, at that moment,
    which tasks the step ran: so the nodes a checkpoint applies are known even where no put or
    pending write of the step was seen (durability `exit`), and a task whose writes are saved
    after the loop moved on is still named.
    """

    __slots__ = (
        "_applied",
        "_entered",
        "_exit_durability",
        "_failed_entry",
        "_lock",
        "_recent",
        "_seen",
        "explicit_checkpoint",
        "graph",
        "graph_name",
        "interrupt_after",
        "interrupt_before",
        "is_async",
        "langchain_run_id",
        "loop",
        "owner",
    )

    def __init__(self, loop: Any, graph: Any, is_async: bool) -> None:
        configurable = (getattr(loop, "checkpoint_config", None) or {}).get("configurable") or {}
        self.explicit_checkpoint = bool(configurable.get("checkpoint_id"))
        """A checkpoint id was requested (whether it is older than the thread's latest is
        settled after the load)."""
        self.interrupt_before = _selector(getattr(loop, "interrupt_before", ()))
        self.interrupt_after = _selector(getattr(loop, "interrupt_after", ()))
        self.graph: Callable[[], Any] = _weak(graph)
        """The compiled graph whose loop this is (None once it is gone, or when unknown)."""
        self.graph_name = _graph_name(graph)
        self.langchain_run_id = _langchain_run_id(loop)
        """The LangChain run of the graph: a peer instrumentation's span of the graph is keyed
        by it."""
        self.loop: weakref.ref[Any] = weakref.ref(loop)
        self.is_async = is_async
        self._lock = threading.Lock()
        self._seen: tuple[dict[Any, Any] | None, int] = (None, 0)
        self._recent: deque[dict[str, str]] = deque(maxlen=RECENT_STEPS)
        """task id -> node, for the tasks of the last steps noted."""
        self._applied: dict[str, set[str]] = {}
        """checkpoint id -> nodes of the step applied on it, until a put reads them."""
        self._exit_durability = getattr(loop, "durability", None) == "exit"
        self._entered: list[Callable[[Mapping[str, Any]], None]] = []
        self._failed_entry: Callable[..., None] | None = None
        self.owner: Any = None
        """What the saver that claimed the run keeps of it (found again from its saves, see
        `writing_run`)."""

    # --- delta channels ---------------------------------------------------------------------

    def after_entry(self, callback: Callable[[Mapping[str, Any]], None]) -> None:
        """Call `callback(values)` once the loop has entered, with the values its delta
        channels were rebuilt to (LangGraph reads their history after the run's load)."""
        with self._lock:
            self._entered.append(callback)

    def _entry_done(self) -> None:
        """The loop has entered: tag the saves it submits from now on with this run (see
        `writing_run`), and hand the values its delta channels were rebuilt to to the
        `after_entry` callbacks."""
        loop = self.loop()
        submit = getattr(loop, "submit", None)
        if loop is not None and callable(submit):
            loop.submit = _Submitter(submit, self).submit
        else:
            _missing("PregelLoop.submit (the run each save belongs to)")
        channels = _delta_channels(loop)
        with self._lock:
            callbacks, self._entered = self._entered, []
        if not channels:
            return
        values = _values_of(channels, None)
        for callback in callbacks:
            callback(values)

    def writes(self, checkpoint_id: str) -> bool:
        """Whether `checkpoint_id` is the checkpoint the loop holds now: the one it is putting
        (LangGraph creates the checkpoint, then hands a copy to the checkpointer)."""
        loop = self.loop()
        checkpoint = getattr(loop, "checkpoint", None)
        return isinstance(checkpoint, Mapping) and checkpoint.get("id") == checkpoint_id

    def watch_steps(self, on_fault: Callable[[str, Exception], None]) -> None:
        """Note each step's tasks as the loop applies them (see the class docstring). A fault
        in the noting goes to `on_fault`, never to the loop."""
        loop = self.loop()
        original = getattr(loop, "checkpointer_get_next_version", None)
        if loop is None or not callable(original):
            _missing("PregelLoop.checkpointer_get_next_version (nodes of durability-exit steps)")
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
        push = getattr(getattr(loop, "stack", None), "push", None)
        if loop is None or not callable(push):
            _missing("PregelLoop.stack (the end of a run)")
            return False
        ref = self.loop

        def exited(
            exc_type: type[BaseException] | None,
            exc: BaseException | None,
            tb: TracebackType | None,
        ) -> None:
            forget_delta_values()
            callback(run_outcome(ref(), exc), exc)

        # pushed before the loop enters its executor: the stack calls it last
        push(exited)
        self._failed_entry = exited
        return True

    def entry_failed(self, error: BaseException) -> None:
        """The loop's entry raised after the run's load claimed it (the inner load or a
        migration raised, or LangGraph could not restore the loaded channels): its stack never
        unwinds, so the exit callback is called here."""
        exited, self._failed_entry = self._failed_entry, None
        if exited is not None:
            exited(type(error), error, error.__traceback__)


def _delta_channels(loop: Any) -> dict[str, Any]:
    """The loop's `DeltaChannel`s by name (none on a LangGraph without them)."""
    channels = getattr(loop, "channels", None)
    return _delta_channels_of(channels) if isinstance(channels, Mapping) else {}


def _delta_channels_of(channels: Mapping[str, Any]) -> dict[str, Any]:
    if _DELTA_CHANNEL is None:
        return {}
    return {str(k): c for k, c in channels.items() if type(c) is _DELTA_CHANNEL}


def _delta_channel_type() -> type | None:
    try:
        from langgraph.channels.delta import DeltaChannel
    except ImportError:  # a LangGraph without delta channels
        return None
    return DeltaChannel


_DELTA_CHANNEL = _delta_channel_type()


def _values_of(channels: Mapping[str, Any], versions: Mapping[str, Any] | None) -> dict[str, Any]:
    """The current values of delta `channels` (those with a version in `versions`, if given):
    the very objects, no copy (a delta reducer makes a new value on every update)."""
    return {
        name: channel.get()
        for name, channel in channels.items()
        if (versions is None or name in versions) and channel.is_available()
    }


_DELTA_VALUES: ContextVar[tuple[str, dict[str, Any]] | None] = ContextVar(
    "langgraph_otel_delta_values", default=None
)
"""(checkpoint id, its delta channels' values) of the checkpoint LangGraph created last in
this context: the save it then submits (the loop's, in a copy of this context) or makes
(`update_state`) reads them (`delta_values`)."""


def delta_values(checkpoint_id: str) -> Mapping[str, Any] | None:
    """The values of the delta channels of checkpoint `checkpoint_id`, as LangGraph held them
    when it created it (None: its graph has no delta channel, or it was not created in this
    context)."""
    noted = _DELTA_VALUES.get()
    if noted is None or noted[0] != checkpoint_id:
        return None
    return noted[1]


def forget_delta_values() -> None:
    """Drop the delta values noted in this context (a run ended: hold nothing of its state)."""
    if _DELTA_VALUES.get() is not None:
        _DELTA_VALUES.set(None)


def _wrap_checkpoint_creation() -> None:
    """Note the delta channels' values of each checkpoint as LangGraph creates it, in the
    thread that creates it (a delta channel stores no value between its snapshots)."""
    try:
        from langgraph.pregel import _loop, main
    except ImportError:
        _missing("checkpoint creation (the values of delta channels)")
        return
    for module in (_loop, main):
        original = getattr(module, "create_checkpoint", None)
        if original is None:
            _missing("checkpoint creation (the values of delta channels)")
            continue
        _patch(module, "create_checkpoint", _noting_creation(original), original)


def _noting_creation(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_checkpoint(checkpoint: Any, channels: Any, step: Any, **kwargs: Any) -> Any:
        created = original(checkpoint, channels, step, **kwargs)
        if channels:
            try:
                delta = _delta_channels_of(channels)
                if delta:
                    versions = created.get("channel_versions") or {}
                    _DELTA_VALUES.set((str(created["id"]), _values_of(delta, versions)))
            except Exception:
                _missing("created checkpoints (the values of delta channels)")
        return created

    return create_checkpoint


def delta_snapshot_value(value: Any) -> Any:
    """The value a stored delta-channel snapshot holds (any other value as it is)."""
    if _DELTA_SNAPSHOT is not None and type(value) is _DELTA_SNAPSHOT:
        return getattr(value, "value", value)
    return value


def _delta_snapshot_type() -> type | None:
    try:
        from langgraph.checkpoint.serde.types import _DeltaSnapshot
    except ImportError:  # a LangGraph without delta channels
        return None
    return _DeltaSnapshot


_DELTA_SNAPSHOT = _delta_snapshot_type()


class _Submitter:
    """A loop's `submit` that runs each submission in a context naming the loop's run.

    LangGraph submits every save of a loop (checkpoints, pending writes) to the loop's
    background executor, which runs it in a copy of the submitting context: so a save knows
    its run wherever and whenever it runs, even after the run was cancelled. A bound method,
    as the loop's own is (LangGraph's runner keeps a `WeakMethod` of it).
    """

    __slots__ = ("__weakref__", "_run", "_submit")

    def __init__(self, submit: Callable[..., Any], run: LoopEntry) -> None:
        self._submit = submit
        self._run = run

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        token = _WRITER.set(self._run)
        try:
            return self._submit(fn, *args, **kwargs)
        finally:
            _WRITER.reset(token)


@dataclass(slots=True)
class _Entry:
    """A loop entering in this context, until the first load made during its entry claims it."""

    loop: Any
    graph: Any
    is_async: bool
    claimed: bool = False
    run: LoopEntry | None = None

    def failed(self, error: BaseException) -> None:
        """The loop's entry raised: end the run that claimed it (never raising)."""
        if self.run is not None:
            try:
                self.run.entry_failed(error)
            except Exception:
                _missing("the end of a run whose loop could not enter")

    def entered(self) -> None:
        """The loop has entered: tell the run that claimed it (never raising)."""
        if self.run is not None:
            try:
                self.run._entry_done()
            except Exception:
                _missing("the loop's delta channels after its entry")


_ENTERING: ContextVar[_Entry | None] = ContextVar("langgraph_otel_entering_loop", default=None)
_WRITER: ContextVar[_Entry | LoopEntry | None] = ContextVar("langgraph_otel_writer", default=None)
"""The run whose loop submitted the work running in this context: its entry while the loop
enters (the run's first saves are submitted then), its run afterwards (see `_Submitter`)."""
_UPDATING: ContextVar[dict[str, str] | None] = ContextVar("langgraph_otel_updating", default=None)
"""task id -> node, while `update_state` stores the writes of the nodes it applies them as."""


def entering_run() -> LoopEntry | None:
    """The run whose loop is entering in this context, for the first load made during the
    entry (the run's load); None for every other load."""
    entry = _ENTERING.get()
    if entry is None or entry.claimed:
        return None
    entry.claimed = True
    entry.run = LoopEntry(entry.loop, entry.graph, entry.is_async)
    return entry.run


def writing_run() -> LoopEntry | None:
    """The run whose loop submitted the save in progress in this context, if any: a fact of
    LangGraph's own (which loop made the save), not a guess from the runs open on its thread."""
    held = _WRITER.get()
    return held.run if isinstance(held, _Entry) else held


TaskScope = Callable[[str, str], AbstractContextManager[Any] | None]
"""(thread id, namespace of the graph running a task) -> a context manager to run the task's
code in (the run's trace), or None."""
_task_scope: TaskScope | None = None
_installed = False
_install_lock = threading.Lock()
_missing_logged: set[str] = set()


def set_task_scope(scope: TaskScope) -> None:
    """Run each async task of a graph inside `scope(thread_id, graph_namespace)` (see
    `install`); the scope decides whether there is anything to do."""
    global _task_scope
    _task_scope = scope


def install() -> None:
    """Wrap the loop entries, the async task runner and `update_state`'s writers, once per
    process (a missing internal is logged once, and its signal goes unreported)."""
    global _installed
    with _install_lock:
        if not _installed:
            _installed = True
            _wrap_loop_entries()
            _wrap_async_tasks()
            _wrap_update_writers()
            _wrap_checkpoint_creation()


def _wrap_loop_entries() -> None:
    try:
        from langgraph.pregel import _loop
    except ImportError:
        _missing("PregelLoop entries (runs)")
        return
    sync_loop = getattr(_loop, "SyncPregelLoop", None)
    async_loop = getattr(_loop, "AsyncPregelLoop", None)
    sync_enter = getattr(sync_loop, "__enter__", None)
    async_enter = getattr(async_loop, "__aenter__", None)
    if sync_enter is None or async_enter is None:
        _missing("PregelLoop entries (runs)")
        return

    def __enter__(self: Any) -> Any:
        entry = _Entry(self, _caller(sys._getframe(1)), is_async=False)
        token, writer = _ENTERING.set(entry), _WRITER.set(entry)
        try:
            entered = sync_enter(self)
        except BaseException as error:
            entry.failed(error)
            raise
        finally:
            _WRITER.reset(writer)
            _ENTERING.reset(token)
        entry.entered()
        return entered

    async def __aenter__(self: Any) -> Any:
        entry = _Entry(self, _caller(sys._getframe(1)), is_async=True)
        token, writer = _ENTERING.set(entry), _WRITER.set(entry)
        try:
            entered = await async_enter(self)
        except BaseException as error:
            entry.failed(error)
            raise
        finally:
            _WRITER.reset(writer)
            _ENTERING.reset(token)
        entry.entered()
        return entered

    _patch(sync_loop, "__enter__", __enter__, sync_enter)
    _patch(async_loop, "__aenter__", __aenter__, async_enter)


def _wrap_async_tasks() -> None:
    try:
        from langgraph.pregel import _runner
    except ImportError:
        _missing("the async task runner (async runs as one trace)")
        return
    original = getattr(_runner, "arun_with_retry", None)
    if original is None:
        _missing("the async task runner (async runs as one trace)")
        return

    def arun_with_retry(task: Any, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        scope = _task_scope_of(task)
        if scope is None:
            return original(task, *args, **kwargs)  # type: ignore[no-any-return]
        return _run_in(scope, original(task, *args, **kwargs))

    _patch(_runner, "arun_with_retry", arun_with_retry, original)


def _wrap_update_writers() -> None:
    try:
        from langgraph.pregel import main
    except ImportError:
        _missing("update_state's writer (the node an update is applied as)")
        return
    store = getattr(main, "_store_or_fork_delta_writes", None)
    astore = getattr(main, "_astore_or_fork_delta_writes", None)
    if store is None or astore is None:
        _missing("update_state's writer (the node an update is applied as)")
        return

    def _store_or_fork_delta_writes(*args: Any, **kwargs: Any) -> Any:
        token = _UPDATING.set(_update_nodes(args, kwargs))
        try:
            return store(*args, **kwargs)
        finally:
            _UPDATING.reset(token)

    async def _astore_or_fork_delta_writes(*args: Any, **kwargs: Any) -> Any:
        token = _UPDATING.set(_update_nodes(args, kwargs))
        try:
            return await astore(*args, **kwargs)
        finally:
            _UPDATING.reset(token)

    _patch(main, "_store_or_fork_delta_writes", _store_or_fork_delta_writes, store)
    _patch(main, "_astore_or_fork_delta_writes", _astore_or_fork_delta_writes, astore)


_UPDATE_WRITES_ARGUMENT = 5
"""Position of `writes`, ``(task id, writes, task)`` per task, in the update writers."""


def _update_nodes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, str]:
    """task id -> node of the tasks whose writes an update stores (never raising)."""
    try:
        writes = kwargs.get(
            "writes", args[_UPDATE_WRITES_ARGUMENT] if len(args) > _UPDATE_WRITES_ARGUMENT else ()
        )
        nodes = {}
        for task_id, _, task in writes:
            name = getattr(task, "name", None)
            if isinstance(name, str) and name:
                nodes[str(task_id)] = name
        return nodes
    except Exception:
        _missing("update_state's writes (the node an update is applied as)")
        return {}


async def _run_in(scope: AbstractContextManager[Any], task: Coroutine[Any, Any, Any]) -> Any:
    with scope:
        return await task


def _task_scope_of(task: Any) -> AbstractContextManager[Any] | None:
    """The scope `set_task_scope` gives a task, from the thread and namespace in its config;
    never raising."""
    scope = _task_scope
    if scope is None:
        return None
    try:
        configurable = (getattr(task, "config", None) or {}).get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if thread_id is None:
            return None
        graph_namespace = parent_namespace(str(configurable.get("checkpoint_ns") or ""))
        return scope(str(thread_id), graph_namespace)
    except Exception:
        _missing("task configs (async runs as one trace)")
        return None


def _patch(owner: Any, name: str, replacement: Callable[..., Any], original: Any) -> None:
    replacement.__wrapped__ = original  # type: ignore[attr-defined]
    replacement.__qualname__ = getattr(original, "__qualname__", name)
    replacement.__doc__ = getattr(original, "__doc__", None)
    setattr(owner, name, replacement)


def _missing(signal: str) -> None:
    """Log once that a LangGraph internal this release does not have is missing."""
    if signal in _missing_logged:
        return
    _missing_logged.add(signal)
    _logger.warning(
        "langgraph-checkpoint-otel: this LangGraph release lacks %s; that signal is not "
        "reported (checkpoint writes and loads still are)",
        signal,
    )


def update_node(task_id: str) -> str | None:
    """The node (`as_node`) whose writes `update_state` is storing as task `task_id`, when the
    current pending-writes call comes from it (see `install`)."""
    return (_UPDATING.get() or {}).get(task_id)


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


def _caller(frame: FrameType | None) -> Any:
    """The graph whose `stream`/`astream` enters the loop (the `self` of the frame that calls
    the entry), or None."""
    return frame.f_locals.get("self") if frame is not None else None


def _graph_name(graph: Any) -> str | None:
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name else None


def _weak(value: Any) -> Callable[[], Any]:
    """A weak reference to `value` (a strong one where it cannot be weakly referenced; None
    gives a reference to None)."""
    try:
        return weakref.ref(value)
    except TypeError:
        return lambda: value


def _langchain_run_id(loop: Any) -> Any:
    """The id of the LangChain run of the graph whose loop this is (its callback run
    manager's), if it has one."""
    return getattr(getattr(loop, "manager", None), "run_id", None)


def _selector(value: Any) -> tuple[str, ...] | str:
    if isinstance(value, str):
        return value
    return tuple(str(v) for v in value or ())
