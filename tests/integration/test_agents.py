"""The wrapper on real agent shapes (`agents.py`), real savers and the real OpenTelemetry SDK.

Shapes: `create_react_agent` and langchain's `create_agent` (parallel tool calls as `Send`
tasks), a supervisor with two sub-agents as subgraphs, a `Send` map-reduce, the functional API
(`@entrypoint` / `@task`), and `interrupt()` inside a tool.

Every expectation is derived from what LangGraph itself reports, never from the library: which
task ran which node, and which checkpoint applies which tasks' writes, come from the graph's own
``stream(stream_mode=["tasks", "checkpoints"])`` events and from ``get_state_history()``; the
metadata an app must see comes from the same scenario run on the bare saver.

Concerns, one section each (section 0 checks that the two accounts of a run agree):

- per run, for every shape x durability (async, sync, exit) x saver (InMemorySaver, SqliteSaver,
  AsyncSqliteSaver, PostgresSaver): task and checkpoint nodes, one trace per run under a
  ``invoke_workflow`` root (or the app's own span), resume spans linked to their writer, and the
  metadata the app reads is exactly what LangGraph wrote;
- one whole span tree;
- resume kinds: crash (a real SIGKILL at every superstep, in a subprocess), error, interrupt
  (dynamic and ``interrupt_before``), fork, update, continue;
- divergence: none on deterministic replays (the resume harness at every superstep, on a bare
  and an instrumented saver; forks from every checkpoint, twice from one, forks of forks), the
  right finding when the model answers otherwise on a fork, and ``duplicate_tool_call`` only
  for tools not declared repeatable.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from opentelemetry.sdk.trace import ReadableSpan

import agent_crash_app
import agents
from helpers import OTel
from langgraph.checkpoint.otel import (
    astored_history,
    instrument,
    names,
    stored_history,
    uninstrument,
)
from langgraph.checkpoint.otel.analysis.detectors import DivergencePolicy, divergences
from langgraph.checkpoint.otel.analysis.records import history_records
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from langgraph.checkpoint.otel.testing.harness import check_resume
from spantree import render
from suite_paths import APPS

Saver = BaseCheckpointSaver[Any]
SAVER_KINDS = ("memory", "sqlite", "async_sqlite", "postgres", "async_redis")
ASYNC_KINDS = frozenset({"async_sqlite", "async_redis"})
"""Saver kinds driven through the async API. Redis is the async saver: the sync RedisSaver
(langgraph-checkpoint-redis 0.5.2) sometimes returns the latest checkpoint without its pending
writes right after a failed run, so even bare it tells an error resume from a crash only some
of the time (see REDIS_NONDETERMINISTIC in test_transparency.py)."""
DURABILITIES = ("async", "sync", "exit")
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
WRITER_LINK = "checkpoint_writer"
START = "__start__"

# --------------------------------------------------------------------------------------------
# savers and a driver that uses the sync or the async API
# --------------------------------------------------------------------------------------------


@dataclass
class Driver:
    """Runs a graph through the API its saver supports (``ainvoke`` / ``astream`` for async
    savers): ``invoke``, as most apps do, or, with `stream`, ``stream`` with the modes whose
    events tell which tasks ran (needed where the history cannot tell: durability ``exit``
    stores one checkpoint per run, and the functional API's `@task`s are not in it)."""

    graph: Any
    saver: Saver
    is_async: bool
    stream: bool = False

    async def run(
        self, graph_input: Any, config: dict[str, Any], **kwargs: Any
    ) -> tuple[list[dict[str, Any]], BaseException | None]:
        """`agents.stream_event`s of one run (none with ``invoke``), and what it raised."""
        events: list[dict[str, Any]] = []
        options = {"stream_mode": agents.STREAM_MODES, "subgraphs": True, **kwargs}
        try:
            if not self.stream:
                if self.is_async:
                    await self.graph.ainvoke(graph_input, config, **kwargs)
                else:
                    self.graph.invoke(graph_input, config, **kwargs)
            elif self.is_async:
                async for chunk in self.graph.astream(graph_input, config, **options):
                    events.append(agents.stream_event(chunk))
            else:
                for chunk in self.graph.stream(graph_input, config, **options):
                    events.append(agents.stream_event(chunk))
        except Exception as exc:
            return events, exc
        return events, None

    async def state(self, config: dict[str, Any]) -> Any:
        if self.is_async:
            return await self.graph.aget_state(config)
        return self.graph.get_state(config)

    async def history(self, config: dict[str, Any]) -> list[Any]:
        if self.is_async:
            return [s async for s in self.graph.aget_state_history(config)]
        return list(self.graph.get_state_history(config))

    async def update(self, config: dict[str, Any], values: Any, as_node: str | None) -> None:
        if self.is_async:
            await self.graph.aupdate_state(config, values, as_node=as_node)
        else:
            self.graph.update_state(config, values, as_node=as_node)

    async def listing(self, saver: Saver, config: dict[str, Any]) -> list[CheckpointTuple]:
        """``saver.list(config)`` (``alist`` for async savers)."""
        if self.is_async:
            return [t async for t in saver.alist(config)]
        return list(saver.list(config))

    async def stored(self, config: dict[str, Any]) -> list[CheckpointTuple]:
        """The library's offline reader: `stored_history` / `astored_history`."""
        if self.is_async:
            return await astored_history(self.saver, config)
        return stored_history(self.saver, config)


@contextlib.asynccontextmanager
async def bare_saver(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Saver]:
    """A real, set-up saver of `kind` (a file in `tmp_path`, a fresh PostgreSQL database, a
    flushed Redis server)."""
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False)
        try:
            saver = SqliteSaver(conn)
            saver.setup()
            yield saver
        finally:
            conn.close()
    elif kind == "async_sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "async.sqlite")) as saver:
            await saver.setup()
            yield saver
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        url: str = request.getfixturevalue("postgres_db")
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            yield saver
    elif kind == "async_redis":
        from langgraph.checkpoint.redis.aio import AsyncRedisSaver

        redis_url: str = request.getfixturevalue("redis_url")
        async with AsyncRedisSaver.from_conn_string(redis_url) as redis_saver:  # runs asetup()
            yield redis_saver
    else:  # pragma: no cover - a typo in a parametrization
        raise ValueError(kind)


def instrumented(saver: Saver, otel: OTel, **options: Any) -> Saver:
    return instrument(
        saver, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, **options
    )


# --------------------------------------------------------------------------------------------
# scenarios: one per shape, a sequence of runs on one thread
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One call on a thread: a run (`make_input` None: ``invoke(None)``), or an update_state."""

    make_input: Callable[[], Any] | None = None
    outcome: str = "finished"
    """The run's outcome as the app sees it: finished, interrupted or error."""
    resume: str | None = None
    """The expected resume kind; None for a run on a thread with no checkpoint."""
    update: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """An ``update_state`` instead of a run: the values to write, given the current ones."""
    as_node: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """Extra arguments of the run (``interrupt_before``)."""


@dataclass(frozen=True)
class Shape:
    name: str
    build: Callable[[Saver | None], Any]
    """Builds a fresh graph (fresh script, tools and failure injection) on a checkpointer."""
    steps: tuple[Step, ...]
    """The scenario of the saver matrix: a failure or interrupt, its resume, a new turn."""


def _react(saver: Saver | None) -> Any:
    return agents.react_agent(saver, tools=agents.Tools(failing={"book"}))


def _langchain(saver: Saver | None) -> Any:
    script = agents.travel_script()
    script.fail_once(1)  # the model is unavailable at its second turn
    return agents.langchain_agent(saver, script)


def _supervisor(saver: Saver | None) -> Any:
    return agents.supervisor(saver, tools=agents.Tools(failing={"send_email"}))


def _map_reduce(saver: Saver | None) -> Any:
    return agents.map_reduce(saver, agents.Workers(failing={"food"}))


def _functional(saver: Saver | None) -> Any:
    return agents.functional(saver, agents.Workers(failing={"food"}))


def _approval(saver: Saver | None) -> Any:
    return agents.approval_agent(saver)


