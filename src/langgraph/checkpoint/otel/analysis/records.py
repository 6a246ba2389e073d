"""What a checkpoint says about the run that wrote it: pure functions over plain data.

Nothing here knows OpenTelemetry or any saver. The wrapper, and later the inspector and the
resume harness, read checkpoints through these functions so they agree on one reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME

from langgraph.checkpoint.otel._langgraph.formats import (
    DELTA_COUNTERS_KEY,
    INPUT_NODE,
    TASKS_CHANNEL,
    is_bookkeeping_channel,
    scheduled_nodes,
    send_targets,
)
from langgraph.checkpoint.otel.analysis.carrier import parse_carrier
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, hash_value
from langgraph.checkpoint.otel.analysis.stored_metadata import (
    StoredTelemetry,
    read_stored_telemetry,
)
from langgraph.checkpoint.otel.analysis.text_bounds import repr_bytes
from langgraph.checkpoint.otel.analysis.tool_calls import (
    MessagesMark,
    ToolActivity,
    ToolCall,
    first_added,
    message_tool_activity,
)

Scope = tuple[str, str]
"""(thread id, checkpoint namespace): one sequence of checkpoints."""
UNKNOWN_NODE = "unknown"
"""Reported when the node of a task cannot be derived."""
PSEUDO_NODES = frozenset({INPUT_NODE, INTERRUPT})
"""Keys of versions_seen that are bookkeeping, not nodes that ran."""


def nodes_from_versions_seen(
    previous: Mapping[str, Mapping[str, Any]] | None, current: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Nodes whose `versions_seen` entry changed between a checkpoint's parent and itself.

    Those are the nodes whose completed writes the checkpoint applies (pull tasks; a node
    reached only through `Send` shows up the first time it runs).
    """
    previous = previous or {}
    return sorted(
        node
        for node, seen in current.items()
        if node not in PSEUDO_NODES and previous.get(node) != seen
    )


def stored_nodes(
    versions_seen: Mapping[str, Mapping[str, Any]],
    source: Any,
    parent_versions_seen: Mapping[str, Mapping[str, Any]] | None,
    parent_sends: Iterable[str] = (),
) -> set[str]:
    """Nodes whose writes a checkpoint applies, as far as it and its parent tell.

    Nodes whose `versions_seen` moved against the parent (None: no parent), and on a `loop`
    checkpoint the parent's `Send` targets, which all ran in the step (a node reached only
    through `Send` moves its `versions_seen` only the first time). A `fork` copy applies none.
    """
    if source == "fork":
        return set()
    nodes = set(nodes_from_versions_seen(parent_versions_seen, versions_seen))
    if source == "loop":
        nodes.update(parent_sends)
    return nodes


def task_outcome(channels: Iterable[str]) -> str:
    """ok | error | interrupt | resume, from the channels a task wrote.

    `resume` is a call that records only resume values (the `Command(resume=...)` itself); a
    task that finishes after resuming writes its channels too and is `ok`.
    """
    written = set(channels)
    if ERROR in written:
        return "error"
    if INTERRUPT in written:
        return "interrupt"
    if written == {RESUME}:
        return "resume"
    return "ok"


