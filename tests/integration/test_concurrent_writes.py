"""Two runs writing one thread at once (double-texting, two workers picking up one thread):
flagged online where both run in this process, and offline by `diverge` wherever they ran;
runs one after the other never are."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from typer.testing import CliRunner

from graphs import LoadsTogether, slow_turns
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.inspector.cli import app
from suite_paths import APPS

APP = APPS / "concurrent_app.py"
THREAD = "support-42"


class LoadTogether(LoadsTogether, SqliteSaver):
    """A real SqliteSaver whose loads wait for each other (see `graphs.LoadsTogether`)."""


def sqlite_saver(path: Path) -> LoadTogether:
    saver = LoadTogether(sqlite3.connect(path, check_same_thread=False))
    saver.setup()
    return saver


def config() -> Any:
    return {"configurable": {"thread_id": THREAD}}


def turns(graph: Any, together: bool) -> None:
    """Two turns on the thread: in two threads at once, or one after the other."""
    if not together:
        for text in ("first", "second"):
            graph.invoke({"log": [text]}, config())
        return
    runs = [
        threading.Thread(target=graph.invoke, args=({"log": [text]}, config()))
        for text in ("first", "second")
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(timeout=60)


def diverge(path: Path) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(app, ["diverge", THREAD, "-s", f"sqlite:///{path}", "--json"])
    return result.exit_code, json.loads(result.stdout)["findings"]


def concurrent_events(otel: OTel) -> list[Any]:
    return [
        (span, event)
        for span in otel.spans()
        for event in span.events
        if event.name == names.EVENT_CONCURRENT_WRITE
    ]


def run_in_threads(tmp_path: Path, otel: OTel, together: bool) -> Path:
    path = tmp_path / "threads.db"
    inner = sqlite_saver(path)
    graph = slow_turns().compile(
        checkpointer=instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
    )
    graph.invoke({"log": ["opening"]}, config())  # the thread exists: both load its latest
    inner.barrier = threading.Barrier(2) if together else None
    turns(graph, together)
    return path


def test_two_runs_of_one_thread_at_once_in_one_process_are_flagged_on_the_put(
    tmp_path: Path, otel: OTel
) -> None:
    run_in_threads(tmp_path, otel, together=True)
    ((span, event),) = concurrent_events(otel)
    runs = {s.context.trace_id for s in otel.spans() if s.name.startswith(names.SPAN_RUN)}
    other = int(event.attributes[names.CONCURRENT_OTHER_TRACE_ID], 16)
    assert span.name == names.SPAN_PUT
    assert other in runs and other != span.context.trace_id  # each put in its own run's trace
    (point,) = otel.metrics()[names.METRIC_CONCURRENT_WRITES]
    assert point.value == 1


def test_two_runs_of_one_thread_at_once_are_found_offline(tmp_path: Path, otel: OTel) -> None:
    code, findings = diverge(run_in_threads(tmp_path, otel, together=True))
    assert [f["kind"] for f in findings] == ["concurrent_write"]
    assert code == 1


def test_runs_one_after_the_other_are_never_flagged(tmp_path: Path, otel: OTel) -> None:
    path = run_in_threads(tmp_path, otel, together=False)
    assert concurrent_events(otel) == []
    assert names.METRIC_CONCURRENT_WRITES not in otel.metrics()
    assert diverge(path) == (0, [])


def _processes(path: Path, meeting: Path, count: int) -> list[subprocess.Popen[str]]:
    """`count` processes each running a turn on the thread, all loading before any writes."""
    meeting.mkdir()
    return [
        subprocess.Popen(
            [sys.executable, str(APP), f"sqlite:{path}", THREAD, str(meeting), str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(count)
    ]


def _wait(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


def test_two_processes_writing_one_thread_at_once_are_found_offline(tmp_path: Path) -> None:
    path = tmp_path / "procs.db"
    sqlite_saver(path)
    _wait(_processes(path, tmp_path / "alone", 1))  # the thread exists
    _wait(_processes(path, tmp_path / "together", 2))
    code, findings = diverge(path)
    assert [f["kind"] for f in findings] == ["concurrent_write"]
    assert code == 1


def test_processes_one_after_the_other_are_never_flagged(tmp_path: Path) -> None:
    path = tmp_path / "procs.db"
    sqlite_saver(path)
    for turn in range(3):
        _wait(_processes(path, tmp_path / f"turn-{turn}", 1))
    assert diverge(path) == (0, [])
