"""Resume lineage across processes: a process killed mid-run, resumed by another, then by a third.

Each process is `crash_app.py` with its own TracerProvider (its own `service.instance.id`)
writing OTLP/JSON lines. The only thing the processes share is the database: the link from a
`langgraph.checkpoint.resume` span to the `put` span that wrote the loaded checkpoint must
travel in the checkpoint's metadata.

    A: run            step1, then step2 SIGKILLs its own process (no exception, no cleanup)
    B: resume         resume kind `crash` from A's last checkpoint; step2, step3, stops at `ask`
    C: resume-command resume kind `interrupt` from B's last checkpoint; `ask` finishes

Backends: SQLite, PostgreSQL and Redis (RedisSaver), each opened by `crash_app.py` itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crash_app import ANSWER, QUESTION, SERVICE_NAME, open_saver
from helpers import fresh_database
from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from suite_paths import APPS

APP = APPS / "crash_app.py"
TIMEOUT_S = 60
LINK_WRITER = "checkpoint_writer"


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The `crash_app.py` backend argument: a SQLite file, a fresh PostgreSQL database, or a
    flushed Redis server."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'checkpoints.sqlite'}"
        return
    if request.param == "redis":
        redis_url: str = request.getfixturevalue("redis_url")
        yield f"redis:{redis_url}"
        return
    postgres_url: str = request.getfixturevalue("postgres_url")
    with fresh_database(postgres_url) as url:
        yield f"postgres:{url}"


def run_app(
    backend: str, thread_id: str, spans: Path, instance: str, action: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(APP), backend, thread_id, str(spans), instance, action, *extra],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=dict(os.environ),
        stdin=subprocess.DEVNULL,
    )


def finished(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON result line of a process that exited normally."""
    assert proc.returncode == 0, f"exit code {proc.returncode}\n{proc.stderr}"
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, f"no result printed\n{proc.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def latest_checkpoint(backend: str, thread_id: str) -> Any:
    """The thread's latest checkpoint, read with a bare (uninstrumented) saver."""
    with open_saver(backend) as saver:
        latest = saver.get_tuple({"configurable": {"thread_id": thread_id}})
    assert latest is not None, f"no checkpoint stored for thread {thread_id!r}"
    return latest


def root_ns(span: SpanRecord) -> bool:
    """Whether the span is about the root graph (no attribute counts as the root namespace)."""
    return span.attributes.get(names.CHECKPOINT_NS, "") == ""


def put_span(spans: list[SpanRecord], checkpoint_id: str) -> SpanRecord:
    """The one `put` span that wrote `checkpoint_id`."""
    found = [
        s
        for s in spans
        if s.name == names.SPAN_PUT and s.attributes.get(names.CHECKPOINT_ID) == checkpoint_id
    ]
    assert len(found) == 1, f"{len(found)} put spans wrote {checkpoint_id}: {found}"
    return found[0]


def resume_span(spans: list[SpanRecord]) -> SpanRecord:
    """The one root-namespace `resume` span of a process."""
    found = [s for s in spans if s.name == names.SPAN_RESUME and root_ns(s)]
    assert len(found) == 1, f"expected one root resume span, got {len(found)}: {found}"
    return found[0]


def writer_links(span: SpanRecord) -> list[tuple[str, str]]:
    """(trace id, span id) of the span's `checkpoint_writer` links."""
    return [
        (link.trace_id, link.span_id)
        for link in span.links
        if link.attributes.get(names.LINK_TYPE) == LINK_WRITER
    ]


def checkpoint_spans(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if s.scope_name == names.SCOPE]


def one_trace(spans: list[SpanRecord]) -> str:
    """The single trace id all of a process's checkpoint spans share."""
    traces = {s.trace_id for s in checkpoint_spans(spans)}
    assert len(traces) == 1, f"checkpoint spans of one process in {len(traces)} traces"
    return traces.pop()


