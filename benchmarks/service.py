"""The support-desk service under load (tests/apps/service_app.py): throughput, latency and CPU per
run of the instrumented service against its bare twin and against the same service with the
official OpenTelemetry GenAI LangChain instrumentation instead.

Each variant is its own uvicorn subprocess on its own PostgreSQL database, driven alone (one
variant at a time, so they do not share the 2 cores) by the same plan: 320 conversations, 64
at once, 4 turns each (two refunds, each stopped for approval), 8 % of requests cancelled by
the client mid-run; rounds interleave the variants (B O G, O G B, G B O, ...). CPU per run is
the service process's user + system CPU over the round divided by the runs it made; latency is
per answered request; throughput is answered requests per second of wall time.

    .venv/bin/python benchmarks/service.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "apps"))

import helpers
from service_load import LoadPlan, Service, drive, percentile, stats_of

VARIANTS = ("bare", "ours", "genai")
PLANS = {
    "full": (LoadPlan(threads=320, turns=4, concurrency=64, cancel_rate=0.08, kill_after=None), 2),
    "quick": (LoadPlan(threads=96, turns=4, concurrency=32, cancel_rate=0.08, kill_after=None), 1),
}


async def _round(service: Service, plan: LoadPlan) -> dict[str, float]:
    await service.start()
    try:
        before = await stats_of(service)
        seen = await drive(service, plan)
        after = await stats_of(service)
    finally:
        service.stop()
    runs = after["runs"] - before["runs"]
    return {
        "runs": runs,
        "requests": seen.requests,
        "cancelled": seen.cancelled,
        "throughput": seen.requests / seen.wall_seconds,
        "p50_ms": 1000 * percentile(seen.latencies, 0.50),
        "p99_ms": 1000 * percentile(seen.latencies, 0.99),
        "cpu_ms_per_run": 1000 * (after["cpu_seconds"] - before["cpu_seconds"]) / runs,
    }


def bench_service(label: str) -> dict[str, Any]:
    """Every variant, `rounds` interleaved rounds each; JSON-serializable."""
    plan, rounds = PLANS[label]
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    with helpers.running_postgres() as server, tempfile.TemporaryDirectory() as tmp:
        for index in range(rounds):
            order = VARIANTS[index % 3 :] + VARIANTS[: index % 3]
            for variant in order:
                with helpers.fresh_database(server.url) as url:
                    service = Service(variant, url, Path(tmp))
                    rows[variant].append(asyncio.run(_round(service, plan)))
    medians = {
        v: {k: statistics.median(r[k] for r in rows[v]) for k in rows[v][0]} for v in VARIANTS
    }
    ratios = {
        v: {
            "throughput": medians[v]["throughput"] / medians["bare"]["throughput"],
            "p50": medians[v]["p50_ms"] / medians["bare"]["p50_ms"],
            "p99": medians[v]["p99_ms"] / medians["bare"]["p99_ms"],
            "cpu_per_run": medians[v]["cpu_ms_per_run"] / medians["bare"]["cpu_ms_per_run"],
        }
        for v in VARIANTS
        if v != "bare"
    }
    return {
        "plan": plan.__dict__,
        "rounds": rounds,
        "rows": rows,
        "medians": medians,
        "ratios": ratios,
    }


def report_lines(result: dict[str, Any]) -> list[str]:
    plan = result["plan"]
    lines = [
        f"service under load: {plan['threads']} conversations x {plan['turns']} turns, "
        f"{plan['concurrency']} at once, {plan['cancel_rate']:.0%} cancelled by the client; "
        f"medians of {result['rounds']} interleaved round(s)"
    ]
    titles = {"bare": "bare", "ours": "instrumented", "genai": "official GenAI instr."}
    for variant, m in result["medians"].items():
        ratio = result["ratios"].get(variant)
        suffix = (
            f"   x bare: throughput {ratio['throughput']:.2f}, p50 {ratio['p50']:.2f}, "
            f"p99 {ratio['p99']:.2f}, CPU/run {ratio['cpu_per_run']:.2f}"
            if ratio
            else ""
        )
        lines.append(
            f"  {titles[variant]:22s} {m['throughput']:6.1f} req/s  p50 {m['p50_ms']:6.0f} ms  "
            f"p99 {m['p99_ms']:6.0f} ms  CPU {m['cpu_ms_per_run']:5.1f} ms/run{suffix}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    result = bench_service("quick" if args.quick else "full")
    print("\n".join(report_lines(result)))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
