"""`langgraph-otel retention` on many threads: the read-only plan of every thread of the
inspector's scale databases (`inspector_scale`: copies of real react-agent threads, 7 to 11
checkpoints each), SQLite at 10,000 and 100,000 threads and PostgreSQL at 10,000.

Each run is the console script's `main` in its own process (`inspector_scale.run_once`): wall
time, CPU time and the process's peak RSS (VmHWM). The policy is `--keep-last 5`, which removes
something from every thread, so every thread is planned and summarised. Targets: 100,000
threads planned under 120 s, and peak RSS under 250 MB and within 1.5x of the 10,000-thread
run's (memory bounded by the page, not by the number of threads).

    .venv/bin/python benchmarks/retention.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import inspector_scale
from inspector_scale import helpers, interleaved, log, scale_db

SQLITE_SIZES = (10_000, 100_000)
POSTGRES_SIZE = 10_000
PLAN_S = 120.0
PLAN_MB = 250.0
MEMORY_RATIO = 1.5
POLICY = ["--keep-last", "5"]


def command(source: str) -> list[str]:
    return ["retention", source, *POLICY, "--json"]


def postgres_cell(repeats: int) -> dict[str, Any]:
    try:
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(helpers.running_postgres())
            url = stack.enter_context(helpers.fresh_database(server.url))
            log(f"[retention] PostgreSQL: loading {POSTGRES_SIZE:,} threads ...")
            started = time.perf_counter()
            scale_db.make_postgres_db(url, POSTGRES_SIZE)
            loaded = time.perf_counter() - started
            log("[retention] PostgreSQL: retention ...")
            return {
                "threads_in_db": POSTGRES_SIZE + len(scale_db.TEMPLATES),
                "load_s": loaded,
                **interleaved({"retention": command(url)}, repeats)["retention"],
            }
    except (helpers.PostgresUnavailable, RuntimeError, OSError) as exc:
        return {"unavailable": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}


def bench_retention(label: str, postgres: bool = True) -> dict[str, Any]:
    """Every cell; `label` is "full" or "quick". JSON-serializable."""
    repeats = {"full": 3, "quick": 1}[label]
    files = {threads: inspector_scale.sqlite_db(threads)[0] for threads in SQLITE_SIZES}
    log(f"[retention] SQLite {', '.join(f'{n:,}' for n in files)} threads ...")
    jobs = {str(n): command(f"sqlite:///{path}") for n, path in files.items()}
    measured = interleaved(jobs, repeats)
    result: dict[str, Any] = {"repeats": repeats, "policy": " ".join(POLICY), "sqlite": {}}
    for threads, path in files.items():
        result["sqlite"][str(threads)] = {
            "threads_in_db": threads + len(scale_db.TEMPLATES),
            "file_mb": path.stat().st_size / 1e6,
            **measured[str(threads)],
        }
    result["postgres"] = postgres_cell(repeats) if postgres else None
    return result


def targets(result: dict[str, Any]) -> list[tuple[str, float | None, float]]:
    """(name, value, limit): value <= limit passes; None (not measured, or failed) fails.
    The exit code of a plan that removes something is 1."""
    small, large = (result["sqlite"].get(str(n)) for n in SQLITE_SIZES)
    ok = bool(small and large and small["exit"] == large["exit"] == 1)
    return [
        ("retention: plan of 100,000 SQLite threads (s)", large["wall_s"] if ok else None, PLAN_S),
        (
            "retention: plan of 100,000 SQLite threads, peak RSS (MB)",
            large["peak_rss_mb"] if ok else None,
            PLAN_MB,
        ),
        (
            "retention: peak RSS, 100,000 / 10,000 SQLite threads",
            large["peak_rss_mb"] / small["peak_rss_mb"] if ok else None,
            MEMORY_RATIO,
        ),
    ]


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        f"retention ({result['policy']}, read only) on many threads: each run its own process; "
        f"median of {result['repeats']} rounds: wall, CPU; peak RSS"
    ]
    rows = [(f"SQLite {c['file_mb'] / 1e3:.1f} GB", c) for c in result["sqlite"].values()]
    pg = result.get("postgres") or {}
    if "unavailable" in pg:
        lines.append(f"  PostgreSQL: not measured ({pg['unavailable']})")
    elif pg:
        rows.append(("PostgreSQL", pg))
    for name, cell in rows:
        lines.append(
            f"  {name:16} {cell['threads_in_db']:8,d} threads: {cell['wall_s']:6.2f} s wall, "
            f"cpu {cell['cpu_s']:6.2f} s, {cell['peak_rss_mb']:4.0f} MB, "
            f"{cell['threads_in_db'] / max(cell['wall_s'], 1e-9):,.0f} threads/s"
            + (f"  (failed: {'; '.join(cell['errors'])})" if cell["errors"] else "")
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    result = bench_retention("quick" if args.quick else "full", not args.no_postgres)
    print("\n".join(report_lines(result)))
    for name, value, limit in targets(result):
        mark = "PASS" if value is not None and value <= limit else "*** FAIL ***"
        shown = "n/a" if value is None else f"{value:.3f}"
        print(f"  {mark:14} {shown:>8} <= {limit:<6} {name}")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
