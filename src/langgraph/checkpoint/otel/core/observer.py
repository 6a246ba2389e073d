"""Turns checkpointer calls into telemetry: what each call reports, independent of sync/async.

The saver wraps each delegated call in one of the context managers below. They never raise
on their own account: every fault is caught by `Telemetry.guard` and the call goes on.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.divergence import Finding
from langgraph.checkpoint.otel.analysis.hashing import StateDigest, StateHasher
from langgraph.checkpoint.otel.analysis.lineage import (
    LoadedCheckpoint,
    Resume,
    RunStart,
    classify_resume,
    parse_carrier,
)
from langgraph.checkpoint.otel.analysis.records import (
    PSEUDO_NODES,
    TASKS_CHANNEL,
    UNKNOWN_NODE,
    Scope,
    StoredTelemetry,
    bounded_text,
    is_state_channel,
    key_text,
    last_tool_requests,
    node_of_task,
    read_stored_telemetry,
    requested_tool_calls,
    send_targets,
    stored_nodes,
    task_outcome,
)
from langgraph.checkpoint.otel.analysis.summary import summarize
from langgraph.checkpoint.otel.bounded import BoundedDict
from langgraph.checkpoint.otel.core.pregel_signals import LoopRun, RunOutcome, update_node
from langgraph.checkpoint.otel.core.telemetry import Operation, RunTrace, Telemetry
from langgraph.checkpoint.otel.core.tool_registry import TOOL_CALLS
from langgraph.checkpoint.otel.core.watch import DivergenceWatch, ReferenceWalk
from langgraph.checkpoint.otel.options import InstrumentOptions


@dataclass(slots=True)
class _SeenCheckpoint:
    id: str
    versions_seen: Mapping[str, Mapping[str, Any]]
    sends: list[str]


@dataclass(slots=True)
class _Run:
    """A graph run in progress on one (thread, namespace): its trace and its loop."""

    trace: RunTrace
    loop: LoopRun
    task_outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(node, outcome) -> pending-write calls, added to `task.outcomes` when the run ends (one
    measurement per pair instead of one per call)."""
    lineage: Lineage | None = None
    """The thread's line at the run's last put, recorded when the run ends."""
    ended: bool = False


@dataclass(slots=True)
class InnerCall:
    """A write in progress; the saver reports when its inner call began (`inner_since`), so
    `operation.duration` is that call alone."""

    op: Operation | None = None

    def inner_since(self, started: float) -> None:
        """The inner call began at `started` (`time.perf_counter()`) and has just returned."""
        if self.op is not None:
            self.op.inner_since(started)


@dataclass(slots=True, kw_only=True)
class PutCall(InnerCall):
    """A put in progress: `metadata` is what the inner saver must store."""

    metadata: CheckpointMetadata
    new_versions: ChannelVersions
    """What the inner saver must store as new channel versions (a migration adds some)."""
    findings: list[Finding] = field(default_factory=list)


@dataclass(slots=True)
class PruneCall:
    """A prune in progress: the saver sets `before` and `after` (checkpoints of the threads)
    when `counting`, and times the inner call alone with `inner()`."""

    op: Operation | None = None
    counting: bool = False
    before: int | None = None
    after: int | None = None

    def inner(self) -> AbstractContextManager[None]:
        """Time the inner prune (the counting is the library's own time)."""
        return self.op.inner() if self.op is not None else nullcontext()


PRUNE_COUNT_LIMIT = 10_000
"""Checkpoints a prune span counts at most before and after (beyond: not reported)."""


@dataclass(slots=True)
class ListCall:
    """A listing in progress: counts what it yields."""

    results: int = 0


