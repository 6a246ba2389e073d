"""Resume classification: which kind of resume a run's load of an existing checkpoint is
(crash, error, interrupt, fork, update or continue), from what the load found and how the run
was started. Pure functions over plain data (no OpenTelemetry, no saver).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

from langgraph.checkpoint.otel._langgraph.formats import START_NODE, scheduled_nodes

ResumeKind = Literal["crash", "error", "interrupt", "fork", "update", "continue"]
RESUME_KINDS: tuple[ResumeKind, ...] = ("crash", "error", "interrupt", "fork", "update", "continue")

ALL_NODES = "*"
"""LangGraph's input task and channel: present in a checkpoint whose input is not applied."""


@dataclass(frozen=True, slots=True)
class LoadedCheckpoint:
    """What a run's load found: the facts resume classification reads."""

    checkpoint_id: str
    source: str | None
    channel_values: Mapping[str, Any]
    pending_write_channels: Sequence[str]
    nodes: Collection[str] = ()
    """Nodes whose writes produced this checkpoint (as stored by the wrapper), when known."""


def loaded_checkpoint(stored: Any, nodes: Collection[str] = ()) -> LoadedCheckpoint:
    """The facts of a stored `CheckpointTuple` that resume classification reads; `nodes` are
    the nodes that produced it, where the wrapper stored them."""
    return LoadedCheckpoint(
        checkpoint_id=str(stored.checkpoint["id"]),
        source=(stored.metadata or {}).get("source"),
        channel_values=stored.checkpoint.get("channel_values") or {},
        pending_write_channels=[w[1] for w in stored.pending_writes or ()],
        nodes=nodes,
    )


@dataclass(frozen=True, slots=True)
class RunRequest:
    """How the run that loads the checkpoint was started."""

    explicit_checkpoint: bool = False
    """The run asked for a specific checkpoint that is not the thread's latest."""
    interrupt_before: Sequence[str] | str = ()
    interrupt_after: Sequence[str] | str = ()


@dataclass(frozen=True, slots=True)
class Resume:
    """A classified resume."""

    kind: ResumeKind
    from_checkpoint_id: str
    pending_writes: int
    tasks: tuple[str, ...] = field(default=())


def _matches(selector: Sequence[str] | str, nodes: Iterable[str]) -> bool:
    graph_nodes = set(nodes) - {START_NODE}  # the input task is never interrupted
    if selector == ALL_NODES:
        return bool(graph_nodes)
    return bool(set(selector) & graph_nodes)


def classify_resume(loaded: LoadedCheckpoint, run: RunRequest) -> Resume:
    """The kind of resume a run's load of an existing checkpoint is.

    Order of evidence: an explicit older checkpoint is a `fork`; recorded `__error__` writes an
    `error`; `__interrupt__` writes an `interrupt`; a checkpoint written by `update_state` an
    `update`; scheduled nodes the graph interrupts before (or a producing node it interrupts
    after) an `interrupt`; nodes scheduled but never run, with nothing recorded, a `crash`
    (the process died); otherwise the last run finished and this is a `continue`.
    """
    tasks = tuple(scheduled_nodes(loaded.channel_values))
    channels = set(loaded.pending_write_channels)
    kind: ResumeKind
    if run.explicit_checkpoint:
        kind = "fork"
    elif ERROR in channels:
        kind = "error"
    elif INTERRUPT in channels:
        kind = "interrupt"
    elif loaded.source == "update":
        kind = "update"
    elif tasks and (
        _matches(run.interrupt_before, tasks) or _matches(run.interrupt_after, loaded.nodes)
    ):
        kind = "interrupt"
    elif tasks:
        kind = "crash"
    else:
        kind = "continue"
    return Resume(kind, loaded.checkpoint_id, len(loaded.pending_write_channels), tasks)
