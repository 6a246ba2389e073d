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

from langgraph.checkpoint.otel._langgraph.formats import (
    TASKS_CHANNEL,
    parent_namespace,
    send_targets,
)
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
class ScopeState:
    """One (thread, namespace)'s state between calls."""

    last_checkpoint: SeenCheckpoint | None = None
    """The last checkpoint put or loaded (its `versions_seen` tell the nodes of the next put)."""
    writers: dict[str, set[str]] = field(default_factory=dict)
    """checkpoint id -> the nodes of the tasks seen writing on it, until a put applies them."""
    resumed_from: tuple[str, str] | None = None
    """(kind, checkpoint id) of the resume whose first put has not been seen yet."""
    migrated: dict[str, Any] = field(default_factory=dict)
    """channels a migration changed -> their new versions, until the next put stores them."""
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

    def note_subgraph_tools(
        self, checkpoint_id: str, namespace: str, activity: ToolActivity
    ) -> None:
        """The run of subgraph `namespace` that runs from `checkpoint_id` has, so far, requested
        and answered these tool calls."""
        self.subgraph_tools.setdefault(checkpoint_id, {})[namespace] = activity
        while len(self.subgraph_tools) > WRITER_CHECKPOINTS:  # never applied
            del self.subgraph_tools[next(iter(self.subgraph_tools))]

    def note_writer(self, checkpoint_id: str, node: str) -> None:
        """Task of `node` wrote on `checkpoint_id` (applied by that checkpoint's child)."""
        self.writers.setdefault(checkpoint_id, set()).add(node)
        while len(self.writers) > WRITER_CHECKPOINTS:  # writes never applied
            del self.writers[next(iter(self.writers))]


class ScopeStates:
    """Every scope's `ScopeState`, bounded in number; `lock` guards the states' contents."""

    def __init__(self, max_scopes: int) -> None:
        self.lock = threading.Lock()
        self._states: BoundedDict[Scope, ScopeState] = BoundedDict(max_scopes)

    def get(self, scope: Scope) -> ScopeState:
        """`scope`'s state, made if new (call under `lock`)."""
        state = self._states.get(scope)
        if state is None:
            self._states[scope] = state = ScopeState()
        else:
            self._states.move_to_end(scope)  # in use: forgotten last
        return state

    def peek(self, scope: Scope) -> ScopeState | None:
        """`scope`'s state if known (call under `lock`)."""
        return self._states.get(scope)

    def drop(self, scope: Scope) -> None:
        """Forget `scope` (its run ended)."""
        with self.lock:
            self._states.pop(scope, None)

    def forget(self, stale: Callable[[Scope], bool]) -> None:
        """Forget every scope that is `stale`."""
        with self.lock:
            self._states.evict(stale)

    def sizes(self) -> dict[str, int]:
        """Entries kept, by kind (for tests and diagnostics)."""
        with self.lock:
            states = list(self._states.values())
        return {
            "last_put": sum(s.last_checkpoint is not None for s in states),
            "writers": sum(len(s.writers) for s in states),
            "resumed_from": sum(s.resumed_from is not None for s in states),
            "lineages": sum(len(s.lineages) for s in states),
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
