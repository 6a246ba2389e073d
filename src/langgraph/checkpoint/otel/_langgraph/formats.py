"""LangGraph's string formats: task paths, bookkeeping channels and `Send`s (namespaces are
`namespaces`').

Pure functions over plain values. Everything else in the package reads these formats through
this module, so a change of format in a LangGraph release is met here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.checkpoint.serde.types import INTERRUPT

from langgraph.checkpoint.otel._langgraph.namespaces import START, parent_namespace

PULL_PREFIX = "~__pregel_pull, "
"""Task path of a node triggered by its channels: ``~__pregel_pull, <node>``."""
PUSH_PREFIX = "~__pregel_push, "
"""Task path of a `Send` (``~__pregel_push, <index>, ...``) or a functional-API call."""
BRANCH_PREFIX = "branch:to:"
"""LangGraph's trigger channels: `branch:to:<node>` schedules `<node>`."""
JOIN_PREFIX = "join:"
"""LangGraph's barrier channels of waiting edges: `join:<a>+<b>:<node>` holds the sources seen
so far and schedules `<node>` once all have written."""
TASKS_CHANNEL = "__pregel_tasks"
"""LangGraph's channel of pending `Send` packets."""
RESUME_CHANNEL = "__resume__"
"""LangGraph's channel of the pending writes that answer interrupts (`Command(resume=...)`)."""
START_NODE = START
"""The task that applies a run's input (LangGraph's `START`)."""
INPUT_NODE = "__input__"
"""Pseudo node of the null task's writes (`Command` and `update_state`); graph input is
applied by LangGraph's `__start__` task."""
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
"""The task id of writes that belong to no task (`Command(resume=...)`, `update_state`)."""
DELTA_COUNTERS_KEY = "counters_since_delta_snapshot"
"""Metadata key of checkpoints of graphs with delta channels (updates since each channel's last
stored snapshot)."""


def node_of_task(task_id: str, task_path: str, sends: Iterable[str] = ()) -> str | None:
    """The node a task ran, from its `task_path` (``~__pregel_pull, <node>``).

    Push tasks (``~__pregel_push, <index>, ...``) name the index of a `Send` in the checkpoint's
    task channel; `sends` are the target nodes of those sends, when known. The null task
    (`Command` and `update_state` writes) is `__input__`.
    """
    if task_id == NULL_TASK_ID:
        return INPUT_NODE
    if task_path.startswith(PULL_PREFIX):
        node = task_path[len(PULL_PREFIX) :]
        return node.split(",", 1)[0].strip() or None
    if task_path.startswith(PUSH_PREFIX):
        index = task_path[len(PUSH_PREFIX) :].split(",", 1)[0].strip()
        targets = list(sends)
        if index.isdigit() and int(index) < len(targets):
            return targets[int(index)]
    return None


def send_targets(tasks_value: Any) -> list[str]:
    """Target node names of the `Send` packets in a checkpoint's task channel value."""
    if not isinstance(tasks_value, list | tuple):
        return []
    return [str(getattr(send, "node", "")) for send in tasks_value]


def is_bookkeeping_channel(channel: str) -> bool:
    """Whether a channel is LangGraph's bookkeeping rather than graph state: `branch:to:<node>`
    triggers, `join:...` barriers and dunder channels (`__start__`, `__pregel_tasks`)."""
    return channel.startswith((BRANCH_PREFIX, JOIN_PREFIX, "__"))


def triggered_nodes(channel_values: Mapping[str, Any]) -> set[str]:
    """Nodes a checkpoint's channels trigger next: `branch:to:<node>` triggers, the target of a
    waiting edge's `join:<a>+<b>:<node>` barrier that every source has reached, and `Send`
    targets."""
    nodes = {
        name[len(BRANCH_PREFIX) :] for name in channel_values if name.startswith(BRANCH_PREFIX)
    }
    for name, seen in channel_values.items():
        if name.startswith(JOIN_PREFIX) and isinstance(seen, set | frozenset | list | tuple):
            sources, _, target = name[len(JOIN_PREFIX) :].rpartition(":")
            if sources and set(sources.split("+")) <= set(seen):
                nodes.add(target)
    nodes.update(send_targets(channel_values.get(TASKS_CHANNEL)))
    return nodes


def scheduled_nodes(channel_values: Mapping[str, Any]) -> list[str]:
    """Nodes a checkpoint schedules next: those its channels trigger, and `__start__` while
    the input is not applied yet (the input checkpoint)."""
    nodes = triggered_nodes(channel_values)
    if START_NODE in channel_values:
        nodes.add(START_NODE)
    return sorted(node for node in nodes if node)


def task_checkpoint_id(configurable: Mapping[str, Any]) -> Any:
    """The checkpoint a running task's graph stepped from, read from the task's configurable
    (LangGraph's `checkpoint_map`, keyed by the graph's namespace), or None."""
    checkpoint_map = configurable.get("checkpoint_map")
    if not isinstance(checkpoint_map, Mapping):
        return None
    namespace = str(configurable.get("checkpoint_ns") or "")
    return checkpoint_map.get(parent_namespace(namespace))


def interrupts_written(writes: Iterable[tuple[str, Any]]) -> list[tuple[str, bool]]:
    """(interrupt id, whether a person reviews it) of each `Interrupt` in a task's writes.

    A person reviews the interrupts of LangChain's human-in-the-loop middleware (its request
    holds ``action_requests`` and ``review_configs``); of any other, LangGraph does not say who
    answers it.
    """
    found: list[tuple[str, bool]] = []
    for channel, value in writes:
        if channel != INTERRUPT:
            continue
        for interrupt in value if isinstance(value, list | tuple) else (value,):
            interrupt_id = getattr(interrupt, "id", None)
            if not isinstance(interrupt_id, str) or not interrupt_id:
                continue
            request = getattr(interrupt, "value", None)
            reviewed = (
                isinstance(request, Mapping)
                and "action_requests" in request
                and "review_configs" in request
            )
            found.append((interrupt_id, reviewed))
    return found
