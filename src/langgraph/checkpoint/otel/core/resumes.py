"""What a load reports: the checkpoint loaded and, for a run's load, the resume (its kind, the
link to the put that wrote the checkpoint, a schema mismatch) and the migrations applied to
it; and what the resumed run's later calls need (the divergence watch, the tool calls in
flight, the hashes already known)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import interrupts_written
from langgraph.checkpoint.otel.analysis.carrier import TraceContext, parse_carrier
from langgraph.checkpoint.otel.analysis.graph_structure import named_changes
from langgraph.checkpoint.otel.analysis.hashing import StateHasher
from langgraph.checkpoint.otel.analysis.records import Scope
from langgraph.checkpoint.otel.analysis.resume_kinds import (
    Resume,
    RunRequest,
    classify_resume,
    loaded_checkpoint,
)
from langgraph.checkpoint.otel.analysis.stored_metadata import (
    StoredTelemetry,
    read_stored_telemetry,
)
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.analysis.tool_calls import ToolActivity, last_tool_requests
from langgraph.checkpoint.otel.core.agent_events import AgentEvents
from langgraph.checkpoint.otel.core.calls import LoadCall, NextVersion, config_attributes
from langgraph.checkpoint.otel.core.put_report import policy_attribute
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS
from langgraph.checkpoint.otel.core.runs import ActiveRuns
from langgraph.checkpoint.otel.core.scope_state import ScopeStates, SeenCheckpoint, scope_of
from langgraph.checkpoint.otel.core.telemetry import Operation, Telemetry
from langgraph.checkpoint.otel.core.watch import DivergenceWatch
from langgraph.checkpoint.otel.options import InstrumentOptions

LINK_CHECKPOINT_WRITER = "checkpoint_writer"
_CONTINUING_KINDS = frozenset({"crash", "error", "interrupt"})
"""Resumes that continue the execution of the checkpoint they load (a fork starts another)."""
_IN_FLIGHT_KINDS = frozenset({"crash", "error", "interrupt"})
"""Resumes after which a tool call requested but not answered may already have run."""


class ResumeReporter:
    """Describes the loads of one instrumented saver, and resumes above all."""

    def __init__(
        self,
        options: InstrumentOptions,
        telemetry: Telemetry,
        states: ScopeStates,
        runs: ActiveRuns,
        hasher: StateHasher,
        watch: DivergenceWatch,
        events: AgentEvents | None = None,
    ) -> None:
        self._options = options
        self._events = events
        self._telemetry = telemetry
        self._states = states
        self._runs = runs
        self._hasher = hasher
        self._watch = watch
        self._policy = policy_attribute(options.divergence.stored)

    def describe_load(self, call: LoadCall, result: Any, latest: Any) -> None:
        """Set the load span's attributes; a run's load becomes a resume span."""
        op = call.op
        if op is None or result is None:
            return
        attributes = _loaded_attributes(result)
        if not isinstance(result, CheckpointTuple):
            op.set(attributes)
            return
        stored = read_stored_telemetry(result.metadata)
        scope = scope_of(result.config)
        checkpoint_id = str(result.checkpoint.get("id", ""))
        if stored is not None and stored.lineage is not None:
            with self._states.lock:
                self._states.get(scope).lineages[checkpoint_id] = stored.lineage
        if call.run is not None and call.config is not None:
            resume = _classify(call.run, result, latest, stored)
            op.rename(names.SPAN_RESUME, "resume")
            attributes.update(_resume_attributes(resume, result))
            if self._policy is not None:
                attributes[names.DIVERGENCE_POLICY] = self._policy
            writer = parse_carrier(stored.carrier if stored else None)
            if writer is not None:
                op.link(writer, {names.LINK_TYPE: LINK_CHECKPOINT_WRITER})
                attributes[names.RESUME_WRITER_TRACE_ID] = f"{writer.trace_id:032x}"
                attributes[names.RESUME_WRITER_SPAN_ID] = f"{writer.span_id:016x}"
            if call.run_trace is not None:
                call.run_trace.set({names.RESUME_KIND: resume.kind})
            if resume.kind in _CONTINUING_KINDS and not scope[1]:
                execution = (stored.execution if stored is not None else None) or checkpoint_id
                self._runs.continue_execution(scope, bounded_text(execution))
            if self._events is not None and not scope[1]:
                self._telemetry.guard(
                    "agent event", self._report_resume, op, scope, resume, result, writer
                )
            findings = [names.FindingKinds.RESUME_CRASH] if resume.kind == "crash" else []
            call.migration = self._check_schema(op, stored, attributes, findings)
            self._check_structure(op, scope, stored, attributes, findings)
            attributes.update(names.finding_attributes(findings))
            self._note_tool_requests(scope, resume, result.checkpoint.get("channel_values") or {})
            with self._states.lock:
                state = self._states.get(scope)
                state.last_checkpoint = SeenCheckpoint.of(result.checkpoint)
                state.resumed_from = (resume.kind, resume.from_checkpoint_id)
                if scope[1]:  # a subgraph's run goes on: its tool activity so far
                    state.run_tools = _run_tools(stored)
            self._watch.start(scope, resume, result)
            if resume.kind == "fork":
                call.walk = self._watch.reference_walk(scope, result, latest)
            # a migrated checkpoint's values are not the ones its hashes describe
            hashes = stored.channels if stored is not None and not call.migration else None
            versions = result.checkpoint.get("channel_versions") or {}
            self._hasher.adopt(
                scope, result.checkpoint.get("channel_values") or {}, versions, hashes
            )
            loop = self._runs.loop_of(scope)
            if loop is not None:  # delta channels are rebuilt after the load
                loop.after_entry(
                    functools.partial(
                        self._telemetry.guard,
                        "delta channels of a resume",
                        self._loaded_delta,
                        scope,
                        resume,
                        versions,
                        hashes,
                    )
                )
            self._telemetry.count_resume(resume.kind)
        op.set(attributes)

    def _report_resume(
        self,
        op: Operation,
        scope: Scope,
        resume: Resume,
        loaded: CheckpointTuple,
        writer: TraceContext | None,
    ) -> None:
        """`gen_ai.agent.resumed`: from the one interrupt an `interrupt` resume answers, else
        from the checkpoint."""
        assert self._events is not None
        pending = interrupts_written(
            (channel, value) for _, channel, value in loaded.pending_writes or ()
        )
        pause_id = pending[0][0] if resume.kind == "interrupt" and len(pending) == 1 else None
        self._events.resumed(
            op.span,
            self._runs.execution_in(scope) or scope[0],
            self._runs.graph_name(scope),
            kind=resume.kind,
            checkpoint_id=str(loaded.checkpoint.get("id", "")),
            pause_id=pause_id,
            writer=writer,
        )

    def _check_schema(
        self,
        op: Operation,
        stored: StoredTelemetry | None,
        attributes: dict[str, AttributeValue],
        findings: list[str],
    ) -> tuple[str, str] | None:
        """Report a resume of a checkpoint written under another schema version (noted in
        `findings`); the (written, running) versions when declared migrations must be applied."""
        running = self._options.schema_version
        if running is not None:
            attributes[names.SCHEMA_VERSION] = running
        if stored is None:
            return None  # written without this library, or with telemetry off: unknown
        written = stored.schema_version or names.UNVERSIONED
        running = running or names.UNVERSIONED
        if written == running:
            return None
        op.event(
            names.EVENT_SCHEMA_MISMATCH,
            {names.SCHEMA_WRITTEN_VERSION: written, names.SCHEMA_RUNNING_VERSION: running},
        )
        self._telemetry.count_schema_mismatch(written, running)
        findings.append(names.FindingKinds.SCHEMA_MISMATCH)
        return (written, running) if self._options.migrations is not None else None

    def _check_structure(
        self,
        op: Operation,
        scope: Scope,
        stored: StoredTelemetry | None,
        attributes: dict[str, AttributeValue],
        findings: list[str],
    ) -> None:
        """Report a resume of a checkpoint written under another graph structure, naming the
        nodes and channels the running graph adds, removes and changes (noted in `findings`)."""
        running = self._runs.structure_of(scope)
        if running is None:
            return
        attributes[names.GRAPH_STRUCTURE_HASH] = running.structure_hash
        written = stored.graph if stored is not None else None
        if written is None or written.structure_hash == running.structure_hash:
            return  # unknown (written without this library or before it stored it), or same
        change = named_changes(written, running)
        op.event(
            names.EVENT_GRAPH_CHANGED,
            {
                names.GRAPH_WRITTEN_STRUCTURE_HASH: written.structure_hash,
                names.GRAPH_STRUCTURE_HASH: running.structure_hash,
                names.GRAPH_NODES_ADDED: [bounded_text(n) for n in change.nodes_added],
                names.GRAPH_NODES_REMOVED: [bounded_text(n) for n in change.nodes_removed],
                names.GRAPH_CHANNELS_ADDED: [bounded_text(c) for c in change.channels_added],
                names.GRAPH_CHANNELS_REMOVED: [bounded_text(c) for c in change.channels_removed],
                names.GRAPH_CHANNELS_CHANGED: [bounded_text(c) for c in change.channels_changed],
            },
        )
        self._telemetry.count_graph_change(self._runs.graph_name(scope))
        findings.append(names.FindingKinds.GRAPH_CHANGED)

    def apply_migrations(
        self, call: LoadCall, loaded: CheckpointTuple, next_version: NextVersion
    ) -> CheckpointTuple:
        """The loaded checkpoint with the declared migrations applied, one span each.

        The channels a migration changed get a new version (above every version in the
        checkpoint), and the run's first put stores them as written, so the migrated values
        persist instead of the stored ones. Raises `SchemaMigrationError`.
        """
        assert call.migration is not None and self._options.migrations is not None
        written, running = call.migration
        path = self._options.migrations.path(written, running)
        checkpoint = loaded.checkpoint
        values: dict[str, Any] = dict(checkpoint.get("channel_values") or {})
        attributes = config_attributes(loaded.config)
        for step in path:
            span_attributes = {
                **attributes,
                names.MIGRATION_FROM: step.source,
                names.MIGRATION_TO: step.target,
            }
            with self._telemetry.operation(
                names.SPAN_MIGRATE, "migrate", span_attributes, run=call.run_trace
            ):
                values = step.apply(values)
        original = checkpoint.get("channel_values") or {}
        changed = sorted(c for c in values if c not in original or _differs(values[c], original[c]))
        dropped = set(original) - set(values)
        versions: dict[str, Any] = {
            c: v for c, v in (checkpoint.get("channel_versions") or {}).items() if c not in dropped
        }
        if changed:
            bumped = next_version(max(versions.values(), default=None), None)
            versions.update(dict.fromkeys(changed, bumped))
        scope = scope_of(loaded.config)
        self._hasher.forget(lambda key: key == scope)
        with self._states.lock:
            self._states.get(scope).migrated = {c: versions[c] for c in changed}
        migrated: Checkpoint = {
            **checkpoint,
            "channel_values": values,
            "channel_versions": versions,
        }
        return CheckpointTuple(
            loaded.config, migrated, loaded.metadata, loaded.parent_config, loaded.pending_writes
        )

    def _loaded_delta(
        self,
        scope: Scope,
        resume: Resume,
        versions: Mapping[str, Any],
        hashes: Mapping[str, tuple[str, int]] | None,
        values: Mapping[str, Any],
    ) -> None:
        """The loop rebuilt the loaded checkpoint's delta channels to `values`: continue the
        hashing from them, and read the tool calls in flight from them (see `describe_load`)."""
        self._hasher.adopt(scope, values, versions, hashes)
        if self._options.messages_channel in values:
            self._note_tool_requests(scope, resume, values)
            self._watch.loaded_values(scope, values)

    def _note_tool_requests(self, scope: Scope, resume: Resume, values: Mapping[str, Any]) -> None:
        """Note the last tool calls the loaded state requests (for the resumed run's tool
        spans) and, after a crash, error or interrupt, those never answered: in flight when
        the last run stopped (their side effects may have run). After a `continue` nothing
        is scheduled: no tool runs from the loaded state."""
        subgraph = bool(scope[1])
        if resume.kind == "continue":
            TOOL_CALLS.note_in_flight(scope[0], (), add=subgraph)
            return
        messages = values.get(self._options.messages_channel)
        if not isinstance(messages, list):
            return
        calls, answered = last_tool_requests(messages)
        TOOL_CALLS.note(calls)
        in_flight = (
            [bounded_text(call.key) for call_id, call in calls if call_id not in answered]
            if resume.kind in _IN_FLIGHT_KINDS
            else []
        )
        TOOL_CALLS.note_in_flight(scope[0], in_flight, add=subgraph)


def _classify(
    run: RunRequest, loaded: CheckpointTuple, latest: Any, stored: StoredTelemetry | None
) -> Resume:
    explicit = run.explicit_checkpoint and (
        isinstance(latest, CheckpointTuple) and latest.checkpoint["id"] != loaded.checkpoint["id"]
    )
    facts = loaded_checkpoint(loaded, stored.nodes if stored else ())
    return classify_resume(facts, RunRequest(explicit, run.interrupt_before, run.interrupt_after))


def _run_tools(stored: StoredTelemetry | None) -> ToolActivity | None:
    """What a subgraph's run had requested and answered up to the loaded checkpoint (None:
    unknown, it was not written by this library with hashes)."""
    if stored is None or stored.state_hash is None:
        return None
    return stored.run_tools or ToolActivity()


def _differs(new: Any, old: Any) -> bool:
    """Whether a migrated channel value differs from the loaded one (unsure: it does)."""
    if new is old:
        return False
    try:
        return bool(new != old)
    except Exception:
        return True


def _loaded_attributes(result: Any) -> dict[str, AttributeValue]:
    checkpoint = getattr(result, "checkpoint", result)
    attributes: dict[str, AttributeValue] = {
        **config_attributes(getattr(result, "config", None)),
        names.CHECKPOINT_ID: bounded_text(checkpoint.get("id", "")),
    }
    metadata = getattr(result, "metadata", None) or {}
    if isinstance(metadata.get("step"), int):
        attributes[names.STEP] = metadata["step"]
    if metadata.get("source") is not None:
        attributes[names.SOURCE] = str(metadata["source"])
    return attributes


def _resume_attributes(resume: Resume, loaded: CheckpointTuple) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        names.RESUME_KIND: resume.kind,
        names.RESUME_FROM_CHECKPOINT_ID: bounded_text(resume.from_checkpoint_id),
        names.RESUME_PENDING_WRITES: resume.pending_writes,
        names.RESUME_TASKS: list(resume.tasks),
    }
    age = _age_seconds(loaded.checkpoint.get("ts"))
    if age is not None:
        attributes[names.RESUME_CHECKPOINT_AGE_S] = age
    return attributes


def _age_seconds(timestamp: Any) -> float | None:
    if not isinstance(timestamp, str):
        return None
    try:
        written = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if written.tzinfo is None:
        written = written.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - written).total_seconds())
