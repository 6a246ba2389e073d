"""The inspector on many threads: `langgraph-otel threads` (its first page) and `timeline` of one
thread, on SQLite files of 10,000 and 100,000 threads and on PostgreSQL at 10,000.

The databases hold copies of real agent threads (`tests/support/scale_db.py`: a react agent written
through the instrumented saver, 7 to 11 checkpoints a thread, rows copied with SQL); the SQLite
files are cached under `.bench/inspector-scale/` (the 100,000-thread one is ~4.5 GB, made once
in about a minute). Each command runs in its own process, through the console script's
`main`: wall time (interpreter start and imports included; `schema` alone is printed as the
startup cost), its CPU time, and the process's own peak RSS (VmHWM at exit). The commands run
in rounds, the order rotating every round (5 rounds, 1 with `--quick`); median wall and CPU
times and the largest RSS over the rounds.

Targets: the first page of `threads` under 2 s and 150 MB at 100,000 threads (SQLite and, at
10,000, PostgreSQL), in wall time as a user waits; `timeline` of one thread at 100,000 threads
within 1.25x its CPU time at 10,000 (CPU time: the machine may be shared, and wall times of
one-second commands then vary by more than that).

    .venv/bin/python benchmarks/inspector_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tests" / "apps"))

import helpers  # noqa: E402
import scale_db  # noqa: E402
from langgraph.checkpoint.otel.inspector.thread_list import (  # noqa: E402
    ThreadQuery,
    thread_sql,
)

SQLITE_SIZES = (10_000, 100_000)
POSTGRES_SIZE = 10_000
FIRST_PAGE_S = 2.0
FIRST_PAGE_MB = 150.0
TIMELINE_RATIO = 1.25
REPEATS = {"full": 5, "quick": 1}
CACHE = ROOT / ".bench" / "inspector-scale"
TIMELINE_THREAD = "t-000003"
"""A copy of the replayed template (11 checkpoints, a fork, two findings): in every size."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def sqlite_db(threads: int) -> tuple[Path, float | None]:
    """The cached file of `threads` copies (made when missing), and how long making it took."""
    key = f"v1-langgraph-checkpoint-{version('langgraph-checkpoint')}"
    path = CACHE / f"sqlite-{threads}-{key}.sqlite"
    if path.exists():
        return path, None
    CACHE.mkdir(parents=True, exist_ok=True)
    for stale in CACHE.glob(f"sqlite-{threads}-*.sqlite*"):
        stale.unlink()
    log(f"[scale] making a SQLite file of {threads:,} threads (cached in {CACHE}) ...")
    started = time.perf_counter()
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    scale_db.make_db(partial, threads)
    partial.rename(path)
    return path, time.perf_counter() - started


PROBE = """
import json, resource, sys
from langgraph.checkpoint.otel.inspector.cli import main
code = main(sys.argv[1:])
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
cpu = resource.getrusage(resource.RUSAGE_SELF)
print("PEAK " + json.dumps([int(peak.split()[1]), cpu.ru_utime + cpu.ru_stime]), file=sys.stderr)
sys.exit(code)
"""
"""`langgraph-otel ARGS` (the console script's `main`) reporting at exit its peak RSS, the
VmHWM of its own address space, and its CPU time (user + system). (`wait4`'s ru_maxrss would
not do: Linux folds the parent's peak into a child's at exec, so every child would report this
process's size.)"""


def run_once(args: list[str]) -> dict[str, Any]:
    """One `langgraph-otel ARGS` in its own process: wall time, its peak RSS, exit code."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    wall = time.perf_counter() - started
    lines = proc.stderr.strip().splitlines()
    peaks = [json.loads(x.removeprefix("PEAK ")) for x in lines if x.startswith("PEAK ")]
    errors = [x for x in lines if not x.startswith("PEAK ")][-1:]
    return {
        "wall_s": wall,
        "cpu_s": peaks[0][1] if peaks else float("nan"),
        "peak_rss_mb": peaks[0][0] / 1024 if peaks else float("nan"),  # VmHWM is in kB
        "exit": proc.returncode,
        "stderr": errors if proc.returncode else [],
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "exit": max(r["exit"] for r in runs),
        "errors": [line for r in runs for line in r["stderr"]],
        "runs": len(runs),
    }


def interleaved(jobs: dict[str, list[str]], repeats: int) -> dict[str, dict[str, Any]]:
    """Each job `repeats` times, one round after another, the order rotating every round (so
    slow drift and other load on the machine hit every job alike)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in jobs}
    names = list(jobs)
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            runs[name].append(run_once(jobs[name]))
    return {name: summarize(found) for name, found in runs.items()}


def commands(source: str) -> dict[str, list[str]]:
    """The two commands measured on one source."""
    return {"threads": ["threads", source], "timeline": ["timeline", TIMELINE_THREAD, source]}


def sqlite_plan(path: Path) -> str:
    sql, params = thread_sql(ThreadQuery(), postgres=False)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(f"EXPLAIN QUERY PLAN {sql}", [*params, 51, 0]).fetchall()
    finally:
        conn.close()
    return " | ".join(r[3] for r in rows)


def postgres_plan(url: str) -> str:
    import psycopg

    sql, params = thread_sql(ThreadQuery(), postgres=True)
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"EXPLAIN {sql}", [*params, 51, 0]).fetchall()
    nodes = [re.sub(r"\s*\(cost=[^)]*\)", "", str(r[0])).strip(" ->") for r in rows]
    return " | ".join(n for n in nodes if not n.startswith(("Sort Key", "Group Key")))


