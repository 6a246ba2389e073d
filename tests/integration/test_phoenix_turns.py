"""Which traces, and which session turns, a real Arize Phoenix shows for a thread: resume mode
``continue`` across processes, and reads outside runs between a session's runs.

Apps run in processes of their own and export with the real
``opentelemetry-exporter-otlp-proto-http`` exporter to ``phoenix serve`` (fixture
`phoenix_server`, shared with ``test_phoenix.py``), each into a Phoenix project of its own
(resource attribute ``openinference.project.name``, here from ``OTEL_RESOURCE_ATTRIBUTES``);
each also writes what it sent to a span file: expectations come from those files and from
`names`, never from Phoenix.

1. An interrupt answered in another process (`mlflow_app`: ``ask``, then ``answer`` with
   ``Command(resume=...)``), once with ``LANGGRAPH_OTEL_RESUME_TRACE=continue`` and once with
   the option unset (``link``).
2. A run SIGKILLed mid-run, resumed with ``invoke(None)`` in a new process, then forked
   (`phoenix_app.crash_resume_fork`) under ``continue``; the same thread under the default is
   ``test_phoenix.py``'s.
3. A session of `session_app.RUNS` runs on one thread (a question the ``approve`` tool
   interrupts, its answer, two more questions; ``link``) with ``get_state``,
   ``get_state_history`` and ``update_state`` made outside runs between them, as the Agent
   Server makes its API reads (`session_app`).

Phoenix 20.26.1 files a trace under a session when one of its spans has ``session.id``, or
``gen_ai.conversation.id`` on a span with any ``gen_ai.*`` attribute
(``phoenix/db/insertion/span.py``, ``phoenix/trace/gen_ai/conversion.py``). Its Sessions tab's
"total traces" column is ``ProjectSession.numTraces`` (GraphQL, the ``SessionsTable_sessions``
fragment of its UI), the count of the traces filed under the session
(``phoenix/db/session_aggregates.py``); the tests read it, and the session's traces, the same
way.

Runtime: seven app processes of 1-3 s, one at a time: about 10 s beside ``test_phoenix.py``
(both 24-26 s), 28 s alone (Phoenix starts in 16-19 s of it).
"""

from __future__ import annotations

import json
import os
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import mlflow_app
import phoenix_app
import session_app
from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from phoenix_server import PhoenixServer
from session_app import run_spans, traces_sent
from test_phoenix import wait_for_spans

MODES = ("link", "continue")


@dataclass(frozen=True)
class Held:
    """What some processes sent to one Phoenix project, and what Phoenix holds there."""

    project: str
    processes: dict[str, phoenix_app.Process]
    sent: dict[str, list[SpanRecord]]
    """Spans of each process, as its span file has them."""
    spans: list[dict[str, Any]]
    """Every span of the project, as Phoenix's REST API serves it."""
    traces: list[str]
    """Trace ids of the project's traces, as Phoenix lists them, oldest first."""
    sessions: dict[str, tuple[int, list[str]]]
    """Session id -> (its ``numTraces``, its traces' ids), as Phoenix's Sessions tab reads
    them."""

    def trace_of(self, instance: str) -> str:
        (trace_id,) = {s.trace_id for s in self.sent[instance]}
        return trace_id

    def span(self, span_id: str) -> dict[str, Any]:
        (span,) = [s for s in self.spans if s["context"]["span_id"] == span_id]
        return span

    def run_span(self, instance: str) -> SpanRecord:
        """The library's run span `instance` sent (exactly one)."""
        (run,) = run_spans(self.sent[instance])
        return run

    def writer(self, instance: str) -> SpanRecord:
        """The put span, sent by any process, that wrote the checkpoint `instance` resumed
        (its resume span's ``langgraph.resume.from_checkpoint_id``)."""
        (resume,) = [s for s in self.sent[instance] if s.name == names.SPAN_RESUME]
        loaded = resume.attributes[names.RESUME_FROM_CHECKPOINT_ID]
        (put,) = [
            s
            for spans in self.sent.values()
            for s in spans
            if s.name == names.SPAN_PUT and s.attributes.get(names.CHECKPOINT_ID) == loaded
        ]
        return put


