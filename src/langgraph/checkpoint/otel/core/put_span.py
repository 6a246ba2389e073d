"""A put's `PutFacts` as telemetry: the put span's attributes and events, its measurements, and
the telemetry stored with the checkpoint. One function per output; a put attribute is one line
in `put_attributes`."""

from __future__ import annotations

from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.stored_metadata import StoredTelemetry
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.core.put_facts import HistoryFacts, PutFacts
from langgraph.checkpoint.otel.core.telemetry import Operation, Telemetry

SpanEvent = tuple[str, dict[str, AttributeValue]]


def put_attributes(facts: PutFacts) -> dict[str, AttributeValue]:
    """The attributes the put span adds to those of its config."""
    attributes: dict[str, AttributeValue] = {
        names.NODES: facts.nodes,
        names.CHANNELS_CHANGED: facts.channels_changed,
        names.VERSION: facts.version,
    }
    if facts.parent_id is not None:
        attributes[names.PARENT_ID] = facts.parent_id
    if facts.step is not None:
        attributes[names.STEP] = facts.step
    if facts.source is not None:
        attributes[names.SOURCE] = facts.source
    if facts.resumed_from is not None:
        attributes[names.RESUME_FROM_CHECKPOINT_ID] = bounded_text(facts.resumed_from[1])
    if facts.schema_version is not None:
        attributes[names.SCHEMA_VERSION] = facts.schema_version
    if facts.structure is not None:
        attributes[names.GRAPH_STRUCTURE_HASH] = facts.structure.structure_hash
    if facts.policy_text is not None:
        attributes[names.DIVERGENCE_POLICY] = facts.policy_text
    state = facts.state
    if state is not None:
        attributes[names.STATE_HASH] = state.state_hash
        attributes[names.SIZE_BYTES] = state.size_bytes
        attributes[names.WRITTEN_BYTES] = state.written_bytes
        if state.largest_channel is not None:
            attributes[names.LARGEST_CHANNEL] = state.largest_channel[0]
            attributes[names.LARGEST_CHANNEL_SIZE_BYTES] = state.largest_channel[1]
        if state.lineage is not None:
            attributes[names.THREAD_CHECKPOINTS] = state.lineage[0]
            attributes[names.THREAD_WRITTEN_BYTES] = state.lineage[1]
    if facts.findings:
        attributes[names.DIVERGENCE_DETECTED] = True
    if facts.finding_kinds:
        attributes.update(names.finding_attributes(facts.finding_kinds))
    history = facts.history
    if history is not None:
        attributes[names.MESSAGES_CHANNEL] = history.channel
        attributes[names.MESSAGES_COUNT] = history.messages
        attributes[names.MESSAGES_TOKENS] = history.tokens
        attributes[names.MESSAGES_TOKEN_COUNTER] = history.token_counter
        if history.context_window is not None and history.window_share is not None:
            attributes[names.MESSAGES_CONTEXT_WINDOW] = history.context_window
            attributes[names.MESSAGES_WINDOW_SHARE] = history.window_share
    return attributes


def put_events(facts: PutFacts, max_events: int) -> list[SpanEvent]:
    """The put span's events, in order: the changed channels, the tool calls requested, the
    divergences found and a concurrent write (at most `max_events` of the first two kinds)."""
    events: list[SpanEvent] = []
    if facts.state is not None:
        for change in facts.state.channel_changes:
            events.append(
                (
                    names.EVENT_CHANNEL,
                    {
                        names.CHANNEL_NAME: change.name,
                        names.CHANNEL_HASH: change.hash,
                        names.CHANNEL_SIZE_BYTES: change.size_bytes,
                        names.CHANNEL_SUMMARY: change.summary,
                    },
                )
            )
    for call_id, call in facts.requested_tools[:max_events]:
        events.append(
            (
                names.EVENT_TOOL_CALL,
                {
                    names.TOOL_NAME: bounded_text(call.name),
                    names.TOOL_CALL_ID: bounded_text(call_id),
                    names.TOOL_IDEMPOTENCY_KEY: bounded_text(call.key),
                },
            )
        )
    shrink = facts.history.shrink if facts.history is not None else None
    if shrink is not None:
        events.append(
            (
                names.EVENT_MESSAGES_SHRUNK,
                {
                    names.MESSAGES_CHANNEL: facts.history.channel,  # type: ignore[union-attr]
                    names.MESSAGES_BEFORE_COUNT: shrink.before_messages,
                    names.MESSAGES_BEFORE_TOKENS: shrink.before_tokens,
                    names.MESSAGES_AFTER_COUNT: shrink.after_messages,
                    names.MESSAGES_AFTER_TOKENS: shrink.after_tokens,
                    names.MESSAGES_REMOVED: shrink.removed,
                    names.MESSAGES_ADDED: shrink.added,
                    names.MESSAGES_SHRINK_KIND: shrink.kind,
                },
            )
        )
    events.extend((names.EVENT_DIVERGENCE, finding_event(f)) for f in facts.findings)
    other = facts.concurrent_with
    if other is not None:
        events.append(
            (
                names.EVENT_CONCURRENT_WRITE,
                {
                    names.CONCURRENT_OTHER_CHECKPOINT_ID: other.checkpoint_id,
                    names.CONCURRENT_OTHER_TRACE_ID: other.trace_id or "",
                },
            )
        )
    return events


