"""`langgraph-otel` on many threads: the source as an argument, `threads` paged newest first
(`--limit`, `--offset`, `--since`, `--thread-prefix`) from each saver's own query, reading only
the page's threads, in memory bounded by the page; `threads` counting what `diverge` lists.

Real SQLite files and a real PostgreSQL database, written by real graphs through `instrument`.
"""

from __future__ import annotations

import importlib
import json
import os
import sqlite3
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from psycopg import Connection
from psycopg.rows import dict_row

import graphs
import scale_db
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter
from langgraph.checkpoint.otel.inspector import views
from langgraph.checkpoint.otel.inspector.cli import looks_like_source, main
from langgraph.checkpoint.otel.inspector.sources import Sources, open_sources
from langgraph.checkpoint.otel.inspector.thread_list import (
    ThreadQuery,
    parse_since,
    thread_sql,
)

BEFORE = ["job-1", "user-a-1", "user-b-1"]
"""Written first, oldest first."""
AFTER = ["user-a-2", "job-2", "user-a-3"]
"""Written after `Written.mark`."""
REPLAY = "user-replay"
"""Written last: a replayed react agent, two findings on one checkpoint."""
NEWEST_FIRST = [REPLAY, *reversed(AFTER), *reversed(BEFORE)]


@dataclass
class Written:
    url: str
    mark: datetime
    """A time between the `BEFORE` and the `AFTER` threads."""


def write_threads(saver: Any, provider: TracerProvider | None = None) -> datetime:
    """The threads of this module through the instrumented `saver`; returns the mark."""
    wrapped = instrument(saver, tracer_provider=provider or TracerProvider())
    graph = graphs.linear().compile(checkpointer=wrapped)
    for thread_id in BEFORE:
        graph.invoke(graphs.user_input(), {"configurable": {"thread_id": thread_id}})
    time.sleep(0.01)  # checkpoint ids are times (UUID v6): the mark falls strictly between
    mark = datetime.now(UTC)
    time.sleep(0.01)
    for thread_id in AFTER:
        graph.invoke(graphs.user_input(), {"configurable": {"thread_id": thread_id}})
    scale_db.write_replay(wrapped, REPLAY)
    return mark


@pytest.fixture(scope="module")
def sqlite_written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    path = tmp_path_factory.mktemp("scale-sqlite") / "db.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    mark = write_threads(SqliteSaver(conn))
    conn.close()
    return Written(f"sqlite:///{path}", mark)


@pytest.fixture(scope="module")
def with_spans(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """(saver URL, span file) of one writing of this module's threads."""
    root = tmp_path_factory.mktemp("scale-spans")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(str(root / "s.jsonl"))))
    conn = sqlite3.connect(root / "db.sqlite", check_same_thread=False)
    write_threads(SqliteSaver(conn), provider)
    conn.close()
    provider.shutdown()
    return f"sqlite:///{root / 'db.sqlite'}", root / "s.jsonl"


