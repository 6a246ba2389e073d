"""What a checkpoint says about the run that wrote it: pure functions over plain data.

Nothing here knows OpenTelemetry or any saver. The wrapper, and later the inspector and the
resume harness, read checkpoints through these functions so they agree on one reading.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeGuard

from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import (
    DELTA_COUNTERS_KEY,
    INPUT_NODE,
    TASKS_CHANNEL,
    is_bookkeeping_channel,
    scheduled_nodes,
    send_targets,
)
from langgraph.checkpoint.otel.analysis.carrier import parse_carrier
from langgraph.checkpoint.otel.analysis.fingerprint import StructureSummary
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, hash_value

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
class StoredTelemetry:
    """What the wrapper stored in a checkpoint's metadata under `names.METADATA_KEY`."""

    state_hash: str | None = None
    channels: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    """channel -> (hash, size_bytes), for every channel in the checkpoint."""
    nodes: tuple[str, ...] = ()
    carrier: Mapping[str, str] = field(default_factory=dict)
    """W3C trace context of the put span that wrote the checkpoint."""
    resume: tuple[str, str] | None = None
    """(kind, from checkpoint id) on the first checkpoint a resumed run wrote."""
    schema_version: str | None = None
    """The application's `schema_version` when the checkpoint was written (None: unversioned)."""
    lineage: tuple[int, int] | None = None
    """(checkpoints, written bytes) of the checkpoint's line of ancestors, itself included."""
    tools: ToolActivity | None = None
    """The tool calls the checkpoint's step requested and answered (its subgraphs' included),
    when the writer knew them."""
    run_tools: ToolActivity | None = None
    """(a subgraph's checkpoints) those of the subgraph's run up to this checkpoint."""
    graph: StructureSummary | None = None
    """The structure of the graph that wrote the checkpoint (None: unknown)."""
    policy: Mapping[str, Any] = field(default_factory=dict)
    """The divergence policy the writer ran with, where it differs from the default
    (`options.DivergencePolicy.stored`); {}: the default, or unknown."""
    execution: str | None = None
    """The execution the writing run belonged to (`names.EXECUTION_ID`)."""

    def to_metadata(self) -> dict[str, Any]:
        """The JSON-compatible value stored under `names.METADATA_KEY`."""
        value: dict[str, Any] = {names.META_FORMAT: names.META_FORMAT_VERSION}
        if self.state_hash is not None:
            value[names.META_STATE_HASH] = self.state_hash
            value[names.META_CHANNELS] = {
                name: [digest, size] for name, (digest, size) in sorted(self.channels.items())
            }
        value[names.META_NODES] = list(self.nodes)
        if self.resume is not None:
            value[names.META_RESUME] = {"kind": self.resume[0], "from": self.resume[1]}
        if self.schema_version is not None:
            value[names.META_SCHEMA] = self.schema_version
        if self.lineage is not None:
            value[names.META_LINEAGE] = list(self.lineage)
        for key, tools in ((names.META_TOOLS, self.tools), (names.META_RUN_TOOLS, self.run_tools)):
            if tools is not None and (tools.calls or tools.results):
                value[key] = {
                    "calls": [call.key for call in tools.calls],
                    "results": [call.key for call in tools.results],
                }
                arguments = {
                    call.key: dict(call.arguments)
                    for call in (*tools.calls, *tools.results)
                    if call.arguments
                }
                if arguments:
                    value[key]["args"] = arguments
        if self.policy:
            value[names.META_POLICY] = dict(self.policy)
        if self.graph is not None:
            value[names.META_GRAPH] = self.graph.stored
        if self.execution is not None:
            value[names.META_EXECUTION] = self.execution
        value.update(self.carrier)
        return value


