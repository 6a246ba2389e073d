"""A load's `LoadFacts` as telemetry: the load (or resume) span's attributes, link and events,
and its measurements. A load attribute is one line in `load_attributes`."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.core.agent_events import AgentEvents
from langgraph.checkpoint.otel.core.calls import config_attributes
from langgraph.checkpoint.otel.core.load_facts import LoadFacts, ResumeFacts
from langgraph.checkpoint.otel.core.telemetry import Operation, RunTrace, Telemetry

LINK_CHECKPOINT_WRITER = "checkpoint_writer"
SpanEvent = tuple[str, dict[str, AttributeValue]]


def load_attributes(facts: LoadFacts) -> dict[str, AttributeValue]:
    """The load span's attributes; a resume's included."""
    attributes: dict[str, AttributeValue] = {
        **config_attributes(facts.config),
        names.CHECKPOINT_ID: bounded_text(facts.checkpoint_id),
    }
    if facts.step is not None:
        attributes[names.STEP] = facts.step
    if facts.source is not None:
        attributes[names.SOURCE] = facts.source
    resume = facts.resume
    if resume is None:
        return attributes
    attributes[names.RESUME_KIND] = resume.resume.kind
    attributes[names.RESUME_FROM_CHECKPOINT_ID] = bounded_text(resume.resume.from_checkpoint_id)
    attributes[names.RESUME_PENDING_WRITES] = resume.resume.pending_writes
    attributes[names.RESUME_TASKS] = list(resume.resume.tasks)
    if resume.age_s is not None:
        attributes[names.RESUME_CHECKPOINT_AGE_S] = resume.age_s
    if resume.policy_text is not None:
        attributes[names.DIVERGENCE_POLICY] = resume.policy_text
    if resume.writer is not None:
        attributes[names.RESUME_WRITER_TRACE_ID] = f"{resume.writer.trace_id:032x}"
        attributes[names.RESUME_WRITER_SPAN_ID] = f"{resume.writer.span_id:016x}"
    if resume.schema_version is not None:
        attributes[names.SCHEMA_VERSION] = resume.schema_version
    if resume.structure_hash is not None:
        attributes[names.GRAPH_STRUCTURE_HASH] = resume.structure_hash
    attributes.update(names.finding_attributes(list(resume.finding_kinds)))
    return attributes


def resume_events(resume: ResumeFacts) -> list[SpanEvent]:
    """The resume span's events (after the agent event): a schema change, a graph change."""
    events: list[SpanEvent] = []
    if resume.schema_mismatch is not None:
        written, running = resume.schema_mismatch
        events.append(
            (
                names.EVENT_SCHEMA_MISMATCH,
                {names.SCHEMA_WRITTEN_VERSION: written, names.SCHEMA_RUNNING_VERSION: running},
            )
        )
    if resume.graph_change is not None and resume.structure_hash is not None:
        change = resume.graph_change.change
        events.append(
            (
                names.EVENT_GRAPH_CHANGED,
                {
                    names.GRAPH_WRITTEN_STRUCTURE_HASH: resume.graph_change.written_hash,
                    names.GRAPH_STRUCTURE_HASH: resume.structure_hash,
                    names.GRAPH_NODES_ADDED: [bounded_text(n) for n in change.nodes_added],
                    names.GRAPH_NODES_REMOVED: [bounded_text(n) for n in change.nodes_removed],
                    names.GRAPH_CHANNELS_ADDED: [bounded_text(c) for c in change.channels_added],
                    names.GRAPH_CHANNELS_REMOVED: [
                        bounded_text(c) for c in change.channels_removed
                    ],
                    names.GRAPH_CHANNELS_CHANGED: [
                        bounded_text(c) for c in change.channels_changed
                    ],
                },
            )
        )
    return events


def report_load(
    op: Operation,
    telemetry: Telemetry,
    facts: LoadFacts,
    run_trace: RunTrace | None,
    agent_events: AgentEvents | None,
) -> None:
    """Give a load's facts to its span (a run's load becomes a resume span) and metrics."""
    resume = facts.resume
    if resume is not None:
        op.rename(names.SPAN_RESUME, "resume")
        if resume.writer is not None:
            op.link(resume.writer, {names.LINK_TYPE: LINK_CHECKPOINT_WRITER})
        if run_trace is not None:
            run_trace.set({names.RESUME_KIND: resume.resume.kind})
        if agent_events is not None and not resume.subgraph:
            telemetry.guard("agent event", _report_resumed, op, agent_events, facts, resume)
        for name, attributes in resume_events(resume):
            op.event(name, attributes)
        if resume.schema_mismatch is not None:
            telemetry.count_schema_mismatch(*resume.schema_mismatch)
        if resume.graph_change is not None:
            telemetry.count_graph_change(resume.graph_name)
        telemetry.count_resume(resume.resume.kind)
    op.set(load_attributes(facts))


def _report_resumed(
    op: Operation, agent_events: AgentEvents, facts: LoadFacts, resume: ResumeFacts
) -> None:
    """`gen_ai.agent.resumed`: from the one interrupt an `interrupt` resume answers, else from
    the checkpoint."""
    agent_events.resumed(
        op.span,
        resume.execution_id,
        resume.graph_name,
        kind=resume.resume.kind,
        checkpoint_id=facts.checkpoint_id,
        pause_id=resume.pause_id,
        writer=resume.writer,
    )
