"""Graph runs: from the load that starts one to the loop's exit, one trace each.

A run begins with the load its loop makes while entering (see `_langgraph.loop`): its trace is
the span current then, else the enclosing graph's run (a subgraph), else a new
`invoke_workflow {graph name}` span (the GenAI conventions' workflow span). Every span of the
run's (thread, namespace), and of its subgraphs', is put in that trace. A sync run's span is
made current in the thread that runs it (LangGraph's worker threads copy it); an async run's is
made current only inside its node tasks, never in the caller's context (the loop exits in
another task, and a stream can be consumed across tasks or abandoned half-way). When the loop
exits, the run's span ends with its outcome, the task outcomes counted during the run are
recorded, and the scope's state is forgotten.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from opentelemetry import context as otel_context
from opentelemetry import trace

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph import loop as langgraph_loop
from langgraph.checkpoint.otel._langgraph.formats import interrupts_written
from langgraph.checkpoint.otel._langgraph.loop import LoopEntry, RunOutcome, writing_run
from langgraph.checkpoint.otel.analysis.graph_structure import StructureSummary
from langgraph.checkpoint.otel.analysis.hashing import StateHasher
from langgraph.checkpoint.otel.analysis.records import Scope
from langgraph.checkpoint.otel.bounded import BoundedDict
from langgraph.checkpoint.otel.core.agent_events import AgentEvents, Pause
from langgraph.checkpoint.otel.core.calls import config_attributes
from langgraph.checkpoint.otel.core.peers import peer_span
from langgraph.checkpoint.otel.core.scope_state import (
    Lineage,
    ScopeStates,
    enclosing_scope,
    nearest,
    scope_of,
)
from langgraph.checkpoint.otel.core.structure_cache import structure_of
from langgraph.checkpoint.otel.core.telemetry import RunTrace, Telemetry


def run_attributes(config: RunnableConfig | None, graph_name: str | None) -> dict[str, Any]:
    """The run span's attributes known when a graph is called: its thread (also as the
    session and the conversation, which backends group a thread's runs by) and its name."""
    attributes: dict[str, Any] = {
        k: v for k, v in config_attributes(config).items() if k == names.THREAD_ID
    }
    if names.THREAD_ID in attributes:
        attributes[names.SESSION_ID] = attributes[names.CONVERSATION_ID] = attributes[
            names.THREAD_ID
        ]
    if graph_name is not None:
        attributes[names.GRAPH_NAME] = attributes[names.AGENT_NAME] = graph_name
        attributes[names.GEN_AI_WORKFLOW_NAME] = graph_name
    return attributes


