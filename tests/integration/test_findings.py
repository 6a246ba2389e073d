"""Findings you can filter: `langgraph.findings` (the kinds, content-free) and
`langgraph.flagged` on the put or resume span that carries a finding, from real runs on the
real SDK (in-memory exporter): a fork whose model answers otherwise, a fork that runs
side-effecting tools again, a process killed by SIGKILL and resumed, a resume by another
schema version or graph, two runs of one thread at once. One behaviour per test."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import agents
import crash_app
from graphs import LoadsTogether, slow_turns
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from suite_paths import APPS

CRASH_APP = APPS / "crash_app.py"
KINDS = names.FindingKinds


def saver_for(otel: OTel, inner: Any, **options: Any) -> Any:
    return instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, **options
    )


def flagged(otel: OTel) -> list[ReadableSpan]:
    return [s for s in otel.spans() if (s.attributes or {}).get(names.FLAGGED) is True]


def findings_of(span: ReadableSpan) -> list[str]:
    return list((span.attributes or {}).get(names.FINDINGS, ()))


def the_span(otel: OTel, name: str) -> ReadableSpan:
    (span,) = [s for s in otel.spans() if s.name == name]
    return span


def fork(otel: OTel, step: int, change: Callable[[agents.Script], None] | None) -> None:
    """`agents.react_agent` runs a thread to its end, then (spans cleared) forks it from the
    checkpoint of `step` after `change` is applied to its script."""
    script = agents.travel_script()
    graph = agents.react_agent(saver_for(otel, InMemorySaver()), script)
    graph.invoke(agents.question(), agents.thread("t"), durability="sync")
    (point,) = [
        s for s in graph.get_state_history(agents.thread("t")) if s.metadata["step"] == step
    ]
    otel.clear()
    if change is not None:
        change(script)
    checkpoint_id = point.config["configurable"]["checkpoint_id"]
    graph.invoke(None, agents.thread("t", checkpoint_id=checkpoint_id), durability="sync")


def divergence_kinds(span: ReadableSpan) -> list[str]:
    return sorted(
        {
            KINDS.divergence(str((e.attributes or {})[names.DIVERGENCE_KIND]))
            for e in span.events
            if e.name == names.EVENT_DIVERGENCE
        }
    )


# --------------------------------------------------------------------------------------------
# divergences (put spans)
# --------------------------------------------------------------------------------------------


def test_a_fork_whose_model_asks_for_other_tools_flags_the_put_that_revealed_it(
    otel: OTel,
) -> None:
    fork(otel, 2, lambda s: s.change(1, agents.calls(("lookup", {"city": "Porto"}))))
    (span,) = flagged(otel)
    assert span.name == names.SPAN_PUT
    assert findings_of(span) == ["divergence.trajectory"]
    assert divergence_kinds(span) == findings_of(span)


def test_a_fork_whose_model_calls_a_tool_with_other_arguments_names_each_kind_on_its_put(
    otel: OTel,
) -> None:
    """Other arguments for `book` (a departure), then `send_email` with the same arguments
    answered a second time (a side effect run twice): two puts, each with its own kind."""
    other = agents.calls(("book", {"flight": "TP9999"}), ("send_email", {"to": "me@example.com"}))
    fork(otel, 2, lambda s: s.change(1, other))
    shown = [(s.attributes[names.STEP], findings_of(s)) for s in flagged(otel)]  # type: ignore[index]
    assert shown == [(4, ["divergence.tool_arguments"]), (5, ["divergence.duplicate_tool_call"])]
    assert all(divergence_kinds(s) == findings_of(s) for s in flagged(otel))


def test_a_diverged_put_keeps_divergence_detected_and_an_unset_status(otel: OTel) -> None:
    fork(otel, 2, lambda s: s.change(1, agents.calls(("lookup", {"city": "Porto"}))))
    (span,) = flagged(otel)
    assert span.attributes[names.DIVERGENCE_DETECTED] is True  # type: ignore[index]
    assert span.status.status_code is StatusCode.UNSET  # not a failed call in error rates


def test_a_finding_names_its_kind_once_however_many_events_the_put_has(otel: OTel) -> None:
    """A fork of step 1 with the same script answers `lookup` and `search` again: two
    `duplicate_tool_call` events on one put, one kind."""
    fork(otel, 1, None)
    spans = flagged(otel)
    assert spans, "the fork ran side-effecting tools again: a finding was expected"
    for span in spans:
        events = [e for e in span.events if e.name == names.EVENT_DIVERGENCE]
        assert len(events) == 2
        assert findings_of(span) == ["divergence.duplicate_tool_call"]


def test_a_run_and_a_fork_that_does_not_diverge_flag_nothing(otel: OTel) -> None:
    """The fork from the last tools' answers re-runs the model's final turn alone: nothing
    with a side effect, the same answer."""
    fork(otel, 4, None)
    spans = otel.spans()
    assert [s.attributes[names.RESUME_KIND] for s in spans if s.name == names.SPAN_RESUME] == [  # type: ignore[index]
        "fork"
    ]
    assert flagged(otel) == []
    assert all(names.FINDINGS not in (s.attributes or {}) for s in spans)


# --------------------------------------------------------------------------------------------
# resumes
# --------------------------------------------------------------------------------------------


def killed_then_resumed(tmp_path: Path, otel: OTel) -> Any:
    """`crash_app.py` killed by SIGKILL in `step2`; the thread resumed here (it stops at the
    `ask` interrupt). Returns the graph and its config."""
    database = tmp_path / "crash.sqlite"
    spans_file = str(tmp_path / "killed.jsonl")
    command = [sys.executable, str(CRASH_APP), f"sqlite:{database}", "t", spans_file, "killed"]
    killed = subprocess.run(
        [*command, "run", "--crash-at", "step2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr
    conn = sqlite3.connect(database, check_same_thread=False)
    graph = crash_app.build_graph(None).compile(checkpointer=saver_for(otel, SqliteSaver(conn)))
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke(None, config, durability="sync")
    return graph, config


def test_a_crash_resume_flags_its_resume_span(tmp_path: Path, otel: OTel) -> None:
    killed_then_resumed(tmp_path, otel)
    resume = the_span(otel, names.SPAN_RESUME)
    assert resume.attributes[names.RESUME_KIND] == "crash"  # type: ignore[index]
    assert findings_of(resume) == [KINDS.RESUME_CRASH]
    assert flagged(otel) == [resume]


def test_answering_an_interrupt_is_not_a_finding(tmp_path: Path, otel: OTel) -> None:
    graph, config = killed_then_resumed(tmp_path, otel)
    otel.clear()
    graph.invoke(Command(resume=crash_app.ANSWER), config, durability="sync")
    resume = the_span(otel, names.SPAN_RESUME)
    assert resume.attributes[names.RESUME_KIND] == "interrupt"  # type: ignore[index]
    assert flagged(otel) == []


def test_an_error_resume_is_not_a_finding(otel: OTel) -> None:
    """The failed run's span already says ERROR; retrying it is ordinary."""
    failed = {"once": False}

    def flaky(state: dict[str, Any]) -> dict[str, Any]:
        if not failed["once"]:
            failed["once"] = True
            raise RuntimeError("first attempt fails")
        return {"n": 1}

    builder: StateGraph[Any] = StateGraph(crash_app.State)
    builder.add_node("flaky", flaky)
    builder.add_edge(START, "flaky")
    graph = builder.compile(checkpointer=saver_for(otel, InMemorySaver()))
    config: Any = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError):
        graph.invoke({"count": 0}, config)
    otel.clear()
    graph.invoke(None, config)
    assert the_span(otel, names.SPAN_RESUME).attributes[names.RESUME_KIND] == "error"  # type: ignore[index]
    assert flagged(otel) == []


