"""A `retention --apply` killed (SIGKILL, by the process itself) at each point of a thread's
apply (`retention.apply.STEPS`): every thread still reads the same latest state as an unpruned
copy of its runs and resumes like it, every checkpoint missing from the store is in the
archive, running the apply again finishes the job, and a restore of the archive (with a torn
last line, as a kill while writing leaves) brings every thread back as it was.

SQLite at every point; PostgreSQL and Redis at the two points around the removal.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.otel.analysis.retention import RetentionPolicy
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery
from langgraph.checkpoint.otel.retention.apply import APPLIED, NOTHING, STEPS, apply_plans
from langgraph.checkpoint.otel.retention.archive import read_archive
from langgraph.checkpoint.otel.retention.restore import restore_archive
from langgraph.checkpoint.otel.retention.scan import plan_threads
from retention_threads import config, history, resume, seed_threads, state_hash
from suite_paths import REPO

KILL_SCRIPT = REPO / "tests" / "support" / "retention_kill.py"
POLICY = RetentionPolicy(keep_last=2)
FAR = datetime.now(UTC) + timedelta(days=3650)
THREADS = 4
NTH = 2
"""Killed in the second thread's apply: the first is done, the others untouched."""

CASES = [("sqlite", point) for point in STEPS] + [
    (kind, point) for kind in ("postgres", "redis") for point in ("archived", "deleted")
]


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """(a set-up stock saver, the source URL the killed process opens)."""
    kind = request.param
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = tmp_path / "checkpoints.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        yield saver, f"sqlite:///{path}"
        conn.close()
    elif kind == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver

        url = request.getfixturevalue("postgres_db")
        with PostgresSaver.from_conn_string(url) as pg:
            pg.setup()
            yield pg, url
    else:
        from langgraph.checkpoint.redis import RedisSaver

        url = request.getfixturevalue("redis_url")
        with RedisSaver.from_conn_string(url) as redis:
            redis.setup()
            yield redis, url


def _ids(saver: Any, thread_id: str) -> set[tuple[str, str]]:
    return {
        (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"])
        for t in saver.list(config(thread_id))
    }


@pytest.mark.parametrize(
    ("store", "point"), CASES, indirect=["store"], ids=[f"{k}-{p}" for k, p in CASES]
)
def test_a_killed_apply_loses_nothing(store: tuple[Any, str], point: str, tmp_path: Path) -> None:
    saver, source = store
    ids = seed_threads(saver, THREADS, seed=21)
    copy = InMemorySaver()
    seed_threads(copy, THREADS, seed=21)
    before = {t: history(saver, t) for t in ids}
    stored_before = {t: _ids(saver, t) for t in ids}
    archive = tmp_path / "archive.jsonl"

    killed = subprocess.run(
        [sys.executable, str(KILL_SCRIPT), source, str(archive), point, str(NTH)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    contents = read_archive(archive)
    assert contents.incomplete == 0
    archived = {(r.thread_id, c.ns, c.id) for r in contents.records for c in r.checkpoints}
    for thread_id in ids:
        # every thread reads the same latest state as the unpruned copy
        assert state_hash(saver, thread_id) == state_hash(copy, thread_id), thread_id
        # and whatever is gone from the store is in the archive
        missing = stored_before[thread_id] - _ids(saver, thread_id)
        assert {(thread_id, ns, cid) for ns, cid in missing} <= archived, thread_id
    changed = [t for t in ids if _ids(saver, t) != stored_before[t]]
    assert len(changed) == (2 if point in ("deleted", "verified") else 1)

    plans = list(plan_threads(saver, POLICY, ThreadQuery(limit=None), FAR))
    rerun = apply_plans(saver, plans, archive, policy=POLICY)  # finishes the job

    assert {o.outcome for o in rerun.threads} <= {APPLIED, NOTHING}
    again = list(plan_threads(saver, POLICY, ThreadQuery(limit=None), FAR))
    assert [p.remove for p in again] == [()] * len(again)
    for thread_id in ids:
        assert state_hash(saver, thread_id) == state_hash(copy, thread_id), thread_id

    with archive.open("ab") as f:  # a record cut short, as a kill while writing leaves it
        f.write(b'{"format": "langgraph-otel-archive", "version": 1, "thread_id": "t')
    restored = restore_archive(saver, archive)

    assert restored.torn == 1 and restored.incomplete == 1
    assert {t: history(saver, t) for t in ids} == before
    for thread_id in ids:  # and every thread resumes as the copy does
        assert resume(saver, thread_id) == resume(copy, thread_id), thread_id
