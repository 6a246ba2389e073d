"""The library on the LangGraph Agent Server (``langgraph dev``), seen as a user sees it.

Per route (``custom``: ``instrument()`` around the custom checkpointer of ``langgraph.json``;
``custom+instrumentor``: the same with the Instrumentor on too; ``zero-code``: the server's own
saver under ``opentelemetry-instrument``; see tests/support/agent_server.py), one server is started for
the module and driven through ``langgraph_sdk`` with six runs:

1. ``new thread``: the tool-calling agent (``create_react_agent``, parallel tool calls) on a
   new thread;
2. ``second turn``: a second question on the same thread (resume kind ``continue``);
3. ``interrupt``: the approval graph on a new thread, stopping at ``interrupt()``;
4. ``resume``: ``command={"resume": ...}`` (kind ``interrupt``);
5. ``update``: ``threads.update_state(..., as_node="review")`` and a run from it (kind
   ``update``);
6. ``replay``: a run from an earlier checkpoint of the agent thread (``checkpoint_id=``), after
   the model has changed its answer (kind ``fork``, and a divergence).

The server is then stopped (the SDK flushes at exit) and the tests read what arrived at the
OTLP/HTTP receiver, like a user in a trace viewer: one trace per run, nodes on every put,
resume kinds and links, the divergence, no ``otel`` key through the API, and the same results
as a server with the bare saver (``bare`` route, no OpenTelemetry).

A server that cannot start fails the tests; missing CLI packages skip them, except under
``CI=true`` (then a failure too).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_server import (
    ROUTES,
    AgentServer,
    AgentServerFailed,
    AgentServerUnavailable,
    require_cli,
)
from helpers import in_ci
from langgraph.checkpoint.otel import names
from otlp_receiver import OTLPReceiver, Received, attrs
from suite_paths import APPS

QUESTION = "Find me a flight to Lisbon and book it."
SECOND_QUESTION = "And what is the weather in Porto?"
REQUEST = "refund 40 EUR"

INSTRUMENTED = ["custom", "custom+instrumentor", "zero-code"]
DIVERGENCE_KINDS = {"trajectory", "state", "duplicate_tool_call"}
HIDDEN_KEYS = {"id", "tool_call_id"}
"""Identifiers that differ on every run (message ids, model-issued tool call ids, interrupt
ids): left out when results are compared."""

# --------------------------------------------------------------------------------------------
# the scenario
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    label: str
    graph: str
    thread_id: str
    resume_kind: str | None
    """The `langgraph.resume.kind` the run must have; None: a run on a new thread."""
    from_checkpoint: str | None
    """The checkpoint the run starts from (that a resume span must name)."""
    outcome: str
    """`langgraph.run.outcome` it must end with."""
    started_ns: int = 0
    ended_ns: int = 0
    result: Any = None


@dataclass
class Outcome:
    """What one route's server did, through its API and over the wire."""

    route: str
    runs: list[Run]
    states: dict[str, Any]
    histories: dict[str, list[Any]]
    spans: list[tuple[dict[str, Any], str, Any]] = field(default_factory=list)
    metrics: dict[str, list[Any]] = field(default_factory=dict)
    log: str = ""
    exit_code: int | None = None
    """-15 (SIGTERM) is normal: uvicorn re-raises the signal after its graceful shutdown."""
    seconds: float = 0.0

    def run(self, label: str) -> Run:
        return next(r for r in self.runs if r.label == label)


def _checkpoint_id(state: Any) -> str:
    return str(state["checkpoint"]["checkpoint_id"])


def _ai_messages(values: Any) -> int:
    return sum(1 for m in (values or {}).get("messages", []) if m.get("type") == "ai")