@pytest.fixture
def postgres_written(postgres_db: str) -> Iterator[Written]:
    with Connection.connect(
        postgres_db, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        mark = write_threads(saver)
    yield Written(postgres_db, mark)


@pytest.fixture
def counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A module of savers that record each `list` call's thread (None: every thread) and
    every SQL statement (SQLite: as run; PostgreSQL: with its parameters); made by
    `counting:sqlite` and `counting:postgres`."""
    (tmp_path / "counting.py").write_text(
        "import os, sqlite3\n"
        "from langgraph.checkpoint.postgres import PostgresSaver\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "from psycopg import Connection, Cursor\n"
        "from psycopg.rows import dict_row\n"
        "LISTED, STATEMENTS = [], []\n"
        "class Recording(Cursor):\n"
        "    def execute(self, query, params=None, **kw):\n"
        "        STATEMENTS.append((str(query), list(params or ())))\n"
        "        return super().execute(query, params, **kw)\n"
        "def _count(config):\n"
        "    LISTED.append(None if config is None else config['configurable']['thread_id'])\n"
        "class CountingSqlite(SqliteSaver):\n"
        "    def list(self, config, **kw):\n"
        "        _count(config)\n"
        "        return super().list(config, **kw)\n"
        "class CountingPostgres(PostgresSaver):\n"
        "    def list(self, config, **kw):\n"
        "        _count(config)\n"
        "        return super().list(config, **kw)\n"
        "def sqlite():\n"
        "    conn = sqlite3.connect(os.environ['COUNTING_DB'], check_same_thread=False)\n"
        "    conn.set_trace_callback(STATEMENTS.append)\n"
        "    saver = CountingSqlite(conn)\n"
        "    saver.is_setup = True\n"
        "    return saver\n"
        "def postgres():\n"
        "    conn = Connection.connect(os.environ['COUNTING_DB'], autocommit=True,\n"
        "                              prepare_threshold=0, row_factory=dict_row)\n"
        "    conn.cursor_factory = Recording\n"
        "    return CountingPostgres(conn)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "counting", raising=False)
    return importlib.import_module("counting")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    """`langgraph-otel ARGS --json`: the exit code and the parsed output."""
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    assert captured.err == "", captured.err
    return code, json.loads(captured.out)


def thread_ids(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code, view = run(capsys, "threads", *args)
    assert code == 0
    return [row["thread_id"] for row in view["threads"]]


# --- the source as an argument ---------------------------------------------------------------


def test_threads_takes_the_saver_url_as_an_argument(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    assert thread_ids(capsys, sqlite_written.url) == NEWEST_FIRST
    assert thread_ids(capsys, "-s", sqlite_written.url) == NEWEST_FIRST


@pytest.mark.parametrize("command", ["timeline", "resumes", "diverge", "growth", "diff"])
def test_each_thread_command_takes_the_source_after_the_thread(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, command: str
) -> None:
    by_argument = run(capsys, command, REPLAY, sqlite_written.url)
    by_option = run(capsys, command, REPLAY, "-s", sqlite_written.url)
    assert by_argument == by_option
    assert by_argument[1]["thread_id"] == REPLAY


def test_report_takes_the_source_after_the_thread(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, tmp_path: Path
) -> None:
    code, report = run(capsys, "report", REPLAY, sqlite_written.url, "--html", str(tmp_path / "r"))
    assert code == 0 and report["timeline"]["thread_id"] == REPLAY
    assert (tmp_path / "r").read_text().startswith("<!")


def test_a_source_argument_and_s_options_add_up(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, tmp_path: Path
) -> None:
    """A saver as an argument and a span file with -s: one command reads both."""
    spans = tmp_path / "spans.jsonl"
    spans.write_text("")
    code, view = run(capsys, "threads", sqlite_written.url, "-s", str(spans))
    assert code == 0
    assert view["source"]["saver"] == sqlite_written.url and view["source"]["spans"] == str(spans)


def test_diff_tells_checkpoints_from_sources(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    """A URL, an existing path or module:factory is a source; anything else a checkpoint."""
    _, line = run(capsys, "timeline", REPLAY, sqlite_written.url)
    first, second = (r["checkpoint_id"] for r in line["checkpoints"][1:3])
    path = sqlite_written.url.removeprefix("sqlite:///")
    for source in (sqlite_written.url, path):
        code, view = run(capsys, "diff", REPLAY, first[-8:], second, source)
        assert code == 0
        assert [(d["from_checkpoint_id"], d["to_checkpoint_id"]) for d in view["diffs"]] == [
            (first, second)
        ]
    code, view = run(capsys, "diff", REPLAY, second, path)  # A alone: its parent to A
    assert [d["to_checkpoint_id"] for d in view["diffs"]] == [second]
    code, view = run(capsys, "diff", REPLAY, path)  # no checkpoint: each against its parent
    assert len(view["diffs"]) == len(line["checkpoints"])


def test_a_diff_argument_is_a_source_when_it_looks_like_one(tmp_path: Path) -> None:
    (tmp_path / "spans.jsonl").write_text("")
    sources = [
        "sqlite:///x.db",
        "postgresql://u@h/db",
        str(tmp_path),
        str(tmp_path / "spans.jsonl"),
    ]
    assert all(looks_like_source(a) for a in [*sources, "my_app.savers:production"])
    checkpoints = ["1f0cf3a2-9c1b-6e34-8001-5a1b2c3d4e5f", "5a1b2c3d", "8001-5a1b", "no/such.db"]
    assert not any(looks_like_source(a) for a in checkpoints)


def test_diff_with_a_third_checkpoint_is_bad_input(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    code = main(["diff", REPLAY, "aaaa", "bbbb", "cccc", sqlite_written.url])
    err = capsys.readouterr().err
    assert code == 2
    assert "at most two checkpoints, got aaaa, bbbb, cccc" in err


def test_the_environment_source_is_read_when_no_source_is_given(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_OTEL_SOURCE", sqlite_written.url)
    assert thread_ids(capsys) == NEWEST_FIRST
    monkeypatch.setenv("LANGGRAPH_OTEL_SOURCE", "sqlite:///no/such/file.db")
    assert thread_ids(capsys, sqlite_written.url) == NEWEST_FIRST  # an argument wins


def test_the_console_script_takes_the_source_as_an_argument(sqlite_written: Written) -> None:
    script = Path(sys.executable).with_name("langgraph-otel")
    result = subprocess.run(
        [str(script), "threads", sqlite_written.url, "--limit", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert result.returncode == 0, result.stderr
    assert REPLAY in result.stdout and AFTER[-1] in result.stdout
    assert AFTER[0] not in result.stdout


# --- which threads ---------------------------------------------------------------------------


def test_limit_gives_the_most_recent_threads_newest_first(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    assert thread_ids(capsys, sqlite_written.url, "--limit", "3") == NEWEST_FIRST[:3]


def test_offset_gives_the_next_page(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    page = thread_ids(capsys, sqlite_written.url, "--limit", "3", "--offset", "3")
    assert page == NEWEST_FIRST[3:6]


def test_the_table_names_the_offset_of_the_next_page(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    assert main(["threads", sqlite_written.url, "-n", "2", "--offset", "1"]) == 0
    assert "more threads match: --offset 3 shows the next page" in capsys.readouterr().out
    assert main(["threads", sqlite_written.url]) == 0
    assert "more threads match" not in capsys.readouterr().out


def test_span_files_alone_are_paged_newest_first(
    capsys: pytest.CaptureFixture[str], with_spans: tuple[str, Path]
) -> None:
    _, spans = with_spans
    code, view = run(capsys, "threads", str(spans), "-n", "3")
    assert code == 0
    assert [r["thread_id"] for r in view["threads"]] == NEWEST_FIRST[:3]
    assert (view["more"], view["total"]) == (True, len(NEWEST_FIRST))


def test_a_saver_and_span_files_are_paged_together(
    capsys: pytest.CaptureFixture[str], with_spans: tuple[str, Path]
) -> None:
    url, spans = with_spans
    page = thread_ids(capsys, url, str(spans), "-n", "2", "--offset", "2")
    assert page == NEWEST_FIRST[2:4]
    assert thread_ids(capsys, url, str(spans), "--thread-prefix", "job-") == ["job-2", "job-1"]


def test_more_says_whether_the_page_was_cut(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    _, cut = run(capsys, "threads", sqlite_written.url, "-n", "6")
    _, whole = run(capsys, "threads", sqlite_written.url, "-n", "7")
    _, everything = run(capsys, "threads", sqlite_written.url, "-n", "0")
    assert cut["more"] is True and whole["more"] is False
    assert (len(everything["threads"]), everything["more"]) == (7, False)
    assert cut["total"] is None  # not counted by the SQL ranking (it would cost as much again)


def test_thread_prefix_selects_exactly_the_threads_starting_with_it(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    page = thread_ids(capsys, sqlite_written.url, "--thread-prefix", "user-a-")
    assert page == ["user-a-3", "user-a-2", "user-a-1"]
    assert thread_ids(capsys, sqlite_written.url, "--thread-prefix", "user-a-3x") == []


def test_since_lists_only_threads_active_after_it(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    page = thread_ids(capsys, sqlite_written.url, "--since", sqlite_written.mark.isoformat())
    assert page == [REPLAY, *reversed(AFTER)]


def test_since_and_prefix_and_limit_combine(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    since = sqlite_written.mark.isoformat()
    page = thread_ids(
        capsys, sqlite_written.url, "--since", since, "-n", "1", "--thread-prefix", "user-a"
    )
    assert page == ["user-a-3"]


def test_since_takes_a_date_a_date_time_or_a_duration() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("90m", now) == now - timedelta(minutes=90)
    assert parse_since("2026-11-30T08:00:00+00:00") == datetime(2026, 11, 30, 8, tzinfo=UTC)
    assert parse_since("2026-11-30") == datetime(2026, 11, 30).astimezone()  # local midnight


def test_a_bad_since_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    code = main(["threads", sqlite_written.url, "--since", "last tuesday"])
    assert code == 2
    assert "--since 'last tuesday': not a date" in capsys.readouterr().err


# --- what is read ----------------------------------------------------------------------------


def test_the_sql_listing_reads_only_the_page_threads(
    capsys: pytest.CaptureFixture[str],
    sqlite_written: Written,
    counting: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One query ranks the threads; then each thread of the page is listed once, by its id:
    no statement reads the checkpoints or writes of a thread outside the page."""
    monkeypatch.setenv("COUNTING_DB", sqlite_written.url.removeprefix("sqlite:///"))
    assert thread_ids(capsys, "counting:sqlite", "-n", "2") == NEWEST_FIRST[:2]
    assert sorted(counting.LISTED) == sorted(NEWEST_FIRST[:2])
    reads = [s for s in counting.STATEMENTS if "FROM checkpoints" in s or "FROM writes" in s]
    ranking = [s for s in reads if "GROUP BY thread_id" in s]
    assert len(ranking) == 1
    others = [s for s in reads if s not in ranking]
    assert others and all(
        any(f"thread_id = '{t}'" in s for t in NEWEST_FIRST[:2]) for s in others
    ), others


def test_the_sqlite_ranking_query_reads_the_primary_key_index(sqlite_written: Written) -> None:
    sql, params = thread_sql(ThreadQuery(prefix="user-", since=sqlite_written.mark), postgres=False)
    conn = sqlite3.connect(sqlite_written.url.removeprefix("sqlite:///"))
    plan = " | ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", [*params, 5, 0]))
    conn.close()
    assert (
        "USING COVERING INDEX sqlite_autoindex_checkpoints_1 (thread_id>? AND thread_id<?)" in plan
    )


