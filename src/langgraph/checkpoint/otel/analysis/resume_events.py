"""The resume log: every resume of a thread as its exported spans tell it (when, which kind,
from which checkpoint, the first node that ran and the first checkpoint written after it).
Pure functions over plain data (no OpenTelemetry SDK, no saver).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import INPUT_NODE, START_NODE
from langgraph.checkpoint.otel.analysis.records import UNKNOWN_NODE
from langgraph.checkpoint.otel.analysis.span_records import SpanFact
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text


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
