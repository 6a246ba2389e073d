"""`langgraph-otel retention` on many threads: the read-only plan of every thread of the
inspector's scale databases (`inspector_scale`: copies of real react-agent threads, 7 to 11
checkpoints each), SQLite at 10,000 and 100,000 threads and PostgreSQL at 10,000.

Each run is the console script's `main` in its own process (`inspector_scale.run_once`): wall
time, CPU time and the process's peak RSS (VmHWM). The policy is `--keep-last 5`, which removes
something from every thread, so every thread is planned and summarised. Targets: 100,000
threads planned under 120 s, and peak RSS under 250 MB and within 1.5x of the 10,000-thread
run's (memory bounded by the page, not by the number of threads).

The apply cell: `retention --keep-last 5 --apply --archive A` on a copy of the 10,000-thread
SQLite file (every thread changed, 4 to 6 checkpoints removed from each), one run (100,000
threads took 4.5 minutes here, plus a 4.8 GB copy): wall time per thread changed (the
process's start and the scan included) and peak RSS, which streaming keeps off the number of
threads (the plans are applied as they are read; one small outcome per thread is kept).
Target: peak RSS under 250 MB.

    .venv/bin/python benchmarks/retention.py [--quick] [--no-apply]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
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
APPLY_SIZE = 10_000
APPLY_MB = 250.0


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


def apply_cell(threads: int = APPLY_SIZE) -> dict[str, Any]:
    """One `retention --apply` on a copy of the cached SQLite file of `threads` threads (the
    apply changes the file): wall and CPU time, peak RSS, threads changed (the archive's)."""
    source, _ = inspector_scale.sqlite_db(threads)
    inspector_scale.CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=inspector_scale.CACHE, prefix="apply-") as tmp:
        copy, archive = Path(tmp) / "apply.sqlite", Path(tmp) / "apply.archive"
        shutil.copyfile(source, copy)
        log(f"[retention] SQLite {threads:,} threads: retention --apply ...")
        apply_args = ["--apply", "--archive", str(archive), "--json"]
        run = inspector_scale.run_once(["retention", f"sqlite:///{copy}", *POLICY, *apply_args])
        changed: set[str] = set()
        if archive.exists():
            with archive.open() as lines:
                changed = {json.loads(line)["thread_id"] for line in lines if line.strip()}
        return {
            "threads_in_db": threads + len(scale_db.TEMPLATES),
            "threads_changed": len(changed),
            "archive_mb": archive.stat().st_size / 1e6 if archive.exists() else 0.0,
            "ms_per_thread": run["wall_s"] * 1e3 / max(len(changed), 1),
            **run,
        }


def bench_retention(label: str, postgres: bool = True, apply: bool = True) -> dict[str, Any]:
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
    result["apply"] = apply_cell() if apply else None
    return result


def targets(result: dict[str, Any]) -> list[tuple[str, float | None, float]]:
    """(name, value, limit): value <= limit passes; None (not measured, or failed) fails.
    The exit code of a plan that removes something is 1."""
    small, large = (result["sqlite"].get(str(n)) for n in SQLITE_SIZES)
    ok = bool(small and large and small["exit"] == large["exit"] == 1)
    applied = result.get("apply")
    applied_ok = bool(
        applied and applied["exit"] == 0 and applied["threads_changed"] == applied["threads_in_db"]
    )
    apply_target = [
        (
            f"retention --apply of {APPLY_SIZE:,} SQLite threads, peak RSS (MB)",
            applied["peak_rss_mb"] if applied and applied_ok else None,
            APPLY_MB,
        )
    ]
    return apply_target * bool(applied) + [
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
    applied = result.get("apply")
    if applied:
        lines.append(
            f"  --apply, SQLite  {applied['threads_in_db']:8,d} threads: "
            f"{applied['wall_s']:6.2f} s wall, cpu {applied['cpu_s']:6.2f} s, "
            f"{applied['peak_rss_mb']:4.0f} MB, {applied['threads_changed']:,} threads changed, "
            f"{applied['ms_per_thread']:.1f} ms a thread, archive {applied['archive_mb']:.0f} MB"
            + (
                f"  (exit {applied['exit']}: {'; '.join(applied['stderr'])})"
                if applied["exit"]
                else ""
            )
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--no-apply", action="store_true", help="the read-only plans only")
    args = parser.parse_args()
    result = bench_retention(
        "quick" if args.quick else "full", not args.no_postgres, not args.no_apply
    )
    print("\n".join(report_lines(result)))
    for name, value, limit in targets(result):
        mark = "PASS" if value is not None and value <= limit else "*** FAIL ***"
        shown = "n/a" if value is None else f"{value:.3f}"
        print(f"  {mark:14} {shown:>8} <= {limit:<6} {name}")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
