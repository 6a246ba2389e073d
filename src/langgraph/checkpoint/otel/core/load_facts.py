"""What a load is, as one plain fact object: the checkpoint loaded and, for a run's load, the
resume (its kind, the put that wrote the checkpoint, a schema or graph change since).

`LoadWitness` gathers a load's `LoadFacts` and hands over to the resumed run what its later
calls need (the scope's note for its first put, the divergence watch, the tool calls in flight,
the hashes already known); `load_span` turns the facts into the span's attributes and events.
Nothing here talks to OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import interrupts_written
from langgraph.checkpoint.otel.analysis.carrier import TraceContext, parse_carrier
from langgraph.checkpoint.otel.analysis.graph_structure import StructureChange, named_changes
from langgraph.checkpoint.otel.analysis.message_history import loaded_memo
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
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS
from langgraph.checkpoint.otel.core.scope_state import LoadNote, scope_of
from langgraph.checkpoint.otel.core.watch import ReferenceWalk
from langgraph.checkpoint.otel.core.witness import Witness

_CONTINUING_KINDS = frozenset({"crash", "error", "interrupt"})
"""Resumes that continue the execution of the checkpoint they load (a fork starts another)."""
_IN_FLIGHT_KINDS = frozenset({"crash", "error", "interrupt"})
"""Resumes after which a tool call requested but not answered may already have run."""


@dataclass(slots=True)
class GraphChange:
    """The loaded checkpoint was written under another graph structure."""

    written_hash: str
    change: StructureChange


@dataclass(slots=True)
class ResumeFacts:
    """What a run's load of a stored checkpoint resumes, and what differs since it was written."""

    resume: Resume
    subgraph: bool
    """The load is a subgraph's (its agent event and execution are the root graph's)."""
    age_s: float | None
    """Seconds since the checkpoint was written (None: its timestamp is unreadable)."""
    policy_text: str | None
    writer: TraceContext | None
    """The trace context of the put that wrote the checkpoint, where stored."""
    schema_version: str | None
    """The running schema version, where declared."""
    schema_mismatch: tuple[str, str] | None
    """(written, running) schema versions where they differ."""
    migration: tuple[str, str] | None
    """(written, running) where declared migrations must be applied."""
    structure_hash: str | None
    """The running graph's structure hash, where known."""
    graph_change: GraphChange | None
    graph_name: str | None
    """The running graph's name (gathered for an agent event or a graph change)."""
    execution_id: str
    """The execution the resumed run is part of (the thread where unknown, or where no agent
    event is emitted)."""
    pause_id: str | None
    """The one interrupt an `interrupt` resume answers, where it answers exactly one (gathered
    for an agent event)."""
    finding_kinds: tuple[str, ...]


@dataclass(slots=True)
class LoadFacts:
    """What a load returned: the checkpoint and, for a run's load, the resume."""

    config: RunnableConfig | None
    checkpoint_id: str
    """As stored (attributes bound its length)."""
    step: int | None
    source: str | None
    resume: ResumeFacts | None = None


def loaded_facts(result: Any) -> LoadFacts:
    """The facts of any load's result (a `CheckpointTuple`, or a checkpoint)."""
    checkpoint = getattr(result, "checkpoint", result)
    metadata = getattr(result, "metadata", None) or {}
    step = metadata.get("step")
    source = metadata.get("source")
    return LoadFacts(
        getattr(result, "config", None),
        str(checkpoint.get("id", "")),
        step if isinstance(step, int) else None,
        None if source is None else str(source),
    )


