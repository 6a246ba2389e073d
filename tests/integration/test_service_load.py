"""The wrapper in a service under load, beside a bare twin: `service_app.py` (Starlette +
uvicorn, a tool-calling agent with an approval `interrupt()`, `instrument(AsyncPostgresSaver)`
on a real PostgreSQL), driven by concurrent conversations with client cancellations and a
SIGKILL + restart (`service_load.py`). Checked against the bare twin and the span files:

- every thread's final messages equal the bare service's, every acknowledged checkpoint is
  stored;
- one trace per run: no trace holds two runs or two threads, no save is outside a run's trace,
  a save written after its run was cancelled is in that run's trace and marked so;
- every resume is linked to the trace that wrote its checkpoint, across the restart;
- once the conversations end no message object is alive in either service.

Sized for `make test` (about a minute); `make bench` runs a larger plan for the figures.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from helpers import fresh_database
from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord, read_spans
from service_load import LoadPlan, Seen, Service, drive, messages_of, stats_of

PLAN = LoadPlan(
    threads=160, turns=4, concurrency=64, cancel_rate=0.08, kill_after=600, save_latency_ms=5
)
FIGURES = ""
"""What the load did, for the test run's summary (conftest.py)."""


@pytest.fixture(scope="module")
def load(postgres_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Both services driven by the same plan, side by side; what they answered and stored."""
    workdir = tmp_path_factory.mktemp("service")
    with fresh_database(postgres_url) as bare_db, fresh_database(postgres_url) as ours_db:
        services = {
            mode: Service(mode, url, workdir, PLAN.save_latency_ms)
            for mode, url in (("bare", bare_db), ("ours", ours_db))
        }

        async def run() -> dict[str, Any]:
            await asyncio.gather(*(s.start() for s in services.values()))
            try:
                seen = await asyncio.gather(*(drive(s, PLAN) for s in services.values()))
                threads = [f"desk-{i}" for i in range(PLAN.threads)]
                messages = {
                    mode: await asyncio.gather(*(messages_of(s, t) for t in threads))
                    for mode, s in services.items()
                }
                stats = {mode: await stats_of(s) for mode, s in services.items()}
                return {
                    "seen": dict(zip(services, seen, strict=True)),
                    "messages": messages,
                    "stats": stats,
                }
            finally:
                for service in services.values():
                    service.stop()

        result = asyncio.run(run())
        result["stored"] = {mode: stored_ids(s.database_url) for mode, s in services.items()}
        result["spans"] = [read_spans(p) for p in services["ours"].span_files()]
        result["logs"] = services["ours"].log_text()
        global FIGURES
        FIGURES = figures(result)
        yield result


def stored_ids(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("select checkpoint_id from checkpoints")}


def test_the_load_ran_as_planned(load: dict[str, Any]) -> None:
    for mode in ("bare", "ours"):
        seen: Seen = load["seen"][mode]
        assert seen.cancelled >= 10, "client cancellations happened"
        assert seen.retried_after_kill >= 1, "requests met the killed service and were retried"
    assert len(load["spans"]) == 2, "one span file per instance: before and after the kill"


def test_final_states_equal_the_bare_service(load: dict[str, Any]) -> None:
    bare, ours = load["messages"]["bare"], load["messages"]["ours"]
    assert all(len(thread) > 0 for thread in ours)
    differing = {
        f"desk-{i}": (_short(b), _short(o))
        for i, (b, o) in enumerate(zip(bare, ours, strict=True))
        if b != o
    }
    assert differing == {}


def _short(messages: list[Any]) -> list[str]:
    return [f"{m[0]}:{m[1][:30]}:{[c[0] for c in m[3]]}" for m in messages]


def test_every_acknowledged_checkpoint_is_stored(load: dict[str, Any]) -> None:
    for mode in ("bare", "ours"):
        acknowledged = set(load["seen"][mode].acknowledged)
        assert acknowledged and acknowledged <= load["stored"][mode]


def _spans(load: dict[str, Any]) -> list[SpanRecord]:
    return [span for spans in load["spans"] for span in spans]


def _is_run(span: SpanRecord) -> bool:
    return names.is_run_span_name(span.name) and span.scope_name == names.SCOPE


def test_one_trace_per_run_and_no_bleed(load: dict[str, Any]) -> None:
    killed_file, _ = load["spans"]
    killed = {s.trace_id for s in killed_file}
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in _spans(load):
        traces[span.trace_id].append(span)
    runs = 0
    for trace_id, trace_spans in traces.items():
        run_spans = [s for s in trace_spans if _is_run(s)]
        threads = {s.attributes.get(names.THREAD_ID) for s in trace_spans} - {None}
        assert len(run_spans) <= 1, "two runs in one trace"
        assert len(threads) <= 1, "two threads in one trace"
        runs += len(run_spans)
        if run_spans:
            continue
        if {s.name for s in trace_spans} <= {names.SPAN_GET, names.SPAN_LIST}:
            continue  # a state read by the service (`aget_state`), outside any run
        # else a run the SIGKILL cut short: its run span never ended, its children did
        assert trace_id in killed and all(s.parent_span_id for s in trace_spans)
    assert runs >= PLAN.threads * PLAN.turns


def test_late_saves_stay_in_their_cancelled_run(load: dict[str, Any]) -> None:
    runs = {s.trace_id: s for s in _spans(load) if _is_run(s)}
    saves = [s for s in _spans(load) if s.name in (names.SPAN_PUT, names.SPAN_PUT_WRITES)]
    assert saves and all(s.parent_span_id for s in saves), "a save as the root of a trace"
    late = [s for s in saves if s.attributes.get(names.WRITTEN_AFTER_CANCEL)]
    for save in late:
        run = runs[save.trace_id]
        assert save.parent_span_id == run.span_id
        assert run.attributes.get(names.ERROR_TYPE) == "CancelledError"
        assert save.start_time_unix_nano >= run.end_time_unix_nano


def test_resumes_are_linked_across_the_restart(load: dict[str, Any]) -> None:
    """Each resume links to the trace of the put that wrote the checkpoint it loads (where
    that put's span reached the file: spans still queued in the batch processor die with the
    SIGKILL), also when that put was made before the restart."""
    before, after = load["spans"]
    writer = {
        str(s.attributes.get(names.CHECKPOINT_ID)): s
        for s in _spans(load)
        if s.name == names.SPAN_PUT
    }
    resumes = [s for s in _spans(load) if s.name == names.SPAN_RESUME]
    assert resumes and all(s.links for s in resumes), "a resume without its link"
    checked = across = 0
    killed, restarted = {s.span_id for s in before}, {s.span_id for s in after}
    for resume in resumes:
        put = writer.get(str(resume.attributes.get(names.CHECKPOINT_ID)))
        if put is None:
            continue
        assert resume.links[0].trace_id == put.trace_id
        checked += 1
        across += put.span_id in killed and resume.span_id in restarted
    assert checked >= 0.9 * len(resumes)
    assert across >= 10, "resumes after the restart of checkpoints written before it"


def test_no_message_outlives_its_run_in_either_service(load: dict[str, Any]) -> None:
    for mode in ("bare", "ours"):
        assert load["stats"][mode]["live_messages"] == 0, mode


def test_the_service_logged_no_library_warning(load: dict[str, Any]) -> None:
    assert "langgraph-checkpoint-otel" not in load["logs"]
    assert "Traceback" not in load["logs"]


def figures(result: dict[str, Any]) -> str:
    spans = [span for spans in result["spans"] for span in spans]
    bare, ours = result["seen"]["bare"], result["seen"]["ours"]
    late = sum(1 for s in spans if s.attributes.get(names.WRITTEN_AFTER_CANCEL))
    return (
        f"{PLAN.threads} threads x {PLAN.turns} turns, {PLAN.concurrency} at once, SIGKILL + "
        f"restart after {PLAN.kill_after} requests; requests answered bare {bare.requests} / "
        f"instrumented {ours.requests}, cancelled by the client {bare.cancelled} / "
        f"{ours.cancelled}; instrumented: {len(spans)} spans, "
        f"{sum(1 for s in spans if _is_run(s))} run spans, {late} saves written after their "
        f"run was cancelled; wall {bare.wall_seconds:.1f} s / {ours.wall_seconds:.1f} s"
    )
