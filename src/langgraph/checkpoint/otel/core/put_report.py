"""What a checkpoint write reports: the put's nodes, hashes, sizes, growth, channel and tool-call
events, divergence findings and the telemetry stored with it; and which node a pending-writes
call's task ran."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import DELTA_COUNTERS_KEY, node_of_task
from langgraph.checkpoint.otel._langgraph.loop import (
    delta_snapshot_value,
    delta_values,
    update_node,
)
from langgraph.checkpoint.otel.analysis.carrier import TraceContext
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.hashing import StateDigest, StateHasher
from langgraph.checkpoint.otel.analysis.records import (
    PSEUDO_NODES,
    UNKNOWN_NODE,
    CheckpointRecord,
    Scope,
    is_state_channel,
    stored_nodes,
    task_outcome,
)
from langgraph.checkpoint.otel.analysis.stored_metadata import StoredTelemetry
from langgraph.checkpoint.otel.analysis.summary import summarize
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.analysis.tool_calls import (
    ToolActivity,
    ToolCall,
    added_tool_activity,
)
from langgraph.checkpoint.otel.core.calls import PutCall
from langgraph.checkpoint.otel.core.concurrent_writes import ConcurrentWrites
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS
from langgraph.checkpoint.otel.core.runs import ActiveRun, ActiveRuns
from langgraph.checkpoint.otel.core.scope_state import Lineage, ScopeStates, SeenCheckpoint
from langgraph.checkpoint.otel.core.telemetry import Operation, Telemetry
from langgraph.checkpoint.otel.core.watch import DivergenceWatch
from langgraph.checkpoint.otel.options import InstrumentOptions


def policy_attribute(stored: Mapping[str, Any]) -> str | None:
    """The `langgraph.divergence.policy` attribute of a stored policy (None: the default)."""
    return json.dumps(stored, sort_keys=True, separators=(",", ":")) if stored else None


class PutReporter:
    """Describes the puts and pending writes of one instrumented saver."""

    def __init__(
        self,
        options: InstrumentOptions,
        telemetry: Telemetry,
        states: ScopeStates,
        runs: ActiveRuns,
        hasher: StateHasher,
        watch: DivergenceWatch,
    ) -> None:
        self._options = options
        self._telemetry = telemetry
        self._states = states
        self._runs = runs
        self._hasher = hasher
        self._watch = watch
        self._concurrent = ConcurrentWrites()
        self._policy = options.divergence.stored
        self._policy_text = policy_attribute(self._policy)

    # --- puts -------------------------------------------------------------------------------

    def store_migrated(self, call: PutCall, scope: Scope, checkpoint: Checkpoint) -> None:
        """The first put after a migration also stores the channels it changed (at the new
        versions the loaded checkpoint was given, unless the run changed them since)."""
        with self._states.lock:
            state = self._states.peek(scope)
            if state is None or not state.migrated:
                return
            migrated, state.migrated = state.migrated, {}
        versions = checkpoint.get("channel_versions") or {}
        extra = {c: v for c, v in migrated.items() if versions.get(c) == v}
        call.new_versions = {**extra, **call.new_versions}

    def describe_put(
        self,
        op: Operation,
        call: PutCall,
        scope: Scope,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        writer: ActiveRun | None,
    ) -> None:
        """Set the put span's attributes and events; `call.metadata` gets the stored
        telemetry, `call.findings` the divergences found. `writer`: the run writing it."""
        parent_id = (config.get("configurable") or {}).get("checkpoint_id")
        metadata = call.metadata
        values, delta = _logical_values(checkpoint, metadata)
        nodes, resumed_from = self._nodes_applied(
            scope, parent_id, checkpoint, metadata.get("source"), writer
        )
        attributes: dict[str, AttributeValue] = {
            names.NODES: nodes,
            names.CHANNELS_CHANGED: sorted(c for c in new_versions if is_state_channel(c)),
            names.VERSION: int(checkpoint.get("v", 0)),
        }
        if parent_id is not None:
            attributes[names.PARENT_ID] = bounded_text(parent_id)
        if isinstance(metadata.get("step"), int):
            attributes[names.STEP] = metadata["step"]
        if metadata.get("source") is not None:
            attributes[names.SOURCE] = str(metadata["source"])
        if resumed_from is not None:
            attributes[names.RESUME_FROM_CHECKPOINT_ID] = bounded_text(resumed_from[1])
        schema_version = self._options.schema_version
        if schema_version is not None:
            attributes[names.SCHEMA_VERSION] = schema_version
        structure = self._runs.structure_of(scope)
        if structure is not None:
            attributes[names.GRAPH_STRUCTURE_HASH] = structure.structure_hash
        if self._policy_text is not None:
            attributes[names.DIVERGENCE_POLICY] = self._policy_text

        digest: StateDigest | None = None
        if (
            op.recording
            or self._telemetry.metrics_recording()
            or self._options.on_divergence is not None  # a strict mode needs the detectors
        ):
            # the hasher has its own lock: other threads' calls do not wait for this hashing
            digest = self._telemetry.guard(
                "hash state",
                self._hasher.digest_state,
                scope,
                values,
                checkpoint.get("channel_versions") or {},
                [c for c in new_versions if c in values],
                delta,
            )
        state_hash: str | None = None
        channel_digests: dict[str, tuple[str, int]] = {}
        lineage: Lineage | None = None
        tools: ToolActivity | None = None
        run_tools: ToolActivity | None = None
        own: ToolActivity | None = None
        if digest is not None:
            sizes = _written_sizes(digest, delta)
            written = sum(sizes.values())
            attributes[names.STATE_HASH] = digest.state_hash
            attributes[names.SIZE_BYTES] = digest.size_bytes
            attributes[names.WRITTEN_BYTES] = written
            lineage = self._grow(scope, checkpoint, parent_id, digest, written, attributes)
            if lineage is not None:
                self._runs.note_lineage(writer, lineage)
            state_changes = [c for c in digest.changed if is_state_channel(c)]
            self._channel_events(op, digest, sizes, state_changes, values)
            added = self._added_tool_activity(scope, digest, values, not parent_id)
            if op.recording and added is not None:
                self._tool_call_events(op, added[0])
            self._telemetry.record_sizes(digest.size_bytes, [(c, sizes[c]) for c in state_changes])
            own = None if added is None else added[1]
            tools, run_tools = self._step_tools(scope, parent_id, metadata, own)
            if self._options.store_hashes:
                state_hash = digest.state_hash
                channel_digests = {name: (d.hash, d.size) for name, d in digest.channels.items()}
        call.findings = self._watch.observe_put(
            scope,
            config,
            checkpoint,
            metadata,
            nodes=nodes,
            channel_hashes=(
                {name: d.hash for name, d in digest.channels.items()} if digest else None
            ),
            state_hash=digest.state_hash if digest else None,
            tools=tools,
            own_tools=own,
            values=values,
        )
        kinds = [names.FindingKinds.divergence(f.kind) for f in call.findings]
        if call.findings:
            attributes[names.DIVERGENCE_DETECTED] = True
            self._report_findings(op, call.findings)
        context = op.trace_context()
        if (
            context is not None
            and parent_id
            and "concurrent_write" in self._watch.policy.detectors
            and self._check_concurrent(
                op, scope, checkpoint, metadata, str(parent_id), resumed_from, context
            )
        ):
            kinds.append(names.FindingKinds.CONCURRENT_WRITE)
        attributes.update(names.finding_attributes(kinds))
        op.set(attributes)
        execution = (
            self._runs.execution_of(writer, bounded_text(checkpoint.get("id", "")))
            if writer is not None and not scope[1]
            else None
        )
        if (
            state_hash or context or lineage or schema_version or structure
        ) and not _user_claims_metadata_key(config, metadata):
            stored = StoredTelemetry(
                state_hash,
                channel_digests,
                tuple(nodes),
                context.carrier() if context else {},
                resumed_from,
                schema_version,
                lineage,
                tools if self._options.store_hashes else None,
                run_tools if self._options.store_hashes else None,
                structure,
                self._policy,
                execution,
            )
            call.metadata = {**metadata, names.METADATA_KEY: stored.to_metadata()}  # type: ignore[typeddict-unknown-key]

    def _check_concurrent(
        self,
        op: Operation,
        scope: Scope,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        parent_id: str,
        resumed_from: tuple[str, str] | None,
        context: TraceContext,
    ) -> bool:
        """`langgraph.concurrent_write` when another run of this process already wrote a child
        of this checkpoint's parent at once (see `core.concurrent_writes`); whether it did."""
        step = metadata.get("step")
        record = CheckpointRecord(
            checkpoint_id=bounded_text(checkpoint.get("id", "")),
            parent_id=bounded_text(parent_id),
            step=step if isinstance(step, int) else None,
            source=metadata.get("source"),
            resume_kind=resumed_from[0] if resumed_from else None,
            trace_id=f"{context.trace_id:032x}",
        )
        other = self._concurrent.note((bounded_text(scope[0]), bounded_text(scope[1])), record)
        if other is None:
            return False
        op.event(
            names.EVENT_CONCURRENT_WRITE,
            {
                names.CONCURRENT_OTHER_CHECKPOINT_ID: other.checkpoint_id,
                names.CONCURRENT_OTHER_TRACE_ID: other.trace_id or "",
            },
        )
        self._telemetry.count_concurrent_write(self._runs.graph_name(scope))
        return True

    def _added_tool_activity(
        self, scope: Scope, digest: StateDigest, values: Mapping[str, Any], first: bool
    ) -> tuple[list[tuple[str, ToolCall]], ToolActivity] | None:
        """The tool calls the messages this put added request, by call id, and the activity
        (requested and answered) they make; None when the added messages are unknown. The
        scope's requests so far answer its tool messages without hashing their arguments
        again."""
        channel = self._options.messages_channel
        if channel not in digest.changed:
            return [], ToolActivity()
        added = _added_messages(digest, channel, values, first)
        if added is None:
            return None
        with self._states.lock:
            known = self._states.get(scope).tool_requests
        requested, answered = added_tool_activity(*added, known=known)
        with self._states.lock:
            known.update((call_id, call) for call_id, call in requested if call_id)
        return requested, ToolActivity(tuple(call for _, call in requested), answered)

    def _step_tools(
        self,
        scope: Scope,
        parent_id: str | None,
        metadata: Mapping[str, Any],
        own: ToolActivity | None,
    ) -> tuple[ToolActivity | None, ToolActivity | None]:
        """The tool calls this checkpoint's step requested and answered, its subgraphs'
        included (None when the messages it added, `own`, are unknown); and, for a subgraph's
        checkpoint, those of the subgraph's run so far.

        A subgraph's put notes its run's activity with the root checkpoint it runs from
        (LangGraph's `parents` metadata), for the root put that applies the step to add: a
        subgraph that a fork runs again, under a new namespace, is compared as part of that
        step."""
        thread_id, namespace = scope
        with self._states.lock:
            state = self._states.get(scope)
            if namespace:
                if not parent_id:
                    state.run_tools = ToolActivity()  # the run's first checkpoint
                if own is None and metadata.get("step") == 0:
                    own = ToolActivity()  # the step applies the subgraph's input: none its own
                so_far = state.run_tools = (
                    None if own is None or state.run_tools is None else state.run_tools + own
                )
                root_checkpoint = (metadata.get("parents") or {}).get("")
                if so_far is not None and root_checkpoint:
                    root = self._states.get((thread_id, ""))
                    root.note_subgraph_tools(str(root_checkpoint), namespace, so_far)
                return own, so_far
            subgraphs = state.subgraph_tools.pop(str(parent_id), {})
        for activity in subgraphs.values():
            own = None if own is None else own.merge(activity)
        return own, None

    def _nodes_applied(
        self,
        scope: Scope,
        parent_id: str | None,
        checkpoint: Checkpoint,
        source: Any,
        writer: ActiveRun | None,
    ) -> tuple[list[str], tuple[str, str] | None]:
        """The nodes whose writes the checkpoint applies (the tasks that wrote on its parent,
        nodes whose `versions_seen` moved, and on a loop step the parent's `Send` targets,
        which all ran in the step; a fork copy applies none), and the resume this put is the
        first put of, if any."""
        with self._states.lock:
            state = self._states.get(scope)
            previous, state.last_checkpoint = state.last_checkpoint, SeenCheckpoint.of(checkpoint)
            # consumed: the writes on the parent are applied by this put
            writers = state.writers.pop(str(parent_id), set())
            resumed_from, state.resumed_from = state.resumed_from, None
        if source == "fork" or not checkpoint.get("channel_versions"):
            # a fork copy applies no writes, nor does an empty checkpoint (the anchor LangGraph
            # stores delta writes on under durability `exit`, before the run's checkpoint)
            return [], resumed_from
        nodes = set(writers)
        if writer is not None:
            nodes.update(writer.loop.applied_nodes(str(parent_id), str(checkpoint.get("id", ""))))
        versions_seen = checkpoint.get("versions_seen") or {}
        if parent_id is None:  # the thread's first checkpoint
            nodes.update(stored_nodes(versions_seen, source, None))
        elif previous is not None and previous.id == parent_id:
            nodes.update(
                stored_nodes(versions_seen, source, previous.versions_seen, previous.sends)
            )
        return sorted(nodes), resumed_from

    def _grow(
        self,
        scope: Scope,
        checkpoint: Checkpoint,
        parent_id: str | None,
        digest: StateDigest,
        written: int,
        attributes: dict[str, AttributeValue],
    ) -> Lineage | None:
        """The thread's line so far (continued from the parent's), and the largest channel."""
        largest = digest.largest
        if largest is not None and not is_state_channel(largest):  # rare: LangGraph's own
            largest = max(
                (c for c in digest.channels if is_state_channel(c)),
                key=lambda c: digest.channels[c].size,
                default=None,
            )
        if largest is not None:
            attributes[names.LARGEST_CHANNEL] = largest
            attributes[names.LARGEST_CHANNEL_SIZE_BYTES] = digest.channels[largest].size
        with self._states.lock:
            lineages = self._states.get(scope).lineages
            parent = (0, 0) if not parent_id else lineages.get(str(parent_id))
            if parent is None:
                return None  # the parent's line is unknown (written without this library)
            lineage = (parent[0] + 1, parent[1] + written)
            lineages[str(checkpoint.get("id", ""))] = lineage
        attributes[names.THREAD_CHECKPOINTS] = lineage[0]
        attributes[names.THREAD_WRITTEN_BYTES] = lineage[1]
        return lineage

    def _channel_events(
        self,
        op: Operation,
        digest: StateDigest,
        sizes: Mapping[str, int],
        channels: Sequence[str],
        values: Mapping[str, Any],
    ) -> None:
        if not op.recording:
            return
        changed = sorted(channels, key=lambda c: -sizes[c])
        for channel in changed[: self._options.max_channel_events]:
            channel_digest = digest.channels[channel]
            previous = digest.previous.get(channel)
            op.event(
                names.EVENT_CHANNEL,
                {
                    names.CHANNEL_NAME: channel,
                    names.CHANNEL_HASH: channel_digest.hash,
                    names.CHANNEL_SIZE_BYTES: sizes[channel],
                    names.CHANNEL_SUMMARY: summarize(
                        values.get(channel), previous.count if previous else None
                    ),
                },
            )

    def _tool_call_events(self, op: Operation, requested: list[tuple[str, ToolCall]]) -> None:
        """One `langgraph.tool_call` event per tool call the new messages request (known only
        where the hasher saw the channel's previous length, or on a thread's first put)."""
        if not requested:
            return
        calls = [(bounded_text(call_id), call) for call_id, call in requested]
        TOOL_CALLS.note(calls)
        for call_id, call in calls[: self._options.max_channel_events]:
            op.event(
                names.EVENT_TOOL_CALL,
                {
                    names.TOOL_NAME: bounded_text(call.name),
                    names.TOOL_CALL_ID: call_id,
                    names.TOOL_IDEMPOTENCY_KEY: bounded_text(call.key),
                },
            )

    def _report_findings(self, op: Operation, findings: list[Finding]) -> None:
        for finding in findings:
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
            op.event(names.EVENT_DIVERGENCE, event)
            self._telemetry.count_divergence(finding.kind)

    # --- pending writes ---------------------------------------------------------------------

    def task_of(
        self,
        config: RunnableConfig,
        scope: Scope,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        writer: ActiveRun | None,
    ) -> tuple[str, str]:
        """The node and outcome of a pending-writes call by `writer`'s run; notes the task's
        node as a writer on the checkpoint it ran from (the child checkpoint applies it)."""
        checkpoint_id = str((config.get("configurable") or {}).get("checkpoint_id", ""))
        with self._states.lock:
            seen = self._states.get(scope).last_checkpoint
        sends = seen.sends if seen is not None and seen.id == checkpoint_id else []
        node = node_of_task(task_id, task_path, sends)
        if node is None and writer is not None:
            # a push task whose checkpoint's put is not seen yet (durability `async`)
            node = writer.loop.task_node(task_id)
        if node is None:
            node = update_node(task_id)  # update_state(..., as_node=...)
        if node is not None and node not in PSEUDO_NODES:
            with self._states.lock:
                self._states.get(scope).note_writer(checkpoint_id, node)
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