def postgres_cell(repeats: int) -> dict[str, Any]:
    try:
        server_cm = helpers.running_postgres()
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(server_cm)
            url = stack.enter_context(helpers.fresh_database(server.url))
            log(f"[scale] PostgreSQL: loading {POSTGRES_SIZE:,} threads ...")
            started = time.perf_counter()
            scale_db.make_postgres_db(url, POSTGRES_SIZE)
            loaded = time.perf_counter() - started
            log("[scale] PostgreSQL: threads, timeline ...")
            return {
                "threads_in_db": POSTGRES_SIZE + len(scale_db.TEMPLATES),
                "load_s": loaded,
                "plan": postgres_plan(url),
                **interleaved(commands(url), repeats),
            }
    except (helpers.PostgresUnavailable, RuntimeError, OSError) as exc:
        return {"unavailable": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}


def bench_inspector_scale(label: str) -> dict[str, Any]:
    """Every cell; `label` is "full" or "quick". JSON-serializable."""
    repeats = REPEATS[label]
    result: dict[str, Any] = {"repeats": repeats, "sqlite": {}, "postgres": None}
    files = {threads: sqlite_db(threads) for threads in SQLITE_SIZES}
    jobs = {"startup": ["schema", "threads"]}  # the interpreter and the imports alone
    for threads, (path, _) in files.items():
        for command, args in commands(f"sqlite:///{path}").items():
            jobs[f"{threads}/{command}"] = args
    log(f"[scale] SQLite {', '.join(f'{n:,}' for n in files)} threads: threads, timeline ...")
    measured = interleaved(jobs, repeats)
    result["startup"] = measured["startup"]
    for threads, (path, made_s) in files.items():
        result["sqlite"][str(threads)] = {
            "threads_in_db": threads + len(scale_db.TEMPLATES),
            "file_mb": path.stat().st_size / 1e6,
            "made_s": made_s,
            "plan": sqlite_plan(path),
            **{command: measured[f"{threads}/{command}"] for command in ("threads", "timeline")},
        }
    result["postgres"] = postgres_cell(repeats)
    return result


def targets(result: dict[str, Any]) -> list[tuple[str, float | None, float]]:
    """(name, value, limit): value <= limit passes; None (not measured, or failed) fails."""
    out: list[tuple[str, float | None, float]] = []
    cells = [(f"SQLite {int(n):,}", c) for n, c in result["sqlite"].items() if int(n) >= 100_000]
    pg = result["postgres"] or {}
    cells.append((f"PostgreSQL {POSTGRES_SIZE:,}", None if "unavailable" in pg else pg))
    for name, cell in cells:
        page = cell["threads"] if cell and cell["threads"]["exit"] == 0 else None
        out.append(
            (
                f"inspector: `threads` first page, {name} threads (s)",
                page["wall_s"] if page else None,
                FIRST_PAGE_S,
            )
        )
        out.append(
            (
                f"inspector: `threads` first page, {name} threads, peak RSS (MB)",
                page["peak_rss_mb"] if page else None,
                FIRST_PAGE_MB,
            )
        )
    small, large = (result["sqlite"].get(str(n)) for n in SQLITE_SIZES)
    ok = small and large and small["timeline"]["exit"] == large["timeline"]["exit"] == 0
    out.append(
        (
            "inspector: `timeline` of one thread, SQLite 100,000 / 10,000 threads (CPU time ratio)",
            large["timeline"]["cpu_s"] / small["timeline"]["cpu_s"] if ok else None,
            TIMELINE_RATIO,
        )
    )
    return out


def report_lines(result: dict[str, Any]) -> list[str]:
    start = result["startup"]
    lines = [
        "inspector on many threads: each command its own process; median of "
        f"{result['repeats']} rounds: wall (and beyond startup), CPU; peak RSS. Startup alone "
        f"(`schema`): {start['wall_s']:.2f} s wall, {start['cpu_s']:.2f} s CPU, "
        f"{start['peak_rss_mb']:.0f} MB",
        f"  {'source':16} {'threads':>8}   {'threads (1st page of 50)':>36}   "
        f"{'timeline (1 thread)':>36}",
    ]
    rows = [(f"SQLite {c['file_mb'] / 1e3:.1f} GB", c) for c in result["sqlite"].values()]
    pg = result["postgres"] or {}
    if "unavailable" in pg:
        lines.append(f"  PostgreSQL: not measured ({pg['unavailable']})")
    elif pg:
        rows.append(("PostgreSQL", pg))
    for name, cell in rows:
        shown = []
        for command in ("threads", "timeline"):
            m = cell[command]
            shown.append(
                f"{m['wall_s']:5.2f} s (+{m['wall_s'] - start['wall_s']:4.2f}) "
                f"cpu {m['cpu_s']:4.2f} s {m['peak_rss_mb']:4.0f} MB"
            )
        errors = cell["threads"]["errors"] + cell["timeline"]["errors"]
        lines.append(
            f"  {name:16} {cell['threads_in_db']:8,d}   {shown[0]:>36}   {shown[1]:>36}"
            + (f"  (failed: {'; '.join(errors)})" if errors else "")
        )
    for name, cell in rows:
        lines.append(f"  plan ({name}): {cell['plan']}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each command")
    args = parser.parse_args()
    result = bench_inspector_scale("quick" if args.quick else "full")
    print("\n".join(report_lines(result)))
    for name, value, limit in targets(result):
        mark = "PASS" if value is not None and value <= limit else "*** FAIL ***"
        shown = "n/a" if value is None else f"{value:.3f}"
        print(f"  {mark:14} {shown:>8} <= {limit:<6} {name}")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