def _ask(text: str = agents.QUESTION) -> Callable[[], Any]:
    return lambda: agents.question(text)


FAIL_RESUME = (Step(_ask(), "error"), Step(None, "finished", "error"))
SHAPES: dict[str, Shape] = {
    shape.name: shape
    for shape in [
        Shape("react", _react, (*FAIL_RESUME, Step(_ask("And a hotel?"), "finished", "continue"))),
        Shape(
            "langchain",
            _langchain,
            (*FAIL_RESUME, Step(_ask("And a hotel?"), "finished", "continue")),
        ),
        Shape(
            "supervisor", _supervisor, (*FAIL_RESUME, Step(_ask("Thanks!"), "finished", "continue"))
        ),
        Shape(
            "map_reduce",
            _map_reduce,
            (
                Step(lambda: dict(agents.MAP_INPUT), "error"),
                Step(None, "finished", "error"),
                Step(lambda: {"topic": "Porto"}, "finished", "continue"),
            ),
        ),
        Shape(
            "functional",
            _functional,
            (
                Step(lambda: dict(agents.FUNCTIONAL_INPUT), "error"),
                Step(None, "finished", "error"),
                Step(lambda: {"topic": "Porto", "sections": ["food"]}, "finished", "continue"),
            ),
        ),
        Shape(
            "approval",
            _approval,
            (
                Step(_ask(), "interrupted"),
                Step(lambda: Command(resume="yes"), "finished", "interrupt"),
                Step(_ask("Thanks!"), "finished", "continue"),
            ),
        ),
    ]
}
HARNESS_SHAPES = ("react", "langchain", "supervisor", "map_reduce")
"""Shapes `check_resume` supports (a StateGraph that completes without input from a human)."""


def clean_build(shape: str) -> Callable[[Saver | None], Any]:
    """A shape's builder without failure injection."""
    return {
        "react": lambda s: agents.react_agent(s),
        "langchain": lambda s: agents.langchain_agent(s),
        "supervisor": lambda s: agents.supervisor(s),
        "map_reduce": lambda s: agents.map_reduce(s),
        "functional": lambda s: agents.functional(s),
        "approval": lambda s: agents.approval_agent(s),
    }[shape]


# --------------------------------------------------------------------------------------------
# spans: one view of in-process (SDK) and cross-process (OTLP/JSON) spans
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    links: tuple[tuple[str, str, dict[str, Any]], ...]
    events: tuple[tuple[str, dict[str, Any]], ...]
    scope: str
    start: int

    @property
    def ns(self) -> str:
        return str(self.attributes.get(names.CHECKPOINT_NS, ""))


def view(span: ReadableSpan | SpanRecord) -> View:
    if isinstance(span, SpanRecord):
        return View(
            span.name,
            span.trace_id,
            span.span_id,
            span.parent_span_id,
            dict(span.attributes),
            tuple((link.trace_id, link.span_id, dict(link.attributes)) for link in span.links),
            tuple((e.name, dict(e.attributes)) for e in span.events),
            span.scope_name,
            span.start_time_unix_nano,
        )
    assert span.context is not None
    return View(
        span.name,
        f"{span.context.trace_id:032x}",
        f"{span.context.span_id:016x}",
        f"{span.parent.span_id:016x}" if span.parent is not None else None,
        dict(span.attributes or {}),
        tuple(
            (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}", dict(link.attributes))
            for link in span.links
        ),
        tuple((e.name, dict(e.attributes or {})) for e in span.events),
        span.instrumentation_scope.name if span.instrumentation_scope else "",
        span.start_time or 0,
    )


def library_spans(spans: Iterable[ReadableSpan | SpanRecord]) -> list[View]:
    return sorted((v for v in map(view, spans) if v.scope == names.SCOPE), key=lambda v: v.start)


def named(spans: Iterable[View], name: str) -> list[View]:
    return [s for s in spans if s.name == name]


def divergence_events(spans: Iterable[View]) -> list[dict[str, Any]]:
    return [
        attrs
        for s in spans
        if s.name == names.SPAN_PUT
        for name, attrs in s.events
        if name == names.EVENT_DIVERGENCE
    ]


def _summary(events: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(kind, node, expected, actual) of `langgraph.divergence` events."""
    return [
        (
            e.get(names.DIVERGENCE_KIND),
            e.get(names.DIVERGENCE_NODE),
            e.get(names.DIVERGENCE_EXPECTED),
            e.get(names.DIVERGENCE_ACTUAL),
        )
        for e in events
    ]


# --------------------------------------------------------------------------------------------
# expectations, from LangGraph's own account of the run
# --------------------------------------------------------------------------------------------


def expected_task_nodes(
    events: Iterable[dict[str, Any]], snapshots: Iterable[Any]
) -> dict[str, str]:
    """task id -> node, from the tasks stream and the history's tasks (which also name the
    hidden `__start__` tasks); the null task is LangGraph's `__input__`."""
    nodes = {NULL_TASK_ID: "__input__"}
    for snapshot in snapshots:
        for task in snapshot.tasks:
            nodes[task.id] = task.name
    for event in events:
        if event["type"] in ("start", "result"):
            nodes[event["id"]] = event["name"]
    return nodes


def expected_checkpoint_nodes(
    events: Iterable[dict[str, Any]], stored: set[str]
) -> dict[str, list[str]]:
    """checkpoint id -> the nodes whose writes it applies, for every stored checkpoint the
    events show: the tasks that completed (per namespace) since the previous *stored*
    checkpoint, so under durability ``exit`` the one checkpoint of a run applies every task of
    the run. `__start__` (hidden) applied the input when a checkpoint scheduling it is followed
    by one that does not. A checkpoint the loop emits again on resume is not a new one."""
    pending: dict[str, set[str]] = defaultdict(set)
    start_scheduled: dict[str, bool] = defaultdict(bool)
    seen: set[str] = set()
    expected: dict[str, list[str]] = {}
    for event in events:
        ns = event["ns"]
        if event["type"] == "result" and event["ok"]:
            pending[ns].add(event["name"])
        if event["type"] != "checkpoint":
            continue
        if start_scheduled[ns] and START not in event["next"]:
            pending[ns].add(START)
        start_scheduled[ns] = START in event["next"]
        if event["id"] in seen:
            continue
        seen.add(event["id"])
        if event["id"] in stored:
            expected[event["id"]] = sorted(pending.pop(ns, set()))
    return expected


def history_checkpoint_nodes(snapshots: Iterable[Any]) -> dict[str, list[str]]:
    """checkpoint id -> the nodes whose writes it applies, from the history alone (it must
    hold every checkpoint: durability async or sync): a loop checkpoint applies the writes of
    the tasks its parent scheduled; an input checkpoint and a fork copy apply none."""
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snapshots}
    expected: dict[str, list[str]] = {}
    for checkpoint_id, snapshot in by_id.items():
        source = snapshot.metadata.get("source")
        if source in ("input", "fork"):
            expected[checkpoint_id] = []
        elif source == "loop":
            parent = by_id[snapshot.parent_config["configurable"]["checkpoint_id"]]
            expected[checkpoint_id] = sorted({task.name for task in parent.tasks})
    return expected


def needs_events(shape: str, durability: str, saver_kind: str = "memory") -> bool:
    """Whether the history cannot tell which tasks a checkpoint applies (see `Driver`).

    Nor can it on Redis: the bare (Async)RedisSaver (langgraph-checkpoint-redis 0.5.2) gives back the
    `Send` packets of a checkpoint's tasks channel as plain dicts (``{"__send__": True, ...}``)
    when their argument holds messages, so LangGraph drops them ("Ignoring invalid packet type")
    and the history shows no `Send` task (`tools`, `write`, ...)."""
    return durability == "exit" or shape == "functional" or saver_kind == "async_redis"


# --------------------------------------------------------------------------------------------
# playing a scenario
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    step: Step
    thread_id: str
    events: list[dict[str, Any]]
    spans: list[View]
    error: BaseException | None = None
    raw: list[ReadableSpan] = field(default_factory=list)