@dataclass(slots=True)
class ActiveRun:
    """A graph run in progress on one (thread, namespace): its trace and its loop."""

    scope: Scope
    trace: RunTrace
    loop: LoopEntry
    task_outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(node, outcome) -> pending-write calls, recorded when the run ends (one measurement
    per pair instead of one per call)."""
    lineage: Lineage | None = None
    """The thread's line at the run's last put, recorded when the run ends."""
    pauses: dict[str, Pause] = field(default_factory=dict)
    """The interrupts the run (its subgraphs' included) stopped at, by id (agent events)."""
    structure: StructureSummary | None = None
    """The structure of the graph running (None: it could not be read)."""
    execution_id: str | None = None
    """The execution the run belongs to (`names.EXECUTION_ID`): the one of the checkpoint it
    continues, else its own first checkpoint's id."""
    ended: bool = False
    cancelled: bool = False
    """The run was cancelled: saves its loop had submitted may still finish after its end."""


class ActiveRuns:
    """The runs in progress through one instrumented saver."""

    def __init__(
        self,
        telemetry: Telemetry,
        states: ScopeStates,
        hasher: StateHasher,
        max_runs: int,
        events: AgentEvents | None = None,
    ) -> None:
        self._telemetry = telemetry
        self._events = events
        self._states = states
        self._hasher = hasher
        self._lock = threading.Lock()
        self._runs: BoundedDict[Scope, ActiveRun] = BoundedDict(max_runs)
        self._displaced: BoundedDict[Scope, list[ActiveRun]] = BoundedDict(max_runs)
        """Runs still in progress on a scope where a later run began (two runs of one thread
        at once), oldest first."""

    def begin(self, config: RunnableConfig, loop: LoopEntry) -> RunTrace:
        """Open the run's trace and keep it for the spans of its scope until the loop exits."""
        scope = scope_of(config)
        attributes = run_attributes(config, loop.graph_name)
        graph = loop.graph()
        structure = (
            self._telemetry.guard("graph structure", structure_of, graph)
            if graph is not None
            else None
        )
        if structure is not None:
            attributes[names.GRAPH_STRUCTURE_HASH] = structure.structure_hash
        enclosing = self.trace_of(enclosing_scope(scope)) if scope[1] else None
        run_trace = self._telemetry.begin_run(
            attributes,
            parent=enclosing,
            peer=peer_span(loop.langchain_run_id) if enclosing is None else None,
            activate=not loop.is_async,
            adopt=not scope[1],
        )
        run = ActiveRun(scope, run_trace, loop, structure=structure)
        loop.owner = run
        with self._lock:
            earlier = self._runs.get(scope)
            if earlier is not None and not earlier.ended:
                self._displaced[scope] = [*self._displaced.get(scope, []), earlier]
            self._runs[scope] = run
        self._telemetry.measurements.run_started()
        if loop.is_async:
            _ASYNC_RUNS.add(scope, run_trace)
        loop.watch_steps(self._telemetry.fault)

        def ended(outcome: RunOutcome, error: BaseException | None) -> None:
            self._telemetry.guard("end run", self._end, scope, run, outcome, error)

        if not loop.on_exit(ended):
            ended("finished", None)
        return run_trace

    def _end(
        self, scope: Scope, run: ActiveRun, outcome: RunOutcome, error: BaseException | None
    ) -> None:
        with self._lock:
            if run.ended:
                return
            run.ended = True
            run.cancelled = isinstance(error, _CANCELLATIONS)
            current = self._runs.get(scope) is run
            displaced = self._displaced.pop(scope, [])
            if current:
                del self._runs[scope]
                if displaced:  # an earlier run of the scope goes on: it is the scope's again
                    self._runs[scope] = displaced.pop()
                    current = False
            elif run in displaced:
                displaced.remove(run)
            if displaced:
                self._displaced[scope] = displaced
            counts, run.task_outcomes = run.task_outcomes, Counter()
        if self._events is not None and outcome == "interrupted" and not scope[1]:
            self._telemetry.guard("agent event", self._report_pauses, scope, run)
        if current:
            self._states.drop(scope)
        _ASYNC_RUNS.remove(scope, run.trace)
        for (node, kind), calls in counts.items():
            self._telemetry.count_task_outcome(node, kind, calls)
        if run.lineage is not None:
            self._telemetry.record_thread_growth(*run.lineage)
        self._hasher.release(scope)
        self._telemetry.end_run(run.trace, outcome, error)
        self._telemetry.measurements.run_ended()

    def _report_pauses(self, scope: Scope, run: ActiveRun) -> None:
        """`gen_ai.agent.paused` for each interrupt the root run stopped at; a static interrupt
        (`interrupt_before` / `after`) has no id: its checkpoint is the pause."""
        assert self._events is not None
        pauses = list(run.pauses.values())
        if not pauses:
            seen = self._states.last_seen(scope)
            if seen is None:
                return
            pauses = [Pause(seen.id, seen.id)]
        for pause in pauses:
            self._events.paused(
                run.trace.context, run.execution_id or scope[0], pause, run.loop.graph_name
            )

    def note_pauses(
        self, scope: Scope, config: RunnableConfig, writes: Sequence[tuple[str, Any]]
    ) -> None:
        """Keep the interrupts a task wrote on the run of its thread's root graph."""
        checkpoint_id = str((config.get("configurable") or {}).get("checkpoint_id", ""))
        with self._lock:
            run = self._runs.get((scope[0], ""))
            if run is None:
                return
            for pause_id, reviewed in interrupts_written(writes):
                run.pauses.setdefault(pause_id, Pause(pause_id, checkpoint_id, reviewed))

    def graph_name(self, scope: Scope) -> str | None:
        """The name of the graph running in `scope` (or the nearest enclosing one)."""
        with self._lock:
            run = nearest(self._runs, scope)
        return run.loop.graph_name if run is not None else None

    def writer(self, scope: Scope, checkpoint_id: str) -> ActiveRun | None:
        """The run writing a save (a put, or pending writes on `checkpoint_id`) in `scope`.

        The run whose loop submitted the save (LangGraph's own fact, see `writing_run`), even
        once it has ended (a save that finishes after its run was cancelled). Where that is
        unknown (something between LangGraph and the wrapper left the loop's context): of two
        runs of the scope in progress, the one whose loop holds the checkpoint; else the
        scope's run, if one is in progress.
        """
        owner = getattr(writing_run(), "owner", None)
        if isinstance(owner, ActiveRun) and owner.scope == scope:
            return owner
        with self._lock:
            run = self._runs.get(scope)
            displaced = self._displaced.get(scope)
        if displaced and run is not None:
            for candidate in (run, *displaced):
                if candidate.loop.writes(checkpoint_id):
                    return candidate
        return run

    def structure_of(self, scope: Scope) -> StructureSummary | None:
        """The structure of the graph whose run is in progress in `scope`, if known."""
        with self._lock:
            run = self._runs.get(scope)
        return run.structure if run is not None else None

    def continue_execution(self, scope: Scope, execution_id: str) -> None:
        """The run in `scope` continues the execution `execution_id` (its load resumed it)."""
        with self._lock:
            run = self._runs.get(scope)
            if run is None or run.execution_id is not None:
                return
            run.execution_id = execution_id
        run.trace.set({names.EXECUTION_ID: execution_id})

    def execution_in(self, scope: Scope) -> str | None:
        """The execution of the run in progress on `scope`'s root graph, when known."""
        with self._lock:
            run = self._runs.get((scope[0], ""))
            return run.execution_id if run is not None else None

    def execution_of(self, run: ActiveRun, checkpoint_id: str) -> str:
        """The execution of the run writing `checkpoint_id`: its own, or one it starts now."""
        with self._lock:
            if run.execution_id is None:
                run.execution_id = checkpoint_id
                started = True
            else:
                started = False
        if started:
            run.trace.set({names.EXECUTION_ID: checkpoint_id})
        return run.execution_id

    def trace_of(self, scope: Scope) -> RunTrace | None:
        """The trace of the run in `scope`, or else of the nearest enclosing graph's run."""
        with self._lock:
            run = nearest(self._runs, scope)
        return run.trace if run is not None else None

    def loop_of(self, scope: Scope) -> LoopEntry | None:
        """The loop of the run in `scope`, if one is in progress."""
        with self._lock:
            run = self._runs.get(scope)
        return run.loop if run is not None else None

    def count_task(self, run: ActiveRun | None, node: str, outcome: str) -> None:
        """Count a pending-writes call: on its run while in progress (recorded when the run
        ends), else now."""
        if run is not None:
            with self._lock:
                if not run.ended:
                    run.task_outcomes[(node, outcome)] += 1
                    return
        self._telemetry.count_task_outcome(node, outcome)

    def note_lineage(self, run: ActiveRun | None, lineage: Lineage) -> None:
        """The thread's line at the last put of a root graph's run."""
        if run is None or run.scope[1]:
            return
        with self._lock:
            run.lineage = lineage

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)