@dataclass(slots=True)
class LoadCall:
    """A load in progress: `done()` reports what was loaded and returns it unchanged.

    When the load starts a run from an explicit checkpoint id, the saver also loads the
    thread's latest checkpoint (`wants_latest`) so a replay of an older one is told apart.
    """

    op: Operation | None = None
    run: RunStart | None = None
    run_trace: RunTrace | None = None
    config: RunnableConfig | None = None
    walk: ReferenceWalk | None = None
    """After a fork: the reference-branch reads the saver must drive (see `watch`)."""
    migration: tuple[str, str] | None = None
    """(written, running) schema versions when the loaded checkpoint must be migrated."""
    _finish: Callable[[LoadCall, Any, Any], None] | None = field(default=None, repr=False)
    _migrate: Callable[[LoadCall, CheckpointTuple, NextVersion], CheckpointTuple] | None = field(
        default=None, repr=False
    )
    _started: float = 0.0
    """When the inner load began (the operation's duration is the inner calls' alone)."""

    @property
    def wants_latest(self) -> bool:
        """Whether the saver should also pass the thread's latest checkpoint to `done`."""
        return self.op is not None and self.run is not None and self.run.explicit_checkpoint

    def done(self, result: Any, latest: Any = None, next_version: NextVersion | None = None) -> Any:
        """Report the loaded checkpoint (if any) and return it: unchanged, or migrated to the
        running schema version (see `migrations`; `next_version` is the inner saver's).

        Raises `SchemaMigrationError` when a declared migration cannot be applied."""
        if self.op is not None:
            self.op.inner_since(self._started)
            if self._finish is not None:
                self.op.telemetry.guard("describe load", self._finish, self, result, latest)
            if self.migration is not None and self._migrate is not None and next_version:
                return self._migrate(self, result, next_version)
        return result


NextVersion = Callable[[Any, None], Any]
"""A saver's `get_next_version`."""


def latest_config(config: RunnableConfig) -> RunnableConfig:
    """`config` addressing the thread's latest checkpoint instead of a specific one."""
    configurable = {**(config.get("configurable") or {}), "checkpoint_id": None}
    return {**config, "configurable": configurable}


def config_attributes(config: RunnableConfig | None) -> dict[str, AttributeValue]:
    """Thread, namespace and checkpoint id from a config, where present (bounded, never
    raising: see `records.bounded_text`)."""
    configurable = (config or {}).get("configurable") or {}
    attributes: dict[str, AttributeValue] = {}
    thread_id = configurable.get("thread_id")
    if thread_id is not None:
        attributes[names.THREAD_ID] = attributes[names.CONVERSATION_ID] = bounded_text(thread_id)
    ns = configurable.get("checkpoint_ns")
    if ns is not None:
        attributes[names.CHECKPOINT_NS] = bounded_text(ns)
    checkpoint_id = configurable.get("checkpoint_id")
    if checkpoint_id is not None:
        attributes[names.CHECKPOINT_ID] = bounded_text(checkpoint_id)
    return attributes


def _enclosing_scope(scope: Scope) -> Scope:
    """The scope of the graph a subgraph's namespace (``parent:task|child:task``) runs in."""
    thread_id, ns = scope
    return (thread_id, ns.rsplit("|", 1)[0] if "|" in ns else "")


