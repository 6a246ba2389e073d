"""SQLite and PostgreSQL checkpoint databases of many threads, made in seconds: a few real
threads of a real agent (`agents.react_agent`, written through the instrumented saver), whose
rows are then copied with SQL under many thread ids.

Each copy keeps its template's checkpoint ids (ids are unique per thread only), so copies of
one template are equally recent; thread ids are `<prefix><n:06d>`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider

import agents
from langgraph.checkpoint.otel import instrument

FORKED = "template-forked"
"""The template replayed from its first tool answers (time travel): the replay books and emails
again, two `duplicate_tool_call` findings on one checkpoint."""
TEMPLATES = ("template-0", "template-1", "template-2", FORKED)
CHECKPOINT_COLUMNS = (
    "checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
)
COLUMNS = {
    "checkpoints": CHECKPOINT_COLUMNS,
    "writes": "checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path",
}
"""SqliteSaver's tables, and the columns copied (all but thread_id)."""
POSTGRES_COLUMNS = {
    "checkpoints": CHECKPOINT_COLUMNS,
    "checkpoint_blobs": "checkpoint_ns, channel, version, type, blob",
    "checkpoint_writes": "checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path",
}
"""PostgresSaver's tables, and the columns copied."""


def write_replay(saver: Any, thread_id: str) -> None:
    """A react-agent thread, then a replay from its first tool answers (a fork)."""
    graph = agents.react_agent(saver)
    config = agents.thread(thread_id)
    graph.invoke(agents.question(), config)
    point = next(s for s in graph.get_state_history(config) if s.metadata["step"] == 2)
    graph.invoke(None, point.config)


def write_other_tools_fork(saver: Any, thread_id: str) -> None:
    """A react-agent thread, then a fork from its first tool answers whose model asks for other
    tools (a `trajectory` finding)."""
    script = agents.travel_script()
    graph = agents.react_agent(saver, script)
    config = agents.thread(thread_id)
    graph.invoke(agents.question(), config)
    point = next(s for s in graph.get_state_history(config) if s.metadata["step"] == 2)
    script.change(1, agents.calls(("lookup", {"city": "Porto"}), ("search", {"query": "OPO"})))
    graph.invoke(None, point.config)


def write_templates_through(saver: Any) -> None:
    """The template threads, written through the instrumented `saver`."""
    wrapped = instrument(saver, tracer_provider=TracerProvider())
    for thread_id in TEMPLATES[:-1]:
        agents.react_agent(wrapped).invoke(agents.question(), agents.thread(thread_id))
    write_replay(wrapped, FORKED)


def write_templates(path: Path) -> list[str]:
    """The template threads, written to a new SQLite file at `path`."""
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        write_templates_through(SqliteSaver(conn))
    finally:
        conn.close()
    return list(TEMPLATES)


def copy_threads(
    path: Path, count: int, prefix: str = "t-", templates: Sequence[str] = TEMPLATES
) -> None:
    """Add `count` threads to the file at `path`: thread n is a copy of template
    n % len(templates)."""
    conn = sqlite3.connect(path)
    try:
        # no journal while copying (the file is made, not kept safe); WAL again after, as
        # SqliteSaver leaves it
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("CREATE TEMP TABLE template (k INTEGER PRIMARY KEY, thread_id TEXT)")
        conn.executemany("INSERT INTO template VALUES (?, ?)", enumerate(templates))
        numbers = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?) "
        for table, columns in COLUMNS.items():
            conn.execute(
                f"INSERT INTO {table} (thread_id, {columns}) {numbers}"
                f"SELECT ? || printf('%06d', n.i), {columns} FROM n "
                f"JOIN template ON template.k = n.i % {len(templates)} "
                f"JOIN {table} AS source ON source.thread_id = template.thread_id",
                (count, prefix),
            )
        conn.commit()
        conn.execute("PRAGMA journal_mode = WAL")
    finally:
        conn.close()


def make_db(path: Path, threads: int) -> Path:
    """A SQLite file of the templates and `threads` copies of them."""
    write_templates(path)
    copy_threads(path, threads)
    return path


def make_postgres_db(url: str, threads: int, prefix: str = "t-") -> None:
    """The templates and `threads` copies of them in the (empty) PostgreSQL database at `url`."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    with Connection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        write_templates_through(saver)
        templates = ", ".join(f"({k}, '{t}')" for k, t in enumerate(TEMPLATES))
        for table, columns in POSTGRES_COLUMNS.items():
            conn.execute(
                f"INSERT INTO {table} (thread_id, {columns}) "
                f"SELECT %s || lpad(n::text, 6, '0'), {columns} "
                f"FROM generate_series(0, %s - 1) AS n "
                f"JOIN (VALUES {templates}) AS template(k, thread_id) "
                f"ON template.k = mod(n, {len(TEMPLATES)}) "
                f"JOIN {table} AS source ON source.thread_id = template.thread_id",
                (prefix, threads),
            )
    # statistics, and the visibility map that lets the planner read the primary key alone (as
    # autovacuum keeps it); a VACUUM right after the copy was measured to leave the map unset,
    # one a second later to set it
    with Connection.connect(url, autocommit=True) as conn:
        for _ in range(20):
            for table in POSTGRES_COLUMNS:
                conn.execute(f"VACUUM (ANALYZE) {table}")
            row = conn.execute(
                "SELECT relallvisible, relpages FROM pg_class WHERE relname = 'checkpoints'"
            ).fetchone()
            if row is not None and row[0] >= row[1]:
                break
            time.sleep(0.5)