def two_node_graph(extra: bool) -> StateGraph[Any]:
    """START -> a -> (b ->) END: with `extra`, the next release's graph, a node added."""
    builder: StateGraph[Any] = StateGraph(crash_app.State)
    builder.add_node("a", lambda s: {"count": s.get("count", 0) + 1})
    builder.add_edge(START, "a")
    if extra:
        builder.add_node("b", lambda s: {"count": s.get("count", 0) + 1})
        builder.add_edge("a", "b")
        builder.add_edge("b", END)
    return builder


def test_a_resume_under_another_schema_version_flags_its_resume_span(otel: OTel) -> None:
    inner = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    two_node_graph(False).compile(checkpointer=saver_for(otel, inner, schema_version="1")).invoke(
        {"count": 0}, config
    )
    otel.clear()
    graph = two_node_graph(False).compile(checkpointer=saver_for(otel, inner, schema_version="2"))
    graph.invoke({"count": 5}, config)
    resume = the_span(otel, names.SPAN_RESUME)
    assert [e.name for e in resume.events] == [names.EVENT_SCHEMA_MISMATCH]
    assert findings_of(resume) == [KINDS.SCHEMA_MISMATCH]
    assert flagged(otel) == [resume]


def test_a_resume_by_a_changed_graph_flags_its_resume_span(otel: OTel) -> None:
    inner = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    two_node_graph(False).compile(checkpointer=saver_for(otel, inner)).invoke({"count": 0}, config)
    otel.clear()
    two_node_graph(True).compile(checkpointer=saver_for(otel, inner)).invoke({"count": 5}, config)
    resume = the_span(otel, names.SPAN_RESUME)
    assert [e.name for e in resume.events] == [names.EVENT_GRAPH_CHANGED]
    assert findings_of(resume) == [KINDS.GRAPH_CHANGED]
    assert flagged(otel) == [resume]


