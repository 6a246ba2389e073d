"""What a checkpoint write is, as one plain fact object: the nodes it applies, its state's hashes,
sizes and growth, the tool calls its step requested and answered, the divergences and the
concurrent write it shows, and the execution it belongs to.

`PutWitness` gathers a put's `PutFacts` from what the wrapper remembers (`scope_state`, the
runs, the hasher, the divergence watch); `put_span` turns them into the span's attributes and
events and the telemetry stored with the checkpoint. Nothing here talks to OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import DELTA_COUNTERS_KEY
from langgraph.checkpoint.otel._langgraph.loop import delta_snapshot_value, delta_values
from langgraph.checkpoint.otel.analysis.carrier import TraceContext
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.graph_structure import StructureSummary
from langgraph.checkpoint.otel.analysis.hashing import StateDigest
from langgraph.checkpoint.otel.analysis.message_history import (
    CUSTOM,
    Shrink,
    TokenCounter,
    count_history,
    history_channel,
    resolve_counter,
    window_share,
)
from langgraph.checkpoint.otel.analysis.records import (
    CheckpointRecord,
    Scope,
    is_state_channel,
    stored_nodes,
)
from langgraph.checkpoint.otel.analysis.summary import summarize
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.analysis.tool_calls import (
    ToolActivity,
    ToolCall,
    added_tool_activity,
)
from langgraph.checkpoint.otel.core.concurrent_writes import ConcurrentWrites
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS
from langgraph.checkpoint.otel.core.runs import ActiveRun
from langgraph.checkpoint.otel.core.scope_state import Lineage
from langgraph.checkpoint.otel.core.witness import SaverMemory, Witness


@dataclass(slots=True)
class ChannelChange:
    """A state channel the put changed (`langgraph.channel` event), content-free."""

    name: str
    hash: str
    size_bytes: int
    summary: str


@dataclass(slots=True)
class StateFacts:
    """The put's state as hashed: its hash, sizes and growth."""

    state_hash: str
    size_bytes: int
    written_bytes: int
    largest_channel: tuple[str, int] | None
    """(name, bytes) of the largest state channel."""
    lineage: Lineage | None
    """(checkpoints, written bytes) of the thread's line to this checkpoint; None: unknown."""
    channel_sizes: tuple[tuple[str, int], ...]
    """(state channel, bytes written) for each state channel the put changed."""
    channel_changes: tuple[ChannelChange, ...]
    """The changed state channels, largest first, as many as the span's events show (only
    gathered where the span records)."""
    channel_digests: Mapping[str, tuple[str, int]]
    """Every channel's (hash, size): the hashes stored with the checkpoint."""


@dataclass(slots=True)
class HistoryFacts:
    """The message history of a put that changed it, counted (content-free)."""

    channel: str
    messages: int
    tokens: int
    token_counter: str
    """How the tokens were counted (`langgraph.messages.token_counter`)."""
    context_window: int | None
    window_share: float | None
    shrink: Shrink | None
    """The history is shorter than the parent checkpoint's."""


@dataclass(slots=True)
class PutFacts:
    """Everything a put's span, metrics and stored telemetry say about it."""

    checkpoint_id: str
    parent_id: str | None
    version: int
    step: int | None
    source: str | None
    nodes: tuple[str, ...]
    """The nodes whose writes the checkpoint applies."""
    channels_changed: tuple[str, ...]
    resumed_from: tuple[str, str] | None
    """(kind, checkpoint id) of the resume this put is the first put of."""
    schema_version: str | None
    structure: StructureSummary | None
    policy: Mapping[str, Any]
    """The divergence policy as stored (empty: the default)."""
    policy_text: str | None
    state: StateFacts | None = None
    """None where the state was not hashed (nothing records it) or hashing failed."""
    requested_tools: tuple[tuple[str, ToolCall], ...] = ()
    """(call id, call) of the tool calls the put's new messages request, where known."""
    tools: ToolActivity | None = None
    """The step's tool calls, its subgraphs' included; None: unknown."""
    run_tools: ToolActivity | None = None
    """(subgraph checkpoints) the tool calls of the subgraph's run so far."""
    findings: tuple[Finding, ...] = ()
    concurrent_with: CheckpointRecord | None = None
    """Another run's checkpoint written at once on the same parent, if any."""
    graph_name: str | None = None
    trace_context: TraceContext | None = None
    execution: str | None = None
    store_hashes: bool = True
    user_claims_metadata_key: bool = False
    finding_kinds: tuple[str, ...] = ()
    """`langgraph.findings`: the kinds of what the put shows."""
    history: HistoryFacts | None = None
    """The message history, where the put changed it and it is counted."""
    stored_history: tuple[str, int, int, str] | None = None
    """(channel, messages, tokens, counter) of the checkpoint's history, where known: stored
    with the checkpoint for the runs that resume it."""


