"""A crash-resume-fork thread of a real agent, sent over OTLP to a real Arize Phoenix and read
back through Phoenix's own REST API: what a user of Phoenix sees.

One thread of `create_react_agent` (`agents.react_agent`, the offline `ScriptedChatModel`) on
SQLite, three processes (`phoenix_app.crash_resume_fork`), each exporting with the real
``opentelemetry-exporter-otlp-proto-http`` exporter to ``phoenix serve`` (fixture
`phoenix_server`, from ``.venv-phoenix``; a failure under ``CI=true`` when it is missing):

1. ``killed``: a fresh run, SIGKILLed in the side-effecting tools of superstep 4;
2. ``resume``: ``invoke(None)`` in a new process (resume kind ``crash``);
3. ``fork``: time travel, ``invoke(None)`` from the checkpoint of step 1 (kind ``fork``).

Each process also writes what it sent to a span file (OTLP/JSON): the expectations come from
those files and from `names`, never from Phoenix. What Phoenix 20.26.1 does with them, found in
its source (``phoenix/trace/otel.py``, ``phoenix/trace/gen_ai/conversion.py``,
``phoenix/db/insertion/span.py``): it derives its span kind from ``gen_ai.operation.name``
(chat, text_completion, generate_content: LLM; embeddings: EMBEDDING; execute_tool: TOOL;
retrieval: RETRIEVER; invoke_agent, create_agent: AGENT; anything else, ``invoke_workflow``
included: no kind, shown as ``unknown``) unless the span says ``openinference.span.kind``
itself (the run span: CHAIN), takes ``session.id`` (or, on a span with any
``gen_ai.*`` attribute, ``gen_ai.conversation.id``) as the trace's session, keeps attributes
and events, and drops span links.

A diverged put and the crash resume are found by one span filter, `FLAGGED_FILTER`, evaluated
by Phoenix itself: the GraphQL ``spans(filterCondition: ...)`` of a project, the query its
Spans tab runs for the filter box (``phoenix/server/api/types/Project.py``, the condition
compiled by ``phoenix/trace/dsl/filter.py``). Phoenix stores a dotted attribute nested
(``attributes['langgraph']['flagged']``), so its filter reads the dotted name bare;
``attributes['langgraph.flagged']`` matches nothing.

All tests share one Phoenix project of their own (module fixture `thread`). Runtime here:
20 s on a quiet machine (Phoenix starts in 16-19 s of it), up to 40 s on 2 cores at load 5.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

import agents
import phoenix_app
from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from phoenix_server import PhoenixServer

THREAD = "phoenix-thread"
FLAGGED_FILTER = "langgraph.flagged == True"
"""The Phoenix span filter that finds every span carrying a finding (docs/phoenix.md)."""
INGEST_TIMEOUT_S = 30.0
UNKNOWN = "UNKNOWN"
"""The kind Phoenix gives a span whose ``gen_ai.operation.name`` it does not map (and that has
no ``openinference.span.kind``): shown as ``unknown`` in its UI."""
CHAIN = "CHAIN"
"""OpenInference's kind for a LangChain / LangGraph run, shown as ``chain``."""


@dataclass(frozen=True)
class Thread:
    """The thread's three processes: what each sent, and what Phoenix holds."""

    processes: dict[str, phoenix_app.Process]
    sent: dict[str, list[SpanRecord]]
    """Spans of each process (``killed``, ``resume``, ``fork``), as its span file has them."""
    spans: list[dict[str, Any]]
    """Every span of the project, as Phoenix's REST API serves it."""
    traces: list[dict[str, Any]]
    sessions: list[dict[str, Any]]
    project: str

    def trace_of(self, instance: str) -> str:
        (trace_id,) = {s.trace_id for s in self.sent[instance]}
        return trace_id

    def in_trace(self, instance: str) -> list[dict[str, Any]]:
        trace_id = self.trace_of(instance)
        return [s for s in self.spans if s["context"]["trace_id"] == trace_id]

    def resume_span(self, instance: str) -> dict[str, Any]:
        (span,) = [s for s in self.in_trace(instance) if s["name"] == names.SPAN_RESUME]
        return span

    def span(self, span_id: str) -> dict[str, Any] | None:
        found = [s for s in self.spans if s["context"]["span_id"] == span_id]
        return found[0] if found else None


