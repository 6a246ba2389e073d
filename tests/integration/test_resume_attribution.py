"""Resume attribution when several runs resume from one checkpoint: a process killed (SIGKILL)
mid-superstep, a second process resuming it (a `crash` resume) up to an interrupt, a third
answering the interrupt, then a time-travel fork from the very checkpoint the crash resumed
from. Each resume row (and each timeline mark) must name its own run's first checkpoint and
node, whether the inspector reads the span files only, the saver only, or both.

The apps are `crash_app.py` subprocesses on a real SQLite file, each writing its own span
file; the fork runs in this process through `instrument(SqliteSaver(...))`.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

import crash_app
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.inspector import views
from langgraph.checkpoint.otel.inspector.sources import open_sources
from suite_paths import APPS

APP = APPS / "crash_app.py"
THREAD = "crash-then-fork"


@dataclass(frozen=True)
class Expected:
    kind: str
    from_checkpoint_id: str
    first_checkpoint_id: str
    first_node: str


@dataclass(frozen=True)
class Written:
    db: Path
    spans: Path
    expected: list[Expected]
    """The three resumes, in the order they happened (from the saver, not from the spans)."""


def _app(db: Path, spans: Path, instance: str, action: str, *extra: str) -> int:
    done = subprocess.run(
        [sys.executable, str(APP), f"sqlite:{db}", THREAD, str(spans), instance, action, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("crash-then-fork")
    db, spans = root / "db.sqlite", root / "spans"
    spans.mkdir()
    assert _app(db, spans / "spans-a.jsonl", "a", "run", "--crash-at", "step2") == -signal.SIGKILL
    assert _app(db, spans / "spans-b.jsonl", "b", "resume") == 0  # crash resume, to `ask`
    assert _app(db, spans / "spans-c.jsonl", "c", "resume-command") == 0  # answers `ask`
    provider = crash_app.span_file_provider("fork", "d", str(spans / "spans-d.jsonl"))
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        graph = crash_app.build_graph(None).compile(
            checkpointer=instrument(saver, tracer_provider=provider)
        )
        config = {"configurable": {"thread_id": THREAD}}
        history = list(saver.list(config))  # newest first, before the fork
        crashed = next(t for t in history if t.metadata["step"] == 1)
        crashed_id = crashed.config["configurable"]["checkpoint_id"]
        graph.invoke(None, crashed.config, durability="sync")  # fork from the crash's origin
        stored = list(saver.list(config))
    finally:
        provider.shutdown()
        conn.close()
    children = {
        t.config["configurable"]["checkpoint_id"]: t.parent_config["configurable"]["checkpoint_id"]
        for t in stored
        if t.parent_config
    }
    by_id = {t.config["configurable"]["checkpoint_id"]: t for t in stored}
    after_crash = [c for c, p in children.items() if p == crashed_id]
    [resumed] = [c for c in after_crash if by_id[c].metadata["source"] == "loop"]
    [forked] = [c for c in after_crash if by_id[c].metadata["source"] == "fork"]
    # the interrupt: resumed from the checkpoint after `step3` on the crash resume's chain
    [asked] = [c for c, p in children.items() if p == resumed]
    [answered] = [c for c, p in children.items() if p == asked]
    return Written(
        db,
        spans,
        [
            Expected("crash", crashed_id, resumed, "step2"),
            Expected("interrupt", asked, answered, "ask"),
            Expected("fork", crashed_id, forked, "step2"),
        ],
    )


SOURCES = {
    "spans": lambda w: [str(w.spans)],
    "saver": lambda w: [f"sqlite:///{w.db}"],
    "both": lambda w: [f"sqlite:///{w.db}", str(w.spans)],
}


@pytest.mark.parametrize("which", sorted(SOURCES))
def test_each_resume_row_names_its_own_runs_first_checkpoint(written: Written, which: str) -> None:
    with open_sources(SOURCES[which](written)) as sources:
        rows = views.resumes(sources, THREAD).resumes
    got = [
        Expected(r.kind, r.from_checkpoint_id, r.first_checkpoint_id or "", r.first_node or "")
        for r in rows
    ]
    assert got == written.expected


@pytest.mark.parametrize("which", sorted(SOURCES))
def test_each_timeline_resume_mark_has_its_own_runs_kind(written: Written, which: str) -> None:
    with open_sources(SOURCES[which](written)) as sources:
        line = views.timeline(sources, THREAD)
    marks = {
        r.checkpoint_id: (r.resume_kind, r.resumed_from) for r in line.checkpoints if r.resume_kind
    }
    assert marks == {
        e.first_checkpoint_id: (e.kind, e.from_checkpoint_id) for e in written.expected
    }


@pytest.mark.parametrize("which", sorted(SOURCES))
def test_each_resume_row_links_the_put_span_that_wrote_its_from_checkpoint(
    written: Written, which: str
) -> None:
    from langgraph.checkpoint.otel import names
    from langgraph.checkpoint.otel.export.otlp_json import read_spans

    puts = {
        s.attributes[names.CHECKPOINT_ID]: (s.trace_id, s.span_id)
        for f in sorted(written.spans.glob("spans-*.jsonl"))
        for s in read_spans(f)
        if s.name == names.SPAN_PUT
    }
    with open_sources(SOURCES[which](written)) as sources:
        rows = views.resumes(sources, THREAD).resumes
    assert [(r.writer_trace_id, r.writer_span_id) for r in rows] == [
        puts[e.from_checkpoint_id] for e in written.expected
    ]
    assert rows[0].writer_trace_id == rows[2].writer_trace_id  # crash and fork: one writer


def test_resume_log_names_the_first_put_of_each_run_resumed_from_one_checkpoint() -> None:
    from langgraph.checkpoint.otel import names
    from langgraph.checkpoint.otel.analysis.resume_events import resume_log
    from langgraph.checkpoint.otel.analysis.span_records import SpanFact

    def span(name: str, t: int, **attributes: str) -> SpanFact:
        base = {names.THREAD_ID: "t", names.CHECKPOINT_NS: ""}
        return SpanFact(name, t, {**base, **attributes})

    resume, put = names.SPAN_RESUME, names.SPAN_PUT
    origin = {names.RESUME_FROM_CHECKPOINT_ID: "cp-1"}
    spans = [
        span(resume, 10, **{names.RESUME_KIND: "crash"}, **origin),
        span(put, 11, **{names.CHECKPOINT_ID: "cp-2"}, **origin),
        span(put, 12, **{names.CHECKPOINT_ID: "cp-3"}),
        span(resume, 20, **{names.RESUME_KIND: "fork"}, **origin),
        span(put, 21, **{names.CHECKPOINT_ID: "cp-4"}, **origin),
        span(resume, 30, **{names.RESUME_KIND: "continue"}, **origin),  # wrote nothing
    ]
    log = resume_log(spans, "t")
    assert [(e.kind, e.first_checkpoint_id) for e in log] == [
        ("crash", "cp-2"),
        ("fork", "cp-4"),
        ("continue", None),
    ]
