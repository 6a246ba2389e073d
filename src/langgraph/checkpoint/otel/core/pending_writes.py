"""What a pending-writes call reports: the node its task ran and the task's outcome."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import node_of_task
from langgraph.checkpoint.otel._langgraph.loop import update_node
from langgraph.checkpoint.otel.analysis.records import (
    PSEUDO_NODES,
    UNKNOWN_NODE,
    Scope,
    task_outcome,
)
from langgraph.checkpoint.otel.core.runs import ActiveRun
from langgraph.checkpoint.otel.core.scope_state import ScopeStates


def task_of(
    states: ScopeStates,
    config: RunnableConfig,
    scope: Scope,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    writer: ActiveRun | None,
) -> tuple[str, str]:
    """The node and outcome of a pending-writes call by `writer`'s run; notes the task's node
    as a writer on the checkpoint it ran from (the child checkpoint applies it)."""
    checkpoint_id = str((config.get("configurable") or {}).get("checkpoint_id", ""))
    seen = states.last_seen(scope)
    sends = seen.sends if seen is not None and seen.id == checkpoint_id else []
    node = node_of_task(task_id, task_path, sends)
    if node is None and writer is not None:
        # a push task whose checkpoint's put is not seen yet (durability `async`)
        node = writer.loop.task_node(task_id)
    if node is None:
        node = update_node(task_id)  # update_state(..., as_node=...)
    if node is not None and node not in PSEUDO_NODES:
        states.note_writer(scope, checkpoint_id, node)
    return node or UNKNOWN_NODE, task_outcome(channel for channel, _ in writes)


def writes_attributes(
    writes: Sequence[tuple[str, Any]], task_id: str, task_path: str, node: str, outcome: str
) -> dict[str, AttributeValue]:
    """The attributes a pending-writes span adds to the common ones."""
    return {
        names.TASK_ID: task_id,
        names.TASK_PATH: task_path,
        names.TASK_NODE: node,
        names.WRITES_CHANNELS: sorted({channel for channel, _ in writes}),
        names.WRITES_COUNT: len(writes),
        names.TASK_OUTCOME: outcome,
    }
