"""What the wrapper remembers of each (thread, namespace) between calls, in one structure.

A scope's state is made by the first call that needs it, dropped whole when the run in that
scope ends (the next run starts from what it loads, as a fresh process would), when its thread
is deleted or pruned, or when more scopes than the cache size are known (least recently
stored first). Those are the only places that forget it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint

from langgraph.checkpoint.otel._langgraph.formats import TASKS_CHANNEL, send_targets
from langgraph.checkpoint.otel._langgraph.namespaces import parent_namespace
from langgraph.checkpoint.otel.analysis.message_history import HistoryMemo
from langgraph.checkpoint.otel.analysis.records import Scope
from langgraph.checkpoint.otel.analysis.text_bounds import key_text
from langgraph.checkpoint.otel.analysis.tool_calls import ToolActivity, ToolCall
from langgraph.checkpoint.otel.bounded import BoundedDict

Lineage = tuple[int, int]
"""(checkpoints, written bytes) of a checkpoint's line of ancestors, itself included."""
V = TypeVar("V")
LINEAGE_CHECKPOINTS = 4
"""Checkpoints per scope whose lines are remembered for their children."""
WRITER_CHECKPOINTS = 16
"""Checkpoints per scope whose writers are remembered until a put applies them."""
TOOL_REQUESTS = 256
"""Tool calls per scope whose keys are remembered for the tool messages answering them."""
HISTORY_MEMO_BYTES = 64 * 1024 * 1024
"""Bound on the (estimated) bytes of the messages the scopes' history memos keep referenced,
all scopes together (least recently used scopes' memos dropped first)."""


@dataclass(slots=True)
class SeenCheckpoint:
    """What a later put needs of a checkpoint put or loaded: its `versions_seen` (copied, as
    LangGraph goes on changing the loaded checkpoint's in place while it applies writes) and
    the targets of its pending `Send`s."""

    id: str
    versions_seen: Mapping[str, Mapping[str, Any]]
    sends: list[str]

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> SeenCheckpoint:
        """What is kept of `checkpoint`."""
        values = checkpoint.get("channel_values") or {}
        versions_seen = checkpoint.get("versions_seen") or {}
        return cls(
            str(checkpoint.get("id", "")),
            {node: dict(seen) for node, seen in versions_seen.items()},
            send_targets(values.get(TASKS_CHANNEL)),
        )


@dataclass(slots=True)
class LoadNote:
    """What a run's load leaves for the run's first put: the one hand-over between them."""

    resume_kind: str
    """The kind of the resume (see `analysis.resume_kinds`)."""
    from_checkpoint_id: str
    """The checkpoint the run resumed from."""
    migrated: dict[str, Any] = field(default_factory=dict)
    """Channels a migration changed -> their new versions, until the first put stores them."""

    @property
    def resumed_from(self) -> tuple[str, str]:
        """(kind, checkpoint id): what the first put stores of the resume."""
        return (self.resume_kind, self.from_checkpoint_id)


@dataclass(slots=True)
class PutHandover:
    """What a put takes of its scope's state as it applies: the checkpoint put or loaded
    before it, the nodes seen writing on its parent, and the resume it is the first put of."""

    previous: SeenCheckpoint | None
    writers: set[str]
    resumed_from: tuple[str, str] | None


@dataclass(slots=True)
class ScopeState:
    """One (thread, namespace)'s state between calls (read and changed only by `ScopeStates`)."""

    last_checkpoint: SeenCheckpoint | None = None
    """The last checkpoint put or loaded (its `versions_seen` tell the nodes of the next put)."""
    writers: dict[str, set[str]] = field(default_factory=dict)
    """checkpoint id -> the nodes of the tasks seen writing on it, until a put applies them."""
    load_note: LoadNote | None = None
    """What the run's load left for its first put, until that put takes it."""
    lineages: BoundedDict[str, Lineage] = field(
        default_factory=lambda: BoundedDict(LINEAGE_CHECKPOINTS)
    )
    """checkpoint id -> its line, for the last checkpoints put or loaded."""
    subgraph_tools: dict[str, dict[str, ToolActivity]] = field(default_factory=dict)
    """(root scopes) checkpoint id -> namespace -> the tool activity of the run of that
    subgraph that runs from it, so far; until the put of its child (which applies the step
    that ran the subgraph) reads it."""
    tool_requests: BoundedDict[str, ToolCall] = field(
        default_factory=lambda: BoundedDict(TOOL_REQUESTS)
    )
    """model-issued call id -> the call, for the calls this run's puts saw requested (their
    tool messages' keys without hashing the arguments again)."""
    run_tools: ToolActivity | None = None
    """(subgraph scopes) the tool activity of this run of the subgraph so far, from its first
    checkpoint (a resumed run continues from the loaded checkpoint's); None: unknown."""
    history: HistoryMemo | None = None
    """The message history as last counted by a put of this run (see
    `analysis.message_history`)."""