async def drive(server: AgentServer) -> tuple[list[Run], dict[str, Any], dict[str, list[Any]]]:
    """The six runs (module docstring), in order, each to its end (`runs.wait`)."""
    from langgraph_sdk import get_client

    client = get_client(url=server.url, timeout=60)
    runs: list[Run] = []

    async def run(spec: Run, **kwargs: Any) -> Run:
        spec.started_ns = time.time_ns()
        spec.result = await client.runs.wait(spec.thread_id, spec.graph, **kwargs)
        spec.ended_ns = time.time_ns()
        runs.append(spec)
        return spec

    agent = (await client.threads.create())["thread_id"]
    await run(
        Run("new thread", "agent", agent, None, None, "finished"),
        input={"messages": [{"role": "human", "content": QUESTION}]},
    )
    latest = await client.threads.get_state(agent)
    await run(
        Run("second turn", "agent", agent, "continue", _checkpoint_id(latest), "finished"),
        input={"messages": [{"role": "human", "content": SECOND_QUESTION}]},
    )

    approval = (await client.threads.create())["thread_id"]
    await run(
        Run("interrupt", "approval", approval, None, None, "interrupted"),
        input={"request": REQUEST},
    )
    waiting = await client.threads.get_state(approval)
    assert list(waiting["next"]) == ["review"], waiting
    await run(
        Run("resume", "approval", approval, "interrupt", _checkpoint_id(waiting), "finished"),
        command={"resume": "approved"},
    )
    updated = await client.threads.update_state(
        approval, {"decision": "rejected"}, as_node="review"
    )
    await run(
        Run("update", "approval", approval, "update", _checkpoint_id(updated), "finished"),
        input=None,
    )

    # The checkpoint after the first round of tools, before the model's second answer.
    history = await client.threads.get_history(agent, limit=200)
    earlier = next(
        s
        for s in reversed(history)
        if list(s["next"]) == ["agent"] and _ai_messages(s["values"]) == 1
    )
    server.variant_file.write_text("changed")  # the model now answers its second turn otherwise
    await run(
        Run("replay", "agent", agent, "fork", _checkpoint_id(earlier), "finished"),
        input=None,
        checkpoint_id=_checkpoint_id(earlier),
    )

    states = {t: await client.threads.get_state(t) for t in (agent, approval)}
    histories = {t: await client.threads.get_history(t, limit=200) for t in (agent, approval)}
    return runs, states, histories


SETTLE_S = 1.5
"""Quiet time that ends the wait for exports: longer than the batch span processor's delay
(``OTEL_BSP_SCHEDULE_DELAY=100`` ms) and the metric export interval (1 s), so the last spans
and a metric export taken after them have arrived."""


def settle(received: Received, timeout: float = 20.0) -> None:
    """Wait until no span has arrived for `SETTLE_S` seconds."""
    deadline = time.monotonic() + timeout
    count, since = received.span_count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = received.span_count()
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            return


def _serve(route: str) -> Outcome:
    """Start the route's server, drive the scenario, stop the server; what it did."""
    try:
        require_cli()
    except AgentServerUnavailable as exc:
        if in_ci():
            pytest.fail(f"CI=true, so this is a failure, not a skip: {exc}", pytrace=False)
        pytest.skip(str(exc))
    began = time.monotonic()
    with OTLPReceiver() as receiver:
        spec = ROUTES[route]
        server = AgentServer(spec, receiver.endpoint if spec.instrumented else None)
        try:
            try:
                server.start()
            except AgentServerFailed as exc:
                pytest.fail(str(exc), pytrace=False)
            try:
                runs, states, histories = asyncio.run(drive(server))
            except Exception as exc:
                server.stop()
                raise AssertionError(
                    f"{route} server: the scenario failed ({exc!r}); server log:\n"
                    f"{server.log_tail(80)}"
                ) from exc
            # uvicorn re-raises SIGTERM after its graceful shutdown, so the process dies of
            # the signal and the SDK's atexit flush never runs: wait for the exports first.
            settle(receiver.received)
            exit_code = server.stop()
            return Outcome(
                route=route,
                runs=runs,
                states=states,
                histories=histories,
                spans=receiver.received.spans(),
                metrics=receiver.received.metric_points(),
                log=server.log(),
                exit_code=exit_code,
                seconds=time.monotonic() - began,
            )
        finally:
            server.cleanup()


@pytest.fixture(scope="module", params=INSTRUMENTED)
def outcome(request: pytest.FixtureRequest) -> Iterator[Outcome]:
    yield _serve(request.param)