def test_one_resume_carries_every_kind_it_has_at_once(otel: OTel) -> None:
    """A run halted before `b` by a static interrupt, resumed by the next release (another
    schema version, a node added, the interrupt gone): `b` is scheduled and nothing recorded
    why it did not run, as after a kill, so the resume is a `crash` too."""
    inner = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}
    halted = two_node_graph(True).compile(
        checkpointer=saver_for(otel, inner, schema_version="1"), interrupt_before=["b"]
    )
    halted.invoke({"count": 0}, config)
    otel.clear()
    graph = two_node_graph(True)
    graph.add_node("c", lambda s: {"count": 0})
    graph.compile(checkpointer=saver_for(otel, inner, schema_version="2")).invoke(None, config)
    resume = the_span(otel, names.SPAN_RESUME)
    assert resume.attributes[names.RESUME_KIND] == "crash"  # type: ignore[index]
    assert findings_of(resume) == sorted(
        [KINDS.GRAPH_CHANGED, KINDS.RESUME_CRASH, KINDS.SCHEMA_MISMATCH]
    )


# --------------------------------------------------------------------------------------------
# concurrent writes (put spans)
# --------------------------------------------------------------------------------------------


class LoadTogether(LoadsTogether, SqliteSaver):
    """A real SqliteSaver whose loads wait for each other (see `graphs.LoadsTogether`)."""


def test_two_runs_of_one_thread_at_once_flag_the_second_put(tmp_path: Path, otel: OTel) -> None:
    inner = LoadTogether(sqlite3.connect(tmp_path / "t.db", check_same_thread=False))
    inner.setup()
    graph = slow_turns().compile(checkpointer=saver_for(otel, inner))
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": ["opening"]}, config)
    inner.barrier = threading.Barrier(2)
    otel.clear()
    runs = [threading.Thread(target=graph.invoke, args=({"log": [t]}, config)) for t in "ab"]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=60)
    (span,) = flagged(otel)
    assert span.name == names.SPAN_PUT
    assert [e.name for e in span.events if e.name == names.EVENT_CONCURRENT_WRITE] == [
        names.EVENT_CONCURRENT_WRITE
    ]
    assert findings_of(span) == [KINDS.CONCURRENT_WRITE]