class ScopeStates:
    """Every scope's `ScopeState`, bounded in number, behind one lock that never leaves it:
    each method below is one whole change or read of a scope's state."""

    def __init__(self, max_scopes: int, history_bytes: int = HISTORY_MEMO_BYTES) -> None:
        self._lock = threading.Lock()
        self._states: BoundedDict[Scope, ScopeState] = BoundedDict(max_scopes)
        self._history_bytes = 0
        """Sum of the kept history memos' `bytes`."""
        self.max_history_bytes = history_bytes

    def _get(self, scope: Scope) -> ScopeState:
        """`scope`'s state, made if new (under the lock)."""
        state = self._states.get(scope)
        if state is None:
            if len(self._states) >= self._states.max_entries:  # the oldest goes: count it out
                self._discount(self._states.popitem(last=False)[1])
            self._states[scope] = state = ScopeState()
        else:
            self._states.move_to_end(scope)  # in use: forgotten last
        return state

    # --- loads ------------------------------------------------------------------------------

    def loaded(
        self,
        scope: Scope,
        checkpoint: Checkpoint,
        note: LoadNote,
        run_tools: ToolActivity | None,
    ) -> None:
        """A run's load of `checkpoint`: the next put's parent, what it hands over to the run's
        first put and, for a subgraph's run, its tool activity so far."""
        seen = SeenCheckpoint.of(checkpoint)
        with self._lock:
            state = self._get(scope)
            state.last_checkpoint = seen
            state.load_note = note
            if scope[1]:
                state.run_tools = run_tools

    def note_migrated(self, scope: Scope, versions: dict[str, Any]) -> None:
        """A migration changed these channels of the loaded checkpoint (-> new versions)."""
        with self._lock:
            note = self._get(scope).load_note
            if note is not None:
                note.migrated = versions

    def take_migrated(self, scope: Scope) -> dict[str, Any]:
        """The channels a migration changed, for the first put to store (once)."""
        with self._lock:
            state = self._states.get(scope)  # a peek: a scope is not made by this
            note = state.load_note if state is not None else None
            if note is None or not note.migrated:
                return {}
            migrated, note.migrated = note.migrated, {}
            return migrated

    def note_lineage(self, scope: Scope, checkpoint_id: str, lineage: Lineage) -> None:
        """`checkpoint_id`'s line of ancestors (read from its stored telemetry)."""
        with self._lock:
            self._get(scope).lineages[checkpoint_id] = lineage

    # --- puts -------------------------------------------------------------------------------

    def begin_put(self, scope: Scope, checkpoint: Checkpoint, parent_id: str | None) -> PutHandover:
        """A put of `checkpoint` applies: it is the scope's last checkpoint now, and takes the
        writers on its parent and the load's note."""
        seen = SeenCheckpoint.of(checkpoint)
        with self._lock:
            state = self._get(scope)
            previous, state.last_checkpoint = state.last_checkpoint, seen
            # consumed: the writes on the parent are applied by this put
            writers = state.writers.pop(str(parent_id), set())
            note, state.load_note = state.load_note, None
        return PutHandover(previous, writers, note.resumed_from if note is not None else None)

    def extend_lineage(
        self, scope: Scope, checkpoint_id: str, parent_id: str | None, written: int
    ) -> Lineage | None:
        """The line of `checkpoint_id`: its parent's, one checkpoint and `written` bytes longer
        (None: the parent's line is unknown, written without this library)."""
        with self._lock:
            lineages = self._get(scope).lineages
            parent = (0, 0) if not parent_id else lineages.get(str(parent_id))
            if parent is None:
                return None
            lineage = (parent[0] + 1, parent[1] + written)
            lineages[checkpoint_id] = lineage
        return lineage

    def tool_requests(self, scope: Scope) -> Mapping[str, ToolCall]:
        """The tool calls the scope's puts saw requested, by call id (read without the lock:
        entries are only added, by `note_tool_requests`)."""
        with self._lock:
            return self._get(scope).tool_requests

    def note_tool_requests(self, scope: Scope, requested: list[tuple[str, ToolCall]]) -> None:
        """The scope's put saw these tool calls requested."""
        with self._lock:
            self._get(scope).tool_requests.update(
                (call_id, call) for call_id, call in requested if call_id
            )

    def step_tools(
        self,
        scope: Scope,
        parent_id: str | None,
        metadata: Mapping[str, Any],
        own: ToolActivity | None,
    ) -> tuple[ToolActivity | None, ToolActivity | None]:
        """The tool calls a put's step requested and answered, its subgraphs' included (None
        when the messages it added, `own`, are unknown); and, for a subgraph's checkpoint,
        those of the subgraph's run so far.

        A subgraph's put notes its run's activity with the root checkpoint it runs from
        (LangGraph's `parents` metadata), for the root put that applies the step to add: a
        subgraph that a fork runs again, under a new namespace, is compared as part of that
        step."""
        thread_id, namespace = scope
        with self._lock:
            state = self._get(scope)
            if namespace:
                if not parent_id:
                    state.run_tools = ToolActivity()  # the run's first checkpoint
                if own is None and metadata.get("step") == 0:
                    own = ToolActivity()  # the step applies the subgraph's input: none its own
                so_far = state.run_tools = (
                    None if own is None or state.run_tools is None else state.run_tools + own
                )
                root_checkpoint = (metadata.get("parents") or {}).get("")
                if so_far is not None and root_checkpoint:
                    root = self._get((thread_id, ""))
                    root.subgraph_tools.setdefault(str(root_checkpoint), {})[namespace] = so_far
                    while len(root.subgraph_tools) > WRITER_CHECKPOINTS:  # never applied
                        del root.subgraph_tools[next(iter(root.subgraph_tools))]
                return own, so_far
            subgraphs = state.subgraph_tools.pop(str(parent_id), {})
        for activity in subgraphs.values():
            own = None if own is None else own.merge(activity)
        return own, None

    def history(self, scope: Scope) -> HistoryMemo | None:
        """The scope's message history as last counted (a peek: no scope is made)."""
        with self._lock:
            state = self._states.get(scope)
            return state.history if state is not None else None

    def note_history(self, scope: Scope, memo: HistoryMemo) -> None:
        """The scope's message history as counted now; memos of the least recently used scopes
        are dropped beyond `max_history_bytes` (a memo larger than that is not kept)."""
        size = memo.bytes
        with self._lock:
            state = self._get(scope)
            self._discount(state)
            if size > self.max_history_bytes:
                return
            state.history = memo
            self._history_bytes += size
            for other in self._states.values():
                if self._history_bytes <= self.max_history_bytes:
                    break
                if other is not state:
                    self._discount(other)

    def _discount(self, state: ScopeState) -> None:
        """Drop `state`'s history memo from the count (lock held)."""
        if state.history is not None:
            self._history_bytes -= state.history.bytes
            state.history = None

    # --- pending writes ---------------------------------------------------------------------

    def last_seen(self, scope: Scope) -> SeenCheckpoint | None:
        """The last checkpoint put or loaded in `scope`."""
        with self._lock:
            return self._get(scope).last_checkpoint

    def note_writer(self, scope: Scope, checkpoint_id: str, node: str) -> None:
        """Task of `node` wrote on `checkpoint_id` (applied by that checkpoint's child)."""
        with self._lock:
            writers = self._get(scope).writers
            writers.setdefault(checkpoint_id, set()).add(node)
            while len(writers) > WRITER_CHECKPOINTS:  # writes never applied
                del writers[next(iter(writers))]

    # --- forgetting -------------------------------------------------------------------------

    def drop(self, scope: Scope) -> None:
        """Forget `scope` (its run ended)."""
        with self._lock:
            state = self._states.pop(scope, None)
            if state is not None:
                self._discount(state)

    def forget(self, stale: Callable[[Scope], bool]) -> None:
        """Forget every scope that is `stale`."""
        with self._lock:
            for scope in [scope for scope in self._states if stale(scope)]:
                self._discount(self._states.pop(scope))

    def sizes(self) -> dict[str, int]:
        """Entries kept, by kind (for tests and diagnostics)."""
        with self._lock:
            states = list(self._states.values())
        return {
            "last_put": sum(s.last_checkpoint is not None for s in states),
            "writers": sum(len(s.writers) for s in states),
            "resumed_from": sum(s.load_note is not None for s in states),
            "lineages": sum(len(s.lineages) for s in states),
            "histories": sum(s.history is not None for s in states),
            "history_bytes": self._history_bytes,
        }


def scope_of(config: RunnableConfig) -> Scope:
    """The key of a config's thread and namespace: full strings, never truncated (two long
    thread ids with the same start never share state), never raising."""
    configurable = config.get("configurable") or {}
    return (
        key_text(configurable.get("thread_id", "")),
        key_text(configurable.get("checkpoint_ns", "")),
    )


def enclosing_scope(scope: Scope) -> Scope:
    """The scope of the graph a subgraph's namespace runs in."""
    thread_id, namespace = scope
    return (thread_id, parent_namespace(namespace))


def nearest(by_scope: Mapping[Scope, V], scope: Scope) -> V | None:
    """`by_scope`'s value for `scope`, or else for the nearest enclosing graph's scope."""
    while (found := by_scope.get(scope)) is None and scope[1]:
        scope = enclosing_scope(scope)
    return found
