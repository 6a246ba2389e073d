"""`record_tool_start` across processes: a real subprocess (`tool_crash_app.py`) killed with
SIGKILL inside a tool's side effect and resumed by another process; the tool-start span the
killed one exported first, the retry mark on the resumed one, and `diverge` and the report
naming the side effect started twice. The rest of the tool keys: tests/wrapper/test_tool_keys.py."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.tool_calls import tool_call_key
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from langgraph.checkpoint.otel.inspector.cli import main as inspector
from suite_paths import APPS

APP = APPS / "tool_crash_app.py"


TIMEOUT_S = 60


THREAD = "killed-in-book"


def _app(
    db: Path, spans: Path, instance: str, action: str, effects: Path, *extra: str
) -> list[str]:
    return [
        sys.executable,
        str(APP),
        str(db),
        str(spans),
        instance,
        action,
        THREAD,
        str(effects),
        *extra,
    ]


def _wait_for_lines(path: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        if proc.poll() is not None:
            raise AssertionError(f"child exited {proc.returncode}:\n{proc.communicate()[1]}")
        time.sleep(0.05)
    raise AssertionError(f"no side effect within {TIMEOUT_S}s")


def tool_starts(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if s.name == names.SPAN_TOOL_START]


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A: runs the agent, SIGKILLed inside `book` after its side effect; B: resumes the thread
    (same SQLite file, another span file) and books again."""
    root = tmp_path_factory.mktemp("tool-crash")
    db, effects = root / "db.sqlite", root / "side_effects.txt"
    spans_a, spans_b = root / "spans-a.jsonl", root / "spans-b.jsonl"
    a = subprocess.Popen(
        _app(db, spans_a, "A", "run", effects, "--block"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        _wait_for_lines(effects, 1, a)
        a.send_signal(signal.SIGKILL)
        a.wait(TIMEOUT_S)
    finally:
        if a.poll() is None:
            a.kill()
        a.communicate()
    assert a.returncode == -signal.SIGKILL
    b = subprocess.run(
        _app(db, spans_b, "B", "resume", effects),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert b.returncode == 0, b.stderr
    return {
        "effects": effects.read_text().splitlines(),
        "a": read_spans(spans_a),
        "b": read_spans(spans_b),
        "files": (spans_a, spans_b),
        "answer": json.loads(b.stdout.splitlines()[-1])["answer"],
    }


def test_killed_process_exported_its_start_before_the_side_effect(
    killed_and_resumed: dict[str, Any],
) -> None:
    run = killed_and_resumed
    assert run["effects"] == ["A booked TP1353", "B booked TP1353"]  # the side effect ran twice
    assert run["answer"] == "Booked."
    (first,) = tool_starts(run["a"])
    (second,) = tool_starts(run["b"])
    assert first.resource["service.instance.id"] == "A"
    assert (
        first.attributes[names.TOOL_IDEMPOTENCY_KEY]
        == second.attributes[names.TOOL_IDEMPOTENCY_KEY]
        == tool_call_key("book", {"flight": "TP1353"})
    )
    assert first.attributes[names.TOOL_RETRY] is False
    assert first.trace_id != second.trace_id
    assert first.attributes[names.CHECKPOINT_ID] == second.attributes[names.CHECKPOINT_ID]


def test_resumed_start_is_marked_retry(killed_and_resumed: dict[str, Any]) -> None:
    """Needs the observer's in-flight notes on the crash resume."""
    (second,) = tool_starts(killed_and_resumed["b"])
    assert second.attributes[names.TOOL_RETRY] is True


def test_diverge_reports_the_side_effect_started_twice(
    killed_and_resumed: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run = killed_and_resumed
    (first,), (second,) = tool_starts(run["a"]), tool_starts(run["b"])
    sources = [arg for path in run["files"] for arg in ("-s", str(path))]
    code = inspector(["diverge", THREAD, *sources, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["diverged"] is True
    assert out["findings"] == [
        {
            "kind": "duplicate_tool_call",
            "step": None,
            "checkpoint_id": second.attributes[names.CHECKPOINT_ID],
            "reference_checkpoint_id": first.attributes[names.CHECKPOINT_ID],
            "node": None,
            "channel": None,
            "expected": tool_call_key("book", {"flight": "TP1353"}),
            "actual": "book",
            "traces": [first.trace_id, second.trace_id],
            "tool": "book",
            "arguments": [],
            "graph": None,
        }
    ]
    code = inspector(["diverge", THREAD, *sources])
    text = capsys.readouterr().out
    assert code == 1 and first.trace_id in text and second.trace_id in text
    repeatable = inspector(["diverge", THREAD, *sources, "--repeatable", "book", "--json"])
    assert repeatable == 0 and json.loads(capsys.readouterr().out)["findings"] == []


def test_report_shows_the_side_effect_started_twice(
    killed_and_resumed: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = killed_and_resumed
    (first,), (second,) = tool_starts(run["a"]), tool_starts(run["b"])
    sources = [arg for path in run["files"] for arg in ("-s", str(path))]
    page = tmp_path / "report.html"
    assert inspector(["report", THREAD, "--html", str(page), *sources]) == 0
    html = page.read_text()
    assert "<th>traces</th>" in html
    assert first.trace_id in html and second.trace_id in html
