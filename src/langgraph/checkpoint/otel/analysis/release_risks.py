"""Can a new release of a graph resume a stored thread? Pure logic over the facts of the
thread's latest checkpoint and of the new graph (`inspector.compat` gathers both).

A thread is at risk, for a reason named by nodes and channels only, when:

- `missing_node`: the checkpoint schedules a node (a `branch:to:` trigger, a complete join, a
  pending `Send`) the new graph lacks: LangGraph drops the trigger and the work never runs;
- `interrupted_node_missing`: the same for a node the thread is parked in at an `interrupt()`:
  the answer to the interrupt goes nowhere;
- `data_dropped`: a state channel holding a value is not in the new graph (LangGraph loads only
  the channels it declares: the value is gone);
- `new_required_channel`: the new graph declares a required state key (no default) that the
  thread holds no value for (and that the graph which wrote it did not have, when its structure
  was stored), and something requires it on resume (a node reads it, or the state schema is
  validated for every node: pydantic, dataclass): the next node that reads it fails;
- `missing_tool`: a tool call the thread has pending (its model asked for it; it has not run,
  or it is parked inside it at an `interrupt()`) names a tool the new graph's tool node for
  that graph (the root, a supervisor's worker, ...) does not have: the call fails ("not a
  valid tool") and its side effect never happens;
- `invalid_tool_call`: the pending call's arguments fail the new tool's own validation;
- `channel_restore_failed`: the new graph's channel cannot be restored from the stored value
  (its kind changed, e.g. `defer` toggled on a node the thread is about to run);
- `schema_validation`: a stored value fails the new state schema's type for its key;
- `schema_version`: the thread was written under a `schema_version` the running one has no
  declared migration path from.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from langgraph.checkpoint.otel._langgraph.namespaces import START
from langgraph.checkpoint.otel.analysis.graph_structure import StructureSummary

RiskReason = Literal[
    "missing_node",
    "interrupted_node_missing",
    "data_dropped",
    "new_required_channel",
    "channel_restore_failed",
    "schema_validation",
    "schema_version",
    "missing_tool",
    "invalid_tool_call",
]


@dataclass(frozen=True, slots=True)
class Risk:
    """One reason a thread is at risk: the reason, and the node or channel it is about."""

    reason: RiskReason
    subject: str
    """A node, a channel or `written -> running` versions; never a value."""
    detail: str = ""
    """Content-free: the expected type, the channel class, the exception's class."""


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A tool call a stored thread has pending: the graph that will run it (its namespace
    without task ids, "" the root) and the tool's name."""

    graph: str
    tool: str


@dataclass(frozen=True, slots=True)
class StoredThread:
    """What the check reads of a thread's latest checkpoint (root namespace)."""

    thread_id: str
    checkpoint_id: str
    scheduled: Sequence[str]
    """Nodes the checkpoint schedules next (see `_langgraph.formats.scheduled_nodes`)."""
    interrupted: bool
    """`__interrupt__` writes are pending: the thread is parked at an `interrupt()`."""
    state_channels: Collection[str]
    """State channels holding a value in the stored checkpoint."""
    written_channels: Collection[str] = ()
    """Every channel the thread has written (its checkpoint's versions: a delta channel holds a
    value it does not store in each checkpoint)."""
    """State channels (not LangGraph's bookkeeping) holding a value."""
    written_structure: StructureSummary | None = None
    """The structure the checkpoint was written under, when the wrapper stored it."""
    schema_version: str | None = None
    pending_calls: Sequence[PendingCall] = ()


@dataclass(frozen=True, slots=True)
class RunningGraph:
    """What the check reads of the new graph."""

    structure: StructureSummary
    required_keys: Collection[str] = ()
    """State keys without a default that something requires on resume (see
    `new_required_channel`)."""
    tools: Mapping[str, Collection[str]] = field(default_factory=dict)
    """Graph (namespace without task ids) -> the names of the tools its tool node runs; a
    graph that runs tools otherwise is absent (not checked)."""
    schema_version: str | None = None
    migration_path: Callable[[str, str], bool] | None = None
    """(written, running) -> whether declared migrations lead from one to the other."""


def structural_risks(thread: StoredThread, graph: RunningGraph) -> list[Risk]:
    """The reasons that follow from names alone (values are checked by the caller with
    `channel_restore_failed` and `schema_validation` risks)."""
    nodes = set(graph.structure.nodes)
    channels = graph.structure.channels
    risks: list[Risk] = []
    for node in thread.scheduled:
        if node != START and node not in nodes:
            reason: RiskReason = (
                "interrupted_node_missing" if thread.interrupted else "missing_node"
            )
            risks.append(Risk(reason, node))
    risks += [Risk("data_dropped", c) for c in sorted(thread.state_channels) if c not in channels]
    written = thread.written_structure
    risks += [
        Risk("new_required_channel", key, "no default")
        for key in sorted(graph.required_keys)
        if key in channels
        and key not in thread.state_channels
        and key not in thread.written_channels
        and (written is None or key not in written.channels)
    ]
    for call in thread.pending_calls:
        names = graph.tools.get(call.graph)
        if names is not None and call.tool not in names:
            risks.append(Risk("missing_tool", call.tool, f"in {call.graph or 'the root graph'}"))
    risks += _schema_version_risks(thread, graph)
    return risks


def _schema_version_risks(thread: StoredThread, graph: RunningGraph) -> list[Risk]:
    if thread.schema_version is None and graph.schema_version is None:
        return []
    written = thread.schema_version or "unversioned"
    running = graph.schema_version or "unversioned"
    if written == running:
        return []
    if graph.migration_path is not None and graph.migration_path(written, running):
        return []
    return [Risk("schema_version", f"{written} -> {running}", "no migration path")]


def channels_to_check(stored: Collection[str], graph: RunningGraph) -> list[str]:
    """The stored channels (LangGraph's bookkeeping included: a deferred node's trigger) whose
    values the caller restores and validates against the new graph: every one it declares."""
    return sorted(c for c in stored if c in graph.structure.channels)


@dataclass(frozen=True, slots=True)
class ThreadVerdict:
    """A thread and what puts it at risk (nothing: the new graph can resume it)."""

    thread_id: str
    checkpoint_id: str
    risks: tuple[Risk, ...] = ()
    written_structure_hash: str | None = None
    """The structure hash the checkpoint was written under (None: not stored)."""
    note: str = ""
    """What could not be checked (a checkpoint written without the stored structure)."""

    @property
    def at_risk(self) -> bool:
        return bool(self.risks)


def summarize_reasons(verdicts: Sequence[ThreadVerdict]) -> Mapping[RiskReason, int]:
    """Threads at risk per reason (a thread counts once per reason)."""
    counts: dict[RiskReason, int] = {}
    for verdict in verdicts:
        for reason in {risk.reason for risk in verdict.risks}:
            counts[reason] = counts.get(reason, 0) + 1
    return counts
