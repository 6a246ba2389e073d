"""Resume modes (option `resume_trace`, variable ``LANGGRAPH_OTEL_RESUME_TRACE``) and the
execution id, across real processes.

An approval thread of `agents.approval_agent` on one SQLite file: process 1 runs until the
`approve` tool interrupts; process 2 answers with ``Command(resume="yes")``; process 3 asks a
new question on the thread (a new turn). Each process exports its spans to its own OTLP/JSON
span file (`resume_trace_app.py`); nothing is shared but the database, as with a server
restarted between the interrupt and its answer.

- ``link`` (the default): each run is its own trace; the answer's resume span links to the
  put that wrote the interrupted checkpoint.
- ``continue``: the answer's run span is a child of that put span, in the interrupted run's
  trace: the interrupt, the answer and the rest of the work are one trace; a new turn is a new
  trace. Sync and async.
- Both: the run spans of the interrupt and of its answer carry one `langgraph.execution.id`
  (the first checkpoint of the interrupted run); the new turn carries another.

About 6 s (six processes of about 1 s, two at a time).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from suite_paths import APPS, pythonpath

PHASES = ("interrupt", "answer", "turn")


def _thread(directory: Path, mode: str, flavour: str) -> dict[str, list[SpanRecord]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGGRAPH_OTEL_"))}
    env["PYTHONPATH"] = pythonpath(env.get("PYTHONPATH"))
    if mode == "continue":
        env["LANGGRAPH_OTEL_RESUME_TRACE"] = "continue"
    db = directory / "thread.sqlite"
    spans: dict[str, list[SpanRecord]] = {}
    for phase in PHASES:
        span_file = directory / f"{phase}.jsonl"
        subprocess.run(
            [
                sys.executable,
                str(APPS / "resume_trace_app.py"),
                phase,
                str(db),
                str(span_file),
                flavour,
            ],
            env=env,
            check=True,
            timeout=120,
            capture_output=True,
        )
        spans[phase] = read_spans(span_file)
    return spans


@pytest.fixture(scope="module")
def threads(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, str], dict[str, list[SpanRecord]]]:
    cells = [("link", "sync"), ("continue", "sync"), ("continue", "async")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            cell: pool.submit(_thread, tmp_path_factory.mktemp("-".join(cell)), *cell)
            for cell in cells
        }
        return {cell: future.result() for cell, future in futures.items()}


def run_span(spans: list[SpanRecord]) -> SpanRecord:
    (run,) = [s for s in spans if names.is_run_span_name(s.name) and s.scope_name == names.SCOPE]
    return run


def last_put(spans: list[SpanRecord]) -> SpanRecord:
    puts = [s for s in spans if s.name == names.SPAN_PUT]
    return max(puts, key=lambda s: s.end_time_unix_nano)


def traces(spans: list[SpanRecord]) -> Counter[str]:
    return Counter(s.trace_id for s in spans)


def test_by_default_the_answer_is_its_own_trace_linked_to_the_writer(threads) -> None:
    spans = threads[("link", "sync")]
    assert len(traces(spans["interrupt"])) == 1 and len(traces(spans["answer"])) == 1
    assert set(traces(spans["interrupt"])).isdisjoint(traces(spans["answer"]))
    (resume,) = [s for s in spans["answer"] if s.name == names.SPAN_RESUME]
    writer = last_put(spans["interrupt"])
    assert [(link.trace_id, link.span_id) for link in resume.links] == [
        (writer.trace_id, writer.span_id)
    ]
    assert run_span(spans["answer"]).parent_span_id is None


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_under_continue_the_answer_runs_under_the_put_that_wrote_the_interrupt(
    threads, flavour: str
) -> None:
    spans = threads[("continue", flavour)]
    writer = last_put(spans["interrupt"])
    answer = run_span(spans["answer"])
    assert (answer.trace_id, answer.parent_span_id) == (writer.trace_id, writer.span_id)
    assert answer.attributes[names.RUN_RESUME_TRACE] == "continue"
    # the interrupt, the answer and the rest of the work: one trace, every span of both
    assert set(traces(spans["interrupt"] + spans["answer"])) == {writer.trace_id}


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_under_continue_a_new_turn_is_a_new_trace(threads, flavour: str) -> None:
    spans = threads[("continue", flavour)]
    turn = run_span(spans["turn"])
    assert turn.parent_span_id is None
    assert turn.trace_id not in traces(spans["interrupt"])
    assert names.RUN_RESUME_TRACE not in turn.attributes


@pytest.mark.parametrize("cell", [("link", "sync"), ("continue", "sync"), ("continue", "async")])
def test_the_answer_continues_the_execution_of_the_interrupt_a_new_turn_starts_another(
    threads, cell: tuple[str, str]
) -> None:
    spans = threads[cell]
    interrupted = run_span(spans["interrupt"]).attributes[names.EXECUTION_ID]
    first_put = min(
        (s for s in spans["interrupt"] if s.name == names.SPAN_PUT),
        key=lambda s: s.start_time_unix_nano,
    )
    assert interrupted == first_put.attributes[names.CHECKPOINT_ID]
    assert run_span(spans["answer"]).attributes[names.EXECUTION_ID] == interrupted
    new_turn = run_span(spans["turn"]).attributes[names.EXECUTION_ID]
    assert new_turn != interrupted
