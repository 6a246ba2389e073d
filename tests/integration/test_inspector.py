"""The inspector (`langgraph-otel`) on real data: a `create_react_agent` thread that was forked
(time travel) and repeated its tool calls, written through the instrumented saver to a real
SQLite file and a real PostgreSQL database, with its spans exported as OTLP JSON lines."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from psycopg import Connection
from psycopg.rows import dict_row

import agents
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter, read_spans
from langgraph.checkpoint.otel.inspector.cli import main

FORKED = "forked-thread"
PLAIN = "plain-thread"


@dataclass
class Written:
    saver_url: str
    spans: Path
    checkpoint_ids: dict[str, list[str]]
    """Per thread, the ids the saver holds, oldest first."""
    fork_from: str


def _write(saver: Any, spans: Path) -> dict[str, Any]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(str(spans))))
    graph = agents.react_agent(instrument(saver, tracer_provider=provider))
    config = {"configurable": {"thread_id": FORKED}}
    graph.invoke(agents.question(), config)
    history = list(graph.get_state_history(config))  # newest first
    before_tools = next(s for s in history if s.metadata["step"] == 2)  # then: agent, tools
    graph.invoke(None, before_tools.config)  # time travel: replay from there (a fork)
    graph.invoke(agents.question("and again"), {"configurable": {"thread_id": PLAIN}})
    provider.shutdown()
    ids = {
        t: sorted(str(c.checkpoint["id"]) for c in saver.list({"configurable": {"thread_id": t}}))
        for t in (FORKED, PLAIN)
    }
    return {"ids": ids, "fork_from": before_tools.config["configurable"]["checkpoint_id"]}


@pytest.fixture(scope="module")
def sqlite_written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("inspector-sqlite")
    conn = sqlite3.connect(root / "db.sqlite", check_same_thread=False)
    out = _write(SqliteSaver(conn), root / "spans.jsonl")
    conn.close()
    return Written(
        f"sqlite:///{root / 'db.sqlite'}", root / "spans.jsonl", out["ids"], out["fork_from"]
    )


@pytest.fixture
def postgres_written(postgres_db: str, tmp_path: Path) -> Iterator[Written]:
    with Connection.connect(
        postgres_db, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        out = _write(saver, tmp_path / "spans.jsonl")
    yield Written(postgres_db, tmp_path / "spans.jsonl", out["ids"], out["fork_from"])


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code, out, err = run(capsys, *args, "--json")
    assert err == "", err
    return code, json.loads(out)


def _sources(w: Written, which: str) -> list[str]:
    return {
        "saver": ["-s", w.saver_url],
        "spans": ["-s", str(w.spans)],
        "both": ["-s", w.saver_url, "-s", str(w.spans.parent)],
    }[which]


def check_all_commands(capsys: pytest.CaptureFixture[str], w: Written, which: str) -> None:
    src = _sources(w, which)
    ids = w.checkpoint_ids[FORKED]

    code, threads = run_json(capsys, "threads", *src)
    assert code == 0
    rows = {t["thread_id"]: t for t in threads["threads"]}
    assert set(rows) == {FORKED, PLAIN}
    assert rows[FORKED]["checkpoints"] == len(ids)
    assert rows[PLAIN]["checkpoints"] == len(w.checkpoint_ids[PLAIN])
    assert rows[FORKED]["resumes"] == 1 and rows[PLAIN]["resumes"] == 0
    assert rows[FORKED]["divergences"] >= 1 and rows[PLAIN]["divergences"] == 0
    assert rows[FORKED]["size_bytes"] > 0

    code, line = run_json(capsys, "timeline", FORKED, *src)
    assert code == 0
    rows_ = line["checkpoints"]
    assert [r["checkpoint_id"] for r in rows_] == ids  # every checkpoint, oldest first
    by_id = {r["checkpoint_id"]: r for r in rows_}
    assert by_id[w.fork_from]["fork_point"] is True
    assert sum(r["fork_point"] for r in rows_) == 1
    branch = [r for r in rows_ if r["branch"] == 1]
    assert branch and branch[0]["parent_id"] == w.fork_from
    assert branch[0]["source"] == "fork" and branch[0]["resume_kind"] == "fork"
    assert {r["branch"] for r in rows_} == {0, 1}
    assert any(r["divergences"] for r in branch)
    assert not any(r["divergences"] for r in rows_ if r["branch"] == 0)
    assert any("tools" in r["nodes"] for r in rows_) and any("agent" in r["nodes"] for r in rows_)
    assert all(r["size_bytes"] and r["state_hash"] for r in rows_)
    shorts = [r["short_id"] for r in rows_]
    assert len(set(shorts)) == len(shorts)
    assert all(cid.replace("-", "").endswith(s) for cid, s in zip(ids, shorts, strict=True))
    assert len({s[:4] for s in shorts}) > 1  # not the ids' common time-based start
    timed = [r["duration_ms"] for r in rows_]
    if which == "saver":
        assert timed == [None] * len(rows_)
        assert any("no timings" in n for n in line["source"]["cannot_show"])
    else:
        assert all(t is not None and t >= 0 for t in timed)

    code, resumes = run_json(capsys, "resumes", FORKED, *src)
    assert code == 0
    [resume] = resumes["resumes"]
    assert resume["kind"] == "fork" and resume["from_checkpoint_id"] == w.fork_from
    assert resume["first_node"] in ("agent", "tools")
    # the link to the writer: the trace and span of the put span that wrote the fork point
    [writer] = [
        s
        for s in read_spans(w.spans)
        if s.name == "langgraph.checkpoint.put"
        and s.attributes["langgraph.checkpoint.id"] == w.fork_from
    ]
    assert (resume["writer_trace_id"], resume["writer_span_id"]) == (
        writer.trace_id,
        writer.span_id,
    )

    code, diverged = run_json(capsys, "diverge", FORKED, *src)
    assert code == 1 and diverged["diverged"] is True
    assert {f["kind"] for f in diverged["findings"]} & {"duplicate_tool_call", "tool", "state"}
    assert all(
        f["checkpoint_id"] in {r["checkpoint_id"] for r in branch} for f in diverged["findings"]
    )
    code, clean = run_json(capsys, "diverge", PLAIN, *src)
    assert code == 0 and clean == {**clean, "diverged": False, "findings": []}

    code, growth = run_json(capsys, "growth", FORKED, *src)
    assert code == 0
    [messages] = [c for c in growth["channels"] if c["channel"] == "messages"]
    sizes = [p["size_bytes"] for p in messages["points"]]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]  # the history only grows
    assert messages["last_bytes"] == sizes[-1]

    code, out, err = run(capsys, "timeline", FORKED, *src)
    assert code == 0 and err == ""
    assert "DIVERGED" in out and "resume fork" in out and "fork point" in out
    assert all(s in out for s in shorts)


def check_diff(capsys: pytest.CaptureFixture[str], w: Written) -> None:
    src = _sources(w, "saver")
    ids = w.checkpoint_ids[FORKED]
    code, all_diffs = run_json(capsys, "diff", FORKED, *src)
    assert code == 0 and len(all_diffs["diffs"]) == len(ids)
    code, one = run_json(capsys, "diff", FORKED, ids[2][-8:], *src)  # by the end of its id
    assert code == 0
    [d] = one["diffs"]
    assert d["to_checkpoint_id"] == ids[2] and d["from_checkpoint_id"] == ids[1]
    [change] = [c for c in d["changes"] if c["name"] == "messages"]
    assert change["status"] == "changed" and change["size_delta"] > 0 and change["patch"] is None
    assert "message" in change["summary"]
    code, two = run_json(capsys, "diff", FORKED, ids[0], ids[-1], "--content", *src)
    assert code == 0 and two["diffs"][0]["changes"][0]["patch"]  # content only when asked


@pytest.mark.parametrize("which", ["saver", "spans", "both"])
def test_every_command_on_sqlite(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, which: str
) -> None:
    db = Path(sqlite_written.saver_url.removeprefix("sqlite:///"))
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    check_all_commands(capsys, sqlite_written, which)
    if which == "saver":
        check_diff(capsys, sqlite_written)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # read only
    assert not Path(str(db) + "-wal").exists() or Path(str(db) + "-wal").stat().st_size == 0


def test_every_command_on_postgres(
    capsys: pytest.CaptureFixture[str], postgres_written: Written
) -> None:
    with Connection.connect(postgres_written.saver_url, autocommit=True) as conn:
        before = conn.execute("SELECT count(*), max(checkpoint_id) FROM checkpoints").fetchone()
        check_all_commands(capsys, postgres_written, "saver")
        check_all_commands(capsys, postgres_written, "both")
        check_diff(capsys, postgres_written)
        after = conn.execute("SELECT count(*), max(checkpoint_id) FROM checkpoints").fetchone()
    assert before == after


def test_spans_alone_cannot_diff_and_say_so(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written
) -> None:
    code, out, err = run(capsys, "diff", FORKED, "-s", str(sqlite_written.spans))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "needs a saver" in err and "Traceback" not in err
    code, line = run_json(capsys, "timeline", FORKED, "-s", str(sqlite_written.spans))
    assert any("no tool-call arguments" in n for n in line["source"]["cannot_show"])


def test_report_writes_one_page(
    capsys: pytest.CaptureFixture[str], sqlite_written: Written, tmp_path: Path
) -> None:
    page = tmp_path / "out" / "report.html"
    code, out, err = run(
        capsys, "report", FORKED, "--html", str(page), *_sources(sqlite_written, "both")
    )
    assert code == 0 and err == "" and str(page) in out
    html = page.read_text()
    assert (
        FORKED in html and "<script src=" not in html and "http://" not in html.split("</head>")[0]
    )
    assert html.count('class="checkpoint') >= len(sqlite_written.checkpoint_ids[FORKED])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["timeline", "no-such-thread"], "no checkpoints of thread 'no-such-thread'"),
        (["timeline", FORKED, "-s", "sqlite:///no/such/file.db"], "no such SQLite file"),
        (["timeline", FORKED, "-s", "NOTSPANS"], "not OTLP JSON"),
        (["timeline", FORKED, "-s", "postgresql://nobody@127.0.0.1:1/x"], "cannot connect"),
        (["timeline", FORKED, "-s", "no_such_module:factory"], "cannot make a saver"),
        (["diff", FORKED, "zzzzzz"], "no checkpoint 'zzzzzz'"),
        (["threads", "-s", "ftp://x"], "not a source"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    sqlite_written: Written,
    tmp_path: Path,
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "NOTSPANS").write_text("this is not OTLP JSON\n")
    os.chdir(tmp_path)
    if "-s" not in args:
        args = [*args, "-s", sqlite_written.saver_url]
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("langgraph-otel: error: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_schema_describes_every_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    schemas = json.loads(out)
    assert code == 0
    assert set(schemas) == {
        "threads",
        "timeline",
        "diff",
        "resumes",
        "diverge",
        "growth",
        "report",
        "compat",
        "replay",
        "retention",
        "restore",
    }
    assert "checkpoints" in schemas["timeline"]["properties"]
    assert "at_risk" in schemas["compat"]["properties"]
    assert "threads" in schemas["replay"]["properties"]
    assert "reclaim_bytes" in schemas["retention"]["properties"]


def test_console_script_and_module_run(sqlite_written: Written) -> None:
    script = Path(sys.executable).with_name("langgraph-otel")
    for command in ([str(script)], [sys.executable, "-m", "langgraph.checkpoint.otel"]):
        result = subprocess.run(
            [*command, "threads", "-s", sqlite_written.saver_url],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert FORKED in result.stdout and PLAIN in result.stdout


def test_any_saver_through_a_factory(
    capsys: pytest.CaptureFixture[str],
    sqlite_written: Written,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`module:factory` returning a context manager that yields an instrumented saver: the
    inspector reads its inner saver (and so sees the stored telemetry)."""
    db = sqlite_written.saver_url.removeprefix("sqlite:///")
    (tmp_path / "my_savers.py").write_text(
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "from langgraph.checkpoint.otel import instrument\n"
        "import contextlib\n"
        "@contextlib.contextmanager\n"
        "def production():\n"
        f"    with SqliteSaver.from_conn_string({db!r}) as saver:\n"
        "        yield instrument(saver)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code, line = run_json(capsys, "timeline", FORKED, "-s", "my_savers:production")
    assert code == 0
    assert [r["checkpoint_id"] for r in line["checkpoints"]] == sqlite_written.checkpoint_ids[
        FORKED
    ]
    assert sum(r["resume_kind"] == "fork" for r in line["checkpoints"]) == 1  # stored marks seen


def test_a_subgraph_shows_its_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, otel: Any
) -> None:
    import graphs

    conn = sqlite3.connect(tmp_path / "sub.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = graphs.with_subgraph(ask_inside=True).compile(
        checkpointer=instrument(saver, tracer_provider=otel.tracer_provider)
    )
    config = {"configurable": {"thread_id": "with-sub"}}
    graph.invoke(graphs.user_input(), config)
    stored = list(saver.list(config))
    spaces = {c.config["configurable"]["checkpoint_ns"] for c in stored}
    assert "" in spaces and len(spaces) == 2  # the subgraph's own checkpoints, in its namespace
    src = ["-s", f"sqlite:///{tmp_path / 'sub.sqlite'}"]
    code, line = run_json(capsys, "timeline", "with-sub", *src)
    assert code == 0 and len(line["checkpoints"]) == len(stored)
    assert {r["namespace"] for r in line["checkpoints"]} == spaces
    inner = [r for r in line["checkpoints"] if r["namespace"]]
    assert {n for r in inner for n in r["nodes"]} >= {"inner1"}
    code, threads = run_json(capsys, "threads", *src)
    assert threads["threads"][0]["namespaces"] == 2
    code, out, _ = run(capsys, "timeline", "with-sub", *src)
    assert "namespace" in out and next(iter(spaces - {""})) in out
    conn.close()