def finding_event(finding: Finding) -> dict[str, AttributeValue]:
    """A `langgraph.divergence` event's attributes."""
    event: dict[str, AttributeValue] = {
        names.DIVERGENCE_KIND: finding.kind,
        names.DIVERGENCE_REFERENCE_CHECKPOINT_ID: finding.reference_checkpoint_id,
    }
    if finding.step is not None:
        event[names.DIVERGENCE_STEP] = finding.step
    if finding.node is not None:
        event[names.DIVERGENCE_NODE] = finding.node
    if finding.channel is not None:
        event[names.DIVERGENCE_CHANNEL] = finding.channel
    if finding.expected is not None:
        event[names.DIVERGENCE_EXPECTED] = finding.expected
    if finding.actual is not None:
        event[names.DIVERGENCE_ACTUAL] = finding.actual
    if finding.tool is not None:
        event[names.DIVERGENCE_TOOL] = finding.tool
    if finding.arguments:
        event[names.DIVERGENCE_ARGUMENTS] = list(finding.arguments)
    if finding.graph is not None:
        event[names.DIVERGENCE_GRAPH] = finding.graph
    return event


def record_history(telemetry: Telemetry, history: HistoryFacts) -> None:
    """The history's counts (and window share) to their histograms."""
    take = telemetry.measurements.take
    instruments = telemetry.instruments
    attributes = {names.SAVER: telemetry.saver_name}
    take(instruments.messages.record, history.messages, attributes)
    take(instruments.message_tokens.record, history.tokens, attributes)
    if history.window_share is not None:
        take(instruments.window_share.record, history.window_share, attributes)


def stored_telemetry(facts: PutFacts) -> StoredTelemetry | None:
    """What is stored with the checkpoint under `names.METADATA_KEY` (None: nothing, or the
    user's own value is under that key)."""
    state = facts.state
    state_hash = state.state_hash if state is not None and facts.store_hashes else None
    lineage = state.lineage if state is not None else None
    if facts.user_claims_metadata_key or not (
        state_hash or facts.trace_context or lineage or facts.schema_version or facts.structure
    ):
        return None
    return StoredTelemetry(
        state_hash,
        state.channel_digests if state is not None and facts.store_hashes else {},
        facts.nodes,
        facts.trace_context.carrier() if facts.trace_context else {},
        facts.resumed_from,
        facts.schema_version,
        lineage,
        facts.tools if facts.store_hashes else None,
        facts.run_tools if facts.store_hashes else None,
        facts.structure,
        facts.policy,
        facts.execution,
        facts.stored_history,
    )


def report_put(op: Operation, telemetry: Telemetry, facts: PutFacts, max_events: int) -> None:
    """Give the put's facts to its span and to the metrics."""
    if op.recording:
        for name, attributes in put_events(facts, max_events):
            op.event(name, attributes)
    op.set(put_attributes(facts))
    if facts.state is not None:
        telemetry.record_sizes(facts.state.size_bytes, facts.state.channel_sizes)
    if facts.history is not None:
        record_history(telemetry, facts.history)
    for finding in facts.findings:
        telemetry.count_divergence(finding.kind)
    if facts.concurrent_with is not None:
        telemetry.count_concurrent_write(facts.graph_name)
