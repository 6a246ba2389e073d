"""Turns checkpointer calls into telemetry: what each call reports, independent of sync/async.

The saver wraps each delegated call in one of the context managers below. They never raise
on their own account: every fault is caught by `Telemetry.guard` and the call goes on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.hashing import StateDigest, StateHasher
from langgraph.checkpoint.otel.options import InstrumentOptions
from langgraph.checkpoint.otel.records import (
    BoundedDict,
    node_of_task,
    nodes_from_versions_seen,
    send_targets,
    task_outcome,
)
from langgraph.checkpoint.otel.summary import summarize
from langgraph.checkpoint.otel.telemetry import Operation, Telemetry

TASKS_CHANNEL = "__pregel_tasks"
UNKNOWN_NODE = "unknown"

Scope = tuple[str, str]


@dataclass(slots=True)
class _SeenCheckpoint:
    id: str
    versions_seen: Mapping[str, Mapping[str, Any]]
    sends: list[str]


@dataclass(slots=True)
class PutCall:
    """A put in progress: `metadata` is what the inner saver must store."""

    metadata: CheckpointMetadata


@dataclass(slots=True)
class ListCall:
    """A listing in progress: counts what it yields."""

    results: int = 0


@dataclass(slots=True)
class LoadCall:
    """A load in progress: `done()` reports what was loaded."""

    op: Operation | None = None
    _finish: Callable[[Operation, Any], None] | None = field(default=None, repr=False)

    def done(self, result: Any) -> Any:
        """Report the loaded checkpoint (if any) and return it unchanged."""
        if self.op is not None and self._finish is not None:
            self.op.telemetry.guard("describe load", self._finish, self.op, result)
        return result


def config_attributes(config: RunnableConfig | None) -> dict[str, AttributeValue]:
    """Thread, namespace and checkpoint id from a config, where present."""
    configurable = (config or {}).get("configurable") or {}
    attributes: dict[str, AttributeValue] = {}
    thread_id = configurable.get("thread_id")
    if thread_id is not None:
        attributes[names.THREAD_ID] = str(thread_id)
        attributes[names.CONVERSATION_ID] = str(thread_id)
    ns = configurable.get("checkpoint_ns")
    if ns is not None:
        attributes[names.CHECKPOINT_NS] = str(ns)
    checkpoint_id = configurable.get("checkpoint_id")
    if checkpoint_id is not None:
        attributes[names.CHECKPOINT_ID] = str(checkpoint_id)
    return attributes


def _scope(config: RunnableConfig) -> Scope:
    configurable = config.get("configurable") or {}
    return (str(configurable.get("thread_id", "")), str(configurable.get("checkpoint_ns", "")))


class CheckpointObserver:
    """Everything one instrumented saver reports, shared by its sync and async methods."""

    def __init__(
        self,
        saver_name: str,
        options: InstrumentOptions,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        fallback_encoder: Callable[[Any], bytes] | None = None,
    ) -> None:
        self.options = options
        self.telemetry = Telemetry(saver_name, tracer_provider, meter_provider)
        self._lock = threading.Lock()
        self._hasher = StateHasher(options.hash_cache_size, fallback=fallback_encoder)
        self._last_put: BoundedDict[Scope, _SeenCheckpoint] = BoundedDict(options.hash_cache_size)
        self._writers: BoundedDict[tuple[str, str, str], set[str]] = BoundedDict(
            options.hash_cache_size
        )

    def active(self) -> bool:
        """Whether this call should produce telemetry at all."""
        return self.options.enabled and not Telemetry.suppressed()

    # --- writes -----------------------------------------------------------------------------

    @contextmanager
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Iterator[PutCall]:
        """Observe one checkpoint write; yields the metadata to store."""
        call = PutCall(metadata)
        if not self.active():
            yield call
            return
        attributes = config_attributes(config)
        attributes.pop(names.CHECKPOINT_ID, None)
        attributes[names.CHECKPOINT_ID] = str(checkpoint.get("id", ""))
        with self.telemetry.operation(names.SPAN_PUT, "put", attributes) as op:
            self.telemetry.guard(
                "describe put", self._describe_put, op, call, config, checkpoint, new_versions
            )
            yield call

    def _describe_put(
        self,
        op: Operation,
        call: PutCall,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
    ) -> None:
        scope = _scope(config)
        parent_id = (config.get("configurable") or {}).get("checkpoint_id")
        values = checkpoint.get("channel_values") or {}
        nodes = self._nodes_applied(scope, parent_id, checkpoint)
        metadata = call.metadata
        attributes: dict[str, AttributeValue] = {
            names.NODES: nodes,
            names.CHANNELS_CHANGED: sorted(new_versions),
            names.VERSION: int(checkpoint.get("v", 0)),
        }
        if parent_id is not None:
            attributes[names.PARENT_ID] = str(parent_id)
        if isinstance(metadata.get("step"), int):
            attributes[names.STEP] = metadata["step"]
        if metadata.get("source") is not None:
            attributes[names.SOURCE] = str(metadata["source"])

        digest: StateDigest | None = None
        if op.recording or self.telemetry.metrics_recording():
            with self._lock:
                digest = self.telemetry.guard(
                    "hash state",
                    self._hasher.digest_state,
                    scope,
                    values,
                    checkpoint.get("channel_versions") or {},
                    [c for c in new_versions if c in values],
                )
        if digest is not None:
            attributes[names.STATE_HASH] = digest.state_hash
            attributes[names.SIZE_BYTES] = digest.size_bytes
            attributes[names.WRITTEN_BYTES] = digest.written_bytes
            self._channel_events(op, digest, values)
            self.telemetry.record_sizes(
                digest.size_bytes, [(c, digest.channels[c].size) for c in digest.changed]
            )
            if self.options.store_hashes and not _user_claims_metadata_key(config, metadata):
                call.metadata = {**metadata, names.METADATA_KEY: _stored_hashes(digest)}  # type: ignore[typeddict-unknown-key]
        op.set(attributes)

    def _nodes_applied(
        self, scope: Scope, parent_id: str | None, checkpoint: Checkpoint
    ) -> list[str]:
        versions_seen = checkpoint.get("versions_seen") or {}
        values = checkpoint.get("channel_values") or {}
        with self._lock:
            previous = self._last_put.get(scope)
            self._last_put[scope] = _SeenCheckpoint(
                str(checkpoint.get("id", "")),
                versions_seen,
                send_targets(values.get(TASKS_CHANNEL)),
            )
            writers = self._writers.get((*scope, str(parent_id)), set())
        nodes = set(writers)
        if previous is not None and parent_id is not None and previous.id == parent_id:
            nodes.update(nodes_from_versions_seen(previous.versions_seen, versions_seen))
        return sorted(nodes)

    def _channel_events(
        self, op: Operation, digest: StateDigest, values: Mapping[str, Any]
    ) -> None:
        if not op.recording:
            return
        changed = sorted(digest.changed, key=lambda c: -digest.channels[c].size)
        for channel in changed[: self.options.max_channel_events]:
            channel_digest = digest.channels[channel]
            previous = digest.previous.get(channel)
            op.event(
                names.EVENT_CHANNEL,
                {
                    names.CHANNEL_NAME: channel,
                    names.CHANNEL_HASH: channel_digest.hash,
                    names.CHANNEL_SIZE_BYTES: channel_digest.size,
                    names.CHANNEL_SUMMARY: summarize(
                        values.get(channel), previous.count if previous else None
                    ),
                },
            )

    @contextmanager
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Iterator[None]:
        """Observe one pending-writes call. Never looks the checkpoint up."""
        if not self.active():
            yield
            return
        with self.telemetry.operation(
            names.SPAN_PUT_WRITES, "put_writes", config_attributes(config)
        ) as op:
            self.telemetry.guard(
                "describe put_writes", self._describe_writes, op, config, writes, task_id, task_path
            )
            yield

    def _describe_writes(
        self,
        op: Operation,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> None:
        scope = _scope(config)
        checkpoint_id = str((config.get("configurable") or {}).get("checkpoint_id", ""))
        channels = [channel for channel, _ in writes]
        with self._lock:
            seen = self._last_put.get(scope)
            sends = seen.sends if seen is not None and seen.id == checkpoint_id else []
            node = node_of_task(task_id, task_path, sends)
            if node is not None:
                key = (*scope, checkpoint_id)
                writers = self._writers.get(key) or set()
                writers.add(node)
                self._writers[key] = writers
        outcome = task_outcome(channels)
        op.set(
            {
                names.TASK_ID: task_id,
                names.TASK_PATH: task_path,
                names.TASK_NODE: node or UNKNOWN_NODE,
                names.WRITES_CHANNELS: sorted(set(channels)),
                names.WRITES_COUNT: len(writes),
                names.TASK_OUTCOME: outcome,
            }
        )
        self.telemetry.count_task_outcome(node or UNKNOWN_NODE, outcome)

    # --- reads and maintenance --------------------------------------------------------------

    @contextmanager
    def load(self, config: RunnableConfig) -> Iterator[LoadCall]:
        """Observe a load (get / get_tuple); `LoadCall.done(result)` reports the result."""
        if not self.active():
            yield LoadCall()
            return
        with self.telemetry.operation(names.SPAN_GET, "get", config_attributes(config)) as op:
            yield LoadCall(op, _describe_load)

    @contextmanager
    def listing(self, config: RunnableConfig | None, limit: int | None) -> Iterator[ListCall]:
        """Observe a listing; the span covers the whole iteration (not made current)."""
        call = ListCall()
        if not self.active():
            yield call
            return
        attributes = config_attributes(config)
        if limit is not None:
            attributes[names.LIST_LIMIT] = limit
        with self.telemetry.operation(names.SPAN_LIST, "list", attributes, activate=False) as op:
            try:
                yield call
            finally:
                op.set({names.LIST_RESULTS: call.results})

    @contextmanager
    def maintenance(
        self, span_name: str, operation: str, attributes: Mapping[str, AttributeValue]
    ) -> Iterator[None]:
        """Observe delete_thread, delete_for_runs, copy_thread, prune and the like."""
        if not self.active():
            yield
            return
        with self.telemetry.operation(span_name, operation, attributes):
            yield


def _describe_load(op: Operation, result: Any) -> None:
    if result is None:
        return
    checkpoint = getattr(result, "checkpoint", result)
    attributes: dict[str, AttributeValue] = {names.CHECKPOINT_ID: str(checkpoint.get("id", ""))}
    metadata = getattr(result, "metadata", None) or {}
    if isinstance(metadata.get("step"), int):
        attributes[names.STEP] = metadata["step"]
    if metadata.get("source") is not None:
        attributes[names.SOURCE] = str(metadata["source"])
    op.set(attributes)


def _user_claims_metadata_key(config: RunnableConfig, metadata: CheckpointMetadata) -> bool:
    """Whether the stored metadata would carry a user's own value under our key.

    Savers merge `config["metadata"]` and `config["configurable"]` into the stored metadata;
    a user's value there is kept as is and no hashes are stored.
    """
    return any(
        names.METADATA_KEY in source
        for source in (metadata, config.get("metadata") or {}, config.get("configurable") or {})
    )


def _stored_hashes(digest: StateDigest) -> dict[str, Any]:
    return {
        names.META_FORMAT: names.META_FORMAT_VERSION,
        names.META_STATE_HASH: digest.state_hash,
        names.META_CHANNELS: {
            name: [channel.hash, channel.size] for name, channel in sorted(digest.channels.items())
        },
    }