async def play_step(
    driver: Driver,
    otel: OTel | None,
    thread_id: str,
    step: Step,
    durability: str,
    *,
    configurable: dict[str, Any] | None = None,
    app_span: str | None = None,
) -> Run:
    """One step on `thread_id`, its events and exactly the spans it emitted."""
    config = agents.thread(thread_id, **(configurable or {}))
    if otel is not None:
        otel.clear()
    events: list[dict[str, Any]] = []
    error: BaseException | None = None
    if step.update is not None:
        values = (await driver.state(config)).values
        await driver.update(config, step.update(values), step.as_node)
    else:
        graph_input = step.make_input() if step.make_input is not None else None
        with contextlib.ExitStack() as stack:
            if app_span is not None:
                assert otel is not None
                tracer = otel.tracer_provider.get_tracer("agent-app")
                stack.enter_context(tracer.start_as_current_span(app_span))
            events, error = await driver.run(
                graph_input, config, durability=durability, **step.options
            )
    raw = otel.spans() if otel is not None else []
    run = Run(step, thread_id, events, library_spans(raw), error, raw)
    if step.update is None:
        await _check_outcome(driver, run)
    return run


async def _check_outcome(driver: Driver, run: Run) -> None:
    """The scenario did what it says (an error raised, an interrupt pending, or done)."""
    snapshot = await driver.state(agents.thread(run.thread_id))
    if run.step.outcome == "error":
        assert run.error is not None, "the run was meant to fail"
        assert isinstance(run.error, agents.ToolFailed | agents.ModelUnavailable), run.error
        return
    assert run.error is None, f"the run raised {run.error!r}"
    if run.step.outcome == "interrupted":
        assert snapshot.interrupts or snapshot.next, "the run was meant to stop at an interrupt"
    else:
        assert not snapshot.next, f"the run was meant to finish; next: {snapshot.next}"


async def play(
    driver: Driver,
    otel: OTel | None,
    thread_id: str,
    steps: Sequence[Step],
    durability: str,
    app_span: str | None = None,
) -> list[Run]:
    return [
        await play_step(driver, otel, thread_id, step, durability, app_span=app_span)
        for step in steps
    ]


# --------------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------------


def _ancestors(span: View, by_id: dict[str, View]) -> list[str]:
    """Span ids of `span`'s ancestors within `by_id`, nearest first."""
    chain, current = [], span
    while current.parent_id is not None and current.parent_id in by_id:
        current = by_id[current.parent_id]
        chain.append(current.span_id)
    return chain


def check_one_trace(run: Run, graph_name: str, app_span: View | None = None) -> View:
    """All library spans of the run in one trace, under one root: the library's
    ``invoke_workflow`` span (with its attributes), or `app_span` when the app had one."""
    spans = run.spans
    assert spans, "the run emitted no library span"
    traces = {s.trace_id for s in spans}
    assert len(traces) == 1, f"one run, {len(traces)} traces: " + "; ".join(
        f"{t[:8]}: {[(s.name.removeprefix('langgraph.checkpoint.'), s.ns[:10]) for s in spans if s.trace_id == t]}"
        for t in traces
    )
    by_id = {s.span_id: s for s in spans}
    if app_span is not None:
        assert not [s for s in spans if names.is_run_span_name(s.name)], (
            "an app span was current: no run span"
        )
        assert traces == {app_span.trace_id}
        by_id[app_span.span_id] = app_span
        outside = [s.name for s in spans if app_span.span_id not in _ancestors(s, by_id)]
        assert not outside, f"library spans not under the app's span: {outside}"
        return app_span
    roots = [s for s in spans if s.parent_id not in by_id]
    assert [names.is_run_span_name(r.name) for r in roots] == [True], (
        f"expected one invoke_workflow root, got {[(r.name, r.ns) for r in roots]}"
    )
    (root,) = roots
    assert root.parent_id is None, "with no span of the app, the run span is a trace root"
    outside = [s.name for s in spans if s is not root and root.span_id not in _ancestors(s, by_id)]
    assert not outside, f"library spans outside the run span: {outside}"
    attrs = root.attributes
    assert attrs.get(names.THREAD_ID) == run.thread_id
    assert attrs.get(names.CONVERSATION_ID) == run.thread_id
    assert attrs.get(names.GRAPH_NAME) == graph_name
    assert attrs.get(names.RUN_OUTCOME) == run.step.outcome
    assert attrs.get(names.RESUME_KIND) == run.step.resume, attrs
    return root


def check_resumes(run: Run, earlier: Sequence[View]) -> None:
    """Resume spans: the root one has the expected kind; every one links to the put span that
    wrote the loaded checkpoint and names its ids; the first put after a resume says so."""
    kind = run.step.resume
    resumes = named(run.spans, names.SPAN_RESUME)
    root_resumes = [s for s in resumes if s.ns == ""]
    if kind is None:
        assert not root_resumes, "a run on an empty thread resumes nothing"
        return
    assert len(root_resumes) == 1, f"{len(root_resumes)} root resume spans"
    assert root_resumes[0].attributes.get(names.RESUME_KIND) == kind
    puts = named(earlier, names.SPAN_PUT)
    for resume in resumes:
        loaded = resume.attributes[names.RESUME_FROM_CHECKPOINT_ID]
        writers = [
            p for p in puts if p.attributes.get(names.CHECKPOINT_ID) == loaded and p.ns == resume.ns
        ]
        assert len(writers) == 1, f"{len(writers)} put spans wrote {loaded} (ns {resume.ns!r})"
        check_writer(resume, writers[0].trace_id, writers[0].span_id)
        later_puts = [p for p in named(run.spans, names.SPAN_PUT) if p.ns == resume.ns]
        if later_puts:
            assert later_puts[0].attributes.get(names.RESUME_FROM_CHECKPOINT_ID) == loaded


def check_runs(runs: Sequence[Run], graph_name: str) -> list[View]:
    """`check_one_trace` and `check_resumes` for each run of a thread (not for update_state
    calls, which are no run); returns all their spans."""
    spans: list[View] = []
    for run in runs:
        if run.step.update is None:
            check_one_trace(run, graph_name)
            check_resumes(run, spans)
        spans += run.spans
    return spans


def check_writer(resume: View, trace_id: str, span_id: str) -> None:
    links = [(t, s) for t, s, a in resume.links if a.get(names.LINK_TYPE) == WRITER_LINK]
    assert links == [(trace_id, span_id)], f"writer links {links}, writer {(trace_id, span_id)}"
    writer = (
        resume.attributes.get(names.RESUME_WRITER_TRACE_ID),
        resume.attributes.get(names.RESUME_WRITER_SPAN_ID),
    )
    assert writer == (trace_id, span_id), f"writer attributes {writer}"
    assert re.fullmatch(r"[0-9a-f]{32}", writer[0]) and re.fullmatch(r"[0-9a-f]{16}", writer[1])


async def stored_ids(driver: Driver, thread_id: str, namespaces: Iterable[str]) -> set[str]:
    """Ids of the checkpoints stored for the thread in `namespaces`, read with the bare saver."""
    bare = uninstrument(driver.saver)
    ids: set[str] = set()
    for ns in set(namespaces) | {""}:
        tuples = await driver.listing(bare, agents.thread(thread_id, checkpoint_ns=ns))
        ids.update(str(t.checkpoint["id"]) for t in tuples)
    return ids