class _AsyncRuns:
    """The traces of async runs in progress, process-wide (a task does not know which saver
    its run loads through), for the node tasks that run their code (see `task_scope`)."""

    def __init__(self, max_runs: int) -> None:
        self._lock = threading.Lock()
        self._traces: BoundedDict[Scope, RunTrace] = BoundedDict(max_runs)

    def add(self, scope: Scope, run_trace: RunTrace) -> None:
        with self._lock:
            self._traces[scope] = run_trace

    def remove(self, scope: Scope, run_trace: RunTrace) -> None:
        with self._lock:
            if self._traces.get(scope) is run_trace:
                del self._traces[scope]

    def task_scope(self, thread_id: str, namespace: str) -> AbstractContextManager[None] | None:
        """Where a task of the graph at (`thread_id`, `namespace`) runs its code: under its
        run's span (or the nearest enclosing graph's run) when no span is current."""
        if not self._traces:
            return None
        with self._lock:
            run_trace = nearest(self._traces, (thread_id, namespace))
        if run_trace is None or trace.get_current_span().get_span_context().is_valid:
            return None
        return _current_span_of(run_trace)


@contextmanager
def _current_span_of(run_trace: RunTrace) -> Iterator[None]:
    """Make the run's span current (keeping the rest of the current context) meanwhile."""
    context = trace.set_span_in_context(trace.get_current_span(run_trace.context))
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


_ASYNC_RUNS = _AsyncRuns(max_runs=4096)
_CANCELLATIONS = (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt)
"""How a run is stopped from outside rather than failing."""


def install_loop_hooks() -> None:
    """Let LangGraph's loop tell runs to every instrumented saver (idempotent)."""
    langgraph_loop.install()
    langgraph_loop.set_task_scope(_ASYNC_RUNS.task_scope)