def is_state_channel(channel: str) -> bool:
    """Whether a channel holds graph state, not LangGraph bookkeeping (which is hashed with
    the state but gets no channel event or metric)."""
    return not is_bookkeeping_channel(channel)


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """One checkpoint as the detectors see it: ids, lineage, nodes, hashes and tool calls."""

    checkpoint_id: str
    parent_id: str | None
    step: int | None
    source: str | None
    nodes: tuple[str, ...] = ()
    channel_hashes: Mapping[str, str] = field(default_factory=dict)
    state_hash: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls requested by the AI messages this checkpoint added."""
    tool_results: tuple[ToolCall, ...] = ()
    """Calls answered by the tool messages this checkpoint added (the tool ran)."""
    resume_kind: str | None = None
    """Set on the first checkpoint a resumed run wrote: the kind of that resume."""
    ns: str = ""
    """The checkpoint namespace: "" for the root graph, ``node:<task id>|...`` for a subgraph
    (compared only with checkpoints of the same namespace)."""
    trace_id: str | None = None
    """The trace (32 hex digits) of the put that wrote it, from its stored carrier."""
    scheduled: tuple[str, ...] | None = None
    """The nodes it schedules next (sorted; () when its run finished there); None when
    unknown (a record read from spans)."""
    unknown_channels: frozenset[str] = frozenset()
    """Channels whose value the record cannot tell (a delta channel stored without its
    snapshot or the wrapper's hash): never compared."""
    tools_known: bool = True
    """Whether `tool_calls` and `tool_results` are known: False when the messages channel
    holds no readable value (a delta channel stored without its snapshot)."""

    @property
    def parent_chosen(self) -> bool:
        """Whether it was written on a parent its writer chose (a fork, `update_state`), not
        on the thread's latest checkpoint."""
        return self.resume_kind == "fork" or self.source in ("update", "fork")


def checkpoint_record(
    config: Mapping[str, Any],
    checkpoint: Mapping[str, Any],
    metadata: Mapping[str, Any] | None,
    parent_id: str | None,
    *,
    messages_channel: str = "messages",
    previous_messages: Sequence[Any] | MessagesMark | None = None,
    channel_hashes: Mapping[str, str] | None = None,
    state_hash: str | None = None,
    nodes: Sequence[str] | None = None,
    tools: ToolActivity | None = None,
) -> CheckpointRecord:
    """A record of a checkpoint, from its stored form or from a put.

    Hashes, nodes and tool activity come from the arguments when given (a put knows them),
    else from the wrapper's stored metadata (never re-hashed). Without either, tool activity is
    read from the messages the checkpoint added to `messages_channel` relative to
    `previous_messages` (the list, or its `MessagesMark`: after its last message, found by
    id, or by count when messages carry no ids).
    """
    metadata = metadata or {}
    stored = read_stored_telemetry(metadata)
    values = checkpoint.get("channel_values") or {}
    unknown = unseen_delta_channels_of(checkpoint, metadata, stored)
    tools_known = True
    if tools is None and stored is not None:
        tools = stored.tools
    if tools is None:
        messages = values.get(messages_channel)
        tools = ToolActivity()
        if isinstance(messages, list):
            tools = ToolActivity(
                *message_tool_activity(messages, first_added(messages, previous_messages))
            )
        tools_known = messages_channel not in unknown
    configurable = config.get("configurable") or {}
    step = metadata.get("step")
    return CheckpointRecord(
        checkpoint_id=str(checkpoint.get("id", configurable.get("checkpoint_id", ""))),
        parent_id=parent_id,
        step=step if isinstance(step, int) else None,
        source=metadata.get("source"),
        nodes=tuple(nodes if nodes is not None else (stored.nodes if stored else ())),
        channel_hashes=dict(
            channel_hashes
            if channel_hashes is not None
            else ({k: h for k, (h, _) in stored.channels.items()} if stored else {})
        ),
        state_hash=state_hash
        if state_hash is not None
        else (stored.state_hash if stored else None),
        tool_calls=tools.calls,
        tool_results=tools.results,
        resume_kind=stored.resume[0] if stored and stored.resume else None,
        ns=str(configurable.get("checkpoint_ns") or ""),
        trace_id=_writer_trace(stored),
        scheduled=tuple(scheduled_nodes(values)),
        unknown_channels=frozenset(unknown),
        tools_known=tools_known,
    )


def _writer_trace(stored: StoredTelemetry | None) -> str | None:
    context = parse_carrier(stored.carrier) if stored is not None else None
    return f"{context.trace_id:032x}" if context is not None else None


def unseen_delta_channels(tuples: Iterable[Any]) -> set[str]:
    """Delta channels (LangGraph's `DeltaChannel`) that stored checkpoints hold neither a value
    nor the wrapper's hash of: offline readers cannot see their logical value (it lives in the
    writes of the checkpoint's ancestors and needs the graph's reducer to rebuild)."""
    unseen: set[str] = set()
    for tup in tuples:
        unseen |= unseen_delta_channels_of(tup.checkpoint, tup.metadata)
    return unseen


def unseen_delta_channels_of(
    checkpoint: Mapping[str, Any], metadata: Any, stored: StoredTelemetry | None = None
) -> set[str]:
    """`unseen_delta_channels` of one checkpoint (`stored`: its telemetry, when already
    read)."""
    counters = (metadata or {}).get(DELTA_COUNTERS_KEY)
    if not isinstance(counters, Mapping):
        return set()
    values = checkpoint.get("channel_values") or {}
    versions = checkpoint.get("channel_versions") or {}  # written at least once
    if stored is None:
        stored = read_stored_telemetry(metadata)
    hashed = stored.channels if stored is not None else {}
    return {str(c) for c in counters if c in versions and c not in values and c not in hashed}


def history_records(
    tuples: Iterable[Any],
    *,
    messages_channel: str = "messages",
    fallback: Callable[[Any], bytes] | None = None,
) -> list[CheckpointRecord]:
    """Records of a thread's stored history (CheckpointTuples in any order), oldest first.

    Hashes, nodes and tool activity are read from the wrapper's stored metadata; for
    checkpoints without it (telemetry was off, or a bare saver wrote them) they are computed
    here: channel hashes with `hash_value` (`fallback` encodes unknown types, by default their
    repr), nodes from `versions_seen` and `Send` targets against the parent (see
    `stored_nodes`), and tool activity from the messages each checkpoint added, a root
    checkpoint's with its subgraphs' (as the wrapper stores it: see `_with_subgraph_tools`).
    """
    ordered = sorted(tuples, key=lambda t: str(t.checkpoint["id"]))
    by_id = {str(t.checkpoint["id"]): t for t in ordered}
    records = []
    computed_tools: set[str] = set()
    for tup in ordered:
        parent_id = ((tup.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
        parent = by_id.get(str(parent_id)) if parent_id else None
        parent_values = parent.checkpoint.get("channel_values") or {} if parent else {}
        previous = parent_values.get(messages_channel, [])
        known: dict[str, Any] = {}
        stored = read_stored_telemetry(tup.metadata)
        if stored is None or stored.state_hash is None:
            values = tup.checkpoint.get("channel_values") or {}
            hashes = {
                name: hash_value(value, fallback=fallback or repr_bytes)
                for name, value in values.items()
            }
            known["channel_hashes"] = hashes
            known["state_hash"] = combine_state_hash(hashes)
        if stored is None:
            known["nodes"] = sorted(
                stored_nodes(
                    tup.checkpoint.get("versions_seen") or {},
                    (tup.metadata or {}).get("source"),
                    parent.checkpoint.get("versions_seen") if parent else None,
                    send_targets(parent_values.get(TASKS_CHANNEL)),
                )
            )
        if stored is None or stored.tools is None:
            computed_tools.add(str(tup.checkpoint["id"]))
        records.append(
            checkpoint_record(
                tup.config,
                tup.checkpoint,
                tup.metadata,
                str(parent_id) if parent_id else None,
                messages_channel=messages_channel,
                previous_messages=previous if isinstance(previous, list) else [],
                **known,
            )
        )
    return _with_subgraph_tools(records, by_id, computed_tools)


def _with_subgraph_tools(
    records: list[CheckpointRecord], tuples: Mapping[str, Any], computed: set[str]
) -> list[CheckpointRecord]:
    """Root records whose tool activity was read from their own messages (`computed`), with
    the activity of the subgraph runs their step ran added (what the wrapper stores with a
    root checkpoint): a subgraph's checkpoints name the root checkpoint they ran from
    (LangGraph's ``parents`` metadata), and the root checkpoint that applies the step is that
    checkpoint's first child (not a fork copy) written after them."""
    runs: dict[str, list[CheckpointRecord]] = {}
    for record in records:
        # a run's input checkpoint and the step applying it carry the parent's messages
        if record.ns and record.checkpoint_id in computed and (record.step or 0) > 0:
            parents = (tuples[record.checkpoint_id].metadata or {}).get("parents")
            root = parents.get("") if isinstance(parents, Mapping) else None
            if root:
                runs.setdefault(str(root), []).append(record)
    if not runs:
        return records
    children: dict[str, list[CheckpointRecord]] = {}
    for record in records:
        if not record.ns and record.parent_id and record.source != "fork":
            children.setdefault(record.parent_id, []).append(record)
    merged: dict[str, CheckpointRecord] = {}
    for root, ran in runs.items():
        last = max(r.checkpoint_id for r in ran)
        target = next(
            (
                c
                for c in children.get(root, [])
                if c.checkpoint_id > last and c.checkpoint_id in computed
            ),
            None,
        )
        if target is None:
            continue
        current = merged.get(target.checkpoint_id, target)
        activity = ToolActivity(current.tool_calls, current.tool_results)
        for record in ran:
            activity = activity.merge(ToolActivity(record.tool_calls, record.tool_results))
        merged[target.checkpoint_id] = replace(
            current,
            tool_calls=activity.calls,
            tool_results=activity.results,
            tools_known=current.tools_known and all(r.tools_known for r in ran),
        )
    return [merged.get(r.checkpoint_id, r) for r in records]