def test_timeline_reads_only_its_thread(
    capsys: pytest.CaptureFixture[str],
    sqlite_written: Written,
    counting: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COUNTING_DB", sqlite_written.url.removeprefix("sqlite:///"))
    code, _ = run(capsys, "timeline", "user-a-2", "counting:sqlite")
    assert code == 0 and counting.LISTED == ["user-a-2"]
    reads = [s for s in counting.STATEMENTS if "FROM checkpoints" in s or "FROM writes" in s]
    assert reads and all("thread_id = 'user-a-2'" in s for s in reads), reads


def test_a_saver_without_a_query_is_scanned_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any other saver: one `list(None)` for the ranking, then each page thread by its id."""
    (tmp_path / "other_savers.py").write_text(
        "from langgraph.checkpoint.base import BaseCheckpointSaver\n"
        "LISTED = []\n"
        "class Other(BaseCheckpointSaver):  # reads through an InMemorySaver, is not one\n"
        "    def __init__(self, inner):\n"
        "        super().__init__()\n"
        "        self._inner = inner\n"
        "    def list(self, config, **kw):\n"
        "        LISTED.append(None if config is None else config['configurable']['thread_id'])\n"
        "        return self._inner.list(config, **kw)\n"
        "SAVER = None\n"
        "def make():\n"
        "    return Other(SAVER)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "other_savers", raising=False)
    module = importlib.import_module("other_savers")
    memory = InMemorySaver()
    write_threads(memory)
    module.SAVER = memory
    assert thread_ids(capsys, "other_savers:make", "-n", "2") == NEWEST_FIRST[:2]
    assert module.LISTED[0] is None and sorted(module.LISTED[1:]) == sorted(NEWEST_FIRST[:2])


def test_an_in_memory_saver_is_ranked_from_its_storage_keys(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = InMemorySaver()
    write_threads(memory)
    listed: list[Any] = []
    real_list = memory.list

    def counted(config: Any, **kw: Any) -> Any:
        listed.append(None if config is None else config["configurable"]["thread_id"])
        return real_list(config, **kw)

    monkeypatch.setattr(memory, "list", counted)
    with Sources(saver=memory, saver_url="memory") as sources:
        view = views.threads(sources, query=ThreadQuery(limit=3, prefix="user-"))
    assert [r.thread_id for r in view.threads] == [REPLAY, "user-a-3", "user-a-2"]
    assert None not in listed and sorted(listed) == sorted([REPLAY, "user-a-3", "user-a-2"])
    assert (view.more, view.total) == (True, 5)


@pytest.fixture
def redis_written(redis_url: str) -> Iterator[Written]:
    from langgraph.checkpoint.redis import RedisSaver

    with RedisSaver.from_conn_string(redis_url) as saver:
        saver.setup()
        mark = write_threads(saver)
    yield Written(redis_url, mark)


def test_redis_threads_are_paged_newest_first(
    capsys: pytest.CaptureFixture[str], redis_written: Written
) -> None:
    url = redis_written.url
    assert thread_ids(capsys, url, "-n", "3") == NEWEST_FIRST[:3]
    assert thread_ids(capsys, url, "-n", "2", "--offset", "3") == NEWEST_FIRST[3:5]
    assert thread_ids(capsys, url, "--since", redis_written.mark.isoformat()) == [
        REPLAY,
        *reversed(AFTER),
    ]
    assert thread_ids(capsys, url, "--thread-prefix", "user-a-") == [
        "user-a-3",
        "user-a-2",
        "user-a-1",
    ]
    _, everything = run(capsys, "threads", url, "-n", "0")
    assert (len(everything["threads"]), everything["more"], everything["total"]) == (7, False, 7)


def test_redis_threads_are_found_by_its_index_not_by_listing_every_checkpoint(
    capsys: pytest.CaptureFixture[str], redis_written: Written, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`RedisSaver.list(None)` returns only its 10,000 newest checkpoints: never used."""
    from langgraph.checkpoint.redis import RedisSaver

    listed: list[Any] = []
    real_list = RedisSaver.list

    def counted(self: Any, config: Any, **kw: Any) -> Any:
        listed.append(None if config is None else config["configurable"]["thread_id"])
        return real_list(self, config, **kw)

    monkeypatch.setattr(RedisSaver, "list", counted)
    assert thread_ids(capsys, redis_written.url, "-n", "2") == NEWEST_FIRST[:2]
    assert sorted(listed) == sorted(NEWEST_FIRST[:2])


# --- memory bounded by the page ---------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """SQLite files of 100 and 3,000 copies of the template threads (`scale_db`)."""
    root = tmp_path_factory.mktemp("scale-generated")
    return {n: scale_db.make_db(root / f"{n}.sqlite", n) for n in (100, 3000)}


def _peak(work: Any) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_first_page_takes_memory_of_the_page_not_of_the_database(
    generated: dict[int, Path],
) -> None:
    """The first page of 3,000 threads takes what the first page of 100 takes, a small part
    of what reading every checkpoint of just those 100 threads took (the old `threads`)."""

    def first_page(threads: int) -> Any:
        def work() -> None:
            with open_sources([str(generated[threads])]) as sources:
                view = views.threads(sources, query=ThreadQuery(limit=50))
            assert len(view.threads) == 50 and view.more

        return work

    def read_all() -> None:
        with open_sources([str(generated[100])]) as sources:
            assert len(sources.checkpoints()) > 100 * 7

    small, large, everything = _peak(first_page(100)), _peak(first_page(3000)), _peak(read_all)
    assert large < 1.5 * small, (small, large)
    assert 10 * large < everything, (large, everything)


# --- divergences: what `diverge` lists ------------------------------------------------------


def test_threads_counts_the_findings_diverge_lists(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    """The replay books and emails again: two findings on one checkpoint, both counted."""
    _, listing = run(capsys, "threads", sqlite_written.url)
    row = next(r for r in listing["threads"] if r["thread_id"] == REPLAY)
    code, diverge = run(capsys, "diverge", REPLAY, sqlite_written.url)
    assert code == 1
    findings = diverge["findings"]
    assert row["divergences"] == len(findings) == 2
    assert len({(f["checkpoint_id"], f["kind"]) for f in findings}) == 1  # the old count said 1
    others = [r for r in listing["threads"] if r["thread_id"] != REPLAY]
    assert all(r["divergences"] == 0 for r in others)


# --- PostgreSQL -------------------------------------------------------------------------------


def _comparable(view: Any) -> list[tuple[Any, ...]]:
    return [
        (r["thread_id"], r["checkpoints"], r["namespaces"], r["resumes"], r["divergences"])
        for r in view["threads"]
    ]


def test_postgres_lists_the_same_threads_as_sqlite(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, postgres_written: Written
) -> None:
    for args in ([], ["-n", "3"], ["-n", "2", "--offset", "1", "--thread-prefix", "user-"]):
        code, on_postgres = run(capsys, "threads", postgres_written.url, *args)
        assert code == 0
        _, on_sqlite = run(capsys, "threads", sqlite_written.url, *args)
        assert _comparable(on_postgres) == _comparable(on_sqlite)
        assert (on_postgres["more"], on_postgres["total"]) == (
            on_sqlite["more"],
            on_sqlite["total"],
        )
    assert _comparable(on_postgres)[0][0] == "user-a-3"


def test_postgres_since_lists_only_threads_active_after_it(
    capsys: pytest.CaptureFixture[str], postgres_written: Written
) -> None:
    page = thread_ids(capsys, postgres_written.url, "--since", postgres_written.mark.isoformat())
    assert page == [REPLAY, *reversed(AFTER)]


def test_the_postgres_listing_reads_only_the_page_threads(
    capsys: pytest.CaptureFixture[str],
    postgres_written: Written,
    counting: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COUNTING_DB", postgres_written.url)
    assert thread_ids(capsys, "counting:postgres", "-n", "3") == NEWEST_FIRST[:3]
    assert sorted(counting.LISTED) == sorted(NEWEST_FIRST[:3])
    ranking = [q for q, _ in counting.STATEMENTS if "GROUP BY thread_id" in q]
    assert len(ranking) == 1
    reads = [(q, p) for q, p in counting.STATEMENTS if q not in ranking]
    assert reads and all("thread_id = %s" in q and p[0] in NEWEST_FIRST[:3] for q, p in reads)


def test_postgres_timeline_reads_only_its_thread(
    capsys: pytest.CaptureFixture[str],
    postgres_written: Written,
    counting: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COUNTING_DB", postgres_written.url)
    code, _ = run(capsys, "timeline", "job-1", "counting:postgres")
    assert code == 0 and counting.LISTED == ["job-1"]
    reads = [(q, p) for q, p in counting.STATEMENTS if "checkpoint" in q]
    assert reads and all("thread_id = %s" in q and p[0] == "job-1" for q, p in reads), reads


def test_postgres_threads_counts_the_findings_diverge_lists(
    capsys: pytest.CaptureFixture[str], postgres_written: Written
) -> None:
    _, listing = run(capsys, "threads", postgres_written.url, "-n", "1")
    _, diverge = run(capsys, "diverge", REPLAY, postgres_written.url)
    assert listing["threads"][0]["thread_id"] == REPLAY
    assert listing["threads"][0]["divergences"] == len(diverge["findings"]) == 2