def graph_name() -> str:
    """The name LangGraph gives the agent (its run span is named after it)."""
    return str(agents.react_agent(None).name)


def wait_for_spans(
    phoenix: PhoenixServer, project: str, expected: set[str]
) -> list[dict[str, Any]]:
    """The project's spans once Phoenix has stored every span id in `expected` (it ingests in
    batches, after the OTLP request has returned)."""
    deadline = time.monotonic() + INGEST_TIMEOUT_S
    while True:
        spans = phoenix.paged(f"/v1/projects/{project}/spans")
        held = {s["context"]["span_id"] for s in spans}
        if expected <= held or time.monotonic() > deadline:
            return spans
        time.sleep(0.2)


@pytest.fixture(scope="module")
def thread(phoenix_server: PhoenixServer, tmp_path_factory: pytest.TempPathFactory) -> Thread:
    files = tmp_path_factory.mktemp("phoenix-thread")
    project = f"test-phoenix-{uuid.uuid4().hex[:8]}"
    processes = phoenix_app.crash_resume_fork(
        phoenix_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        THREAD,
        files,
        project=project,
    )
    sent = {name: read_spans(p.spans_file) for name, p in processes.items()}
    expected = {s.span_id for spans in sent.values() for s in spans}
    spans = wait_for_spans(phoenix_server, project, expected)
    return Thread(
        processes=processes,
        sent=sent,
        spans=spans,
        traces=phoenix_server.paged(f"/v1/projects/{project}/traces", sort="start_time"),
        sessions=phoenix_server.paged(f"/v1/projects/{project}/sessions"),
        project=project,
    )


@pytest.fixture
def by_instance(thread: Thread) -> dict[str, str]:
    """Trace id of each process."""
    return {name: thread.trace_of(name) for name in phoenix_app.INSTANCES}


# --------------------------------------------------------------------------------------------
# traces
# --------------------------------------------------------------------------------------------


def test_phoenix_holds_every_span_the_three_processes_sent(thread: Thread) -> None:
    sent = Counter((s.trace_id, s.span_id, s.name) for spans in thread.sent.values() for s in spans)
    held = Counter(
        (s["context"]["trace_id"], s["context"]["span_id"], s["name"]) for s in thread.spans
    )
    assert held == sent


def test_phoenix_lists_one_trace_per_run(thread: Thread, by_instance: dict[str, str]) -> None:
    listed = [t["trace_id"] for t in sorted(thread.traces, key=lambda t: t["start_time"])]
    assert listed == [by_instance[name] for name in phoenix_app.INSTANCES]


def test_each_finished_run_is_one_root_span_named_invoke_workflow_and_the_graph(
    thread: Thread, by_instance: dict[str, str]
) -> None:
    roots = {
        s["context"]["trace_id"]: s["name"] for s in thread.spans if s.get("parent_id") is None
    }
    expected = names.run_span_name(graph_name())
    assert roots == {by_instance["resume"]: expected, by_instance["fork"]: expected}


def test_the_run_span_carries_the_genai_workflow_and_session_attributes(
    thread: Thread,
) -> None:
    roots = [s for s in thread.spans if s.get("parent_id") is None]
    seen = [
        {
            key: root["attributes"].get(key)
            for key in (
                names.GEN_AI_OPERATION_NAME,
                names.GEN_AI_WORKFLOW_NAME,
                names.CONVERSATION_ID,
                names.SESSION_ID,
                names.THREAD_ID,
                names.GRAPH_NAME,
                names.RUN_OUTCOME,
            )
        }
        for root in roots
    ]
    expected = {
        names.GEN_AI_OPERATION_NAME: names.SPAN_RUN,
        names.GEN_AI_WORKFLOW_NAME: graph_name(),
        names.CONVERSATION_ID: THREAD,
        names.SESSION_ID: THREAD,
        names.THREAD_ID: THREAD,
        names.GRAPH_NAME: graph_name(),
        names.RUN_OUTCOME: "finished",
    }
    assert seen == [expected, expected]