def test_resume_after_sigkill_then_interrupt_links_across_processes(
    backend: str, tmp_path: Path
) -> None:
    thread = "crash-thread"
    a_file, b_file, c_file = (tmp_path / f"{p}.jsonl" for p in "abc")

    # --- A: dies mid-superstep -----------------------------------------------------------------
    a = run_app(backend, thread, a_file, "instance-a", "run", "--crash-at", "step2")
    assert a.returncode == -signal.SIGKILL, f"A exited {a.returncode}\n{a.stdout}\n{a.stderr}"
    assert a.stdout.strip() == "", "A printed a result: it was not killed mid-run"
    a_spans = read_spans(a_file)
    a_trace = one_trace(a_spans)
    assert {s.resource.get("service.instance.id") for s in a_spans} == {"instance-a"}
    assert not [s for s in a_spans if s.name == names.SPAN_RESUME], "A resumed nothing"

    crashed = latest_checkpoint(backend, thread)
    crashed_id = crashed.checkpoint["id"]
    assert crashed.metadata["step"] == 1  # input (-1), START (0), step1 (1); step2 never ran
    assert not crashed.pending_writes  # a killed process leaves nothing behind
    a_put = put_span(a_spans, crashed_id)
    assert a_put.attributes[names.NODES] == ("step1",)
    assert crashed.metadata[names.METADATA_KEY]["traceparent"].startswith(
        f"00-{a_put.trace_id}-{a_put.span_id}-"
    )

    # --- B: resumes the crashed run, stops at the interrupt ------------------------------------
    b = run_app(backend, thread, b_file, "instance-b", "resume")
    b_result = finished(b)
    assert b_result["interrupts"] == [QUESTION]
    assert b_result["values"] == {"count": 3, "log": ["input", "step1", "step2", "step3"]}
    b_spans = read_spans(b_file)
    b_trace = one_trace(b_spans)
    assert b_trace != a_trace

    b_resume = resume_span(b_spans)
    assert b_resume.resource["service.instance.id"] == "instance-b"
    assert b_resume.attributes[names.RESUME_KIND] == "crash"
    assert b_resume.attributes[names.RESUME_FROM_CHECKPOINT_ID] == crashed_id
    assert b_resume.attributes[names.RESUME_PENDING_WRITES] == 0
    tasks = b_resume.attributes[names.RESUME_TASKS]
    assert isinstance(tasks, tuple) and "step2" in tasks
    assert writer_links(b_resume) == [(a_put.trace_id, a_put.span_id)]
    assert b_resume.trace_id == b_trace != a_put.trace_id

    b_puts = sorted(
        (s for s in b_spans if s.name == names.SPAN_PUT and root_ns(s)),
        key=lambda s: s.start_time_unix_nano,
    )
    assert b_puts, "B wrote no checkpoint"
    first_put = b_puts[0]
    assert first_put.start_time_unix_nano >= b_resume.end_time_unix_nano
    assert first_put.attributes[names.RESUME_FROM_CHECKPOINT_ID] == crashed_id
    assert first_put.attributes[names.PARENT_ID] == crashed_id
    assert first_put.attributes[names.NODES] == ("step2",)
    assert all(names.RESUME_FROM_CHECKPOINT_ID not in s.attributes for s in b_puts[1:])

    interrupted = latest_checkpoint(backend, thread)
    interrupted_id = interrupted.checkpoint["id"]
    assert interrupted_id != crashed_id
    b_put = put_span(b_spans, interrupted_id)
    assert b_put.trace_id == b_trace

    # --- C: answers the interrupt ---------------------------------------------------------------
    c = run_app(backend, thread, c_file, "instance-c", "resume-command")
    c_result = finished(c)
    assert c_result["interrupts"] == []
    assert c_result["values"] == {
        "count": 4,
        "log": ["input", "step1", "step2", "step3", f"ask:{ANSWER}"],
    }
    c_spans = read_spans(c_file)
    c_trace = one_trace(c_spans)
    assert len({a_trace, b_trace, c_trace}) == 3

    c_resume = resume_span(c_spans)
    assert c_resume.resource["service.instance.id"] == "instance-c"
    assert c_resume.resource["service.name"] == SERVICE_NAME
    assert c_resume.attributes[names.RESUME_KIND] == "interrupt"
    assert c_resume.attributes[names.RESUME_FROM_CHECKPOINT_ID] == interrupted_id
    assert c_resume.attributes[names.RESUME_TASKS] == ("ask",)
    assert writer_links(c_resume) == [(b_put.trace_id, b_put.span_id)]
    assert c_resume.trace_id == c_trace

    # Each process's spans name only its own instance.
    for spans, instance in ((b_spans, "instance-b"), (c_spans, "instance-c")):
        assert {s.resource.get("service.instance.id") for s in spans} == {instance}

    final = latest_checkpoint(backend, thread)
    assert final.checkpoint["channel_values"]["count"] == 4
    assert final.checkpoint["channel_values"]["log"] == c_result["values"]["log"]