def environment(mode: str, project: str) -> dict[str, str]:
    """An app's environment: the resume mode (unset for ``link``, the default) and the
    Phoenix project, nothing else of OpenTelemetry's or the library's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGGRAPH_OTEL_"))}
    env["OTEL_RESOURCE_ATTRIBUTES"] = f"{phoenix_app.PROJECT_ATTRIBUTE}={project}"
    if mode != "link":
        env["LANGGRAPH_OTEL_RESUME_TRACE"] = mode
    return env


def graphql(phoenix: PhoenixServer, query: str, **variables: Any) -> Any:
    request = urllib.request.Request(
        f"{phoenix.url}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return body["data"]


def sessions_of(phoenix: PhoenixServer, project: str) -> dict[str, tuple[int, list[str]]]:
    """The project's sessions as Phoenix's Sessions tab counts them (``numTraces``), with the
    ids of the traces filed under each."""
    (project_id,) = [p["id"] for p in phoenix.get("/v1/projects")["data"] if p["name"] == project]
    query = """query ($id: ID!) { node(id: $id) { ... on Project {
        sessions(first: 100) { edges { node { sessionId numTraces
            traces(first: 100) { edges { node { traceId } } } } } } } } }"""
    edges = graphql(phoenix, query, id=project_id)["node"]["sessions"]["edges"]
    return {
        e["node"]["sessionId"]: (
            e["node"]["numTraces"],
            sorted(t["node"]["traceId"] for t in e["node"]["traces"]["edges"]),
        )
        for e in edges
    }


def held(phoenix: PhoenixServer, project: str, processes: dict[str, phoenix_app.Process]) -> Held:
    """`processes`' spans as Phoenix holds them in `project`, once it holds all of them."""
    sent = {name: read_spans(p.spans_file) for name, p in processes.items()}
    spans = wait_for_spans(phoenix, project, {s.span_id for v in sent.values() for s in v})
    traces = phoenix.paged(f"/v1/projects/{project}/traces", sort="start_time")
    return Held(
        project=project,
        processes=processes,
        sent=sent,
        spans=spans,
        traces=[t["trace_id"] for t in sorted(traces, key=lambda t: t["start_time"])],
        sessions=sessions_of(phoenix, project),
    )


def new_project(kind: str) -> str:
    return f"test-phoenix-{kind}-{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------------------------------
# an interrupt answered in another process
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def approvals(
    phoenix_server: PhoenixServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Held]:
    """`agents.approval_agent` interrupted in one process and answered in another, once per
    resume mode, each in a project of its own."""
    done = {}
    for mode in MODES:
        files = tmp_path_factory.mktemp(f"phoenix-approval-{mode}")
        project = new_project(f"approval-{mode}")
        processes = mlflow_app.in_turn(
            [("ask", "ask"), ("answer", "answer")],
            phoenix_server.otlp_traces_endpoint,
            files / "agent.sqlite",
            f"approval-{mode}",
            files,
            environment(mode, project),
        )
        done[mode] = held(phoenix_server, project, processes)
    return done


def test_the_interrupt_stopped_the_run_and_the_answer_finished_it(
    approvals: dict[str, Held],
) -> None:
    outcomes = {
        mode: [p.result["outcome"] if p.result else None for p in h.processes.values()]
        for mode, h in approvals.items()
    }
    assert outcomes == {mode: ["interrupted", "finished"] for mode in MODES}