class PutWitness(Witness):
    """Gathers the `PutFacts` of the puts of one instrumented saver."""

    def __init__(self, memory: SaverMemory) -> None:
        super().__init__(memory)
        self._concurrent = ConcurrentWrites()
        self._token_counter: TokenCounter | None = None
        self._token_counter_name = ""
        if memory.options.message_history:
            resolved = self._guard("token counter", resolve_counter, memory.options.token_counter)
            if resolved is not None:
                self._token_counter, self._token_counter_name = resolved

    def migrated_versions(self, scope: Scope, checkpoint: Checkpoint) -> dict[str, Any]:
        """The channels the first put after a migration also stores (at the new versions the
        loaded checkpoint was given, unless the run changed them since)."""
        migrated = self._states.take_migrated(scope)
        if not migrated:
            return {}
        versions = checkpoint.get("channel_versions") or {}
        return {c: v for c, v in migrated.items() if versions.get(c) == v}

    def gather(
        self,
        scope: Scope,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: ChannelVersions,
        writer: ActiveRun | None,
        *,
        recording: bool,
        hash_state: bool,
        trace_context: TraceContext | None,
    ) -> PutFacts:
        """The facts of a put by `writer`'s run. `recording`: the span records (its events are
        gathered); `hash_state`: the state is hashed (something uses its hashes)."""
        parent_id = (config.get("configurable") or {}).get("checkpoint_id")
        checkpoint_id = str(checkpoint.get("id", ""))
        values, delta = _logical_values(checkpoint, metadata)
        source = metadata.get("source")
        nodes, resumed_from = self._nodes_applied(scope, parent_id, checkpoint, source, writer)
        step = metadata.get("step")
        digest: StateDigest | None = None
        if hash_state:
            # the hasher has its own lock: other threads' calls do not wait for this hashing
            digest = self._guard(
                "hash state",
                self._hasher.digest_state,
                scope,
                values,
                checkpoint.get("channel_versions") or {},
                [c for c in new_versions if c in values],
                delta,
            )
        state: StateFacts | None = None
        requested: list[tuple[str, ToolCall]] = []
        tools: ToolActivity | None = None
        run_tools: ToolActivity | None = None
        own: ToolActivity | None = None
        if digest is not None:
            state = self._state_facts(
                scope, checkpoint_id, parent_id, digest, delta, values, recording
            )
            if state.lineage is not None:
                self._runs.note_lineage(writer, state.lineage)
            added = self._added_tool_activity(scope, digest, values, not parent_id)
            if added is not None:
                requested, own = added
                if recording and requested:
                    TOOL_CALLS.note([(bounded_text(i), call) for i, call in requested])
            tools, run_tools = self._states.step_tools(scope, parent_id, metadata, own)
        findings = self._watch.observe_put(
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
        counted = (
            self._guard(
                "count messages",
                self._history,
                scope,
                checkpoint_id,
                parent_id,
                values,
                new_versions,
            )
            if hash_state and self._token_counter is not None
            else None
        )
        history, stored_history = counted if counted is not None else (None, None)
        kinds = [names.FindingKinds.divergence(f.kind) for f in findings]
        concurrent = None
        if (
            trace_context is not None
            and parent_id
            and "concurrent_write" in self._watch.policy.detectors
        ):
            concurrent = self._concurrent_write(
                scope, checkpoint_id, step, source, str(parent_id), resumed_from, trace_context
            )
            if concurrent is not None:
                kinds.append(names.FindingKinds.CONCURRENT_WRITE)
        execution = (
            self._runs.execution_of(writer, bounded_text(checkpoint_id))
            if writer is not None and not scope[1]
            else None
        )
        return PutFacts(
            checkpoint_id=checkpoint_id,
            parent_id=None if parent_id is None else bounded_text(parent_id),
            version=int(checkpoint.get("v", 0)),
            step=step if isinstance(step, int) else None,
            source=None if source is None else str(source),
            nodes=tuple(nodes),
            channels_changed=tuple(sorted(c for c in new_versions if is_state_channel(c))),
            resumed_from=resumed_from,
            schema_version=self._options.schema_version,
            structure=self._runs.structure_of(scope),
            policy=self._policy,
            policy_text=self._policy_text,
            state=state,
            requested_tools=tuple(requested),
            tools=tools,
            run_tools=run_tools,
            findings=tuple(findings),
            concurrent_with=concurrent,
            graph_name=self._runs.graph_name(scope) if concurrent is not None else None,
            trace_context=trace_context,
            execution=execution,
            store_hashes=self._options.store_hashes,
            user_claims_metadata_key=_user_claims_metadata_key(config, metadata),
            finding_kinds=tuple(kinds),
            history=history,
            stored_history=stored_history,
        )

    def _history(
        self,
        scope: Scope,
        checkpoint_id: str,
        parent_id: Any,
        values: Mapping[str, Any],
        new_versions: ChannelVersions,
    ) -> tuple[HistoryFacts | None, tuple[str, int, int, str] | None]:
        """The message history's counts, where this put changed it; and what is stored of the
        checkpoint's history (also where the put left it as its parent had it)."""
        parent = None if parent_id is None else str(parent_id)
        memo = self._states.history(scope)
        name = self._token_counter_name
        if memo is not None and (
            memo.counter != name or (name == CUSTOM and memo.token_chunks[0] is None)
        ):
            memo = None  # counted by another counter (a custom one may differ per process)
        channel = history_channel(
            values,
            new_versions,
            self._options.messages_channel,
            memo.channel if memo is not None else None,
        )
        if channel is None:
            if memo is None or memo.checkpoint_id != parent or memo.channel in new_versions:
                return None, None
            memo.checkpoint_id = checkpoint_id  # the history as its parent had it
            return None, (memo.channel, memo.messages, memo.total, name)
        assert self._token_counter is not None
        memo, shrink = count_history(
            values[channel],
            self._token_counter,
            memo,
            checkpoint_id=checkpoint_id,
            channel=channel,
            parent_id=parent,
        )
        memo.counter = name
        self._states.note_history(scope, memo)
        window = self._options.context_window
        stored = (channel, memo.messages, memo.total, name)
        return HistoryFacts(
            channel=bounded_text(channel),
            messages=memo.messages,
            tokens=memo.total,
            token_counter=self._token_counter_name,
            context_window=window,
            window_share=window_share(memo.total, window),
            shrink=shrink,
        ), stored

    def _nodes_applied(
        self,
        scope: Scope,
        parent_id: Any,
        checkpoint: Checkpoint,
        source: Any,
        writer: ActiveRun | None,
    ) -> tuple[list[str], tuple[str, str] | None]:
        """The nodes whose writes the checkpoint applies (the tasks that wrote on its parent,
        nodes whose `versions_seen` moved, and on a loop step the parent's `Send` targets,
        which all ran in the step; a fork copy applies none), and the resume this put is the
        first put of, if any."""
        handover = self._states.begin_put(scope, checkpoint, parent_id)
        if source == "fork" or not checkpoint.get("channel_versions"):
            # a fork copy applies no writes, nor does an empty checkpoint (the anchor LangGraph
            # stores delta writes on under durability `exit`, before the run's checkpoint)
            return [], handover.resumed_from
        nodes = set(handover.writers)
        if writer is not None:
            nodes.update(writer.loop.applied_nodes(str(parent_id), str(checkpoint.get("id", ""))))
        versions_seen = checkpoint.get("versions_seen") or {}
        previous = handover.previous
        if parent_id is None:  # the thread's first checkpoint
            nodes.update(stored_nodes(versions_seen, source, None))
        elif previous is not None and previous.id == parent_id:
            nodes.update(
                stored_nodes(versions_seen, source, previous.versions_seen, previous.sends)
            )
        return sorted(nodes), handover.resumed_from

    def _state_facts(
        self,
        scope: Scope,
        checkpoint_id: str,
        parent_id: Any,
        digest: StateDigest,
        delta: frozenset[str],
        values: Mapping[str, Any],
        recording: bool,
    ) -> StateFacts:
        """The put's state as hashed; with `recording`, its changed channels summarised."""
        sizes = _written_sizes(digest, delta)
        written = sum(sizes.values())
        state_changes = [c for c in digest.changed if is_state_channel(c)]
        largest = _largest_state_channel(digest)
        return StateFacts(
            state_hash=digest.state_hash,
            size_bytes=digest.size_bytes,
            written_bytes=written,
            largest_channel=(None if largest is None else (largest, digest.channels[largest].size)),
            lineage=self._states.extend_lineage(scope, checkpoint_id, parent_id, written),
            channel_sizes=tuple((c, sizes[c]) for c in state_changes),
            channel_changes=(
                _channel_changes(
                    digest, sizes, state_changes, values, self._options.max_channel_events
                )
                if recording
                else ()
            ),
            channel_digests={name: (d.hash, d.size) for name, d in digest.channels.items()},
        )

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
        requested, answered = added_tool_activity(*added, known=self._states.tool_requests(scope))
        self._states.note_tool_requests(scope, requested)
        return requested, ToolActivity(tuple(call for _, call in requested), answered)

    def _concurrent_write(
        self,
        scope: Scope,
        checkpoint_id: str,
        step: Any,
        source: Any,
        parent_id: str,
        resumed_from: tuple[str, str] | None,
        context: TraceContext,
    ) -> CheckpointRecord | None:
        """The checkpoint another run of this process already wrote at once on this put's
        parent (see `core.concurrent_writes`), if any."""
        record = CheckpointRecord(
            checkpoint_id=bounded_text(checkpoint_id),
            parent_id=bounded_text(parent_id),
            step=step if isinstance(step, int) else None,
            source=source,
            resume_kind=resumed_from[0] if resumed_from else None,
            trace_id=f"{context.trace_id:032x}",
        )
        return self._concurrent.note((bounded_text(scope[0]), bounded_text(scope[1])), record)


def _channel_changes(
    digest: StateDigest,
    sizes: Mapping[str, int],
    channels: list[str],
    values: Mapping[str, Any],
    limit: int,
) -> tuple[ChannelChange, ...]:
    """The largest `limit` of the changed state `channels`, summarised."""
    changes = []
    for channel in sorted(channels, key=lambda c: -sizes[c])[:limit]:
        previous = digest.previous.get(channel)
        changes.append(
            ChannelChange(
                channel,
                digest.channels[channel].hash,
                sizes[channel],
                summarize(values.get(channel), previous.count if previous else None),
            )
        )
    return tuple(changes)


def _largest_state_channel(digest: StateDigest) -> str | None:
    largest = digest.largest
    if largest is not None and not is_state_channel(largest):  # rare: LangGraph's own
        largest = max(
            (c for c in digest.channels if is_state_channel(c)),
            key=lambda c: digest.channels[c].size,
            default=None,
        )
    return largest


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


def _user_claims_metadata_key(config: RunnableConfig, metadata: Mapping[str, Any]) -> bool:
    """Whether the stored metadata would carry a user's own value under our key.

    Savers merge `config["metadata"]` and `config["configurable"]` into the stored metadata;
    a user's value there is kept as is and no hashes are stored.
    """
    return any(
        names.METADATA_KEY in source
        for source in (metadata, config.get("metadata") or {}, config.get("configurable") or {})
    )