def test_the_killed_run_shows_in_phoenix_as_spans_whose_parent_it_never_received(
    thread: Thread,
) -> None:
    """The killed run's run span never ended, so it was never exported: Phoenix holds its
    trace's checkpoint spans with a parent it does not have (its Spans tab, filtered on
    ``parent_id is None``, and its trace count leave the run out; its Traces tab lists each of
    those spans as a root of its own)."""
    spans = thread.in_trace("killed")
    parents = {s.get("parent_id") for s in spans}
    assert len(spans) == len(thread.sent["killed"])
    assert len(parents) == 1
    assert None not in parents
    assert thread.span(str(next(iter(parents)))) is None


def test_by_default_the_killed_run_and_its_resume_are_two_traces(
    thread: Thread, by_instance: dict[str, str]
) -> None:
    """``resume_trace``'s default (``link``): the resume is a trace of its own, its run span a
    root; only the span link (which Phoenix drops) and the writer ids join it to the killed
    run (``test_phoenix_turns.py`` has the same thread under ``continue``: one trace)."""
    (run,) = [s for s in thread.in_trace("resume") if s.get("parent_id") is None]
    assert by_instance["resume"] != by_instance["killed"]
    assert run["name"] == names.run_span_name(graph_name())
    assert names.RUN_RESUME_TRACE not in run["attributes"]


# --------------------------------------------------------------------------------------------
# span kinds
# --------------------------------------------------------------------------------------------


def test_phoenix_shows_the_run_span_as_a_chain(thread: Thread) -> None:
    """Phoenix 20.26.1 maps ``gen_ai.operation.name`` to a span kind only for LLM, embedding,
    tool, retrieval and agent operations (``invoke_workflow`` gets none, shown ``unknown``); the
    run span says ``openinference.span.kind`` = CHAIN, which Phoenix keeps."""
    roots = [s for s in thread.spans if s.get("parent_id") is None]
    assert [r["attributes"][names.GEN_AI_OPERATION_NAME] for r in roots] == [names.SPAN_RUN] * 2
    assert [r["span_kind"] for r in roots] == [CHAIN, CHAIN]


def test_phoenix_shows_the_checkpoint_spans_as_kind_unknown(thread: Thread) -> None:
    kinds = {
        (s["name"], s["span_kind"]) for s in thread.spans if s["name"].startswith("langgraph.")
    }
    assert {name for name, _ in kinds} >= {names.SPAN_PUT, names.SPAN_RESUME, names.SPAN_GET}
    assert {kind for _, kind in kinds} == {UNKNOWN}


# --------------------------------------------------------------------------------------------
# sessions
# --------------------------------------------------------------------------------------------


def test_phoenix_groups_the_thread_s_three_runs_in_one_session_in_run_order(
    thread: Thread, by_instance: dict[str, str]
) -> None:
    sessions = [
        (
            s["session_id"],
            [t["trace_id"] for t in sorted(s["traces"], key=lambda t: t["start_time"])],
        )
        for s in thread.sessions
    ]
    assert sessions == [(THREAD, [by_instance[name] for name in phoenix_app.INSTANCES])]


# --------------------------------------------------------------------------------------------
# resumes: the writer ids
# --------------------------------------------------------------------------------------------


def writer_in_phoenix(thread: Thread, instance: str) -> tuple[str, dict[str, Any] | None]:
    """The resume span's writer trace id, and the span Phoenix holds under its writer span id."""
    attributes = thread.resume_span(instance)["attributes"]
    return (
        str(attributes[names.RESUME_WRITER_TRACE_ID]),
        thread.span(str(attributes[names.RESUME_WRITER_SPAN_ID])),
    )


