"""The stored-metadata format: what the wrapper stores in a checkpoint's metadata under
`names.METADATA_KEY`, and how it is read back.

This is a compatibility contract with the checkpoints already stored: a reader of this release
must read what every earlier release wrote (`names.META_FORMAT_VERSIONS`), and never raise on
edited or corrupted metadata. A change here is a change of `names.META_FORMAT_VERSION` or a new,
optional key; docs/telemetry.md documents the format.

Pure logic: nothing here knows OpenTelemetry or any saver.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.graph_structure import StructureSummary
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.analysis.tool_calls import ToolActivity, ToolCall


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
    history: tuple[str, int, int, str] | None = None
    """(channel, messages, tokens, token counter) of the checkpoint's message history, where
    counted (`names.META_HISTORY`)."""

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
        if self.history is not None:
            value[names.META_HISTORY] = list(self.history)
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
        _history_entry(value.get(names.META_HISTORY)),
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


def _history_entry(entry: Any) -> tuple[str, int, int, str] | None:
    """A stored ``[channel, messages, tokens, counter]``, or None when malformed."""
    if not isinstance(entry, list | tuple) or len(entry) != 4:
        return None
    channel, messages, tokens, counter = entry
    if not (isinstance(channel, str) and isinstance(counter, str)):
        return None
    if type(messages) is not int or type(tokens) is not int or messages < 0 or tokens < 0:
        return None
    return channel, messages, tokens, counter


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
        names.META_HISTORY,
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