def test_under_continue_phoenix_holds_the_interrupt_and_its_answer_as_one_trace(
    approvals: dict[str, Held],
) -> None:
    thread = approvals["continue"]
    sent = Counter((s.trace_id, s.span_id, s.name) for v in thread.sent.values() for s in v)
    shown = Counter(
        (s["context"]["trace_id"], s["context"]["span_id"], s["name"]) for s in thread.spans
    )
    assert thread.traces == [thread.trace_of("ask")]
    assert shown == sent
    assert {trace_id for trace_id, _, _ in shown} == {thread.trace_of("ask")}


def test_under_continue_the_answer_s_run_span_in_phoenix_is_a_child_of_the_interrupt_s_put(
    approvals: dict[str, Held],
) -> None:
    thread = approvals["continue"]
    writer = thread.writer("answer")
    answer = thread.span(thread.run_span("answer").span_id)
    parent = thread.span(str(answer["parent_id"]))
    assert writer in thread.sent["ask"]
    assert answer["parent_id"] == writer.span_id
    assert (parent["name"], parent["context"]["trace_id"]) == (names.SPAN_PUT, writer.trace_id)
    assert answer["attributes"][names.RUN_RESUME_TRACE] == "continue"


def test_by_default_phoenix_shows_the_interrupt_and_its_answer_as_two_traces(
    approvals: dict[str, Held],
) -> None:
    thread = approvals["link"]
    answer = thread.span(thread.run_span("answer").span_id)
    assert thread.traces == [thread.trace_of("ask"), thread.trace_of("answer")]
    assert thread.trace_of("ask") != thread.trace_of("answer")
    assert answer.get("parent_id") is None
    assert names.RUN_RESUME_TRACE not in answer["attributes"]


def test_both_runs_of_the_interrupted_execution_carry_one_execution_id_in_phoenix(
    approvals: dict[str, Held],
) -> None:
    for mode, thread in approvals.items():
        ids = [
            thread.span(thread.run_span(i).span_id)["attributes"][names.EXECUTION_ID]
            for i in ("ask", "answer")
        ]
        first_put = min(
            (s for s in thread.sent["ask"] if s.name == names.SPAN_PUT),
            key=lambda s: s.start_time_unix_nano,
        )
        assert ids == [first_put.attributes[names.CHECKPOINT_ID]] * 2, mode


def test_phoenix_s_session_counts_the_interrupt_and_its_answer_as_one_turn_under_continue(
    approvals: dict[str, Held],
) -> None:
    """The Sessions tab's "total traces": one under ``continue``, two by default."""
    shown = {mode: thread.sessions for mode, thread in approvals.items()}
    assert shown == {
        "link": {
            "approval-link": (
                2,
                sorted(approvals["link"].trace_of(i) for i in ("ask", "answer")),
            )
        },
        "continue": {"approval-continue": (1, [approvals["continue"].trace_of("ask")])},
    }


# --------------------------------------------------------------------------------------------
# a run killed mid-run, resumed in a new process
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crash(phoenix_server: PhoenixServer, tmp_path_factory: pytest.TempPathFactory) -> Held:
    """`phoenix_app.crash_resume_fork` under ``continue``: killed, resumed, forked."""
    files = tmp_path_factory.mktemp("phoenix-crash-continue")
    project = new_project("crash-continue")
    processes = phoenix_app.crash_resume_fork(
        phoenix_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        "crash-continue",
        files,
        project=project,
        env=environment("continue", project),
    )
    return held(phoenix_server, project, processes)


def test_under_continue_a_killed_run_and_its_resume_are_one_trace_in_phoenix(
    crash: Held,
) -> None:
    both = crash.sent["killed"] + crash.sent["resume"]
    shown = {
        s["context"]["span_id"]: s["context"]["trace_id"]
        for s in crash.spans
        if s["context"]["span_id"] in {r.span_id for r in both}
    }
    assert crash.trace_of("resume") == crash.trace_of("killed")
    assert shown == {s.span_id: crash.trace_of("killed") for s in both}
    assert crash.traces == [crash.trace_of("killed"), crash.trace_of("fork")]