async def check_nodes(driver: Driver, runs: Sequence[Run]) -> dict[str, list[str]]:
    """Every put_writes span names the node LangGraph says ran the task; every put span's
    nodes are those whose writes its checkpoint applies; one put span per stored checkpoint."""
    events = [e for run in runs for e in run.events]
    spans = [s for run in runs for s in run.spans]
    thread_id = runs[0].thread_id
    namespaces = {e["ns"] for e in events if e["type"] == "checkpoint"}
    if not driver.stream:  # subgraph namespaces from the listing (root and subgraphs)
        listed = await driver.listing(uninstrument(driver.saver), agents.thread(thread_id))
        namespaces |= {str(t.config["configurable"]["checkpoint_ns"]) for t in listed}
    snapshots = []
    for ns in namespaces | {""}:
        snapshots += await driver.history(agents.thread(thread_id, checkpoint_ns=ns))
    tasks = expected_task_nodes(events, snapshots)
    for run in runs:  # update_state(as_node=...) writes as that node
        if run.step.update is not None and run.step.as_node is not None:
            for s in named(run.spans, names.SPAN_PUT_WRITES):
                tasks.setdefault(str(s.attributes.get(names.TASK_ID)), run.step.as_node)
    wrong = [
        (s.attributes.get(names.TASK_NODE), tasks.get(str(s.attributes.get(names.TASK_ID))))
        for s in named(spans, names.SPAN_PUT_WRITES)
        if s.attributes.get(names.TASK_NODE) != tasks.get(str(s.attributes.get(names.TASK_ID)))
    ]
    assert not wrong, f"put_writes spans name the wrong node (emitted, expected): {wrong}"

    stored = await stored_ids(driver, thread_id, namespaces)
    if driver.stream:
        expected = expected_checkpoint_nodes(events, stored)
    else:
        expected = history_checkpoint_nodes(snapshots)
    puts = named(spans, names.SPAN_PUT)
    written = [str(p.attributes.get(names.CHECKPOINT_ID)) for p in puts]
    assert sorted(written) == sorted(stored), "one put span per stored checkpoint"
    mismatched = [
        (p.attributes.get(names.STEP), p.ns[:12], list(p.attributes.get(names.NODES, ())), want)
        for p in puts
        if (want := expected.get(str(p.attributes.get(names.CHECKPOINT_ID)))) is not None
        and list(p.attributes.get(names.NODES, ())) != want
    ]
    assert not mismatched, f"put nodes (step, ns, emitted, expected): {mismatched}"
    unexplained = [
        p.attributes.get(names.SOURCE)
        for p in puts
        if str(p.attributes.get(names.CHECKPOINT_ID)) not in expected
        and p.attributes.get(names.SOURCE) != "update"  # update_state writes: no node ran
    ]
    assert not unexplained, f"puts the events do not account for: {unexplained}"
    return expected


def _normalized(metadatas: Sequence[Any], thread_id: str) -> list[Any]:
    """Metadata with run-specific ids (checkpoint, task, run ids) replaced positionally."""
    tokens: dict[str, str] = {}
    text = json.dumps(list(metadatas), sort_keys=True, default=repr).replace(thread_id, "<thread>")
    text = re.sub(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        lambda m: tokens.setdefault(m.group(0), f"<id{len(tokens)}>"),
        text,
    )
    result: list[Any] = json.loads(text)
    return result


async def check_metadata(
    driver: Driver, bare: Driver, thread_id: str, bare_thread_id: str
) -> list[CheckpointTuple]:
    """The app reads exactly the metadata LangGraph wrote, as on the bare saver; offline
    readers get the stored telemetry through `stored_history`. Returns the stored tuples."""
    cfg, bare_cfg = agents.thread(thread_id), agents.thread(bare_thread_id)
    wrapped_views = [
        [(await driver.state(cfg)).metadata],
        [s.metadata for s in await driver.history(cfg)],
        [t.metadata for t in await driver.listing(driver.saver, cfg)],
    ]
    bare_views = [
        [(await bare.state(bare_cfg)).metadata],
        [s.metadata for s in await bare.history(bare_cfg)],
        [t.metadata for t in await bare.listing(bare.saver, bare_cfg)],
    ]
    for label, wrapped, plain in zip(
        ("get_state", "get_state_history", "saver.list"), wrapped_views, bare_views, strict=True
    ):
        leaked = [m for m in wrapped if names.METADATA_KEY in (m or {})]
        assert not leaked, f"{label} through the wrapper shows the stored telemetry"
        assert _normalized(wrapped, thread_id) == _normalized(plain, bare_thread_id), label
    stored = await driver.stored(cfg)
    assert len(stored) == len(wrapped_views[2])
    assert all(names.METADATA_KEY in t.metadata for t in stored), "stored_history lacks telemetry"
    return stored


# --------------------------------------------------------------------------------------------
# 0. the two accounts of which nodes a checkpoint applies agree (no library involved)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "functional"])
async def test_the_stream_and_the_history_tell_the_same_nodes(shape: str) -> None:
    """Under sync durability (every checkpoint stored) the events' account and the history's
    account of every checkpoint's nodes are the same, resumes and new turns included."""
    saver = InMemorySaver()
    driver = Driver(SHAPES[shape].build(saver), saver, False, stream=True)
    runs = await play(driver, None, "t", SHAPES[shape].steps, "sync")
    events = [e for run in runs for e in run.events]
    namespaces = {e["ns"] for e in events if e["type"] == "checkpoint"}
    snapshots = [
        s for ns in namespaces for s in await driver.history(agents.thread("t", checkpoint_ns=ns))
    ]
    stored = {s.config["configurable"]["checkpoint_id"] for s in snapshots}
    from_events = expected_checkpoint_nodes(events, stored)
    assert from_events == history_checkpoint_nodes(snapshots)
    assert set(from_events) == stored
    assert any(len(nodes) == 1 and nodes != [START] for nodes in from_events.values())