@pytest.fixture(scope="module")
def bare() -> Outcome:
    return _serve("bare")


# --------------------------------------------------------------------------------------------
# reading the spans
# --------------------------------------------------------------------------------------------


def _hex(raw: bytes) -> str:
    return raw.hex()


def library_spans(o: Outcome) -> list[Any]:
    return [span for _, scope, span in o.spans if scope == names.SCOPE]


def server_spans(o: Outcome) -> list[Any]:
    return [span for _, scope, span in o.spans if scope != names.SCOPE]


def _in(run: Run, span: Any) -> bool:
    return run.started_ns <= span.start_time_unix_nano <= run.ended_ns


def spans_of(o: Outcome, run: Run, *span_names: str) -> list[Any]:
    """Library spans of `run`'s thread that started while the run lasted (runs are sequential,
    and nothing else touches the thread meanwhile)."""
    return [
        s
        for s in library_spans(o)
        if _in(run, s)
        and attrs(s.attributes).get(names.THREAD_ID) == run.thread_id
        and (not span_names or s.name in span_names)
    ]


def root_ns(span: Any) -> bool:
    return attrs(span.attributes).get(names.CHECKPOINT_NS, "") == ""


def run_trace(o: Outcome, run: Run) -> bytes | None:
    """The trace a user opens for `run`: its `invoke_workflow` span's, or, where the server opens
    a span of its own for the run, the trace of the earliest such span."""
    runs = [s for s in spans_of(o, run) if names.is_run_span_name(s.name) and root_ns(s)]
    if runs:
        return bytes(runs[0].trace_id)
    own = sorted((s for s in server_spans(o) if _in(run, s)), key=lambda s: s.start_time_unix_nano)
    return bytes(own[0].trace_id) if own else None


def overview(o: Outcome) -> str:
    """Span counts per name and the number of traces: printed with every failure."""
    spans = [s for _, _, s in o.spans]
    counts = Counter(s.name for s in spans)
    scopes = Counter(scope for _, scope, _ in o.spans)
    return (
        f"[{o.route}] {len(spans)} spans in {len({bytes(s.trace_id) for s in spans})} traces; "
        f"by name {dict(sorted(counts.items()))}; by scope {dict(scopes)}"
    )


def divergence_events(spans: list[Any]) -> list[dict[str, Any]]:
    return [
        attrs(e.attributes)
        for s in spans
        if s.name == names.SPAN_PUT
        for e in s.events
        if e.name == names.EVENT_DIVERGENCE
    ]