def _logical_values(
    checkpoint: Checkpoint, metadata: Mapping[str, Any]
) -> tuple[Mapping[str, Any], frozenset[str]]:
    """The checkpoint's channel values as the graph sees them, and its delta channels.

    A `DeltaChannel` stores no value between snapshots (its updates are kept as writes): its
    value is the one LangGraph held when it created this checkpoint; a stored snapshot holds
    the same value."""
    values = checkpoint.get("channel_values") or {}
    held = delta_values(str(checkpoint.get("id", "")))
    counters = metadata.get(DELTA_COUNTERS_KEY)
    if not held and not counters:
        return values, frozenset()
    logical = {name: delta_snapshot_value(value) for name, value in values.items()}
    snapshots = {name for name, value in values.items() if logical[name] is not value}
    logical.update(held or {})
    named = set(counters) if isinstance(counters, Mapping) else set()
    return logical, frozenset(snapshots | set(held or ()) | named)


def _added_messages(
    digest: StateDigest, channel: str, values: Mapping[str, Any], first: bool
) -> tuple[list[Any], int] | None:
    """The messages channel's value and the index of the first message this put added (known
    where the hasher saw the channel's previous length, or on a thread's first put); None when
    the channel did not change or that index is unknown."""
    messages = values.get(channel)
    if channel not in digest.changed or not isinstance(messages, list):
        return None
    previous = digest.previous.get(channel)
    start = previous.count if previous is not None else (0 if first else None)
    return None if start is None else (messages, start)


def _written_sizes(digest: StateDigest, delta: frozenset[str]) -> dict[str, int]:
    """Bytes each changed channel writes: its whole value, but for a delta channel only what
    the step added to it (what LangGraph stores of it)."""
    sizes = {}
    for channel in digest.changed:
        size = digest.channels[channel].size
        previous = digest.previous.get(channel)
        if channel in delta and previous is not None and previous.size <= size:
            size -= previous.size
        sizes[channel] = size
    return sizes


def _user_claims_metadata_key(config: RunnableConfig, metadata: CheckpointMetadata) -> bool:
    """Whether the stored metadata would carry a user's own value under our key.

    Savers merge `config["metadata"]` and `config["configurable"]` into the stored metadata;
    a user's value there is kept as is and no hashes are stored.
    """
    return any(
        names.METADATA_KEY in source
        for source in (metadata, config.get("metadata") or {}, config.get("configurable") or {})
    )