def _scope(config: RunnableConfig) -> Scope:
    """The cache key of a config's thread and namespace: full strings, never truncated (two
    long thread ids with the same start never share state), never raising."""
    configurable = config.get("configurable") or {}
    return (
        key_text(configurable.get("thread_id", "")),
        key_text(configurable.get("checkpoint_ns", "")),
    )


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
        self._hasher = StateHasher(
            options.hash_cache_size,
            fallback=fallback_encoder,
            max_list_memo_bytes=options.hash_memo_bytes,
        )
        self._last_put: BoundedDict[Scope, _SeenCheckpoint] = BoundedDict(options.hash_cache_size)
        self._writers: BoundedDict[Scope, dict[str, set[str]]] = BoundedDict(
            options.hash_cache_size
        )
        """scope -> checkpoint id -> the nodes of the tasks seen writing on that checkpoint."""
        self._resumed_from: BoundedDict[Scope, tuple[str, str]] = BoundedDict(
            options.hash_cache_size
        )
        self._runs: BoundedDict[Scope, _Run] = BoundedDict(options.hash_cache_size)
        self._migrated: BoundedDict[Scope, dict[str, Any]] = BoundedDict(options.hash_cache_size)
        """scope -> channels a migration changed (and their new versions), until the next put
        stores them."""
        self._lineages: BoundedDict[Scope, BoundedDict[str, Lineage]] = BoundedDict(
            options.hash_cache_size
        )
        """scope -> checkpoint id -> its line (checkpoints, written bytes), for the last
        checkpoints put or loaded."""
        self._watch = DivergenceWatch(options.divergence, messages_channel=options.messages_channel)

    def forget_threads(self, thread_ids: Iterable[Any]) -> None:
        """Drop what the caches keep of these threads (after `delete_thread`, `prune`)."""
        gone = {key_text(thread_id) for thread_id in thread_ids}

        def stale(scope: Any) -> bool:
            return isinstance(scope, tuple) and bool(scope) and scope[0] in gone

        with self._lock:
            for cache in (
                self._last_put,
                self._writers,
                self._resumed_from,
                self._lineages,
                self._migrated,
            ):
                cache.evict(stale)
            self._watch.forget(stale)
        self._hasher.forget(stale)

    def cache_sizes(self) -> dict[str, int]:
        """Entries in each in-process cache (for tests and diagnostics)."""
        with self._lock:
            sizes = {
                "last_put": len(self._last_put),
                "writers": sum(map(len, self._writers.values())),
                "resumed_from": len(self._resumed_from),
                "lineages": sum(map(len, self._lineages.values())),
                "runs": len(self._runs),
                "watch_sessions": self._watch.session_count(),
            }
        return {**sizes, **{f"hasher_{k}": v for k, v in self._hasher.cache_sizes().items()}}

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
        call = PutCall(metadata=metadata, new_versions=new_versions)
        if not self.active():
            yield call
            return
        attributes = config_attributes(config)
        attributes.pop(names.CHECKPOINT_ID, None)
        attributes[names.CHECKPOINT_ID] = bounded_text(checkpoint.get("id", ""))
        scope = _scope(config)
        run = self._run_trace(scope)
        if self._migrated:
            self.telemetry.guard("store migrated", self._store_migrated, call, scope, checkpoint)
        with self.telemetry.operation(names.SPAN_PUT, "put", attributes, run=run) as op:
            self.telemetry.guard(
                "describe put",
                self._describe_put,
                op,
                call,
                scope,
                config,
                checkpoint,
                new_versions,
            )
            call.op = op
            yield call
            # the checkpoint is stored; a strict-mode callback may now stop the run
            if call.findings and self.options.on_divergence is not None:
                for finding in call.findings:
                    self.options.on_divergence(finding)

    def _store_migrated(self, call: PutCall, scope: Scope, checkpoint: Checkpoint) -> None:
        """The first put after a migration also stores the channels it changed (at the new
        versions the loaded checkpoint was given, unless the run changed them since)."""
        with self._lock:
            migrated = self._migrated.pop(scope, None)
        if not migrated:
            return
        versions = checkpoint.get("channel_versions") or {}
        extra = {c: v for c, v in migrated.items() if versions.get(c) == v}
        call.new_versions = {**extra, **call.new_versions}

    def _describe_put(
        self,
        op: Operation,
        call: PutCall,
        scope: Scope,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
    ) -> None:
        parent_id = (config.get("configurable") or {}).get("checkpoint_id")
        values = checkpoint.get("channel_values") or {}
        metadata = call.metadata
        nodes = self._nodes_applied(scope, parent_id, checkpoint, metadata.get("source"))
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
        with self._lock:
            resumed_from = self._resumed_from.pop(scope, None)
        if resumed_from is not None:
            attributes[names.RESUME_FROM_CHECKPOINT_ID] = bounded_text(resumed_from[1])
        schema_version = self.options.schema_version
        if schema_version is not None:
            attributes[names.SCHEMA_VERSION] = schema_version

        digest: StateDigest | None = None
        if op.recording or self.telemetry.metrics_recording():
            # the hasher has its own lock: other threads' calls do not wait for this hashing
            digest = self.telemetry.guard(
                "hash state",
                self._hasher.digest_state,
                scope,
                values,
                checkpoint.get("channel_versions") or {},
                [c for c in new_versions if c in values],
            )
        state_hash: str | None = None
        channel_digests: dict[str, tuple[str, int]] = {}
        lineage: Lineage | None = None
        if digest is not None:
            attributes[names.STATE_HASH] = digest.state_hash
            attributes[names.SIZE_BYTES] = digest.size_bytes
            attributes[names.WRITTEN_BYTES] = digest.written_bytes
            lineage = self._grow(scope, checkpoint, parent_id, digest, attributes)
            state_changes = [c for c in digest.changed if is_state_channel(c)]
            self._channel_events(op, digest, state_changes, values)
            if op.recording:
                self._tool_call_events(op, digest, values, parent_id is None)
            self.telemetry.record_sizes(
                digest.size_bytes, [(c, digest.channels[c].size) for c in state_changes]
            )
            if self.options.store_hashes:
                state_hash = digest.state_hash
                channel_digests = {name: (d.hash, d.size) for name, d in digest.channels.items()}
        call.findings = self._watch_put(scope, config, checkpoint, metadata, nodes, digest)
        if call.findings:
            attributes[names.DIVERGENCE_DETECTED] = True
            self._report_findings(op, call.findings)
        op.set(attributes)
        context = op.trace_context()
        if (state_hash or context or lineage or schema_version) and not _user_claims_metadata_key(
            config, metadata
        ):
            stored = StoredTelemetry(
                state_hash,
                channel_digests,
                tuple(nodes),
                context.carrier() if context else {},
                resumed_from,
                schema_version,
                lineage,
            )
            call.metadata = {**metadata, names.METADATA_KEY: stored.to_metadata()}  # type: ignore[typeddict-unknown-key]

    def _grow(
        self,
        scope: Scope,
        checkpoint: Checkpoint,
        parent_id: str | None,
        digest: StateDigest,
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
        with self._lock:
            known = self._lineages.get(scope)
            parent = (0, 0) if not parent_id else known.get(str(parent_id)) if known else None
            if parent is None:
                return None  # the parent's line is unknown (written without this library)
            lineage = (parent[0] + 1, parent[1] + digest.written_bytes)
            self._note_lineage(scope, str(checkpoint.get("id", "")), lineage)
            run = self._runs.get(scope) if not scope[1] else None
            if run is not None:
                run.lineage = lineage
        attributes[names.THREAD_CHECKPOINTS] = lineage[0]
        attributes[names.THREAD_WRITTEN_BYTES] = lineage[1]
        return lineage

    def _note_lineage(self, scope: Scope, checkpoint_id: str, lineage: Lineage) -> None:
        """Remember a checkpoint's line for its children (under `_lock`)."""
        known = self._lineages.get(scope)
        if known is None:
            self._lineages[scope] = known = BoundedDict(_LINEAGE_CHECKPOINTS)
        known[checkpoint_id] = lineage

    def _tool_call_events(
        self, op: Operation, digest: StateDigest, values: Mapping[str, Any], first: bool
    ) -> None:
        """One `langgraph.tool_call` event per tool call the new messages request (known only
        where the hasher saw the channel's previous length, or on a thread's first put)."""
        channel = self.options.messages_channel
        messages = values.get(channel)
        if channel not in digest.changed or not isinstance(messages, list):
            return
        previous = digest.previous.get(channel)
        start = previous.count if previous is not None else (0 if first else None)
        if start is None:
            return
        calls = requested_tool_calls(messages[start:])
        if not calls:
            return
        TOOL_CALLS.note(calls)
        for call_id, call in calls[: self.options.max_channel_events]:
            op.event(
                names.EVENT_TOOL_CALL,
                {
                    names.TOOL_NAME: bounded_text(call.name),
                    names.TOOL_CALL_ID: call_id,
                    names.TOOL_IDEMPOTENCY_KEY: bounded_text(call.key),
                },
            )

    def _watch_put(
        self,
        scope: Scope,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        nodes: list[str],
        digest: StateDigest | None,
    ) -> list[Finding]:
        with self._lock:
            return self._watch.observe_put(
                scope,
                config,
                checkpoint,
                metadata,
                nodes=nodes,
                channel_hashes=(
                    {name: d.hash for name, d in digest.channels.items()} if digest else None
                ),
                state_hash=digest.state_hash if digest else None,
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
            op.event(names.EVENT_DIVERGENCE, event)
            self.telemetry.count_divergence(finding.kind)

    def _nodes_applied(
        self, scope: Scope, parent_id: str | None, checkpoint: Checkpoint, source: Any
    ) -> list[str]:
        """The nodes whose writes the checkpoint applies: the tasks that wrote on its parent,
        nodes whose `versions_seen` moved, and (a loop step) the parent's `Send` targets, which
        all ran in the step. A fork copy applies none."""
        with self._lock:
            previous = self._last_put.get(scope)
            self._last_put[scope] = _seen(checkpoint)
            # consumed: the writes on the parent are applied by this put
            writers = (self._writers.get(scope) or {}).pop(str(parent_id), set())
            run = self._runs.get(scope)
        if source == "fork":
            return []
        nodes = set(writers)
        if run is not None:
            nodes.update(run.loop.applied_nodes(str(parent_id), str(checkpoint.get("id", ""))))
        versions_seen = checkpoint.get("versions_seen") or {}
        if parent_id is None:  # the thread's first checkpoint
            nodes.update(stored_nodes(versions_seen, source, None))
        elif previous is not None and previous.id == parent_id:
            nodes.update(
                stored_nodes(versions_seen, source, previous.versions_seen, previous.sends)
            )
        return sorted(nodes)

    def _channel_events(
        self,
        op: Operation,
        digest: StateDigest,
        channels: Sequence[str],
        values: Mapping[str, Any],
    ) -> None:
        if not op.recording:
            return
        changed = sorted(channels, key=lambda c: -digest.channels[c].size)
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
        caller: FrameType | None = None,
    ) -> Iterator[InnerCall]:
        """Observe one pending-writes call. Never looks the checkpoint up.

        `caller` is the frame that called the saver (see `pregel_signals.update_node`).
        """
        call = InnerCall()
        if not self.active():
            yield call
            return
        attributes = config_attributes(config)
        described = self.telemetry.guard(
            "describe put_writes",
            self._describe_writes,
            config,
            writes,
            task_id,
            task_path,
            caller,
        )
        if described is not None:
            attributes.update(described)
        scope = _scope(config)
        outcome = str(described[names.TASK_OUTCOME]) if described is not None else None
        if outcome == "ok" and not self.options.ok_write_spans:
            span_name = None  # timed and counted, no span (see `ok_write_spans`)
        else:
            span_name = names.SPAN_PUT_WRITES
        run = self._run_trace(scope) if span_name is not None else None
        with self.telemetry.operation(span_name, "put_writes", attributes, run=run) as op:
            call.op = op
            yield call
        if described is not None:
            self._count_task(scope, str(described[names.TASK_NODE]), str(outcome))

    def _count_task(self, scope: Scope, node: str, outcome: str) -> None:
        """Count a pending-writes call: on its run (added when the run ends), else now."""
        with self._lock:
            run = self._runs.get(scope)
            if run is not None:
                run.task_outcomes[(node, outcome)] += 1
                return
        self.telemetry.count_task_outcome(node, outcome)

    def _describe_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        caller: FrameType | None,
    ) -> dict[str, AttributeValue]:
        scope = _scope(config)
        checkpoint_id = str((config.get("configurable") or {}).get("checkpoint_id", ""))
        channels = [channel for channel, _ in writes]
        with self._lock:
            seen = self._last_put.get(scope)
            sends = seen.sends if seen is not None and seen.id == checkpoint_id else []
            node = node_of_task(task_id, task_path, sends)
            if node is None and (run := self._runs.get(scope)) is not None:
                # a push task whose checkpoint's put is not seen yet (durability `async`)
                node = run.loop.task_node(task_id)
            if node is None:
                node = update_node(caller, task_id)  # update_state(..., as_node=...)
            if node is not None and node not in PSEUDO_NODES:
                by_checkpoint = self._writers.get(scope)
                if by_checkpoint is None:
                    self._writers[scope] = by_checkpoint = {}
                by_checkpoint.setdefault(checkpoint_id, set()).add(node)
                while len(by_checkpoint) > _WRITER_CHECKPOINTS:  # writes never applied
                    del by_checkpoint[next(iter(by_checkpoint))]
        return {
            names.TASK_ID: task_id,
            names.TASK_PATH: task_path,
            names.TASK_NODE: node or UNKNOWN_NODE,
            names.WRITES_CHANNELS: sorted(set(channels)),
            names.WRITES_COUNT: len(writes),
            names.TASK_OUTCOME: task_outcome(channels),
        }

    # --- reads and maintenance --------------------------------------------------------------

    @contextmanager
    def load(self, config: RunnableConfig, run: LoopRun | None = None) -> Iterator[LoadCall]:
        """Observe a load (get / get_tuple); `LoadCall.done(result)` reports the result.

        `run` is set when the load starts a run (see `pregel_signals.run_start`): then the run
        begins (its trace, see `_begin_run`), and a load of an existing checkpoint is a resume,
        renamed `langgraph.checkpoint.resume`.
        """
        if not self.active():
            yield LoadCall()
            return
        run_trace = None
        if run is not None:
            run_trace = self.telemetry.guard("begin run", self._begin_run, config, run)
        try:
            with self.telemetry.operation(
                names.SPAN_GET, "get", config_attributes(config), run=run_trace
            ) as op:
                yield LoadCall(
                    op,
                    run.start if run else None,
                    run_trace,
                    config,
                    _finish=self._describe_load,
                    _migrate=self._apply_migrations,
                    _started=time.perf_counter(),
                )
        except BaseException as exc:
            # the loop's entry fails (the inner load, a migration): it never exits, so the
            # run ends here, and its span stops being current
            if run_trace is not None:
                self.telemetry.guard("end run", self._abort_run, config, run_trace, exc)
            raise

    def _abort_run(self, config: RunnableConfig, trace: RunTrace, error: BaseException) -> None:
        scope = _scope(config)
        with self._lock:
            run = self._runs.get(scope)
        if run is not None and run.trace is trace:
            self._end_run(scope, run, "error", error)

    def _begin_run(self, config: RunnableConfig, loop: LoopRun) -> RunTrace:
        """Open the run's trace and remember it for the spans of its (thread, namespace) until
        the loop exits."""
        scope = _scope(config)
        attributes = {
            k: v
            for k, v in config_attributes(config).items()
            if k in (names.THREAD_ID, names.CONVERSATION_ID)
        }
        if loop.graph_name is not None:
            attributes[names.GRAPH_NAME] = loop.graph_name
        with self._lock:
            enclosing = self._runs.get(_enclosing_scope(scope)) if scope[1] else None
        trace = self.telemetry.begin_run(
            attributes,
            parent=enclosing.trace if enclosing is not None else None,
            activate=not loop.is_async,
        )
        run = _Run(trace, loop)
        with self._lock:
            self._runs[scope] = run
        loop.watch_steps(self.telemetry.fault)

        def ended(outcome: RunOutcome, error: BaseException | None) -> None:
            self.telemetry.guard("end run", self._end_run, scope, run, outcome, error)

        if not loop.on_exit(ended):
            ended("finished", None)
        return trace

    def _end_run(
        self, scope: Scope, run: _Run, outcome: RunOutcome, error: BaseException | None
    ) -> None:
        with self._lock:
            if run.ended:
                return
            run.ended = True
            if self._runs.get(scope) is run:
                del self._runs[scope]
                # what a run needs of its scope ends with it: the next run starts from what it
                # loads, as a fresh process would
                self._last_put.pop(scope, None)
                self._writers.pop(scope, None)
                self._lineages.pop(scope, None)
                self._migrated.pop(scope, None)
            counts, run.task_outcomes = run.task_outcomes, Counter()
        for (node, kind), calls in counts.items():
            self.telemetry.count_task_outcome(node, kind, calls)
        if run.lineage is not None:
            self.telemetry.record_thread_growth(*run.lineage)
        self._hasher.release(scope)
        self.telemetry.end_run(run.trace, outcome, error)

    def _run_trace(self, scope: Scope) -> RunTrace | None:
        """The trace of the run in `scope`, or else of the nearest enclosing graph's run."""
        with self._lock:
            while (run := self._runs.get(scope)) is None and scope[1]:
                scope = _enclosing_scope(scope)
        return run.trace if run is not None else None

    def _describe_load(self, call: LoadCall, result: Any, latest: Any) -> None:
        op = call.op
        if op is None or result is None:
            return
        attributes = _loaded_attributes(result)
        if not isinstance(result, CheckpointTuple):
            op.set(attributes)
            return
        stored = read_stored_telemetry(result.metadata)
        scope = _scope(result.config)
        if stored is not None and stored.lineage is not None:
            with self._lock:
                self._note_lineage(scope, str(result.checkpoint.get("id", "")), stored.lineage)
        if call.run is not None and call.config is not None:
            resume = self._classify(call.run, result, latest, stored)
            op.rename(names.SPAN_RESUME, "resume")
            attributes.update(_resume_attributes(resume, result))
            writer = parse_carrier(stored.carrier if stored else None)
            if writer is not None:
                op.link(writer, {names.LINK_TYPE: LINK_CHECKPOINT_WRITER})
                attributes[names.RESUME_WRITER_TRACE_ID] = f"{writer.trace_id:032x}"
                attributes[names.RESUME_WRITER_SPAN_ID] = f"{writer.span_id:016x}"
            if call.run_trace is not None:
                call.run_trace.set({names.RESUME_KIND: resume.kind})
            call.migration = self._check_schema(op, stored, attributes)
            self._note_tool_requests(scope, resume, result)
            with self._lock:
                self._last_put[scope] = _seen(result.checkpoint)
                self._watch.start(scope, resume, result)
                if resume.kind == "fork":
                    call.walk = self._watch.reference_walk(scope, result, latest)
                self._resumed_from[scope] = (resume.kind, resume.from_checkpoint_id)
                self._hasher.adopt(
                    scope,
                    result.checkpoint.get("channel_values") or {},
                    result.checkpoint.get("channel_versions") or {},
                    # a migrated checkpoint's values are not the ones its hashes describe
                    stored.channels if stored is not None and not call.migration else None,
                )
            self.telemetry.count_resume(resume.kind)
        op.set(attributes)

    def _check_schema(
        self, op: Operation, stored: StoredTelemetry | None, attributes: dict[str, AttributeValue]
    ) -> tuple[str, str] | None:
        """Report a resume of a checkpoint written under another schema version; the
        (written, running) versions when declared migrations must be applied."""
        running = self.options.schema_version
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
        self.telemetry.count_schema_mismatch(written, running)
        return (written, running) if self.options.migrations is not None else None

    def _apply_migrations(
        self, call: LoadCall, loaded: CheckpointTuple, next_version: NextVersion
    ) -> CheckpointTuple:
        """The loaded checkpoint with the declared migrations applied, one span each.

        The channels a migration changed get a new version (above every version in the
        checkpoint), and the run's first put stores them as written, so the migrated values
        persist instead of the stored ones. Raises `SchemaMigrationError`.
        """
        assert call.migration is not None and self.options.migrations is not None
        written, running = call.migration
        path = self.options.migrations.path(written, running)
        checkpoint = loaded.checkpoint
        values: dict[str, Any] = dict(checkpoint.get("channel_values") or {})
        attributes = config_attributes(loaded.config)
        for step in path:
            span_attributes = {
                **attributes,
                names.MIGRATION_FROM: step.source,
                names.MIGRATION_TO: step.target,
            }
            with self.telemetry.operation(
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
        scope = _scope(loaded.config)
        self._hasher.forget(lambda key: key == scope)
        with self._lock:
            self._migrated[scope] = {c: versions[c] for c in changed}
        migrated: Checkpoint = {
            **checkpoint,
            "channel_values": values,
            "channel_versions": versions,
        }
        return CheckpointTuple(
            loaded.config, migrated, loaded.metadata, loaded.parent_config, loaded.pending_writes
        )

    def _note_tool_requests(self, scope: Scope, resume: Resume, loaded: CheckpointTuple) -> None:
        """Note the last tool calls the loaded state requests (for the resumed run's tool
        spans) and, after a crash, error or interrupt, those never answered: in flight when
        the last run stopped (their side effects may have run). After a `continue` nothing
        is scheduled: no tool runs from the loaded state."""
        if resume.kind == "continue":
            TOOL_CALLS.note_in_flight(scope[0], ())
            return
        messages = (loaded.checkpoint.get("channel_values") or {}).get(
            self.options.messages_channel
        )
        if not isinstance(messages, list):
            return
        calls, answered = last_tool_requests(messages)
        TOOL_CALLS.note(calls)
        in_flight = (
            [bounded_text(call.key) for call_id, call in calls if call_id not in answered]
            if resume.kind in _IN_FLIGHT_KINDS
            else []
        )
        TOOL_CALLS.note_in_flight(scope[0], in_flight)

    @staticmethod
    def _classify(
        run: RunStart, loaded: CheckpointTuple, latest: Any, stored: StoredTelemetry | None
    ) -> Resume:
        explicit = run.explicit_checkpoint and (
            isinstance(latest, CheckpointTuple)
            and latest.checkpoint["id"] != loaded.checkpoint["id"]
        )
        facts = LoadedCheckpoint(
            checkpoint_id=str(loaded.checkpoint["id"]),
            source=(loaded.metadata or {}).get("source"),
            channel_values=loaded.checkpoint.get("channel_values") or {},
            pending_write_channels=[w[1] for w in loaded.pending_writes or ()],
            nodes=stored.nodes if stored else (),
        )
        return classify_resume(
            facts,
            RunStart(explicit, run.interrupt_before, run.interrupt_after),
        )

    @contextmanager
    def listing(
        self, config: RunnableConfig | None, limit: int | None, run: LoopRun | None = None
    ) -> Iterator[ListCall]:
        """Observe a listing; the span covers the whole iteration (not made current).

        `run` is set when the listing is a run's load (a subgraph's, while its parent replays).
        """
        call = ListCall()
        if not self.active():
            yield call
            return
        attributes = config_attributes(config)
        if limit is not None:
            attributes[names.LIST_LIMIT] = limit
        run_trace = None
        if run is not None and config is not None:
            run_trace = self.telemetry.guard("begin run", self._begin_run, config, run)
        with self.telemetry.operation(
            names.SPAN_LIST, "list", attributes, activate=False, run=run_trace
        ) as op:
            try:
                yield call
            finally:
                op.set({names.LIST_RESULTS: call.results})

    @contextmanager
    def maintenance(
        self,
        span_name: str,
        operation: str,
        attributes: Mapping[str, AttributeValue],
        forget: Iterable[Any] = (),
    ) -> Iterator[None]:
        """Observe delete_thread, delete_for_runs, copy_thread, prune and the like; once the
        inner call succeeded, drop what the caches keep of the threads in `forget`."""
        if not self.active():
            yield
        else:
            with self.telemetry.operation(span_name, operation, attributes) as op, op.inner():
                yield
        self.telemetry.guard("forget threads", self.forget_threads, forget)

    @contextmanager
    def pruning(
        self, attributes: Mapping[str, AttributeValue], thread_ids: Sequence[Any]
    ) -> Iterator[PruneCall]:
        """Observe a prune; while the span records, the saver counts the threads'
        checkpoints before and after (`PruneCall.counting`), reported as what was removed."""
        call = PruneCall()
        if not self.active():
            yield call
        else:
            with self.telemetry.operation(names.SPAN_PRUNE, "prune", attributes) as op:
                call.op = op
                call.counting = op.recording
                yield call
                if call.before is not None and call.after is not None:
                    op.set(
                        {
                            names.PRUNE_CHECKPOINTS_BEFORE: call.before,
                            names.PRUNE_CHECKPOINTS_REMOVED: max(0, call.before - call.after),
                        }
                    )
        self.telemetry.guard("forget threads", self.forget_threads, thread_ids)


LINK_CHECKPOINT_WRITER = "checkpoint_writer"
Lineage = tuple[int, int]
"""(checkpoints, written bytes) of a checkpoint's line of ancestors, itself included."""
_IN_FLIGHT_KINDS = frozenset({"crash", "error", "interrupt"})
"""Resumes after which a tool call requested but not answered may already have run."""
_LINEAGE_CHECKPOINTS = 4
"""Checkpoints per scope whose lines are remembered for their children."""
_WRITER_CHECKPOINTS = 16
"""Checkpoints per scope whose writers are remembered until a put applies them."""


def _differs(new: Any, old: Any) -> bool:
    """Whether a migrated channel value differs from the loaded one (unsure: it does)."""
    if new is old:
        return False
    try:
        return bool(new != old)
    except Exception:
        return True


def _seen(checkpoint: Checkpoint) -> _SeenCheckpoint:
    """What a later put needs of this checkpoint: copied, as LangGraph goes on changing the
    loaded checkpoint's `versions_seen` in place while it applies writes."""
    values = checkpoint.get("channel_values") or {}
    versions_seen = checkpoint.get("versions_seen") or {}
    return _SeenCheckpoint(
        str(checkpoint.get("id", "")),
        {node: dict(seen) for node, seen in versions_seen.items()},
        send_targets(values.get(TASKS_CHANNEL)),
    )


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


def _user_claims_metadata_key(config: RunnableConfig, metadata: CheckpointMetadata) -> bool:
    """Whether the stored metadata would carry a user's own value under our key.

    Savers merge `config["metadata"]` and `config["configurable"]` into the stored metadata;
    a user's value there is kept as is and no hashes are stored.
    """
    return any(
        names.METADATA_KEY in source
        for source in (metadata, config.get("metadata") or {}, config.get("configurable") or {})
    )