def comparable(value: Any) -> Any:
    """`value` without the identifiers that differ on every run (`HIDDEN_KEYS`)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in HIDDEN_KEYS}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# the server and the wire (what every other test relies on)
# --------------------------------------------------------------------------------------------


def test_the_runs_complete_with_the_scripted_answers(outcome: Outcome) -> None:
    """The scenario itself: the agent answered, the approval graph stopped, resumed and ran
    from the update, and the replay took the changed answer."""
    first = outcome.run("new thread").result["messages"]
    assert first[-1]["content"] == "Booked TP1353 and emailed you the ticket."
    assert [m["name"] for m in first if m["type"] == "tool"] == [
        "lookup",
        "search",
        "book",
        "send_email",
    ]
    assert (
        outcome.run("second turn").result["messages"][-1]["content"] == "Porto is sunny too: 21C."
    )
    assert outcome.run("interrupt").result["log"] == [f"draft:{REQUEST}"]
    assert outcome.run("resume").result["log"] == [f"draft:{REQUEST}", "review", "publish:approved"]
    assert outcome.run("update").result["log"][-1] == "publish:rejected"
    replayed = outcome.run("replay").result["messages"]
    assert [m["name"] for m in replayed if m["type"] == "tool"] == ["lookup", "search", "search"]


def test_put_spans_arrive_over_otlp_for_every_checkpoint_in_the_history(outcome: Outcome) -> None:
    """Every checkpoint the API lists (both threads) has its `langgraph.checkpoint.put` span
    at the receiver."""
    put_ids = {
        attrs(s.attributes).get(names.CHECKPOINT_ID)
        for s in library_spans(outcome)
        if s.name == names.SPAN_PUT
    }
    listed = [_checkpoint_id(state) for history in outcome.histories.values() for state in history]
    missing = [c for c in listed if c not in put_ids]
    assert listed
    assert not missing, (
        f"{len(missing)} of {len(listed)} checkpoints have no put span. {overview(outcome)}"
    )


def test_each_checkpoint_has_exactly_one_put_span(outcome: Outcome) -> None:
    """No saver is wrapped twice (the server's adapter around an instrumented saver)."""
    counts = Counter(
        attrs(s.attributes).get(names.CHECKPOINT_ID)
        for s in library_spans(outcome)
        if s.name == names.SPAN_PUT
    )
    assert counts, overview(outcome)
    doubled = {c: n for c, n in counts.items() if n != 1}
    assert not doubled, f"{len(doubled)} checkpoints with several put spans. {overview(outcome)}"


def test_spans_carry_the_service_name_set_by_otel_env(outcome: Outcome) -> None:
    assert outcome.spans, overview(outcome)
    services = {res.get("service.name") for res, _, _ in outcome.spans}
    assert services == {f"agent-server-{outcome.route}"}


# --------------------------------------------------------------------------------------------
# one trace per run
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label", ["new thread", "second turn", "interrupt", "resume", "update", "replay"]
)
def test_each_run_is_one_trace(outcome: Outcome, label: str) -> None:
    """Every library span of a run (the run span, loads and resume, puts, pending writes,
    LangGraph's own reads inside the run such as the replay's "is this checkpoint superseded"
    check) is in the trace of that run's `invoke_workflow` span (or of the server's own span
    for the run, where it opens one)."""
    run = outcome.run(label)
    trace = run_trace(outcome, run)
    assert trace is not None, (
        f"no invoke_workflow (or server) span for run {label!r}. {overview(outcome)}"
    )
    spans = spans_of(outcome, run)
    assert any(s.name == names.SPAN_PUT for s in spans), f"no put span in run {label!r}"
    elsewhere = Counter(s.name for s in spans if bytes(s.trace_id) != trace)
    traces = {bytes(s.trace_id) for s in spans}
    assert not elsewhere, (
        f"run {label!r}: {sum(elsewhere.values())} of {len(spans)} spans outside the run's trace "
        f"({dict(elsewhere)}), {len(traces)} traces. {overview(outcome)}"
    )


def test_runs_do_not_share_a_trace(outcome: Outcome) -> None:
    traces = [run_trace(outcome, run) for run in outcome.runs]
    assert None not in traces, overview(outcome)
    assert len(set(traces)) == len(traces)


def test_each_run_has_one_run_span_with_its_outcome(outcome: Outcome) -> None:
    """`invoke_workflow` (root namespace): one per run, ending `finished` or `interrupted`."""
    seen = {
        run.label: [
            attrs(s.attributes).get(names.RUN_OUTCOME)
            for s in spans_of(outcome, run)
            if names.is_run_span_name(s.name) and root_ns(s)
        ]
        for run in outcome.runs
    }
    assert seen == {run.label: [run.outcome] for run in outcome.runs}, overview(outcome)


# --------------------------------------------------------------------------------------------
# puts
# --------------------------------------------------------------------------------------------


def test_every_loop_put_names_its_node(outcome: Outcome) -> None:
    """A put with `source=loop` applies the writes of the node(s) that ran: it names them."""
    loop_puts = [
        a
        for a in (attrs(s.attributes) for s in library_spans(outcome) if s.name == names.SPAN_PUT)
        if a.get(names.SOURCE) == "loop"
    ]
    assert loop_puts, overview(outcome)
    nameless = [
        (a.get(names.STEP), a.get(names.CHECKPOINT_ID)) for a in loop_puts if not a.get(names.NODES)
    ]
    assert not nameless, f"{len(nameless)} of {len(loop_puts)} loop puts name no node: {nameless}"