def read_stored_telemetry(metadata: Mapping[str, Any] | None) -> StoredTelemetry | None:
    """The wrapper's stored telemetry in checkpoint metadata; None if absent or foreign.

    Every field is validated on its own and a malformed one is dropped (a channel entry that
    is not ``[str hash, non-negative int size]``, a node that is not a str, a resume without
    str kind and from, a carrier value that is not a str): stored metadata can be edited or
    corrupted, and a reader never raises on it. Hashes of an earlier format are left out
    (another construction: comparing them with current ones would report false changes).
    """
    value = metadata.get(names.METADATA_KEY) if isinstance(metadata, Mapping) else None
    if not _is_stored_telemetry(value):
        return None
    current = value.get(names.META_FORMAT) == names.META_FORMAT_VERSION
    channels: dict[str, tuple[str, int]] = {}
    raw_channels = value.get(names.META_CHANNELS) if current else None
    if isinstance(raw_channels, Mapping):
        for name, pair in raw_channels.items():
            entry = _channel_entry(pair)
            if isinstance(name, str) and entry is not None:
                channels[name] = entry
    state_hash = value.get(names.META_STATE_HASH) if current else None
    raw_nodes = value.get(names.META_NODES)
    nodes = (
        tuple(n for n in raw_nodes if isinstance(n, str))
        if isinstance(raw_nodes, list | tuple)
        else ()
    )
    carrier = {
        k: v for k, v in value.items() if k in names.META_CARRIER_KEYS and isinstance(v, str)
    }
    raw_resume = value.get(names.META_RESUME)
    resume = None
    if isinstance(raw_resume, Mapping):
        kind, origin = raw_resume.get("kind"), raw_resume.get("from")
        if isinstance(kind, str) and isinstance(origin, str):
            resume = (kind, origin)
    schema_version = value.get(names.META_SCHEMA)
    return StoredTelemetry(
        state_hash if isinstance(state_hash, str) else None,
        channels,
        nodes,
        carrier,
        resume,
        schema_version if isinstance(schema_version, str) else None,
        _lineage_entry(value.get(names.META_LINEAGE)),
        _tools_entry(value.get(names.META_TOOLS)),
        _tools_entry(value.get(names.META_RUN_TOOLS)),
        StructureSummary.of_stored(value.get(names.META_GRAPH)),
        _policy_entry(value.get(names.META_POLICY)),
        _execution_entry(value.get(names.META_EXECUTION)),
    )


def _execution_entry(value: Any) -> str | None:
    return bounded_text(value) if isinstance(value, str) and value else None


def _tools_entry(value: Any) -> ToolActivity | None:
    """Stored ``{"calls": [key], "results": [key], "args": {key: {name: hash}}}``, or None
    when absent or malformed (a checkpoint stored without it says nothing of its tools: they
    are read from its messages). Malformed argument hashes are left out."""
    if not isinstance(value, Mapping):
        return None
    lists = [value.get("calls", []), value.get("results", [])]
    if not all(isinstance(keys, list) and all(isinstance(k, str) for k in keys) for keys in lists):
        return None
    stored_args = value.get("args")
    arguments: dict[str, dict[str, str]] = {}
    if isinstance(stored_args, Mapping):
        for key, pairs in stored_args.items():
            if isinstance(key, str) and isinstance(pairs, Mapping):
                arguments[key] = {
                    n: h for n, h in pairs.items() if isinstance(n, str) and isinstance(h, str)
                }
    calls, results = (tuple(ToolCall.of_key(k, arguments.get(k)) for k in keys) for keys in lists)
    return ToolActivity(calls, results)


def _policy_entry(value: Any) -> Mapping[str, Any]:
    """A stored divergence policy (`options.DivergencePolicy.stored`), {} when absent or
    malformed: only lists of strings and booleans are kept."""
    if not isinstance(value, Mapping):
        return {}
    return {
        k: v
        for k, v in value.items()
        if isinstance(k, str)
        and (isinstance(v, bool) or (isinstance(v, list) and all(isinstance(i, str) for i in v)))
    }


def _lineage_entry(pair: Any) -> tuple[int, int] | None:
    """A stored ``[checkpoints, written_bytes]`` pair, or None when malformed."""
    if not isinstance(pair, list | tuple) or len(pair) != 2:
        return None
    count, written = pair
    if type(count) is not int or type(written) is not int or count < 1 or written < 0:
        return None
    return count, written


def _channel_entry(pair: Any) -> tuple[str, int] | None:
    """A stored ``[hash, size_bytes]`` pair, or None when malformed (a bool is not a size)."""
    if not isinstance(pair, list | tuple) or len(pair) != 2:
        return None
    digest, size = pair
    if not isinstance(digest, str) or type(size) is not int or size < 0:
        return None
    return digest, size


def without_stored_telemetry(metadata: Mapping[str, Any] | None) -> Any:
    """`metadata` without the wrapper's stored telemetry (the same object when it has none).

    Only a value in the wrapper's own format is removed: a user's own value under the key is
    kept, as the wrapper then stores nothing there.
    """
    if not metadata or not _is_stored_telemetry(metadata.get(names.METADATA_KEY)):
        return metadata
    return {k: v for k, v in metadata.items() if k != names.METADATA_KEY}


_STORED_KEYS = frozenset(
    {
        names.META_FORMAT,
        names.META_STATE_HASH,
        names.META_CHANNELS,
        names.META_NODES,
        names.META_RESUME,
        names.META_SCHEMA,
        names.META_LINEAGE,
        names.META_TOOLS,
        names.META_RUN_TOOLS,
        names.META_GRAPH,
        names.META_POLICY,
        names.META_EXECUTION,
        *names.META_CARRIER_KEYS,
    }
)