def test_the_crash_resume_names_the_put_span_of_the_killed_run_that_wrote_its_checkpoint(
    thread: Thread, by_instance: dict[str, str]
) -> None:
    resume = thread.resume_span("resume")["attributes"]
    trace_id, writer = writer_in_phoenix(thread, "resume")
    assert resume[names.RESUME_KIND] == "crash"
    assert trace_id == by_instance["killed"]
    assert writer is not None, "Phoenix holds no span with the writer span id"
    assert (writer["context"]["trace_id"], writer["name"]) == (trace_id, names.SPAN_PUT)
    assert writer["attributes"][names.CHECKPOINT_ID] == resume[names.RESUME_FROM_CHECKPOINT_ID]


def test_the_fork_names_the_put_span_that_wrote_the_checkpoint_it_forked_from(
    thread: Thread, by_instance: dict[str, str]
) -> None:
    resume = thread.resume_span("fork")["attributes"]
    result = thread.processes["fork"].result
    trace_id, writer = writer_in_phoenix(thread, "fork")
    assert result is not None
    assert resume[names.RESUME_KIND] == "fork"
    assert resume[names.RESUME_FROM_CHECKPOINT_ID] == result["from_checkpoint_id"]
    assert trace_id == by_instance["killed"]  # the fork point was stored by the killed run
    assert writer is not None, "Phoenix holds no span with the writer span id"
    assert (writer["context"]["trace_id"], writer["name"]) == (trace_id, names.SPAN_PUT)
    assert writer["attributes"][names.CHECKPOINT_ID] == result["from_checkpoint_id"]
    assert writer["attributes"][names.STEP] == phoenix_app.FORK_STEP


def test_the_writer_ids_phoenix_shows_are_those_of_the_span_link_it_drops(thread: Thread) -> None:
    """Phoenix keeps no span links; the writer attributes name the span the link names."""
    for instance in ("resume", "fork"):
        (sent,) = [s for s in thread.sent[instance] if s.name == names.SPAN_RESUME]
        links = [
            (link.trace_id, link.span_id)
            for link in sent.links
            if link.attributes.get(names.LINK_TYPE) == "checkpoint_writer"
        ]
        attributes = thread.resume_span(instance)["attributes"]
        shown = (attributes[names.RESUME_WRITER_TRACE_ID], attributes[names.RESUME_WRITER_SPAN_ID])
        assert links == [shown], instance
        assert "links" not in thread.resume_span(instance), "Phoenix now serves links"


def test_the_tools_of_the_killed_step_ran_again_on_resume(thread: Thread) -> None:
    """The thread is what the spans say: the resume finished the run the kill cut short."""
    resumed = thread.processes["resume"].result
    assert resumed is not None
    assert resumed["outcome"] == "finished"
    assert resumed["tools"] == ["lookup", "search", "book", "send_email"]
    assert thread.resume_span("resume")["attributes"][names.RESUME_TASKS] == ["tools"]


# --------------------------------------------------------------------------------------------
# a new release resuming the thread
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def upgraded(
    phoenix_server: PhoenixServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[dict[str, Any]]]:
    """A run of release 1 killed mid-run, resumed by release 2 (a new state key): each
    process's spans as Phoenix serves them, in a project of their own."""
    files = tmp_path_factory.mktemp("phoenix-upgrade")
    project = f"test-phoenix-upgrade-{uuid.uuid4().hex[:8]}"
    processes = phoenix_app.crash_then_upgrade(
        phoenix_server.otlp_traces_endpoint,
        files / "agent.sqlite",
        "upgraded-thread",
        files,
        project=project,
    )
    sent = {name: read_spans(p.spans_file) for name, p in processes.items()}
    spans = wait_for_spans(phoenix_server, project, {s.span_id for v in sent.values() for s in v})
    return {
        name: [s for s in spans if s["context"]["trace_id"] in {r.trace_id for r in records}]
        for name, records in sent.items()
    }