def test_under_continue_the_resume_s_run_span_in_phoenix_is_a_child_of_the_killed_run_s_put(
    crash: Held,
) -> None:
    writer = crash.writer("resume")
    resume = crash.span(crash.run_span("resume").span_id)
    parent = crash.span(str(resume["parent_id"]))
    (resumed,) = [s for s in crash.sent["resume"] if s.name == names.SPAN_RESUME]
    assert writer in crash.sent["killed"]
    assert resumed.attributes[names.RESUME_KIND] == "crash"
    assert resume["parent_id"] == writer.span_id
    assert (parent["name"], parent["attributes"][names.STEP]) == (
        names.SPAN_PUT,
        phoenix_app.CRASH_STEP - 1,
    )
    assert resume["attributes"][names.RUN_RESUME_TRACE] == "continue"


def test_under_continue_a_fork_is_still_a_trace_of_its_own_in_phoenix(crash: Held) -> None:
    fork = crash.span(crash.run_span("fork").span_id)
    assert crash.trace_of("fork") != crash.trace_of("killed")
    assert fork.get("parent_id") is None
    assert names.RUN_RESUME_TRACE not in fork["attributes"]


# --------------------------------------------------------------------------------------------
# a session of N runs, with reads outside runs between them
# --------------------------------------------------------------------------------------------

SESSION_THREAD = "session-thread"


@pytest.fixture(scope="module")
def session(phoenix_server: PhoenixServer, tmp_path_factory: pytest.TempPathFactory) -> Held:
    files = tmp_path_factory.mktemp("phoenix-session")
    project = new_project("session")
    process = session_app.run_session(
        phoenix_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        SESSION_THREAD,
        Path(files / "session.jsonl"),
        project=project,
        env=environment("link", project),
    )
    return held(phoenix_server, project, {"session": process})


def test_the_session_ran_its_runs_and_its_reads_outside_them(session: Held) -> None:
    result = session.processes["session"].result
    assert result is not None
    assert result["runs"] == [
        ["ask", "interrupted"],
        ["answer", "finished"],
        ["ask again", "finished"],
        ["thank", "finished"],
    ]
    runs, reads = traces_sent(session.sent["session"])
    assert len(runs) == session_app.RUNS == len(set(runs))
    names_outside = {s.name for s in session.sent["session"] if s.trace_id in reads}
    assert names_outside == {names.SPAN_GET, names.SPAN_LIST, names.SPAN_PUT}


def test_the_reads_sent_outside_runs_carry_no_attribute_backends_count_turns_by(
    session: Held,
) -> None:
    """Neither ``session.id`` nor ``gen_ai.conversation.id`` (which Phoenix and MLflow take
    for a session id) on a span outside a run. Failed when written: the get span of
    ``get_state`` and of ``update_state`` carried ``gen_ai.conversation.id`` (set again from
    the loaded checkpoint's config after the span started without it)."""
    _, reads = traces_sent(session.sent["session"])
    carrying = [
        (s.name, key)
        for s in session.sent["session"]
        if s.trace_id in reads
        for key in (names.SESSION_ID, names.CONVERSATION_ID)
        if key in s.attributes
    ]
    assert carrying == []


def test_phoenix_s_session_of_the_thread_has_exactly_one_trace_per_run(session: Held) -> None:
    runs, _ = traces_sent(session.sent["session"])
    assert session.sessions == {SESSION_THREAD: (session_app.RUNS, sorted(runs))}


def test_phoenix_holds_the_reads_as_traces_outside_the_session(session: Held) -> None:
    runs, reads = traces_sent(session.sent["session"])
    in_sessions = {t for _, traces in session.sessions.values() for t in traces}
    read_in_a_session = sorted(
        s.name for s in session.sent["session"] if s.trace_id in in_sessions.intersection(reads)
    )
    assert sorted(session.traces) == sorted(runs + reads)
    assert read_in_a_session == []