def _is_stored_telemetry(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether `value` has the wrapper's shape: a known format and none but its keys (a
    user's own value under the key, which the wrapper keeps, has other keys or no format)."""
    if not isinstance(value, Mapping):
        return False
    version = value.get(names.META_FORMAT)
    return (
        type(version) is int
        and version in names.META_FORMAT_VERSIONS
        and all(key in _STORED_KEYS for key in value)
    )


# --- attribute values derived from user input -------------------------------------------------

UNPRINTABLE = "<unprintable>"
"""The attribute value of a user value whose ``str()`` raises."""


def bounded_text(value: Any, limit: int = names.MAX_ID_LENGTH) -> str:
    """An attribute string for a user value (a thread id, namespace, checkpoint id, ...).

    Never raises: a value whose ``str()`` fails gives `UNPRINTABLE`. A text longer than
    `limit` characters keeps its start and is marked, ``<start>…[+N chars]``, within `limit`.
    """
    try:
        text = str(value)
    except Exception:
        return UNPRINTABLE
    if len(text) <= limit:
        return text
    keep = max(0, limit - len(f"…[+{len(text)} chars]"))
    return f"{text[:keep]}…[+{len(text) - keep} chars]"


def key_text(value: Any) -> str:
    """The full ``str()`` of a user value for use in a key (never truncated, never raising).

    A value whose ``str()`` fails is keyed by its identity, so two such values never share
    state.
    """
    try:
        return str(value)
    except Exception:
        return f"{UNPRINTABLE}@{id(value):x}"


# --- checkpoint records: what detectors, diffs, the inspector and the harness read ----------


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call, identified across runs by its idempotency key (name + argument hash).

    The model-issued call id changes on every run; the key does not.
    """

    name: str
    key: str
    arguments: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    """Argument label (`argument_label` of its name) -> a short hash of its value ({} when
    unknown: an old stored record); says which arguments differ between two calls, never their
    names (a model's output) nor what they hold."""

    @classmethod
    def of_key(cls, key: str, arguments: Mapping[str, str] | None = None) -> ToolCall:
        """The call an idempotency key (`tool_call_key`) stands for."""
        return cls(key.rpartition(":")[0] or key, key, dict(arguments or {}))


ARGUMENT_HASH_LENGTH = 12
"""Hex digits kept of each argument's hash (enough to tell two values apart in one call)."""


def argument_label(name: Any) -> str:
    """The label telemetry gives a tool-call argument: 8 hex digits of its name's hash (an
    argument's name comes from the model, so it is not written as is; `argument_names`
    translates labels back where the messages are at hand)."""
    digest = hashlib.blake2b(key_text(name).encode(), digest_size=4, person=b"lgargument")
    return digest.hexdigest()


def argument_hashes(args: Any) -> dict[str, str]:
    """Argument label -> short hash of its value, for a call's arguments ({} unless a
    mapping)."""
    if not isinstance(args, Mapping):
        return {}
    return {
        argument_label(name): hash_value(value, fallback=repr_bytes)[:ARGUMENT_HASH_LENGTH]
        for name, value in args.items()
    }


def argument_names(messages: Iterable[Any]) -> dict[str, str]:
    """Label -> argument name, for every argument of the tool calls the AI messages among
    `messages` request (to show findings' `arguments` by name where the messages are read)."""
    return {
        argument_label(name): key_text(name)
        for message in messages
        for call in _requested_calls(message)
        if isinstance(call.get("args"), Mapping)
        for name in call["args"]
    }


def changed_arguments(before: ToolCall, after: ToolCall) -> tuple[str, ...]:
    """The labels of the arguments whose values differ between two calls of a tool (an
    argument only one has counts; () when either call's arguments are unknown)."""
    if not before.arguments or not after.arguments:
        return ()
    names = set(before.arguments) | set(after.arguments)
    return tuple(sorted(n for n in names if before.arguments.get(n) != after.arguments.get(n)))


@dataclass(frozen=True, slots=True)
class ToolActivity:
    """Tool calls requested and answered by what one step added (a checkpoint's messages, and
    its subgraphs' when they ran in the step)."""

    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolCall, ...] = ()

    def __add__(self, other: ToolActivity) -> ToolActivity:
        return ToolActivity(self.calls + other.calls, self.results + other.results)

    def merge(self, other: ToolActivity) -> ToolActivity:
        """This step's activity with a subgraph's that ran in it, each call once (a parent
        that takes over its subgraph's messages holds the same calls)."""
        calls = {call.key for call in self.calls}
        results = {call.key for call in self.results}
        return ToolActivity(
            self.calls + tuple(c for c in other.calls if c.key not in calls),
            self.results + tuple(c for c in other.results if c.key not in results),
        )


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


def tool_call_key(name: str, args: Any) -> str:
    """Idempotency key of a call: `<name>:<canonical hash of its arguments>`."""
    return f"{name}:{hash_value(args, fallback=repr_bytes)}"


def repr_bytes(value: Any) -> bytes:
    """Last-resort encoding for argument values of unknown types."""
    return repr(value).encode()


def turn_start(messages: Sequence[Any]) -> int:
    """Where the current turn starts in a message list: the index of its last human message
    (0 when it has none). A call repeated in a later turn is a new request, not a duplicate."""
    for index in range(len(messages) - 1, -1, -1):
        if getattr(messages[index], "type", None) == "human":
            return index
    return 0


def message_tool_activity(
    messages: Sequence[Any], start: int = 0
) -> tuple[tuple[ToolCall, ...], tuple[ToolCall, ...]]:
    """Tool calls requested and answered by `messages[start:]` (see `added_tool_activity`)."""
    requested, answered = added_tool_activity(messages, start)
    return tuple(call for _, call in requested), answered


def added_tool_activity(
    messages: Sequence[Any], start: int = 0, known: Mapping[str, ToolCall] | None = None
) -> tuple[list[tuple[str, ToolCall]], tuple[ToolCall, ...]]:
    """(model-issued call id, call) for each tool call `messages[start:]` request, in order,
    and the calls their tool messages answer.

    A tool message is matched to the request it answers through its `tool_call_id`: among the
    added messages' requests, then in `known` (requests already keyed, by call id), then from
    the newest message backwards (so the cost follows the new messages, not the history); its
    key carries the request's name and arguments.
    """
    added = messages[start:]
    requested = [
        (str(call.get("id") or ""), _tool_call(call))
        for message in added
        for call in _requested_calls(message)
    ]
    wanted = {
        str(getattr(message, "tool_call_id", ""))
        for message in added
        if getattr(message, "type", None) == "tool"
    }
    requests: dict[str, ToolCall] = {}
    if wanted:
        for call_id, added_call in reversed(requested):
            if call_id in wanted:
                requests.setdefault(call_id, added_call)
        for call_id in wanted - requests.keys():
            known_call = (known or {}).get(call_id)
            if known_call is not None:
                requests[call_id] = known_call
        if len(requests) < len(wanted):
            for message in reversed(messages[:start]):
                for call in _requested_calls(message):
                    call_id = str(call.get("id") or "")
                    if call_id in wanted and call_id not in requests:
                        requests[call_id] = _tool_call(call)
                if len(requests) == len(wanted):
                    break
    answered = []
    for message in added:
        if getattr(message, "type", None) != "tool":
            continue
        request = requests.get(str(getattr(message, "tool_call_id", "")))
        name = str(getattr(message, "name", None) or (request.name if request else ""))
        answered.append(request or ToolCall(name, f"{name}:?"))
    return requested, tuple(answered)


def requested_tool_calls(messages: Iterable[Any]) -> list[tuple[str, ToolCall]]:
    """(model-issued call id, call) for each tool call the AI messages among `messages`
    request, in order (a call without an id has id "")."""
    return [
        (bounded_text(call.get("id") or ""), _tool_call(call))
        for message in messages
        for call in _requested_calls(message)
    ]


LAST_REQUEST_WINDOW = 256
"""Messages `last_tool_requests` reads back at most (a history without tool calls costs that)."""


def last_tool_requests(messages: Sequence[Any]) -> tuple[list[tuple[str, ToolCall]], set[str]]:
    """The calls the last AI message that requests tools asks for, as in
    `requested_tool_calls`, and the ids among them that a later tool message answers (read
    from the newest message backwards, at most `LAST_REQUEST_WINDOW` messages: the cost
    follows the messages since that request)."""
    answered: set[str] = set()
    for message in reversed(messages[-LAST_REQUEST_WINDOW:]):
        if getattr(message, "type", None) == "tool":
            answered.add(bounded_text(getattr(message, "tool_call_id", "") or ""))
        elif _requested_calls(message):
            calls = requested_tool_calls([message])
            return calls, {call_id for call_id, _ in calls if call_id in answered}
    return [], set()


def _requested_calls(message: Any) -> list[Mapping[str, Any]]:
    calls = getattr(message, "tool_calls", None) or ()
    return [call for call in calls if isinstance(call, Mapping)]


def _tool_call(call: Mapping[str, Any]) -> ToolCall:
    name = str(call.get("name", ""))
    args = call.get("args")
    return ToolCall(name, tool_call_key(name, args), argument_hashes(args))


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
                *message_tool_activity(messages, _first_added(messages, previous_messages))
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


MARKED_ID_LIMIT = 256
"""Longest message id a `MessagesMark` keeps (a longer one is not kept: the count is)."""


@dataclass(frozen=True, slots=True)
class MessagesMark:
    """Where a message list ended, kept without its content: how many messages it held and
    its last message's id, from which the messages a later list added are found."""

    count: int
    last_id: str | None = None

    @classmethod
    def of(cls, messages: Sequence[Any]) -> MessagesMark:
        last = getattr(messages[-1], "id", None) if messages else None
        keep = isinstance(last, str) and len(last) <= MARKED_ID_LIMIT
        return cls(len(messages), last if keep else None)

    def first_added(self, messages: Sequence[Any]) -> int:
        """The index of the first message of `messages` added since the mark: the one after
        the marked last message (found by id, newest first), else after `count` messages."""
        n = self.count
        if n == 0:
            return 0
        if self.last_id is not None:
            if len(messages) >= n and getattr(messages[n - 1], "id", None) == self.last_id:
                return n  # appended to (what add_messages does): no scan of the history
            for index in range(len(messages) - 1, -1, -1):
                if getattr(messages[index], "id", None) == self.last_id:
                    return index + 1
        return min(n, len(messages))


def _first_added(messages: Sequence[Any], previous: Sequence[Any] | MessagesMark | None) -> int:
    if previous is None:
        return len(messages)
    mark = previous if isinstance(previous, MessagesMark) else MessagesMark.of(previous)
    return mark.first_added(messages)


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


# --- records from exported spans --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpanFact:
    """The part of an exported span that records and the resume log read."""

    name: str
    start_ns: int
    attributes: Mapping[str, Any]
    events: tuple[tuple[str, Mapping[str, Any]], ...] = ()


def span_facts(spans: Iterable[Any]) -> list[SpanFact]:
    """`SpanFact`s from SDK `ReadableSpan`s or `otlp_json.SpanRecord`s (duck-typed)."""
    facts = []
    for span in spans:
        start = getattr(span, "start_time_unix_nano", None)
        if start is None:
            start = getattr(span, "start_time", None) or 0
        events = tuple(
            (str(event.name), dict(event.attributes or {})) for event in getattr(span, "events", ())
        )
        facts.append(SpanFact(str(span.name), int(start), dict(span.attributes or {}), events))
    return facts


def span_records(spans: Iterable[SpanFact], thread_id: str | None = None) -> list[CheckpointRecord]:
    """Records of the checkpoints written in exported `langgraph.checkpoint.put` spans.

    Channel hashes come from the `langgraph.channel` events of each put (changed channels) and
    are carried over from the parent's record for unchanged ones. Spans carry no tool-call
    arguments, so these records have no tool calls: offline, only the `state` and node
    `trajectory` detectors apply to them.
    """
    wanted = bounded_text(thread_id)  # spans carry the thread id bounded
    puts = sorted(
        (
            s
            for s in spans
            if s.name == names.SPAN_PUT
            and (thread_id is None or str(s.attributes.get(names.THREAD_ID)) == wanted)
        ),
        key=lambda s: str(s.attributes.get(names.CHECKPOINT_ID, "")),
    )
    hashes_by_id: dict[str, dict[str, str]] = {}
    records = []
    for span in puts:
        attrs = span.attributes
        checkpoint_id = str(attrs.get(names.CHECKPOINT_ID, ""))
        parent = attrs.get(names.PARENT_ID)
        hashes = dict(hashes_by_id.get(str(parent), {})) if parent else {}
        for event_name, event in span.events:
            if event_name == names.EVENT_CHANNEL and names.CHANNEL_NAME in event:
                hashes[str(event[names.CHANNEL_NAME])] = str(event.get(names.CHANNEL_HASH, ""))
        hashes_by_id[checkpoint_id] = hashes
        step = attrs.get(names.STEP)
        records.append(
            CheckpointRecord(
                checkpoint_id=checkpoint_id,
                parent_id=str(parent) if parent else None,
                step=step if isinstance(step, int) else None,
                source=attrs.get(names.SOURCE),
                nodes=tuple(str(n) for n in attrs.get(names.NODES, ()) or ()),
                channel_hashes=hashes,
                state_hash=attrs.get(names.STATE_HASH),
                ns=str(attrs.get(names.CHECKPOINT_NS, "") or ""),
            )
        )
    return records
