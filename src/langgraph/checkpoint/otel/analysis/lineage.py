"""Resume lineage: which kind of resume a run's load is, and the trace context carried in a
checkpoint's metadata. Pure functions over plain data (no OpenTelemetry, no saver).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import INPUT_NODE, START_NODE, scheduled_nodes
from langgraph.checkpoint.otel.analysis.records import UNKNOWN_NODE, SpanFact, bounded_text

ResumeKind = Literal["crash", "error", "interrupt", "fork", "update", "continue"]
RESUME_KINDS: tuple[ResumeKind, ...] = ("crash", "error", "interrupt", "fork", "update", "continue")

ALL_NODES = "*"
"""LangGraph's input task and channel: present in a checkpoint whose input is not applied."""

# --- resume classification --------------------------------------------------------------------


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
class RunStart:
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


def classify_resume(loaded: LoadedCheckpoint, run: RunStart) -> Resume:
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


# --- resume event log -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResumeEvent:
    """One resume of a thread, as the exported spans tell it."""

    thread_id: str
    checkpoint_ns: str
    at_ns: int
    kind: str
    from_checkpoint_id: str
    first_node: str | None
    """The first node that ran after the resume (from the next pending-writes span)."""
    first_checkpoint_id: str | None = None
    """The first checkpoint the resumed run wrote: the next put of the thread and namespace
    marked as resumed from the same checkpoint (several runs can resume from one checkpoint:
    a crash resume, then a fork from it)."""


def resume_log(spans: Iterable[SpanFact], thread_id: str | None = None) -> list[ResumeEvent]:
    """Every resume in `spans` (of one thread, if given), in time order.

    Reads only span names and attributes (a `thread_id` is matched as the spans carry it,
    bounded): `langgraph.checkpoint.resume` spans give when, which
    kind and from which checkpoint; the first `langgraph.checkpoint.put_writes` of the same
    thread and namespace after it names the first node that ran, and the first
    `langgraph.checkpoint.put` after it marked as resumed from that checkpoint (before the
    namespace's next resume) is the first checkpoint the resumed run wrote.
    """
    ordered = sorted(spans, key=lambda s: s.start_ns)
    events: list[ResumeEvent] = []
    for index, span in enumerate(ordered):
        attrs = span.attributes
        if span.name != names.SPAN_RESUME:
            continue
        thread = str(attrs.get(names.THREAD_ID, ""))
        if thread_id is not None and thread != bounded_text(thread_id):
            continue
        ns = str(attrs.get(names.CHECKPOINT_NS, ""))
        origin = str(attrs.get(names.RESUME_FROM_CHECKPOINT_ID, ""))
        later = ordered[index + 1 :]
        events.append(
            ResumeEvent(
                thread_id=thread,
                checkpoint_ns=ns,
                at_ns=span.start_ns,
                kind=str(attrs.get(names.RESUME_KIND, "")),
                from_checkpoint_id=origin,
                first_node=_first_node_after(later, thread, ns),
                first_checkpoint_id=_first_checkpoint_after(later, thread, ns, origin),
            )
        )
    return events


def _same_scope(span: SpanFact, thread: str, ns: str) -> bool:
    attrs = span.attributes
    return str(attrs.get(names.THREAD_ID, "")) == thread and (
        str(attrs.get(names.CHECKPOINT_NS, "")) == ns
    )


def _first_checkpoint_after(
    spans: Sequence[SpanFact], thread: str, ns: str, origin: str
) -> str | None:
    for span in spans:
        if not _same_scope(span, thread, ns):
            continue
        if span.name == names.SPAN_RESUME:
            return None  # the next run of this namespace began first
        attrs = span.attributes
        if (
            span.name == names.SPAN_PUT
            and str(attrs.get(names.RESUME_FROM_CHECKPOINT_ID, "")) == origin
        ):
            checkpoint = attrs.get(names.CHECKPOINT_ID)
            return None if checkpoint is None else str(checkpoint)
    return None


_NOT_NODES = frozenset({INPUT_NODE, UNKNOWN_NODE, START_NODE, ""})


def _first_node_after(spans: Sequence[SpanFact], thread: str, ns: str) -> str | None:
    for span in spans:
        attrs = span.attributes
        if str(attrs.get(names.THREAD_ID, "")) != thread:
            continue
        if str(attrs.get(names.CHECKPOINT_NS, "")) != ns:
            continue
        if span.name == names.SPAN_RESUME:
            return None  # the next resume came before any node ran
        if span.name == names.SPAN_PUT_WRITES:
            node = str(attrs.get(names.TASK_NODE, ""))
            if node not in _NOT_NODES:
                return node
        elif span.name == names.SPAN_PUT:
            # a task that finished has no put_writes span by default: the put applying its
            # writes names it
            for node in attrs.get(names.NODES, ()) or ():
                if str(node) not in _NOT_NODES:
                    return str(node)
    return None
