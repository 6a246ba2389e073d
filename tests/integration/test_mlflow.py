"""A crash-resume-fork thread of a real agent, sent over OTLP to a real MLflow tracking server
and read back through MLflow's own REST API and its UI in Chromium: what a user of MLflow sees.

The thread is test_phoenix's (`phoenix_app.crash_resume_fork`: a run SIGKILLed in the tools of
superstep 4, its resume in a new process, a fork from step 1), exported with the real
``opentelemetry-exporter-otlp-proto-http`` exporter to ``mlflow server`` (`MlflowServer`, from
``.venv-mlflow``; a failure under ``CI=true`` when it is missing) with the header
``x-mlflow-experiment-id`` given as ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``. Each process writes
what it sent to a span file: the expectations come from those files and from `names`.

What MLflow 3.17.2 does with them, found in its source (``mlflow/server/otel_api.py``,
``mlflow/entities/span.py``, ``mlflow/store/tracking/sqlalchemy_store.py``,
``mlflow/tracing/otel/translation/``, ``mlflow/utils/search_utils.py``):

- one trace per OTLP trace id (``tr-<hex>``); its state comes from its root span, so a trace
  whose root never arrived (the killed run) stays ``IN_PROGRESS``;
- it keeps every attribute (adding ``mlflow.traceRequestId`` and, where it finds one,
  ``mlflow.spanType``), every event, and the span links (trace id as ``tr-<hex>``, span id,
  attributes; its UI lists them on a span's Links tab with "Jump to linked span");
- span types come from ``openinference.span.kind`` first, then ``gen_ai.operation.name``
  (``invoke_agent`` and ``create_agent``: AGENT; ``invoke_workflow`` is not mapped): the run span
  is a CHAIN by its ``openinference.span.kind``, the checkpoint spans get no type;
- a trace's session is the first ``session.id`` (else ``gen_ai.conversation.id``) among its spans,
  kept as trace metadata ``mlflow.trace.session``; the Traces tab groups by it ("Group by
  session"), its Session column shows it;
- a span attribute filter is ``span.attributes.`<key>` LIKE|ILIKE|RLIKE '<pattern>'`` matched
  against the stored span JSON; ``=`` compares the whole JSON and never matches.

Also: the crash-resume-fork thread under ``resume_trace=continue`` (the killed run and its
resume one trace, the fork its own), and `session_app`'s session of four runs with state and
history reads and an update outside runs between them (the session, ``mlflow.trace.session``,
holds exactly the runs' traces).

Runtime here: 25-45 s (MLflow starts in 5-18 s of it, by the load of the 2 cores), plus
about 10 s for the continue thread and the session (four processes of 1-3 s).
"""

from __future__ import annotations

import base64
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agents
import mlflow_app
import phoenix_app
import session_app
from chromium_cdp import Browser, Shot
from helpers import in_ci
from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from mlflow_server import EXPERIMENT_HEADER, SESSION_METADATA, MlflowServer, MlflowUnavailable
from suite_paths import REPO
from test_report_browser import chromium_binary, colours, png_pixels

THREAD = "mlflow-thread"
INGEST_TIMEOUT_S = 30.0
WINDOW = (1600, 1300)
UI_QUIET = {
    "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": "true",
    "mlflow.detectIssues.guidanceShown_v1": "true",
}
"""localStorage flags that keep MLflow's assistant panel and its "Detect issues" pop-over
closed (they open once, on a first visit from localhost, over a quarter of the page)."""
DOCS_IMAGES = {
    "traces": REPO / "docs" / "images" / "mlflow-traces.png",
    "trace": REPO / "docs" / "images" / "mlflow-trace.png",
}
CRASH_FILTER = f"span.attributes.`{names.RESUME_KIND}` RLIKE '^crash$'"
DIVERGED_FILTER = (
    f"span.attributes.`{names.FINDINGS}` LIKE '%{names.FindingKinds.DIVERGENCE_PREFIX}%'"
)


