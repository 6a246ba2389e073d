"""Crash soak: `soak_app.py` (11 supersteps, parallel branches, `Send` workers) SIGKILLed at
13 points per saver (SQLite file, PostgreSQL), some threads twice, each resumed in fresh
processes with ``invoke(None)`` until done.

Per thread: the final channel values and the stored ``otel.state_hash`` are an uninterrupted
instrumented run's; the stored checkpoints form one complete chain from the latest back to
the input, step by step, as many ``loop`` checkpoints as the uninterrupted run stores; every
resume (also one killed later) is a ``crash`` of the checkpoint stored last, linked to the put
span of the killed process that wrote it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import soak_app
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from suite_paths import APPS

APP = APPS / "soak_app.py"
TIMEOUT_S = 60
PARALLEL = 2  # two cores
WRITER_LINK = "checkpoint_writer"

# thread -> the kill point of each killed process, in order; a thread with two points is
# killed twice (the second time while resuming). Steps: 1 plan, 2 work x3, 3 join,
# 4 left|right, 5 merge, 6 review, 7 audit x2, 8 tally, 9 polish_a|polish_b, 10 finalize,
# 11 report.
KILLS: dict[str, dict[str, tuple[str, ...]]] = {
    "sqlite": {
        "s-plan": ("node:plan", "node:finalize"),
        "s-work-a": ("node:work:a",),
        "s-work-c": ("node:work:c",),
        "s-join": ("node:join",),
        "s-left": ("node:left",),
        "s-right": ("node:right",),
        "s-after-input": ("after:-1",),
        "s-after-2": ("after:2", "node:polish_b"),
        "s-after-5": ("after:5",),
        "s-before-2": ("before:2",),
        "s-before-4": ("before:4", "after:9"),
        "s-audit-1": ("node:audit:1",),
        "s-report": ("node:report",),
    },
    "postgres": {
        "p-work-b": ("node:work:b", "before:9"),
        "p-merge": ("node:merge",),
        "p-review": ("node:review",),
        "p-audit-0": ("node:audit:0",),
        "p-tally": ("node:tally",),
        "p-polish-a": ("node:polish_a",),
        "p-finalize": ("node:finalize",),
        "p-after-0": ("after:0", "after:6"),
        "p-after-4": ("after:4",),
        "p-after-8": ("after:8",),
        "p-before-7": ("before:7",),
        "p-before-3": ("before:3", "node:audit:1"),
        "p-before-11": ("before:11",),
    },
}


@dataclass
class Soak:
    """One backend: a SQLite file per thread (no lock contention) or one PostgreSQL db."""

    kind: str
    files: Path
    postgres_url: str = ""
    processes: int = 0
    kills: int = 0
    resumes: int = 0
    spans: dict[str, list[SpanRecord]] = field(default_factory=dict)
    misclassified: list[str] = field(default_factory=list)

    def backend(self, thread_id: str) -> str:
        if self.kind == "sqlite":
            return f"sqlite:{self.files / f'{thread_id}.sqlite'}"
        return f"postgres:{self.postgres_url}"

    def start(self, instance: str, action: str, thread_id: str, kill: str | None) -> Any:
        command = [sys.executable, str(APP), self.backend(thread_id)]
        command += [str(self.files / f"{instance}.jsonl"), instance, action, thread_id]
        command += ["--kill", kill] if kill else []
        self.processes += 1
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=dict(os.environ),
        )

    def read(self, instance: str) -> list[SpanRecord]:
        path = self.files / f"{instance}.jsonl"
        self.spans[instance] = read_spans(path) if path.exists() else []
        return self.spans[instance]


@pytest.fixture(params=["sqlite", "postgres"])
def soak(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Soak]:
    if request.param == "sqlite":
        yield Soak("sqlite", tmp_path)
        return
    url: str = request.getfixturevalue("postgres_db")
    with soak_app.open_saver(f"postgres:{url}"):
        pass  # tables created once, before processes that would race to create them
    yield Soak("postgres", tmp_path, url)


def latest(soak: Soak, thread_id: str) -> Any:
    with soak_app.open_saver(soak.backend(thread_id)) as bare:
        return bare.get_tuple(soak_app.thread(thread_id))


def history(soak: Soak, thread_id: str) -> list[Any]:
    with soak_app.open_saver(soak.backend(thread_id)) as bare:
        return list(bare.list(soak_app.thread(thread_id)))


def reference(soak: Soak) -> tuple[dict[str, Any], str, list[int]]:
    """An uninterrupted instrumented run, in this process: values, state hash, steps."""
    thread_id = "reference"
    with soak_app.open_saver(soak.backend(thread_id)) as saver:
        graph = soak_app.build().compile(
            checkpointer=instrument(saver, tracer_provider=TracerProvider())
        )
        values = graph.invoke(soak_app.graph_input(), soak_app.thread(thread_id))
    final = latest(soak, thread_id)
    steps = sorted(t.metadata["step"] for t in history(soak, thread_id))
    plain = json.loads(json.dumps(soak_app.values_json(dict(values))))
    return plain, final.metadata[names.METADATA_KEY][names.META_STATE_HASH], steps


def run_round(soak: Soak, jobs: list[tuple[str, str, str, str | None]]) -> dict[str, Any]:
    """Run (instance, action, thread, kill) jobs, PARALLEL at a time: instance -> result."""
    results: dict[str, Any] = {}
    pending = list(jobs)
    while pending:
        batch, pending = pending[:PARALLEL], pending[PARALLEL:]
        procs = [(job, soak.start(*job)) for job in batch]
        for (instance, _, _, _), proc in procs:
            out, err = proc.communicate(timeout=TIMEOUT_S)
            results[instance] = (proc.returncode, out, err)
    return results


def root_resumes(spans: list[SpanRecord], thread_id: str) -> list[SpanRecord]:
    return [
        s
        for s in spans
        if s.name == names.SPAN_RESUME
        and s.attributes.get(names.CHECKPOINT_NS, "") == ""
        and s.attributes.get(names.THREAD_ID) == thread_id
    ]


def check_resume(
    soak: Soak, thread_id: str, instance: str, loaded: Any, earlier: list[str]
) -> None:
    """`instance` resumed `thread_id` as a crash of `loaded`, linked to its writer's put span
    in the file of the earlier (killed) process that wrote it."""
    (resume,) = root_resumes(soak.read(instance), thread_id)
    loaded_id = str(loaded.checkpoint["id"])
    where = f"{thread_id} {instance}"
    kind = resume.attributes[names.RESUME_KIND]
    if kind != "crash":  # collected: the soak goes on to find every other mismatch
        soak.misclassified.append(
            f"{where}: kind {kind!r} from step {loaded.metadata['step']}, tasks"
            f" {resume.attributes.get(names.RESUME_TASKS)!r}, barriers"
            f" {sorted(c for c in loaded.checkpoint['channel_values'] if c.startswith('join:'))}"
        )
    assert resume.attributes[names.RESUME_FROM_CHECKPOINT_ID] == loaded_id, where
    _, trace_id, span_id, _ = loaded.metadata[names.METADATA_KEY]["traceparent"].split("-")
    writer = (
        resume.attributes.get(names.RESUME_WRITER_TRACE_ID),
        resume.attributes.get(names.RESUME_WRITER_SPAN_ID),
    )
    assert writer == (trace_id, span_id), (where, writer, (trace_id, span_id))
    links = [
        (link.trace_id, link.span_id)
        for link in resume.links
        if link.attributes.get(names.LINK_TYPE) == WRITER_LINK
    ]
    assert links == [writer], (where, links, writer)
    puts = [
        (p.trace_id, p.span_id, name)
        for name in earlier
        for p in soak.spans[name]
        if p.name == names.SPAN_PUT and p.attributes.get(names.CHECKPOINT_ID) == loaded_id
    ]
    # SimpleSpanProcessor: the put span of the checkpoint stored last reached the file
    assert [p[:2] for p in puts] == [writer], (where, puts, writer)
    soak.resumes += 1


def check_chain(soak: Soak, thread_id: str, ref_steps: list[int]) -> None:
    """Every stored checkpoint's parent is stored; one chain from the latest to the input
    holds them all, one per step, as many `loop` checkpoints as an uninterrupted run."""
    tuples = history(soak, thread_id)
    by_id = {str(t.checkpoint["id"]): t for t in tuples}
    orphans = [
        (t.metadata["step"], t.parent_config["configurable"]["checkpoint_id"])
        for t in tuples
        if t.parent_config and t.parent_config["configurable"]["checkpoint_id"] not in by_id
    ]
    assert not orphans, f"{thread_id}: parents not stored: {orphans}"
    chain: list[Any] = []
    cursor: Any = tuples[0]  # list() is newest first
    while cursor is not None:
        chain.append(cursor)
        parent = cursor.parent_config
        cursor = by_id[parent["configurable"]["checkpoint_id"]] if parent else None
    assert chain[-1].metadata["source"] == "input", thread_id
    assert len(chain) == len(tuples), f"{thread_id}: {len(tuples) - len(chain)} off the chain"
    steps = [t.metadata["step"] for t in reversed(chain)]
    loops = [t for t in tuples if t.metadata["source"] == "loop"]
    assert steps == ref_steps, f"{thread_id}: steps {steps}, uninterrupted {ref_steps}"
    assert len(loops) == len(ref_steps) - 1, thread_id
    assert not tuples[0].pending_writes, f"{thread_id}: {tuples[0].pending_writes}"


def test_sigkill_soak_resumes_every_thread_as_crash_to_the_same_end(soak: Soak) -> None:
    kills = KILLS[soak.kind]
    ref_values, ref_hash, ref_steps = reference(soak)
    assert ref_steps == list(range(-1, soak_app.LAST_STEP + 1))
    processes: dict[str, list[str]] = {t: [] for t in kills}  # thread -> its instances

    def round_(action: str, jobs: dict[str, str | None]) -> dict[str, Any]:
        loaded = {t: latest(soak, t) for t in jobs} if action == "resume" else {}
        specs = [(f"{t}-{len(processes[t])}", action, t, k) for t, k in jobs.items()]
        results = run_round(soak, specs)
        for instance, _, thread_id, kill in specs:
            code, out, err = results[instance]
            if kill is not None:
                assert code == -signal.SIGKILL, f"{instance} ({kill}): exit {code}\n{err}"
                assert out.strip() == "", f"{instance} ({kill}) finished: it was never killed"
                soak.kills += 1
            else:
                assert code == 0, f"{instance}: exit {code}\n{err}"
            if action == "resume":
                check_resume(soak, thread_id, instance, loaded[thread_id], processes[thread_id])
            else:
                soak.read(instance)
                assert not root_resumes(soak.spans[instance], thread_id), instance
            processes[thread_id].append(instance)
        return {thread_id: results[instance] for instance, _, thread_id, _ in specs}

    round_("run", {t: points[0] for t, points in kills.items()})
    round_("resume", {t: points[1] for t, points in kills.items() if len(points) > 1})
    final = round_("resume", dict.fromkeys(kills))

    for thread_id in kills:
        _, out, _ = final[thread_id]
        (line,) = [json.loads(x) for x in out.splitlines() if x.strip()]
        assert line == {"thread": thread_id, "values": ref_values}, thread_id
        stored = latest(soak, thread_id)
        assert stored.metadata[names.METADATA_KEY][names.META_STATE_HASH] == ref_hash, thread_id
        check_chain(soak, thread_id, ref_steps)

    assert not soak.misclassified, "resumes not classified crash:\n" + "\n".join(soak.misclassified)
    assert soak.kills == sum(len(p) for p in kills.values()) >= 13
    assert soak.resumes == soak.kills
    print(
        f"{soak.kind}: {len(kills)} threads, {soak.kills} kills, {soak.resumes} resumes,"
        f" {soak.processes} processes"
    )