def test_the_resume_by_a_new_release_shows_in_phoenix_what_changed_in_the_graph(
    upgraded: dict[str, list[dict[str, Any]]],
) -> None:
    (written_under,) = {
        s["attributes"][names.GRAPH_STRUCTURE_HASH]
        for s in upgraded["killed"]
        if s["name"] == names.SPAN_PUT
    }
    (resume,) = [s for s in upgraded["upgraded"] if s["name"] == names.SPAN_RESUME]
    (changed,) = [e for e in resume["events"] if e["name"] == names.EVENT_GRAPH_CHANGED]
    assert changed["attributes"][names.GRAPH_CHANNELS_ADDED] == ["notes"]
    assert changed["attributes"][names.GRAPH_WRITTEN_STRUCTURE_HASH] == written_under
    assert resume["attributes"][names.GRAPH_STRUCTURE_HASH] not in ("", written_under)
    assert resume["attributes"][names.RESUME_KIND] == "crash"


# --------------------------------------------------------------------------------------------
# findings: one span filter
# --------------------------------------------------------------------------------------------


def filtered_spans(phoenix: PhoenixServer, project: str, condition: str) -> set[str]:
    """Span ids of `project` that Phoenix's span filter `condition` keeps, as its Spans tab
    asks for them (GraphQL ``Project.spans(filterCondition:)``, evaluated by the server)."""
    (project_id,) = [p["id"] for p in phoenix.get("/v1/projects")["data"] if p["name"] == project]
    query = """query ($id: ID!, $condition: String) { node(id: $id) { ... on Project {
        spans(first: 1000, filterCondition: $condition) { edges { node { spanId } } } } } }"""
    request = urllib.request.Request(
        f"{phoenix.url}/graphql",
        data=json.dumps(
            {"query": query, "variables": {"id": project_id, "condition": condition}}
        ).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    assert "errors" not in body, body["errors"]
    return {edge["node"]["spanId"] for edge in body["data"]["node"]["spans"]["edges"]}


def sent_with_findings(thread: Thread) -> dict[str, tuple[str, str, list[str]]]:
    """Span id -> (process, span name, findings) of every span sent flagged."""
    return {
        s.span_id: (instance, s.name, list(s.attributes[names.FINDINGS]))
        for instance, spans in thread.sent.items()
        for s in spans
        if s.attributes.get(names.FLAGGED) is True
    }


def test_the_crash_resume_and_the_fork_s_diverged_puts_are_the_spans_sent_flagged(
    thread: Thread,
) -> None:
    """The fork from step 1 answers `lookup`, `search`, `book` and `send_email` again, each
    already answered on the branch it left: `duplicate_tool_call` on the puts of steps 3 and 5
    (against the killed run's and the resume's answers)."""
    flagged = sent_with_findings(thread)
    shown = sorted((instance, name, kinds) for instance, name, kinds in flagged.values())
    assert shown == [
        ("fork", names.SPAN_PUT, ["divergence.duplicate_tool_call"]),
        ("fork", names.SPAN_PUT, ["divergence.duplicate_tool_call"]),
        ("resume", names.SPAN_RESUME, [names.FindingKinds.RESUME_CRASH]),
    ]
    diverged = {
        s.span_id
        for s in thread.sent["fork"]
        if any(e.name == names.EVENT_DIVERGENCE for e in s.events)
    }
    assert diverged == {span_id for span_id, (i, _, _) in flagged.items() if i == "fork"}


def test_one_phoenix_span_filter_finds_exactly_the_flagged_spans(
    thread: Thread, phoenix_server: PhoenixServer
) -> None:
    found = filtered_spans(phoenix_server, thread.project, FLAGGED_FILTER)
    assert found == set(sent_with_findings(thread))
    assert thread.resume_span("resume")["context"]["span_id"] in found


def test_phoenix_finds_one_kind_of_finding_by_text_in_the_findings_array(
    thread: Thread, phoenix_server: PhoenixServer
) -> None:
    """Phoenix's ``in`` on an array attribute is a text search of its JSON rendering: a kind's
    full name finds the spans of that kind (docs/phoenix.md)."""
    crash = filtered_spans(phoenix_server, thread.project, "'resume.crash' in langgraph.findings")
    diverged = filtered_spans(phoenix_server, thread.project, "'divergence.' in langgraph.findings")
    flagged = sent_with_findings(thread)
    assert crash == {i for i, (_, _, kinds) in flagged.items() if "resume.crash" in kinds}
    assert diverged == {i for i, (instance, _, _) in flagged.items() if instance == "fork"}