def _served_graph_structures() -> set[str]:
    """The structure hashes of the app's graphs, built here from the file the server serves."""
    import importlib.util
    import sys

    from langgraph.checkpoint.otel.core.structure_cache import structure_of

    path = APPS / "agent_server_app" / "graph.py"
    spec = importlib.util.spec_from_file_location("served_graph", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its TypedDicts' annotations resolve in it
    spec.loader.exec_module(module)
    return {structure_of(module.agent).structure_hash, structure_of(module.approval).structure_hash}


def test_every_put_carries_the_structure_hash_of_the_graph_the_server_runs(
    outcome: Outcome,
) -> None:
    """Every put a run makes (`update_state` puts are made outside runs: none here)."""
    puts = [
        a
        for a in (attrs(s.attributes) for s in library_spans(outcome) if s.name == names.SPAN_PUT)
        if a.get(names.CHECKPOINT_NS, "") == "" and a.get(names.SOURCE) != "update"
    ]
    assert puts, overview(outcome)
    hashes = {a.get(names.GRAPH_STRUCTURE_HASH) for a in puts}
    assert hashes == _served_graph_structures(), overview(outcome)


def test_the_nodes_on_the_puts_are_the_graphs_nodes(outcome: Outcome) -> None:
    nodes = {
        node
        for s in library_spans(outcome)
        if s.name == names.SPAN_PUT
        for node in attrs(s.attributes).get(names.NODES, [])
    }
    assert {"agent", "tools", "draft", "review", "publish"} <= nodes, (
        sorted(nodes),
        overview(outcome),
    )


# --------------------------------------------------------------------------------------------
# resumes
# --------------------------------------------------------------------------------------------


def test_each_run_has_the_resume_kind_it_is(outcome: Outcome) -> None:
    """continue (second turn), interrupt (Command(resume=...)), update (a run after
    update_state), fork (a replay from an earlier checkpoint); none on a new thread."""
    seen = {
        run.label: [
            attrs(s.attributes).get(names.RESUME_KIND)
            for s in spans_of(outcome, run, names.SPAN_RESUME)
            if root_ns(s)
        ]
        for run in outcome.runs
    }
    expected = {run.label: [run.resume_kind] if run.resume_kind else [] for run in outcome.runs}
    assert seen == expected, overview(outcome)


def test_each_resume_names_the_checkpoint_the_run_started_from(outcome: Outcome) -> None:
    seen = {
        run.label: [
            attrs(s.attributes).get(names.RESUME_FROM_CHECKPOINT_ID)
            for s in spans_of(outcome, run, names.SPAN_RESUME)
            if root_ns(s)
        ]
        for run in outcome.runs
        if run.resume_kind
    }
    expected = {run.label: [run.from_checkpoint] for run in outcome.runs if run.resume_kind}
    assert seen == expected, overview(outcome)


def test_each_resume_links_to_the_put_that_wrote_the_loaded_checkpoint(outcome: Outcome) -> None:
    """One `checkpoint_writer` link per resume span, to the put span (any trace) whose
    checkpoint id is the one loaded; its trace id is also the `writer.trace_id` attribute."""
    puts = {
        (bytes(s.trace_id), bytes(s.span_id)): attrs(s.attributes).get(names.CHECKPOINT_ID)
        for s in library_spans(outcome)
        if s.name == names.SPAN_PUT
    }
    resumes = [s for run in outcome.runs for s in spans_of(outcome, run, names.SPAN_RESUME)]
    assert len(resumes) >= 4, overview(outcome)
    for resume in resumes:
        a = attrs(resume.attributes)
        assert len(resume.links) == 1, (a.get(names.RESUME_KIND), len(resume.links))
        link = resume.links[0]
        assert attrs(link.attributes).get(names.LINK_TYPE) == "checkpoint_writer"
        written = puts.get((bytes(link.trace_id), bytes(link.span_id)))
        assert written == a[names.RESUME_FROM_CHECKPOINT_ID], (
            f"{a.get(names.RESUME_KIND)} resume links to {written!r}, loaded "
            f"{a[names.RESUME_FROM_CHECKPOINT_ID]!r}"
        )
        assert a.get(names.RESUME_WRITER_TRACE_ID) == _hex(link.trace_id)
        assert a.get(names.RESUME_WRITER_SPAN_ID) == _hex(link.span_id)


def test_the_resume_counter_counts_each_kind_once(outcome: Outcome) -> None:
    points = outcome.metrics.get(names.METRIC_RESUMES, [])
    counted = {attrs(p.attributes).get(names.RESUME_KIND): p.as_int for *_, p in points}
    assert counted == {"continue": 1, "interrupt": 1, "update": 1, "fork": 1}, sorted(
        outcome.metrics
    )


# --------------------------------------------------------------------------------------------
# divergence
# --------------------------------------------------------------------------------------------


def test_a_replay_where_the_model_changed_its_answer_is_a_divergence(outcome: Outcome) -> None:
    replay = outcome.run("replay")
    puts = spans_of(outcome, replay, names.SPAN_PUT)
    found = divergence_events(puts)
    assert found, (
        f"no langgraph.divergence event on the replay's {len(puts)} puts. {overview(outcome)}"
    )
    assert {e[names.DIVERGENCE_KIND] for e in found} <= DIVERGENCE_KINDS
    flagged = [s for s in puts if attrs(s.attributes).get(names.DIVERGENCE_DETECTED) is True]
    assert flagged


def test_the_divergence_names_the_tool_the_model_asked_for_instead(outcome: Outcome) -> None:
    found = divergence_events(spans_of(outcome, outcome.run("replay"), names.SPAN_PUT))
    trajectory = [e for e in found if e[names.DIVERGENCE_KIND] == "trajectory"]
    assert [(e[names.DIVERGENCE_EXPECTED], e[names.DIVERGENCE_ACTUAL]) for e in trajectory] == [
        ("book", "search")
    ], found


def test_no_divergence_outside_the_replay(outcome: Outcome) -> None:
    """The deterministic runs (new turns, the interrupt resume, the update) report none."""
    replay = outcome.run("replay")
    others = [s for s in library_spans(outcome) if not _in(replay, s)]
    assert not divergence_events(others)


# --------------------------------------------------------------------------------------------
# what the API returns
# --------------------------------------------------------------------------------------------


def test_thread_state_through_the_api_has_no_otel_metadata(outcome: Outcome) -> None:
    for thread_id, state in outcome.states.items():
        assert names.METADATA_KEY not in (state.get("metadata") or {}), thread_id


def test_thread_history_through_the_api_has_no_otel_metadata(outcome: Outcome) -> None:
    for thread_id, history in outcome.histories.items():
        assert history
        leaked = [
            s["checkpoint"]["checkpoint_id"]
            for s in history
            if names.METADATA_KEY in (s.get("metadata") or {})
        ]
        assert not leaked, (thread_id, leaked)


def test_run_results_equal_the_bare_servers(outcome: Outcome, bare: Outcome) -> None:
    """Message contents, tool calls and values of every run, ids aside."""
    assert [r.label for r in outcome.runs] == [r.label for r in bare.runs]
    for mine, theirs in zip(outcome.runs, bare.runs, strict=True):
        assert comparable(mine.result) == comparable(theirs.result), mine.label


def test_final_thread_states_equal_the_bare_servers(outcome: Outcome, bare: Outcome) -> None:
    mine = [comparable(s["values"]) for s in outcome.states.values()]
    theirs = [comparable(s["values"]) for s in bare.states.values()]
    assert mine == theirs
    assert [list(s["next"]) for s in outcome.states.values()] == [
        list(s["next"]) for s in bare.states.values()
    ]


def test_thread_histories_have_the_bare_servers_shape(outcome: Outcome, bare: Outcome) -> None:
    """The same checkpoints (source, step, next) in the same order: the wrapper adds none."""

    def shape(o: Outcome) -> list[list[tuple[Any, ...]]]:
        return [
            [(s["metadata"].get("source"), s["metadata"].get("step"), tuple(s["next"])) for s in h]
            for h in o.histories.values()
        ]

    assert shape(outcome) == shape(bare)