# --------------------------------------------------------------------------------------------
# 1. per run, the whole matrix
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("saver_kind", SAVER_KINDS)
@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_every_run_of_every_shape(
    shape: str,
    durability: str,
    saver_kind: str,
    otel: OTel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """The shape's scenario (a failure or an interrupt, its resume, a new turn): each run is
    one trace under invoke_workflow, each resume linked to its writer, every span names the
    right nodes, and the app reads exactly the metadata it reads on the bare saver."""
    spec = SHAPES[shape]
    async with bare_saver(saver_kind, tmp_path, request) as inner:
        is_async = saver_kind in ASYNC_KINDS
        saver = instrumented(inner, otel)
        driver = Driver(
            spec.build(saver), saver, is_async, needs_events(shape, durability, saver_kind)
        )
        runs = await play(driver, otel, "t-wrapped", spec.steps, durability)
        spans = check_runs(runs, driver.graph.name)
        expected = await check_nodes(driver, runs)

        bare = Driver(spec.build(inner), inner, is_async, driver.stream)
        await play(bare, None, "t-bare", spec.steps, durability)
        stored = await check_metadata(driver, bare, "t-wrapped", "t-bare")
        # the nodes stored for offline readers are the ones the put spans reported
        offline = {r.checkpoint_id: list(r.nodes) for r in _thread_records(stored)}
        assert offline == {k: expected.get(k) for k in offline}
        assert not divergence_events(spans)


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_an_app_span_is_the_root_of_every_library_span(
    shape: str, saver_kind: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """With the app's own span current around invoke there is no invoke_workflow span: every
    library span, those of worker threads (async durability) included, is under the app's."""
    spec = SHAPES[shape]
    async with bare_saver(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel)
        driver = Driver(spec.build(saver), saver, False, needs_events(shape, "async"))
        runs = await play(driver, otel, "t-app", spec.steps, "async", app_span="agent-app")
        for run in runs:
            (app,) = [view(s) for s in run.raw if s.name == "agent-app"]
            check_one_trace(run, driver.graph.name, app_span=app)
        await check_nodes(driver, runs)


ALL_PARALLEL_FAIL: dict[str, tuple[Callable[[Saver | None], Any], Callable[[], Any]]] = {
    # both tool calls of the second round fail (every Send task of the step)
    "react": (
        lambda s: agents.react_agent(s, tools=agents.Tools(failing={"book", "send_email"})),
        _ask(),
    ),
    "langchain": (
        lambda s: agents.langchain_agent(s, tools=agents.Tools(failing={"book", "send_email"})),
        _ask(),
    ),
    "map_reduce": (
        lambda s: agents.map_reduce(s, agents.Workers(failing={"history", "food", "transport"})),
        agents.MAP_INPUT.copy,
    ),
}


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("shape", list(ALL_PARALLEL_FAIL))
async def test_a_step_whose_parallel_tasks_all_failed(
    shape: str, durability: str, otel: OTel
) -> None:
    """Every `Send` task of a step raises: the error run and its resume, checked like the
    matrix (the checkpoint the resume writes applies only the re-run tasks' node)."""
    build, make_input = ALL_PARALLEL_FAIL[shape]
    saver = instrumented(InMemorySaver(), otel)
    driver = Driver(build(saver), saver, False, needs_events(shape, durability))
    steps = (Step(make_input, "error"), Step(None, "finished", "error"))
    runs = await play(driver, otel, "t-all-fail", steps, durability)
    check_runs(runs, driver.graph.name)
    await check_nodes(driver, runs)


# --------------------------------------------------------------------------------------------
# 2. one whole span tree
# --------------------------------------------------------------------------------------------

TREE_KEYS = (
    names.GRAPH_NAME,
    names.RESUME_KIND,
    names.RUN_OUTCOME,
    names.STEP,
    names.SOURCE,
    names.NODES,
    names.TASK_NODE,
    names.TASK_OUTCOME,
)

REACT_TREE_FAILING = """\
invoke_workflow travel_agent name=travel_agent outcome=error
  get
  put step=-1 source=input nodes=[]
  put step=0 source=loop nodes=[__start__]
  put step=1 source=loop nodes=[agent]
  put step=2 source=loop nodes=[tools]
  put step=3 source=loop nodes=[agent]
  put_writes node=tools outcome=error"""
"""By default only the failed tool task's error write has a put_writes span."""

REACT_TREE_RESUMED = """\
invoke_workflow travel_agent name=travel_agent kind=error outcome=finished
  resume kind=error step=3 source=loop
    -> checkpoint_writer
  put step=4 source=loop nodes=[tools]
  put step=5 source=loop nodes=[agent]"""

REACT_TREE_FAILING_WITH_OK_WRITES = """\
invoke_workflow travel_agent name=travel_agent outcome=error
  get
  put step=-1 source=input nodes=[]
  put_writes node=__start__ outcome=ok
  put step=0 source=loop nodes=[__start__]
  put_writes node=agent outcome=ok
  put step=1 source=loop nodes=[agent]
  put_writes node=tools outcome=ok
  put_writes node=tools outcome=ok
  put step=2 source=loop nodes=[tools]
  put_writes node=agent outcome=ok
  put step=3 source=loop nodes=[agent]
  put_writes node=tools outcome=ok
  put_writes node=tools outcome=error"""
"""With ``ok_write_spans=True`` every pending-writes call has its span."""

REACT_TREE_RESUMED_WITH_OK_WRITES = """\
invoke_workflow travel_agent name=travel_agent kind=error outcome=finished
  resume kind=error step=3 source=loop
    -> checkpoint_writer
  put_writes node=tools outcome=ok
  put step=4 source=loop nodes=[tools]
  put_writes node=agent outcome=ok
  put step=5 source=loop nodes=[agent]"""


async def _check_react_trees(
    otel: OTel, failing_tree: str, resumed_tree: str, **options: Any
) -> None:
    saver = instrumented(InMemorySaver(), otel, **options)
    graph = agents.react_agent(saver, tools=agents.Tools(failing={"book"}), name="travel_agent")
    driver = Driver(graph, saver, False)
    failing, resumed = await play(
        driver, otel, "t-tree", SHAPES["react"].steps[:2], durability="sync"
    )
    assert render(failing.raw, TREE_KEYS, status=False) == failing_tree
    assert render(resumed.raw, TREE_KEYS, status=False) == resumed_tree
    (link,) = named(resumed.spans, names.SPAN_RESUME)[0].links
    (writer,) = [
        p for p in named(failing.spans, names.SPAN_PUT) if p.attributes.get(names.STEP) == 3
    ]
    assert link[:2] == (writer.trace_id, writer.span_id)
    assert failing.spans[0].trace_id != resumed.spans[0].trace_id


async def test_react_agent_span_tree_across_an_error_and_its_resume(otel: OTel) -> None:
    """create_react_agent, `book` raising in the second round of parallel tool calls: the whole
    tree of both runs, each its own trace under its invoke_workflow span."""
    await _check_react_trees(otel, REACT_TREE_FAILING, REACT_TREE_RESUMED)


async def test_react_agent_span_tree_with_ok_write_spans(otel: OTel) -> None:
    """The same runs with ``ok_write_spans=True``: the ok tasks' put_writes spans come back."""
    await _check_react_trees(
        otel,
        REACT_TREE_FAILING_WITH_OK_WRITES,
        REACT_TREE_RESUMED_WITH_OK_WRITES,
        ok_write_spans=True,
    )


# --------------------------------------------------------------------------------------------
# 3. resume kinds
# --------------------------------------------------------------------------------------------


def _interrupting(shape: str, where: str) -> tuple[Callable[[Saver | None], Any], Step, int]:
    """A shape with a static ``interrupt_before`` (given to compile, or to every invoke), its
    first step, and how often it stops."""
    node = "write" if shape == "map_reduce" else "tools"
    at_compile = {"interrupt_before": [node]} if where == "compile" else {}
    per_invoke = {} if where == "compile" else {"interrupt_before": [node]}
    if shape == "map_reduce":
        return (
            lambda s: agents.map_reduce(s, **at_compile),
            Step(agents.MAP_INPUT.copy, "interrupted", options=per_invoke),
            1,
        )
    maker = agents.react_agent if shape == "react" else agents.langchain_agent
    return (lambda s: maker(s, **at_compile)), Step(_ask(), "interrupted", options=per_invoke), 2


@pytest.mark.parametrize("durability", ["async", "sync"])
@pytest.mark.parametrize(
    ("saver_kind", "where"),
    [
        ("memory", "compile"),
        ("sqlite", "compile"),
        ("async_sqlite", "compile"),
        ("async_redis", "compile"),
        ("memory", "invoke"),
    ],
)
@pytest.mark.parametrize("shape", ["react", "langchain", "map_reduce"])
async def test_interrupt_before_resumes_as_interrupt(
    shape: str,
    saver_kind: str,
    where: str,
    durability: str,
    otel: OTel,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """A static interrupt, compiled in or passed to every invoke (the resumes too)."""
    build, first, stops = _interrupting(shape, where)
    options = first.options
    steps = [
        first,
        *[Step(None, "interrupted", "interrupt", options=options)] * (stops - 1),
        Step(None, "finished", "interrupt", options=options),
    ]
    async with bare_saver(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel)
        driver = Driver(build(saver), saver, saver_kind in ASYNC_KINDS)
        runs = await play(driver, otel, "t-ib", steps, durability)
        check_runs(runs, driver.graph.name)
        await check_nodes(driver, runs)
        final = (await driver.state(agents.thread("t-ib"))).values
        reference = clean_build(shape)(InMemorySaver())
        assert first.make_input is not None
        assert _outcome(final) == _outcome(reference.invoke(first.make_input(), agents.thread("r")))


def _outcome(values: dict[str, Any]) -> Any:
    """What a finished run computed, free of run-specific ids."""
    if "messages" in values:
        return sorted(agents.tool_messages(values)), values["messages"][-1].content
    return {k: v for k, v in values.items() if k != "__interrupt__"}


def _answer_pending_calls(values: dict[str, Any]) -> dict[str, Any]:
    """A human answers the model's pending tool calls in place of the tools."""
    calls = values["messages"][-1].tool_calls
    return {
        "messages": [
            ToolMessage(f"{c['name']}: answered by a human", tool_call_id=c["id"], name=c["name"])
            for c in calls
        ]
    }


UPDATE_SCENARIOS: dict[str, tuple[Callable[[Saver | None], Any], list[Step]]] = {
    "react": (
        lambda s: agents.react_agent(s, interrupt_before=["tools"]),
        [
            Step(_ask(), "interrupted"),
            Step(update=_answer_pending_calls, as_node="tools"),
            Step(None, "interrupted", "update"),  # the model's next calls stop before tools
            Step(None, "finished", "interrupt"),
        ],
    ),
    "map_reduce": (
        lambda s: agents.map_reduce(s, interrupt_before=["write"]),
        [
            Step(agents.MAP_INPUT.copy, "interrupted"),
            Step(update=lambda values: {"topic": "Porto"}, as_node="plan"),
            Step(None, "finished", "update"),
        ],
    ),
}


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("shape", list(UPDATE_SCENARIOS))
async def test_update_state_then_invoke_resumes_as_update(
    shape: str, saver_kind: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    build, steps = UPDATE_SCENARIOS[shape]
    async with bare_saver(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel)
        driver = Driver(build(saver), saver, False)
        runs = await play(driver, otel, "t-up", steps, "sync")
        check_runs(runs, driver.graph.name)  # the update's put span is the resume's writer
        await check_nodes(driver, runs)
        if shape == "map_reduce":
            final = (await driver.state(agents.thread("t-up"))).values
            assert final["report"] == "Porto food | Porto history | Porto transport"


# --- crash: a real SIGKILL at every superstep, resumed by another process --------------------

CRASH_APP = APPS / "agent_crash_app.py"
CRASH_TIMEOUT_S = 90


CRASH_FLAGS = {
    "after-checkpoint": "--crash-after-checkpoint",
    "before-checkpoint": "--crash-before-checkpoint",
    "step": "--crash-step",
}


def _crash_points(shape: str, durability: str) -> list[tuple[str, int]]:
    """Right after the input checkpoint, then inside every superstep that runs user code (read
    from a reference run's history: a checkpoint at step s with tasks makes step s+1 run), and
    under sync durability also between each step's writes and its checkpoint."""
    graph = (agents.react_agent if shape == "react" else agents.map_reduce)(InMemorySaver())
    steps = [step for step, _ in node_steps(graph, agent_crash_app.shape_input(shape))]
    points = [("after-checkpoint", -1), *(("step", k) for k in steps)]
    if durability == "sync":
        points += [("before-checkpoint", k) for k in [0, *steps]]
    return points


@dataclass(frozen=True)
class App:
    """`agent_crash_app.py` against one database, for one shape and durability."""

    backend: str
    shape: str
    durability: str
    files: Path

    def start(self, instance: str, action: str, threads: Sequence[str], *extra: str) -> Any:
        """Start a process; its spans go to ``<instance>.jsonl``, its events to ``.events``."""
        spans, events = self.files / f"{instance}.jsonl", self.files / f"{instance}.events"
        command = [sys.executable, str(CRASH_APP), self.backend, self.shape, str(spans)]
        command += [instance, action, *threads, "--durability", self.durability]
        command += ["--events", str(events), *extra]
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=dict(os.environ),
        )

    def spans(self, instance: str) -> list[View]:
        return library_spans(read_spans(self.files / f"{instance}.jsonl"))

    def events(self, instance: str) -> dict[str, list[dict[str, Any]]]:
        """The stream events of each thread the process ran."""
        by_thread: dict[str, list[dict[str, Any]]] = defaultdict(list)
        path = self.files / f"{instance}.events"
        for line in path.read_text().splitlines() if path.exists() else []:
            record = json.loads(line)
            by_thread[record["thread"]].append(record["event"])
        return by_thread


def _after_the_input(loaded: Any) -> list[Any]:
    """The pending writes of a checkpoint other than its `__start__` task's input mapping.

    ... but the input's own mapping: LangGraph saves the `__start__` task's writes (the input's
    channels and the first node's trigger) from another executor thread, so under `sync`
    durability they may be stored before the input checkpoint's put has returned and the
    process is killed.
    """
    start = (loaded.checkpoint.get("channel_values") or {}).get("__start__")
    input_channels = set(start) if isinstance(start, dict) else set()
    return [
        write
        for write in loaded.pending_writes or ()
        if write[1] not in input_channels and not str(write[1]).startswith("branch:to:")
    ]


@pytest.mark.parametrize(
    ("shape", "durability"), [("react", "sync"), ("react", "async"), ("map_reduce", "sync")]
)
def test_sigkill_at_every_superstep_resumes_as_crash(
    shape: str, durability: str, postgres_db: str, tmp_path: Path
) -> None:
    """Process A is killed (SIGKILL, no exception, no cleanup) at one point per thread;
    process B resumes every thread with invoke(None): each resume is a `crash` linked to A's
    put span, in its own trace under its invoke_workflow span, and ends where an uninterrupted
    run ends."""
    from langgraph.checkpoint.postgres import PostgresSaver

    app_shape = "react" if shape == "react" else "map"
    app = App(f"postgres:{postgres_db}", app_shape, durability, tmp_path)
    with PostgresSaver.from_conn_string(postgres_db) as saver:
        saver.setup()  # once, before processes that would race to create the tables
    threads = {f"{kind}{k}": (kind, k) for kind, k in _crash_points(app_shape, durability)}

    pending = list(threads.items())
    while pending:  # two at a time: the machine has two cores
        batch, pending = pending[:2], pending[2:]
        procs = [
            (t, app.start(f"a-{t}", "run", [t], CRASH_FLAGS[kind], str(k)))
            for t, (kind, k) in batch
        ]
        for thread_id, proc in procs:
            out, err = proc.communicate(timeout=CRASH_TIMEOUT_S)
            assert proc.returncode == -signal.SIGKILL, f"{thread_id}: exit {proc.returncode}\n{err}"
            assert out.strip() == "", f"{thread_id} printed a result: it was not killed mid-run"

    with PostgresSaver.from_conn_string(postgres_db) as bare:
        # what the killed processes left, read before B touches it
        left = {t: bare.get_tuple(agents.thread(t)) for t in threads}
        proc = app.start("b", "resume", list(threads))
        out, err = proc.communicate(timeout=CRASH_TIMEOUT_S)
        assert proc.returncode == 0, err
        results = {line["thread"]: line for line in map(json.loads, out.splitlines())}
        reference = _reference_summary(app_shape)
        b_spans, b_events = app.spans("b"), app.events("b")
        graph = (agents.react_agent if app_shape == "react" else agents.map_reduce)(bare)
        if durability == "sync":  # a process killed before a checkpoint leaves the step's writes
            before = [t for t, (kind, _) in threads.items() if kind == "before-checkpoint"]
            assert any(left[t].pending_writes for t in before)  # type: ignore[union-attr]
        for thread_id, (kind, k) in threads.items():
            assert results[thread_id] == {
                "thread": thread_id,
                "outcome": "finished",
                "summary": reference,
            }, "the resumed run ends where an uninterrupted one does"
            loaded = left[thread_id]
            assert loaded is not None
            if durability == "sync":
                want_step = -1 if kind == "after-checkpoint" else k - 1
                assert loaded.metadata["step"] == want_step, (thread_id, loaded.metadata)
                if kind == "after-checkpoint":  # nothing after the checkpoint was stored ...
                    assert not _after_the_input(loaded), thread_id
            _check_crash_resume(
                thread_id,
                app.spans(f"a-{thread_id}"),
                [s for s in b_spans if s.attributes.get(names.THREAD_ID) == thread_id],
                loaded,
                b_events[thread_id],
                list(graph.get_state_history(agents.thread(thread_id))),
                graph.name,
                durability,
            )


def _check_crash_resume(
    thread_id: str,
    a: list[View],
    b: list[View],
    loaded: CheckpointTuple,
    b_events: list[dict[str, Any]],
    snapshots: list[Any],
    graph_name: str,
    durability: str,
) -> None:
    """B's run of a thread A left: one trace under invoke_workflow, a `crash` resume of the
    checkpoint A stored last, linked to the put span that wrote it, and the right nodes."""
    assert not named(a, names.SPAN_RESUME), "A resumed nothing"
    check_one_trace(Run(Step(None, "finished", "crash"), thread_id, b_events, b), graph_name)
    (resume,) = [s for s in named(b, names.SPAN_RESUME) if s.ns == ""]
    loaded_id = str(loaded.checkpoint["id"])
    assert resume.attributes[names.RESUME_FROM_CHECKPOINT_ID] == loaded_id
    assert not [w for w in loaded.pending_writes or () if w[1] in ("__error__", "__interrupt__")]
    # the writer: the put span stored with the checkpoint, and (sync) the one in A's file
    _, trace_id, span_id, _ = loaded.metadata[names.METADATA_KEY]["traceparent"].split("-")
    check_writer(resume, trace_id, span_id)
    if durability == "sync":
        writers = [
            (p.trace_id, p.span_id)
            for p in named(a, names.SPAN_PUT)
            if p.attributes.get(names.CHECKPOINT_ID) == loaded_id
        ]
        if loaded.metadata["step"] == -1:
            # sync durability waits for each step's put before the next step, but not for
            # the input checkpoint's: step 0's node runs beside it, and a kill there can come
            # after the checkpoint is stored and before its put span has ended (seen in CI)
            assert writers in ([], [(trace_id, span_id)])
        else:
            assert writers == [(trace_id, span_id)]
    first_put = next(s for s in named(b, names.SPAN_PUT) if s.ns == "")
    assert first_put.attributes.get(names.RESUME_FROM_CHECKPOINT_ID) == loaded_id

    # nodes, from LangGraph's own account: B's events, after the writes A left stored (A's
    # events cannot tell: a task A finished may have died with its writes unstored)
    tasks = expected_task_nodes(b_events, snapshots)
    wrong = [
        (s.attributes[names.TASK_NODE], tasks.get(s.attributes[names.TASK_ID]))
        for s in named(b, names.SPAN_PUT_WRITES)
        if s.attributes[names.TASK_NODE] != tasks.get(s.attributes[names.TASK_ID])
    ]
    assert not wrong, f"{thread_id}: put_writes nodes (emitted, expected): {wrong}"
    left_by_a = [
        {"type": "result", "ns": "", "id": task_id, "name": tasks[task_id], "ok": True}
        for task_id in dict.fromkeys(w[0] for w in loaded.pending_writes or ())
    ]
    assert b_events and b_events[0]["id"] == loaded_id, "B starts from the loaded checkpoint"
    events = [b_events[0], *left_by_a, *b_events[1:]]
    stored = {s.config["configurable"]["checkpoint_id"] for s in snapshots}
    expected = expected_checkpoint_nodes(events, stored)
    mismatched = [
        (p.attributes[names.STEP], list(p.attributes[names.NODES]), want)
        for p in named(b, names.SPAN_PUT)
        if list(p.attributes[names.NODES]) != (want := expected[p.attributes[names.CHECKPOINT_ID]])
    ]
    assert not mismatched, f"{thread_id}: B's put nodes (step, emitted, expected): {mismatched}"


def _reference_summary(shape: str) -> dict[str, Any]:
    """What an uninterrupted run of the app computes (in this process)."""
    graph = (agents.react_agent if shape == "react" else agents.map_reduce)(InMemorySaver())
    values = graph.invoke(agent_crash_app.shape_input(shape), agents.thread("r"))
    summary: dict[str, Any] = json.loads(json.dumps(agent_crash_app.summary(shape, dict(values))))
    return summary  # as the app prints it


# --------------------------------------------------------------------------------------------
# 4. divergence
# --------------------------------------------------------------------------------------------


def node_steps(graph: Any, graph_input: Any) -> list[tuple[int, tuple[str, ...]]]:
    """(step, nodes) of every superstep of a clean run that runs graph nodes, from its
    history: a checkpoint at step s schedules the tasks that run at step s+1."""
    graph.invoke(graph_input, agents.thread("steps"))
    return sorted(
        (s.metadata["step"] + 1, tuple(sorted({t.name for t in s.tasks})))
        for s in graph.get_state_history(agents.thread("steps"))
        if s.tasks and all(t.name != START for t in s.tasks)
    )


@pytest.mark.parametrize("saver", ["instrumented", "bare"])
@pytest.mark.parametrize("shape", HARNESS_SHAPES)
def test_resume_harness_at_every_superstep_finds_nothing(
    shape: str, saver: str, otel: OTel
) -> None:
    """`check_resume` (error and interrupt at every superstep, resumed, compared with a clean
    run) covers every superstep, on a bare and on an instrumented saver; the report passes and
    no divergence event is emitted."""
    graph_input = dict(agents.MAP_INPUT) if shape == "map_reduce" else agents.question()

    def make_saver() -> Saver:
        return instrumented(InMemorySaver(), otel) if saver == "instrumented" else InMemorySaver()

    report = check_resume(lambda: clean_build(shape)(None), graph_input, saver_factory=make_saver)
    steps = node_steps(clean_build(shape)(InMemorySaver()), graph_input)
    covered = [(s.step, tuple(sorted(s.nodes))) for s in report.reference_steps]
    assert covered == steps, f"the harness checks supersteps {covered}; the run has {steps}"
    assert report.passed, report.message()
    assert report.results and all(r.injected for r in report.results)
    spans = library_spans(otel.spans())
    assert bool(spans) == (saver == "instrumented")
    kinds = {s.attributes.get(names.RESUME_KIND) for s in named(spans, names.SPAN_RESUME)}
    assert "error" in kinds or saver == "bare"  # (interrupt mode resumes without interrupt_before)
    assert not divergence_events(spans), _summary(divergence_events(spans))


def _thread_records(stored: Sequence[CheckpointTuple]) -> list[Any]:
    return history_records([t for t in stored if t.config["configurable"]["checkpoint_ns"] == ""])


@pytest.mark.parametrize("durability", DURABILITIES)
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_deterministic_forks_find_nothing(shape: str, durability: str, otel: OTel) -> None:
    """A finished thread (its scenario: a failure or interrupt, the resume, a new turn) forked
    from every one of its checkpoints, then twice from one checkpoint, then from a checkpoint
    of a fork: every fork resumes as `fork`, and nothing diverges, online or offline. A fork
    runs again the tools after its fork point: the read-only ones, declared repeatable, give
    no finding; a side effect done again (`book`, `send_email`, asking for `approve`al) is a
    `duplicate_tool_call`, and the only finding there is."""
    spec = SHAPES[shape]
    saver = instrumented(InMemorySaver(), otel, divergence=FORK_POLICY)
    driver = Driver(spec.build(saver), saver, False, needs_events(shape, durability))
    thread_id = "t-fork"
    runs = await play(driver, otel, thread_id, spec.steps, durability)
    history = await driver.history(agents.thread(thread_id))
    original = [s.config["configurable"]["checkpoint_id"] for s in history[1:]]  # all but latest
    assert original, "the scenario stores more than one checkpoint under every durability"

    async def fork_from(checkpoint_id: str) -> None:
        pauses = shape == "approval" and await _approval_pending(driver, thread_id, checkpoint_id)
        step = Step(None, "interrupted" if pauses else "finished", "fork")
        for _ in range(3):
            earlier = [s for r in runs for s in r.spans]
            fork = {"checkpoint_id": checkpoint_id} if step.resume == "fork" else None
            run = await play_step(driver, otel, thread_id, step, durability, configurable=fork)
            check_one_trace(run, driver.graph.name)
            check_resumes(run, earlier)
            runs.append(run)
            if run.step.outcome == "finished":
                return
            step = Step(lambda: Command(resume="yes"), "finished", "interrupt")
        raise AssertionError("the fork did not finish")

    for checkpoint_id in original:
        await fork_from(checkpoint_id)
    await fork_from(original[len(original) // 2])  # a second fork of one checkpoint
    _latest, *older = await driver.history(agents.thread(thread_id))
    on_forks = [s for s in older if s.config["configurable"]["checkpoint_id"] not in original]
    assert on_forks or durability == "exit", "fork branches store checkpoints before their last"
    if on_forks:  # under exit a fork branch of a shape without interrupts stores only its last
        on_forks.sort(key=lambda s: not s.next)  # prefer one that has work left
        await fork_from(on_forks[0].config["configurable"]["checkpoint_id"])  # a fork of a fork

    spans = [s for r in runs for s in r.spans]
    findings = _summary(divergence_events(spans))
    stored = await driver.stored(agents.thread(thread_id))
    offline = [
        (f.kind, f.node, f.expected, f.actual)
        for f in divergences(_thread_records(stored), FORK_POLICY)
    ]
    nondeterminism = [f for f in findings + offline if f[0] != "duplicate_tool_call"]
    assert not nondeterminism, f"state/trajectory findings on deterministic forks: {nondeterminism}"
    await check_nodes(driver, runs)
    expected = _tools_answered(stored) & SIDE_EFFECTS  # every fork before them ran them again
    online_tools = {f[3] for f in findings}
    offline_tools = {f[3] for f in offline}
    assert online_tools == offline_tools == expected, (
        f"duplicate tool calls on forks: online {online_tools}, offline {offline_tools}, "
        f"expected the side effects the forks did again: {expected}"
    )


FORK_POLICY = DivergencePolicy(repeatable_tools=frozenset({"lookup", "search"}))
"""Forks re-run tools: the read-only ones are declared safe to repeat."""
SIDE_EFFECTS = frozenset({"book", "send_email", "approve"})


def _tools_answered(stored: Sequence[CheckpointTuple]) -> set[str]:
    """Names of the tools whose answers the thread's root checkpoints hold."""
    return {
        str(message.name)
        for t in stored
        if t.config["configurable"]["checkpoint_ns"] == ""
        for message in t.checkpoint["channel_values"].get("messages", [])
        if isinstance(message, ToolMessage)
    }


async def _approval_pending(driver: Driver, thread_id: str, checkpoint_id: str) -> bool:
    """Whether a fork of the approval agent from `checkpoint_id` reaches the approval again."""
    snapshot = await driver.state(agents.thread(thread_id, checkpoint_id=checkpoint_id))
    answered = [
        m for m in snapshot.values.get("messages", []) if getattr(m, "name", None) == "approve"
    ]
    return not answered and bool(snapshot.next)


@dataclass(frozen=True)
class Departure:
    """A fork on which the model (or a worker) answers otherwise, and what must be found."""

    build: Callable[[Saver, Any], Any]
    """Builds the graph around the per-run state the test changes (a script, the workers)."""
    state: Callable[[], Any]
    make_input: Callable[[], Any]
    fork_after: Callable[[Any], bool]
    """Picks the checkpoint to fork from (a StateSnapshot of the finished thread)."""
    change: Callable[[Any], None]
    findings: list[tuple[str, str | None, str]]
    """(kind, node, what): the channel for `state`, ``expected -> actual`` for `trajectory`."""


def finding(
    kind: str, node: str | None, channel: str | None, expected: str | None, actual: str | None
) -> tuple[str, str | None, str]:
    """A finding as `Departure.findings` states it; a `state` finding's expected and actual
    are the two channel hashes (32 hex chars, different)."""
    if kind == "state":
        assert expected and actual and expected != actual
        assert re.fullmatch(r"[0-9a-f]{32}", expected) and re.fullmatch(r"[0-9a-f]{32}", actual)
        return kind, node, str(channel)
    return kind, node, f"{expected} -> {actual}"


def _react_departure(turn: int, answer: agents.Turn, findings: list[Any]) -> Departure:
    return Departure(
        lambda saver, script: agents.react_agent(saver, script),
        agents.travel_script,
        _ask(),
        lambda s: s.metadata["step"] == 2 * turn,  # the tools of the turn before have answered
        lambda script: script.change(turn, answer),
        findings,
    )


DEPARTURES: dict[str, Departure] = {
    # turn 1 asks for other tools (with other arguments: nothing is answered twice)
    "react-other-tools": _react_departure(
        1,
        agents.calls(("lookup", {"city": "Porto"}), ("search", {"query": "OPO May 3"})),
        [("trajectory", "agent", "book -> lookup")],
    ),
    # the final answer differs: same path, other state
    "react-other-answer": _react_departure(
        2, agents.Turn("I could not book anything."), [("state", "agent", "messages")]
    ),
    # a worker writes something else
    "map-reduce-other-draft": Departure(
        lambda saver, workers: agents.map_reduce(saver, workers),
        agents.Workers,
        agents.MAP_INPUT.copy,
        lambda s: s.metadata["step"] == 1,
        lambda workers: setattr(workers, "suffix", " (v2)"),
        [("state", "write", "drafts")],
    ),
    # the supervisor routes to the researcher again instead of the booker
    "supervisor-other-route": Departure(
        lambda saver, scripts: agents.supervisor(saver, scripts),
        agents.supervisor_scripts,
        _ask(),
        lambda s: s.metadata["step"] == 2,
        lambda scripts: scripts["supervisor"].change(1, agents.Turn("researcher")),
        [("state", "supervisor", "messages"), ("trajectory", "researcher", "booker -> researcher")],
    ),
}


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("case", list(DEPARTURES))
async def test_a_fork_that_answers_otherwise_gives_the_right_finding(
    case: str, saver_kind: str, otel: OTel, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same finding online (`langgraph.divergence` events, naming the node) and offline
    (`divergences` over `stored_history`), against the checkpoints of the first run."""
    spec = DEPARTURES[case]
    state = spec.state()
    async with bare_saver(saver_kind, tmp_path, request) as inner:
        saver = instrumented(inner, otel)
        driver = Driver(spec.build(saver, state), saver, False)
        first = await play_step(driver, otel, "t-div", Step(spec.make_input), "sync")
        (point,) = [s for s in await driver.history(agents.thread("t-div")) if spec.fork_after(s)]
        spec.change(state)
        fork = {"checkpoint_id": point.config["configurable"]["checkpoint_id"]}
        forked = await play_step(
            driver, otel, "t-div", Step(None, "finished", "fork"), "sync", configurable=fork
        )
        check_runs([first, forked], driver.graph.name)
        events = divergence_events(forked.spans)
        online = [
            finding(
                e[names.DIVERGENCE_KIND],
                e.get(names.DIVERGENCE_NODE),
                e.get(names.DIVERGENCE_CHANNEL),
                e.get(names.DIVERGENCE_EXPECTED),
                e.get(names.DIVERGENCE_ACTUAL),
            )
            for e in events
        ]
        assert online == spec.findings
        first_run = {
            p.attributes.get(names.CHECKPOINT_ID) for p in named(first.spans, names.SPAN_PUT)
        }
        assert {e.get(names.DIVERGENCE_REFERENCE_CHECKPOINT_ID) for e in events} <= first_run
        stored = await driver.stored(agents.thread("t-div"))
        offline = [
            finding(f.kind, f.node, f.channel, f.expected, f.actual)
            for f in divergences(_thread_records(stored))
        ]
        assert offline == spec.findings


def duplicate_script() -> agents.Script:
    """Turn 0 asks for `lookup` (read-only) and `book` (a side effect) at once; the model then
    fails once, and after the resume asks for both again (the same calls); then answers."""
    both = agents.calls(("lookup", {"city": "Lisbon"}), ("book", {"flight": "TP1353"}))
    script = agents.Script([both, both, agents.Turn("Booked.")])
    script.fail_once(1)
    return script


@pytest.mark.parametrize("shape", ["react", "langchain"])
@pytest.mark.parametrize(
    ("repeatable", "duplicates"),
    [(frozenset(), ["book", "lookup"]), (frozenset({"lookup"}), ["book"])],
    ids=["none-declared", "lookup-declared"],
)
async def test_only_tools_not_declared_repeatable_are_duplicate_calls_after_an_error_resume(
    shape: str, repeatable: frozenset[str], duplicates: list[str], otel: OTel
) -> None:
    policy = DivergencePolicy(repeatable_tools=repeatable)
    saver = instrumented(InMemorySaver(), otel, divergence=policy)
    build = agents.react_agent if shape == "react" else agents.langchain_agent
    tools = agents.Tools()
    driver = Driver(build(saver, duplicate_script(), tools), saver, False)
    failed, resumed = await play(driver, otel, "t-dup", FAIL_RESUME, "sync")
    check_resumes(resumed, failed.spans)
    assert tools.ledger.count(("book", "TP1353")) == 2  # the side effect really ran twice
    events = divergence_events(resumed.spans)
    assert sorted(_summary(events)) == [
        ("duplicate_tool_call", "tools", None, d) for d in duplicates
    ]
    stored = await driver.stored(agents.thread("t-dup"))
    offline = divergences(_thread_records(stored), policy)
    assert sorted((f.kind, f.node, f.actual) for f in offline) == [
        ("duplicate_tool_call", "tools", d) for d in duplicates
    ]