class LoadWitness(Witness):
    """Gathers the `LoadFacts` of the loads of one instrumented saver, and hands a resume over
    to the run it starts."""

    def gather(
        self,
        result: CheckpointTuple,
        run: RunRequest | None,
        latest: Any,
        *,
        agent_event: bool = False,
    ) -> tuple[LoadFacts, ReferenceWalk | None]:
        """The facts of a load of `result` (a run's load, started as `run`, resumes it), and
        after a fork the walk to the reference branch. `agent_event`: the resume's agent event
        is emitted (its execution, graph and pause are gathered)."""
        facts = loaded_facts(result)
        stored = read_stored_telemetry(result.metadata)
        scope = scope_of(result.config)
        checkpoint_id = str(result.checkpoint.get("id", ""))
        if stored is not None and stored.lineage is not None:
            self._states.note_lineage(scope, checkpoint_id, stored.lineage)
        if run is None:
            return facts, None
        resume = _classify(run, result, latest, stored)
        if resume.kind in _CONTINUING_KINDS and not scope[1]:
            execution = (stored.execution if stored is not None else None) or checkpoint_id
            self._runs.continue_execution(scope, bounded_text(execution))
        schema_mismatch = self._schema_mismatch(stored)
        structure = self._runs.structure_of(scope)
        written = stored.graph if stored is not None else None
        change = (
            None
            if structure is None
            or written is None
            or written.structure_hash == structure.structure_hash
            else GraphChange(written.structure_hash, named_changes(written, structure))
        )
        kinds = [names.FindingKinds.RESUME_CRASH] if resume.kind == "crash" else []
        if schema_mismatch is not None:
            kinds.append(names.FindingKinds.SCHEMA_MISMATCH)
        if change is not None:
            kinds.append(names.FindingKinds.GRAPH_CHANGED)
        migration = schema_mismatch if self._options.migrations is not None else None
        walk = self._hand_over(scope, resume, result, stored, migration, latest)
        pause_id = None
        if agent_event and resume.kind == "interrupt":
            pending = interrupts_written(
                (channel, value) for _, channel, value in result.pending_writes or ()
            )
            pause_id = pending[0][0] if len(pending) == 1 else None
        resume_facts = ResumeFacts(
            resume=resume,
            subgraph=bool(scope[1]),
            age_s=_age_seconds(result.checkpoint.get("ts")),
            policy_text=self._policy_text,
            writer=parse_carrier(stored.carrier if stored else None),
            schema_version=self._options.schema_version,
            schema_mismatch=schema_mismatch,
            migration=migration,
            structure_hash=structure.structure_hash if structure is not None else None,
            graph_change=change,
            graph_name=self._runs.graph_name(scope) if agent_event or change else None,
            execution_id=(self._runs.execution_in(scope) or scope[0]) if agent_event else scope[0],
            pause_id=pause_id,
            finding_kinds=tuple(kinds),
        )
        facts.resume = resume_facts
        return facts, walk

    def _hand_over(
        self,
        scope: Scope,
        resume: Resume,
        result: CheckpointTuple,
        stored: StoredTelemetry | None,
        migration: tuple[str, str] | None,
        latest: Any,
    ) -> ReferenceWalk | None:
        """Hand a resume over to the run it starts: the tool calls in flight, the note for its
        first put, the divergence watch, the hashes already known (and those of its delta
        channels once the loop has rebuilt them); after a fork, the walk to the reference
        branch."""
        values = result.checkpoint.get("channel_values") or {}
        self._note_tool_requests(scope, resume, values)
        self._states.loaded(
            scope,
            result.checkpoint,
            LoadNote(resume.kind, resume.from_checkpoint_id),
            _run_tools(stored),
        )
        if stored is not None and stored.history is not None and not migration:
            memo = loaded_memo(str(result.checkpoint.get("id", "")), values, stored.history)
            if memo is not None:  # the run's first put counts only what it adds
                self._states.note_history(scope, memo)
        self._watch.start(scope, resume, result)
        walk = self._watch.reference_walk(scope, result, latest) if resume.kind == "fork" else None
        # a migrated checkpoint's values are not the ones its hashes describe
        hashes = stored.channels if stored is not None and not migration else None
        versions = result.checkpoint.get("channel_versions") or {}
        self._hasher.adopt(scope, values, versions, hashes)
        loop = self._runs.loop_of(scope)
        if loop is not None:  # delta channels are rebuilt after the load

            def rebuilt(rebuilt_values: Mapping[str, Any]) -> None:
                self._guard(
                    "delta channels of a resume",
                    self._loaded_delta,
                    scope,
                    resume,
                    versions,
                    hashes,
                    rebuilt_values,
                )

            loop.after_entry(rebuilt)
        return walk

    def _schema_mismatch(self, stored: StoredTelemetry | None) -> tuple[str, str] | None:
        """(written, running) where the checkpoint was written under another schema version
        (None also where that is unknown: written without this library, or telemetry off)."""
        if stored is None:
            return None
        written = stored.schema_version or names.UNVERSIONED
        running = self._options.schema_version or names.UNVERSIONED
        return None if written == running else (written, running)

    def _loaded_delta(
        self,
        scope: Scope,
        resume: Resume,
        versions: Mapping[str, Any],
        hashes: Mapping[str, tuple[str, int]] | None,
        values: Mapping[str, Any],
    ) -> None:
        """The loop rebuilt the loaded checkpoint's delta channels to `values`: continue the
        hashing from them, and read the tool calls in flight from them (see `gather`)."""
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