@pytest.fixture(scope="module")
def mlflow_server() -> Iterator[MlflowServer]:
    """``mlflow server`` for this module (free port, temp SQLite, no telemetry)."""
    try:
        server = MlflowServer()
    except MlflowUnavailable as exc:
        if in_ci():
            pytest.fail(f"CI=true, so this is a failure, not a skip: {exc}", pytrace=False)
        pytest.skip(str(exc))
    try:
        server.start()
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------------------------
# MLflow's spans, as plain values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Held:
    """A span as MLflow's ``traces/get`` serves it, ids in hex, values decoded."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]


def _hex(value: str | None) -> str | None:
    return base64.b64decode(value).hex() if value else None


def _value(any_value: dict[str, Any]) -> Any:
    """An OTLP ``AnyValue`` as MLflow's JSON has it (snake_case keys)."""
    if "array_value" in any_value:
        return tuple(_value(v) for v in any_value["array_value"].get("values", []))
    if "int_value" in any_value:
        return int(any_value["int_value"])
    for key in ("string_value", "bool_value", "double_value"):
        if key in any_value:
            return any_value[key]
    return None


def _attributes(key_values: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value", {})) for kv in key_values or []}


def held_span(span: dict[str, Any]) -> Held:
    return Held(
        trace_id=str(_hex(span["trace_id"])),
        span_id=str(_hex(span["span_id"])),
        parent_span_id=_hex(span.get("parent_span_id")),
        name=span["name"],
        attributes=_attributes(span.get("attributes")),
        events=[(e["name"], _attributes(e.get("attributes"))) for e in span.get("events", [])],
        links=[
            (
                str(_hex(link["trace_id"])),
                str(_hex(link["span_id"])),
                _attributes(link.get("attributes")),
            )
            for link in span.get("links", [])
        ],
    )


def own(attributes: dict[str, Any]) -> dict[str, Any]:
    """`attributes` without the ones MLflow adds (``mlflow.*``)."""
    return {k: v for k, v in attributes.items() if not k.startswith("mlflow.")}


@dataclass(frozen=True)
class Experiment:
    """What some processes sent to one experiment, and what MLflow holds there."""

    experiment_id: str
    processes: dict[str, phoenix_app.Process]
    sent: dict[str, list[SpanRecord]]
    traces: list[dict[str, Any]]
    """TraceInfos (``search``), oldest first."""
    spans: list[Held]

    def trace_of(self, instance: str) -> str:
        (trace_id,) = {s.trace_id for s in self.sent[instance]}
        return trace_id

    def in_trace(self, trace_id: str) -> list[Held]:
        return [s for s in self.spans if s.trace_id == trace_id]

    def span(self, span_id: str) -> Held | None:
        found = [s for s in self.spans if s.span_id == span_id]
        return found[0] if found else None

    def only(self, instance: str, name: str) -> Held:
        (span,) = [s for s in self.in_trace(self.trace_of(instance)) if s.name == name]
        return span


def held_experiment(
    mlflow: MlflowServer, experiment_id: str, processes: dict[str, phoenix_app.Process]
) -> Experiment:
    """`processes`' spans as MLflow holds them, once it holds every span they sent (it
    stores each OTLP request before answering it; the wait covers a slow disk)."""
    sent = {name: read_spans(p.spans_file) for name, p in processes.items()}
    expected = {s.span_id for spans in sent.values() for s in spans}
    deadline = time.monotonic() + INGEST_TIMEOUT_S
    while True:
        traces = mlflow.search_traces(experiment_id)
        spans = [held_span(s) for t in traces for s in mlflow.get_trace(t["trace_id"])["spans"]]
        if expected <= {s.span_id for s in spans} or time.monotonic() > deadline:
            return Experiment(experiment_id, processes, sent, traces, spans)
        time.sleep(0.2)


def headers(experiment_id: str, **more: str) -> dict[str, str]:
    """The environment of an app process exporting to `experiment_id`."""
    return dict(
        os.environ, OTEL_EXPORTER_OTLP_TRACES_HEADERS=f"{EXPERIMENT_HEADER}={experiment_id}", **more
    )


@pytest.fixture(scope="module")
def thread(mlflow_server: MlflowServer, tmp_path_factory: pytest.TempPathFactory) -> Experiment:
    files = tmp_path_factory.mktemp("mlflow-thread")
    experiment_id = mlflow_server.create_experiment()
    processes = phoenix_app.crash_resume_fork(
        mlflow_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        THREAD,
        files,
        env=headers(experiment_id),
    )
    return held_experiment(mlflow_server, experiment_id, processes)


# --------------------------------------------------------------------------------------------
# traces
# --------------------------------------------------------------------------------------------


def test_mlflow_holds_every_span_the_three_processes_sent(thread: Experiment) -> None:
    sent = Counter((s.trace_id, s.span_id, s.name) for v in thread.sent.values() for s in v)
    held = Counter((s.trace_id, s.span_id, s.name) for s in thread.spans)
    assert held == sent


def test_mlflow_lists_one_trace_per_run_in_run_order(thread: Experiment) -> None:
    listed = [t["trace_id"] for t in thread.traces]
    assert listed == [f"tr-{thread.trace_of(name)}" for name in phoenix_app.INSTANCES]


def test_the_killed_run_s_trace_stays_in_progress_the_others_are_ok(thread: Experiment) -> None:
    """MLflow ends a trace by its root span; the killed run's run span never ended, never
    left the process."""
    states = {t["trace_id"]: t["state"] for t in thread.traces}
    assert [states[f"tr-{thread.trace_of(n)}"] for n in phoenix_app.INSTANCES] == [
        "IN_PROGRESS",
        "OK",
        "OK",
    ]


def test_the_put_and_resume_spans_keep_every_attribute_sent(thread: Experiment) -> None:
    sent = {
        s.span_id: dict(s.attributes)
        for spans in thread.sent.values()
        for s in spans
        if s.name in (names.SPAN_PUT, names.SPAN_RESUME)
    }
    held = {s.span_id: own(s.attributes) for s in thread.spans if s.span_id in sent}
    assert len(sent) > 10
    assert held == sent


def test_mlflow_keeps_the_events_sent(thread: Experiment) -> None:
    sent = {
        s.span_id: [(e.name, dict(e.attributes)) for e in s.events]
        for spans in thread.sent.values()
        for s in spans
    }
    held = {s.span_id: s.events for s in thread.spans}
    assert sum(len(v) for v in sent.values()) > 10
    assert held == sent


def test_the_resume_kinds_are_crash_on_the_resume_and_fork_on_the_fork(
    thread: Experiment,
) -> None:
    kinds = {
        name: thread.only(name, names.SPAN_RESUME).attributes[names.RESUME_KIND]
        for name in ("resume", "fork")
    }
    assert kinds == {"resume": "crash", "fork": "fork"}


def test_mlflow_types_the_run_span_a_chain_and_the_checkpoint_spans_not_at_all(
    thread: Experiment,
) -> None:
    """``openinference.span.kind`` = CHAIN gives the run span its type; ``invoke_workflow``
    would give none."""
    types = {(s.name, s.attributes.get("mlflow.spanType")) for s in thread.spans}
    run = names.run_span_name(agents.react_agent(None).name)
    assert {t for n, t in types if n == run} == {"CHAIN"}
    assert {t for n, t in types if n.startswith("langgraph.")} == {None}


# --------------------------------------------------------------------------------------------
# sessions
# --------------------------------------------------------------------------------------------


def test_the_thread_s_three_runs_are_one_session(thread: Experiment) -> None:
    sessions = [t.get("trace_metadata", {}).get(SESSION_METADATA) for t in thread.traces]
    assert sessions == [THREAD] * len(phoenix_app.INSTANCES)


def test_a_session_filter_finds_the_thread_s_three_traces(
    mlflow_server: MlflowServer, thread: Experiment
) -> None:
    found = mlflow_server.search_traces(
        thread.experiment_id, f"metadata.`{SESSION_METADATA}` = '{THREAD}'"
    )
    assert [t["trace_id"] for t in found] == [t["trace_id"] for t in thread.traces]


# --------------------------------------------------------------------------------------------
# resumes: links and writer ids
# --------------------------------------------------------------------------------------------


def test_mlflow_keeps_the_resume_s_link_to_the_put_that_wrote_its_checkpoint(
    thread: Experiment,
) -> None:
    for instance in ("resume", "fork"):
        (sent,) = [s for s in thread.sent[instance] if s.name == names.SPAN_RESUME]
        held = thread.only(instance, names.SPAN_RESUME)
        assert held.links == [(k.trace_id, k.span_id, dict(k.attributes)) for k in sent.links]
        ((_, span_id, attributes),) = held.links
        writer = thread.span(span_id)
        assert attributes[names.LINK_TYPE] == "checkpoint_writer"
        assert writer is not None, f"{instance}: MLflow holds no span with the linked span id"
        assert (writer.trace_id, writer.name) == (thread.trace_of("killed"), names.SPAN_PUT)
        assert (
            writer.attributes[names.CHECKPOINT_ID]
            == (held.attributes[names.RESUME_FROM_CHECKPOINT_ID])
        )


def test_one_span_attribute_filter_finds_the_crash_resume_s_trace(
    mlflow_server: MlflowServer, thread: Experiment
) -> None:
    found = mlflow_server.search_traces(thread.experiment_id, CRASH_FILTER)
    exact = mlflow_server.search_traces(
        thread.experiment_id, f"span.attributes.`{names.RESUME_KIND}` = 'crash'"
    )
    assert [t["trace_id"] for t in found] == [f"tr-{thread.trace_of('resume')}"]
    assert exact == [], "MLflow's '=' on a span attribute now matches: simplify docs/mlflow.md"


# --------------------------------------------------------------------------------------------
# MLflow's UI in Chromium
# --------------------------------------------------------------------------------------------


def assert_drawn(shot: Shot) -> None:
    """A screenshot of the window's size with a page on it, not a blank or error page."""
    width, height, rows = png_pixels(shot.png)
    counts = colours(rows)
    assert (width, height) == WINDOW
    assert len(counts) > 200, "too few colours: a blank page?"
    assert max(counts.values()) < 0.9 * width * height, "one colour covers the page"


def keep(shot: Shot, name: str, tmp_path: Path) -> Path:
    """The shot in `tmp_path` (and as a docs image with LANGGRAPH_OTEL_WRITE_DOCS_IMAGES=1)."""
    path = tmp_path / f"mlflow-{name}.png"
    path.write_bytes(shot.png)
    if os.environ.get("LANGGRAPH_OTEL_WRITE_DOCS_IMAGES") == "1":
        DOCS_IMAGES[name].write_bytes(shot.png)
    return path


def test_the_traces_list_in_chromium_shows_the_three_runs_of_one_session(
    mlflow_server: MlflowServer, thread: Experiment, tmp_path: Path
) -> None:
    browser = chromium_binary()
    with Browser(browser, WINDOW) as page:
        page.load(
            f"{mlflow_server.url}/#/experiments/{thread.experiment_id}/traces",
            [THREAD, "In progress", "3 of 3"],
            local_storage=UI_QUIET,
        )
        shot = page.capture()
    keep(shot, "traces", tmp_path)
    assert_drawn(shot)
    rows = shot.text.split("Tags", 1)[1]
    assert rows.count(THREAD) == len(phoenix_app.INSTANCES)
    assert (rows.count("OK"), rows.count("In progress")) == (2, 1)
    assert THREAD in shot.dom


def test_the_crash_resume_s_trace_in_chromium_shows_its_spans_and_the_resume(
    mlflow_server: MlflowServer, thread: Experiment, tmp_path: Path
) -> None:
    browser = chromium_binary()
    resume = thread.only("resume", names.SPAN_RESUME)
    writer_span = str(resume.attributes[names.RESUME_WRITER_SPAN_ID])
    with Browser(browser, WINDOW) as page:
        page.load(
            f"{mlflow_server.url}/#/experiments/{thread.experiment_id}/traces/"
            f"tr-{thread.trace_of('resume')}",
            [names.SPAN_RESUME, names.SPAN_PUT],
            local_storage=UI_QUIET,
        )
        page.click_text(names.SPAN_RESUME, [names.RESUME_FROM_CHECKPOINT_ID, writer_span])
        shot = page.capture()
    keep(shot, "trace", tmp_path)
    assert_drawn(shot)
    tree = shot.text.split("Assess", 1)[0]
    spans = Counter(s.name for s in thread.in_trace(thread.trace_of("resume")))
    assert {name: tree.count(name) for name in spans} == {
        name: count + (name == names.SPAN_RESUME) for name, count in spans.items()
    }  # the tree, and the selected span's title
    assert "Links\n1" in shot.text
    details = shot.text.split("Attributes", 1)[1]
    assert f"{names.RESUME_KIND}\ncrash" in details
    assert resume.attributes[names.RESUME_FROM_CHECKPOINT_ID] in shot.dom


# --------------------------------------------------------------------------------------------
# resume_trace: an interrupt answered by another process
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def approvals(
    mlflow_server: MlflowServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Experiment]:
    """`agents.approval_agent` interrupted in one process and answered with
    ``Command(resume=...)`` in another, once per ``resume_trace`` mode, each in an experiment
    of its own."""
    done = {}
    for mode in ("link", "continue"):
        files = tmp_path_factory.mktemp(f"mlflow-approval-{mode}")
        experiment_id = mlflow_server.create_experiment()
        processes = mlflow_app.in_turn(
            [("ask", "ask"), ("answer", "answer")],
            mlflow_server.otlp_traces_endpoint,
            files / "agent.sqlite",
            f"approval-{mode}",
            files,
            headers(experiment_id, LANGGRAPH_OTEL_RESUME_TRACE=mode),
        )
        done[mode] = held_experiment(mlflow_server, experiment_id, processes)
    return done


def test_the_interrupt_stopped_the_run_and_the_answer_finished_it(
    approvals: dict[str, Experiment],
) -> None:
    outcomes = {
        mode: [p.result["outcome"] if p.result else None for p in e.processes.values()]
        for mode, e in approvals.items()
    }
    assert outcomes == {
        "link": ["interrupted", "finished"],
        "continue": ["interrupted", "finished"],
    }


def test_under_continue_the_interrupt_and_its_answer_are_one_trace_in_mlflow(
    approvals: dict[str, Experiment],
) -> None:
    held = approvals["continue"]
    run = names.run_span_name(agents.react_agent(None).name)
    (answer_run,) = [s for s in held.sent["answer"] if s.name == run]
    parent = held.span(str(answer_run.parent_span_id))
    assert [t["trace_id"] for t in held.traces] == [f"tr-{held.trace_of('ask')}"]
    assert held.trace_of("answer") == held.trace_of("ask")
    assert parent is not None and parent.name == names.SPAN_PUT
    assert held.only("answer", names.SPAN_RESUME).attributes[names.RESUME_KIND] == "interrupt"
    (answer_held,) = [s for s in held.spans if s.span_id == answer_run.span_id]
    assert answer_held.attributes[names.RUN_RESUME_TRACE] == "continue"


def test_by_default_the_interrupt_and_its_answer_are_two_linked_traces_in_mlflow(
    approvals: dict[str, Experiment],
) -> None:
    held = approvals["link"]
    resume = held.only("answer", names.SPAN_RESUME)
    ((trace_id, span_id, _),) = resume.links
    assert [t["trace_id"] for t in held.traces] == [
        f"tr-{held.trace_of('ask')}",
        f"tr-{held.trace_of('answer')}",
    ]
    assert held.trace_of("ask") != held.trace_of("answer")
    assert (trace_id, getattr(held.span(span_id), "name", None)) == (
        held.trace_of("ask"),
        names.SPAN_PUT,
    )


# --------------------------------------------------------------------------------------------
# findings: a fork whose model answers differently, found by one attribute filter
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def changed_fork(
    mlflow_server: MlflowServer, tmp_path_factory: pytest.TempPathFactory
) -> Experiment:
    """A finished run, then a fork of it from step 1 whose model books another flight."""
    files = tmp_path_factory.mktemp("mlflow-changed-fork")
    experiment_id = mlflow_server.create_experiment()
    processes = mlflow_app.in_turn(
        [("run", "run"), ("fork", "fork-changed")],
        mlflow_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        "changed-fork",
        files,
        headers(experiment_id),
    )
    return held_experiment(mlflow_server, experiment_id, processes)


def test_one_span_attribute_filter_finds_the_fork_whose_model_answered_differently(
    mlflow_server: MlflowServer, changed_fork: Experiment
) -> None:
    found = mlflow_server.search_traces(changed_fork.experiment_id, DIVERGED_FILTER)
    assert [t["trace_id"] for t in found] == [f"tr-{changed_fork.trace_of('fork')}"]


def test_the_fork_s_diverged_puts_hold_the_findings_sent_the_changed_answer_among_them(
    changed_fork: Experiment,
) -> None:
    sent = {
        s.span_id: (s.name, s.attributes[names.FINDINGS])
        for spans in changed_fork.sent.values()
        for s in spans
        if names.FINDINGS in s.attributes
    }
    held = {
        s.span_id: (s.name, s.attributes[names.FINDINGS])
        for s in changed_fork.spans
        if names.FINDINGS in s.attributes
    }
    kinds = {kind for _, found in held.values() for kind in found}
    assert held == sent
    assert {name for name, _ in held.values()} == {names.SPAN_PUT}
    assert names.FindingKinds.divergence("tool_arguments") in kinds
    assert all(s.attributes[names.FLAGGED] is True for s in changed_fork.spans if s.span_id in held)


# --------------------------------------------------------------------------------------------
# resume_trace: a run killed mid-run, resumed in a new process
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crash_continue(
    mlflow_server: MlflowServer, tmp_path_factory: pytest.TempPathFactory
) -> Experiment:
    """`phoenix_app.crash_resume_fork` under ``resume_trace=continue``: a run SIGKILLed in
    superstep 4, ``invoke(None)`` in a new process, a fork; an experiment of its own."""
    files = tmp_path_factory.mktemp("mlflow-crash-continue")
    experiment_id = mlflow_server.create_experiment()
    processes = phoenix_app.crash_resume_fork(
        mlflow_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        "crash-continue",
        files,
        env=headers(experiment_id, LANGGRAPH_OTEL_RESUME_TRACE="continue"),
    )
    return held_experiment(mlflow_server, experiment_id, processes)


def test_under_continue_a_killed_run_and_its_resume_are_one_trace_in_mlflow(
    crash_continue: Experiment,
) -> None:
    held = crash_continue
    sent = Counter(
        (s.trace_id, s.span_id, s.name) for i in ("killed", "resume") for s in held.sent[i]
    )
    shown = Counter((s.trace_id, s.span_id, s.name) for s in held.in_trace(held.trace_of("killed")))
    assert held.trace_of("resume") == held.trace_of("killed")
    assert [t["trace_id"] for t in held.traces] == [
        f"tr-{held.trace_of('killed')}",
        f"tr-{held.trace_of('fork')}",
    ]
    assert shown == sent


def test_under_continue_the_resume_s_run_span_in_mlflow_is_a_child_of_the_killed_run_s_put(
    crash_continue: Experiment,
) -> None:
    held = crash_continue
    (resume_sent,) = [s for s in held.sent["resume"] if s.name == names.SPAN_RESUME]
    loaded = resume_sent.attributes[names.RESUME_FROM_CHECKPOINT_ID]
    (writer,) = [
        s
        for s in held.sent["killed"]
        if s.name == names.SPAN_PUT and s.attributes.get(names.CHECKPOINT_ID) == loaded
    ]
    (run_sent,) = session_app.run_spans(held.sent["resume"])
    run = held.span(run_sent.span_id)
    parent = held.span(writer.span_id)
    assert resume_sent.attributes[names.RESUME_KIND] == "crash"
    assert run is not None and run.parent_span_id == writer.span_id
    assert parent is not None
    assert (parent.trace_id, parent.name) == (writer.trace_id, names.SPAN_PUT)
    assert run.attributes[names.RUN_RESUME_TRACE] == "continue"


def test_under_continue_a_fork_is_still_a_trace_of_its_own_in_mlflow(
    crash_continue: Experiment,
) -> None:
    held = crash_continue
    (run_sent,) = session_app.run_spans(held.sent["fork"])
    run = held.span(run_sent.span_id)
    assert held.trace_of("fork") != held.trace_of("killed")
    assert run is not None and run.parent_span_id is None
    assert names.RUN_RESUME_TRACE not in run.attributes


# --------------------------------------------------------------------------------------------
# a session of N runs, with reads outside runs between them
# --------------------------------------------------------------------------------------------

SESSION_THREAD = "session-thread"


@pytest.fixture(scope="module")
def session(mlflow_server: MlflowServer, tmp_path_factory: pytest.TempPathFactory) -> Experiment:
    """`session_app`: four runs on one thread (``link``), state and history reads and an
    update outside runs between them; an experiment of its own."""
    files = tmp_path_factory.mktemp("mlflow-session")
    experiment_id = mlflow_server.create_experiment()
    process = session_app.run_session(
        mlflow_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        SESSION_THREAD,
        files / "session.jsonl",
        env=headers(experiment_id, LANGGRAPH_OTEL_RESUME_TRACE="link"),
    )
    return held_experiment(mlflow_server, experiment_id, {"session": process})


def test_mlflow_s_session_of_the_thread_has_exactly_one_trace_per_run(
    mlflow_server: MlflowServer, session: Experiment
) -> None:
    runs, _ = session_app.traces_sent(session.sent["session"])
    found = mlflow_server.search_traces(
        session.experiment_id, f"metadata.`{SESSION_METADATA}` = '{SESSION_THREAD}'"
    )
    assert len(runs) == session_app.RUNS
    assert [t["trace_id"] for t in found] == [f"tr-{t}" for t in runs]


def test_mlflow_holds_the_reads_as_traces_outside_the_session(session: Experiment) -> None:
    runs, reads = session_app.traces_sent(session.sent["session"])
    shown = {
        t["trace_id"]: t.get("trace_metadata", {}).get(SESSION_METADATA) for t in session.traces
    }
    assert reads, "the session sent no read outside a run"
    assert shown == {
        **{f"tr-{t}": SESSION_THREAD for t in runs},
        **{f"tr-{t}": None for t in reads},
    }
