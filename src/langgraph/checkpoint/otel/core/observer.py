"""Turns checkpointer calls into telemetry: what each call reports, independent of sync/async.

The saver wraps each delegated call in one of the context managers below, which tie together
the jobs of their own modules: `scope_state` (what is remembered per thread and namespace),
`runs` (a run from its load to its loop's exit), `put_facts` and `put_span` (what a write is,
and its telemetry), `load_facts` and `load_span` (the same for a load), `pending_writes` and
`migrating`. They never raise on their own account: every fault is caught
by `Telemetry.guard` and the call goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from opentelemetry import trace
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.loop import LoopEntry, entering_run
from langgraph.checkpoint.otel.analysis.hashing import StateHasher
from langgraph.checkpoint.otel.analysis.records import Scope
from langgraph.checkpoint.otel.analysis.resume_kinds import RunRequest
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text, key_text
from langgraph.checkpoint.otel.core.agent_events import AgentEvents, opted_in
from langgraph.checkpoint.otel.core.calls import (
    InnerCall,
    ListCall,
    LoadCall,
    PruneCall,
    PutCall,
    config_attributes,
)
from langgraph.checkpoint.otel.core.load_facts import LoadWitness, loaded_facts
from langgraph.checkpoint.otel.core.load_span import report_load
from langgraph.checkpoint.otel.core.migrating import Migrator
from langgraph.checkpoint.otel.core.pending_writes import task_of, writes_attributes
from langgraph.checkpoint.otel.core.put_facts import PutWitness
from langgraph.checkpoint.otel.core.put_span import report_put, stored_telemetry
from langgraph.checkpoint.otel.core.runs import ActiveRun, ActiveRuns
from langgraph.checkpoint.otel.core.scope_state import ScopeStates, scope_of
from langgraph.checkpoint.otel.core.telemetry import PACKAGE_VERSION, Operation, RunTrace, Telemetry
from langgraph.checkpoint.otel.core.watch import DivergenceWatch
from langgraph.checkpoint.otel.core.witness import SaverMemory
from langgraph.checkpoint.otel.options import InstrumentOptions

PRUNE_COUNT_LIMIT = 10_000
"""Checkpoints a prune span counts at most before and after (beyond: not reported)."""


class CheckpointObserver:
    """Everything one instrumented saver reports, shared by its sync and async methods."""

    def __init__(
        self,
        saver_name: str,
        options: InstrumentOptions,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        logger_provider: LoggerProvider | None = None,
        fallback_encoder: Callable[[Any], bytes] | None = None,
    ) -> None:
        self.options = options
        self.telemetry = Telemetry(saver_name, tracer_provider, meter_provider)
        self._events = AgentEvents(logger_provider, PACKAGE_VERSION) if opted_in() else None
        self._beyond_telemetry = options.migrations is not None or options.on_divergence is not None
        self._hasher = StateHasher(
            options.hash_cache_size,
            fallback=fallback_encoder,
            max_list_memo_bytes=options.hash_memo_bytes,
        )
        self._states = ScopeStates(options.hash_cache_size)
        self._watch = DivergenceWatch(options.divergence, messages_channel=options.messages_channel)
        self._runs = ActiveRuns(
            self.telemetry, self._states, self._hasher, options.hash_cache_size, self._events
        )
        memory = SaverMemory(
            options, self._states, self._runs, self._hasher, self._watch, self.telemetry.guard
        )
        self._puts = PutWitness(memory)
        self._loads = LoadWitness(memory)
        self._migrator = Migrator(options, self.telemetry, self._states, self._hasher)

    def forget_threads(self, thread_ids: Iterable[Any]) -> None:
        """Drop what is kept of these threads (after `delete_thread`, `prune`)."""
        gone = {key_text(thread_id) for thread_id in thread_ids}
        if not gone:
            return

        def stale(scope: Any) -> bool:
            return isinstance(scope, tuple) and bool(scope) and scope[0] in gone

        self._states.forget(stale)
        self._watch.forget(stale)
        self._hasher.forget(stale)

    def cache_sizes(self) -> dict[str, int]:
        """Entries in each in-process cache (for tests and diagnostics)."""
        sizes = {
            **self._states.sizes(),
            "runs": len(self._runs),
            "watch_sessions": self._watch.session_count(),
        }
        return {**sizes, **{f"hasher_{k}": v for k, v in self._hasher.cache_sizes().items()}}

    def active(self) -> bool:
        """Whether this call should produce telemetry at all: enabled, not suppressed, and
        something can receive it (an SDK provider, see `Telemetry.live`) or the options ask for
        behaviour beyond telemetry (migrations, an `on_divergence` callback). With none, the
        wrapper only delegates: nothing is computed, stored or kept."""
        if not self.options.enabled or Telemetry.suppressed():
            return False
        if self._beyond_telemetry or self.telemetry.live():
            return True
        return self._events is not None and self._events.live()

    # --- writes -----------------------------------------------------------------------------

    @contextmanager
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Iterator[PutCall]:
        """Observe one checkpoint write; yields the metadata to store. Called only where
        `active()` (the saver delegates at once otherwise)."""
        call = PutCall(metadata=metadata, new_versions=new_versions)
        attributes = config_attributes(config)
        attributes.pop(names.CHECKPOINT_ID, None)
        attributes[names.CHECKPOINT_ID] = bounded_text(checkpoint.get("id", ""))
        scope = scope_of(config)
        writer = self._runs.writer(scope, str(checkpoint.get("id", "")))
        run = self._in_run(writer, scope, attributes)
        if self.options.migrations is not None:
            extra = self.telemetry.guard(
                "store migrated", self._puts.migrated_versions, scope, checkpoint
            )
            if extra:  # nothing migrated: the versions are passed on as they are
                call.new_versions = {**extra, **call.new_versions}
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
                writer,
            )
            call.op = op
            yield call
            if self._events is not None:
                self.telemetry.guard(
                    "agent event",
                    self._events.checkpointed,
                    op.span,
                    self._runs.execution_in(scope) or str(attributes.get(names.THREAD_ID, "")),
                    str(attributes[names.CHECKPOINT_ID]),
                    self._runs.graph_name(scope),
                )
            # the checkpoint is stored; a strict-mode callback may now stop the run
            if call.findings and self.options.on_divergence is not None:
                for finding in call.findings:
                    self.options.on_divergence(finding)

    @contextmanager
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Iterator[InnerCall]:
        """Observe one pending-writes call. Never looks the checkpoint up. Called only where
        `active()` (the saver delegates at once otherwise)."""
        call = InnerCall()
        scope = scope_of(config)
        writer = self._runs.writer(
            scope, str((config.get("configurable") or {}).get("checkpoint_id", ""))
        )
        task = self.telemetry.guard(
            "describe put_writes",
            task_of,
            self._states,
            config,
            scope,
            writes,
            task_id,
            task_path,
            writer,
        )
        attributes: dict[str, AttributeValue] = {}
        span_name: str | None = names.SPAN_PUT_WRITES
        if task is not None and task[1] == "ok" and not self.options.ok_write_spans:
            span_name = None  # timed and counted, no span (see `ok_write_spans`)
        else:
            attributes = config_attributes(config)
            if task is not None:
                attributes.update(writes_attributes(writes, task_id, task_path, *task))
        run = self._in_run(writer, scope, attributes) if span_name is not None else None
        with self.telemetry.operation(span_name, "put_writes", attributes, run=run) as op:
            call.op = op
            yield call
        if task is not None:
            self._runs.count_task(writer, *task)
            if task[1] == "interrupt" and self._events is not None:
                self.telemetry.guard("note pauses", self._runs.note_pauses, scope, config, writes)

    def _describe_put(
        self,
        op: Operation,
        call: PutCall,
        scope: Scope,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        writer: ActiveRun | None,
    ) -> None:
        """A put's facts to its span and metrics; `call.metadata` gets the stored telemetry,
        `call.findings` the divergences found. `writer`: the run writing it."""
        facts = self._puts.gather(
            scope,
            config,
            checkpoint,
            call.metadata,
            new_versions,
            writer,
            recording=op.recording,
            # a strict mode needs the detectors, which need the hashes
            hash_state=op.recording
            or self.telemetry.metrics_recording()
            or self.options.on_divergence is not None,
            trace_context=op.trace_context(),
        )
        call.findings = list(facts.findings)
        report_put(op, self.telemetry, facts, self.options.max_channel_events)
        stored = stored_telemetry(facts)
        if stored is not None:
            call.metadata = {**call.metadata, names.METADATA_KEY: stored.to_metadata()}  # type: ignore[typeddict-unknown-key]

    def _describe_load(self, call: LoadCall, result: Any, latest: Any) -> None:
        """A load's facts to its span and metrics; a run's load becomes a resume span."""
        op = call.op
        if op is None or result is None:
            return
        if not isinstance(result, CheckpointTuple):
            report_load(op, self.telemetry, loaded_facts(result), None, None)
            return
        run = call.run if call.config is not None else None
        facts, call.walk = self._loads.gather(
            result, run, latest, agent_event=self._events is not None
        )
        if facts.resume is not None:
            call.migration = facts.resume.migration
        report_load(op, self.telemetry, facts, call.run_trace, self._events)

    def _in_run(
        self, writer: ActiveRun | None, scope: Scope, attributes: dict[str, AttributeValue]
    ) -> RunTrace | None:
        """The trace a save of `scope` goes in: its writer's (marked when that run was
        cancelled before the save), else the trace of the run in progress, if any."""
        if writer is None:
            return self._runs.trace_of(scope)
        if writer.cancelled:
            attributes[names.WRITTEN_AFTER_CANCEL] = True
        return writer.trace

    # --- reads and maintenance --------------------------------------------------------------

    @contextmanager
    def load(self, config: RunnableConfig, may_start_run: bool = False) -> Iterator[LoadCall]:
        """Observe a load (get / get_tuple); `LoadCall.done(result)` reports the result.

        With `may_start_run`, a load made while a loop enters is the run's (see
        `_langgraph.loop.entering_run`, looked at only where this call reports at all): then
        the run begins (its trace, see `runs`), and a load of an existing checkpoint is a
        resume, renamed `langgraph.checkpoint.resume`.
        """
        if not self.active():
            yield LoadCall()
            return
        run = entering_run() if may_start_run else None
        run_trace = self._begin_run(config, run)
        # a load inside a run that is not the run's (LangGraph's superseded check on a
        # replay, a node reading its thread) is in the run's trace too
        in_run = run_trace or self._runs.trace_of(scope_of(config))
        with self.telemetry.operation(
            names.SPAN_GET, "get", config_attributes(config), run=in_run
        ) as op:
            if in_run is None:
                _note_state_read(config, op)
            yield LoadCall(
                op,
                _run_start(run),
                run_trace,
                config,
                _finish=self._describe_load,
                _migrate=self._migrator.apply,
                _started=time.perf_counter(),
            )

    @contextmanager
    def listing(
        self, config: RunnableConfig | None, limit: int | None, may_start_run: bool = False
    ) -> Iterator[ListCall]:
        """Observe a listing; the span covers the whole iteration (not made current).

        With `may_start_run`, a listing made while a loop enters is the run's load (a
        subgraph's, while its parent replays; see `load`).
        """
        call = ListCall()
        if not self.active():
            yield call
            return
        run = entering_run() if may_start_run else None
        attributes = config_attributes(config)
        if limit is not None:
            attributes[names.LIST_LIMIT] = limit
        run_trace = None
        if config is not None:
            run_trace = self._begin_run(config, run) or self._runs.trace_of(scope_of(config))
        with self.telemetry.operation(
            names.SPAN_LIST, "list", attributes, activate=False, run=run_trace
        ) as op:
            if run_trace is None and config is not None:
                _note_state_read(config, op)
            try:
                yield call
            finally:
                op.set({names.LIST_RESULTS: call.results})

    def _begin_run(self, config: RunnableConfig, run: LoopEntry | None) -> RunTrace | None:
        if run is None:
            return None
        return self.telemetry.guard("begin run", self._runs.begin, config, run)

    @contextmanager
    def maintenance(
        self,
        span_name: str,
        operation: str,
        attributes: Mapping[str, AttributeValue],
        forget: Iterable[Any] = (),
        within: RunnableConfig | None = None,
    ) -> Iterator[None]:
        """Observe delete_thread, delete_for_runs, copy_thread, prune and the like (in the
        trace of the run of `within`'s thread, if one is in progress); once the inner call
        succeeded, drop what is kept of the threads in `forget`."""
        if not self.active():
            yield
        else:
            run = None
            if within is not None:
                run = self._runs.trace_of(scope_of(within)) or _state_read_of(within)
            with (
                self.telemetry.operation(span_name, operation, attributes, run=run) as op,
                op.inner(),
            ):
                yield
        self.telemetry.guard("forget threads", self.forget_threads, forget)

    @contextmanager
    def pruning(
        self, attributes: Mapping[str, AttributeValue], thread_ids: Sequence[Any]
    ) -> Iterator[PruneCall]:
        """Observe a prune; while the span records or metrics are read, the saver counts the
        threads' checkpoints and measures their stored bytes before and after
        (`PruneCall.counting`), reported as what was removed and reclaimed: on the span and
        in the retention counters (`langgraph.retention.by` = `prune`)."""
        call = PruneCall()
        if not self.active():
            yield call
        else:
            telemetry = self.telemetry
            with telemetry.operation(names.SPAN_PRUNE, "prune", attributes) as op:
                call.op = op
                call.counting = op.recording or telemetry.metrics_recording()
                yield call
                removed = reclaimed = None
                if call.before is not None and call.after is not None:
                    removed = max(0, call.before - call.after)
                    op.set(
                        {
                            names.PRUNE_CHECKPOINTS_BEFORE: call.before,
                            names.PRUNE_CHECKPOINTS_REMOVED: removed,
                        }
                    )
                if call.bytes_before is not None and call.bytes_after is not None:
                    reclaimed = max(0, call.bytes_before - call.bytes_after)
                    op.set({names.RETENTION_BYTES_RECLAIMED: reclaimed})
                telemetry.guard(
                    "count retention", telemetry.count_retention, "prune", removed, reclaimed
                )
        self.telemetry.guard("forget threads", self.forget_threads, thread_ids)


_STATE_READ: ContextVar[tuple[str, RunTrace] | None] = ContextVar(
    "langgraph_otel_state_read", default=None
)
"""The thread and span of the last load or listing made outside a run in this context: what
LangGraph reads next to rebuild that state (a delta channel's history, for `get_state` and for
each snapshot of `get_state_history`) is in its trace."""


def _note_state_read(config: RunnableConfig, op: Operation) -> None:
    if op.span is not None:
        thread = scope_of(config)[0]
        _STATE_READ.set((thread, RunTrace(trace.set_span_in_context(op.span))))


def _state_read_of(config: RunnableConfig) -> RunTrace | None:
    """The trace of the state read in progress on `config`'s thread, if any."""
    read = _STATE_READ.get()
    return read[1] if read is not None and read[0] == scope_of(config)[0] else None


def _run_start(run: LoopEntry | None) -> RunRequest | None:
    """How the run the loop makes started, for classifying its resume."""
    if run is None:
        return None
    return RunRequest(run.explicit_checkpoint, run.interrupt_before, run.interrupt_after)
