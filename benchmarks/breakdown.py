"""Where the library's added CPU goes, part by part: the floors behind the matrix's targets.

    .venv/bin/python benchmarks/breakdown.py [--quick] [--json out.json]
    .venv/bin/python benchmarks/run.py --only breakdown [--quick]

One matrix shape (``sequential`` by default: `create_react_agent`, three tool turns, InMemorySaver)
in one process, interleaved and rotating like the matrix, process CPU of every thread around
each invoke and a flush of its spans. Variants: ``bare``; ``ours`` (the library, as shipped);
``ours`` with one part switched off on its own instance (each a separate saver); and ``floor``
(`_harness.SpanOnlySaver`: one span and one duration measurement per call, the SDK's share).
A part's cost is ``ours - ours without it``: the median over rounds of the difference within
each round (the machine's speed drifts between rounds), with a 95% bootstrap CI, per invoke and
per checkpoint. Run with every trace
kept and with every trace dropped (`ALWAYS_OFF`), as in the matrix.

The parts are switched off by replacing private methods and instruments of the wrapper's own
objects (`observer._hasher`, `observer._puts`, `observer.telemetry`): a measuring tool, not a
configuration. "state hashing" switches off the digest and what needs it (sizes, events, tool
activity, lineage, stored hashes), so it is the upper bound of what hashing costs.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "apps"))

import _harness as h
import matrix
from opentelemetry.metrics import NoOpCounter, NoOpHistogram

from langgraph.checkpoint.otel import instrument


def _no_metrics(saver: Any) -> None:
    tel = saver.observer.telemetry
    for name in ("duration", "checkpoint_size", "channel_size", "thread_checkpoints",
                 "thread_written"):  # fmt: skip
        setattr(tel, name, NoOpHistogram(name))
    for name in ("resumes", "task_outcomes", "divergences", "schema_mismatches"):
        setattr(tel, name, NoOpCounter(name))


def _no_hashing(saver: Any) -> None:
    saver.observer._hasher.digest_state = lambda *args, **kwargs: None


def _no_events(saver: Any) -> None:
    puts = saver.observer._puts
    gather = puts.gather

    def without_events(*args: Any, **kwargs: Any) -> Any:
        facts = gather(*args, **{**kwargs, "recording": False})
        return dataclasses.replace(facts, requested_tools=())

    puts.gather = without_events


def _no_tool_activity(saver: Any) -> None:
    saver.observer._puts._added_tool_activity = lambda *args, **kwargs: None
    saver.observer._states.step_tools = lambda *args, **kwargs: (None, None)


def _no_nodes(saver: Any) -> None:
    saver.observer._puts._nodes_applied = lambda *args, **kwargs: ([], None)


def _no_put_report(saver: Any) -> None:
    saver.observer._describe_put = lambda *args, **kwargs: None


PARTS: dict[str, tuple[str, Callable[[Any], None]]] = {
    "no_metrics": ("all metric measurements (SDK calls included)", _no_metrics),
    "no_hashing": ("state hashing and what needs it (upper bound)", _no_hashing),
    "no_events": ("channel and tool-call span events", _no_events),
    "no_tools": ("tool activity (keys of requested and answered calls)", _no_tool_activity),
    "no_nodes": ("nodes applied per checkpoint", _no_nodes),
    "no_put_report": ("everything a put reports beyond its span (upper bound)", _no_put_report),
}


def measure(shape: str, dropped: bool, rounds: int, warmup: int = 5) -> dict[str, Any]:
    variants = ["bare", "ours", *PARTS, matrix.FLOOR]
    tels = {v: matrix.telemetry("ours_dropped" if dropped else "ours") for v in variants}
    inner = {v: matrix.CountingInMemorySaver() for v in variants}
    work: dict[str, matrix.Workload] = {}
    for v in variants:
        saver: Any = inner[v]
        if v == matrix.FLOOR:
            saver = h.SpanOnlySaver(saver, tels[v], write_spans=False)  # type: ignore[arg-type]
        elif v != "bare":
            saver = instrument(
                saver,
                tracer_provider=tels[v].tracer_provider,
                meter_provider=tels[v].meter_provider,
            )
            if v in PARTS:
                PARTS[v][1](saver)
        work[v] = matrix.Workload(shape, saver)
    cpu: dict[str, list[float]] = {v: [] for v in variants}
    puts: list[int] = []
    try:
        for r in range(warmup + rounds):
            if r == warmup:
                gc.collect()
            k = r % len(variants)
            for v in variants[k:] + variants[:k]:
                w = work[v]
                w.prepare()
                invoke = w.call()
                tels[v].flush()
                before = inner[v].puts
                c0 = time.process_time_ns()
                invoke()
                tels[v].flush()
                c1 = time.process_time_ns()
                if r >= warmup:
                    cpu[v].append((c1 - c0) / 1e3)
                    if v == "bare":
                        puts.append(inner[v].puts - before)
            for tel in tels.values():
                tel.drop_metrics()
    finally:
        for tel in tels.values():
            tel.shutdown()
    bare = statistics.median(cpu["bare"])
    checkpoints = statistics.fmean(puts)
    rows = {}
    for v in variants:
        med = statistics.median(cpu[v])
        row: dict[str, Any] = {"cpu_us": med, "added_us": med - bare, "ratio": med / bare}
        if v in PARTS:
            # paired by round (the machine's speed drifts between rounds, not within one)
            saved = [o - x for o, x in zip(cpu["ours"], cpu[v], strict=True)]
            lo, hi = _median_ci(saved)
            part = statistics.median(saved)
            row.update(
                part_us=part,
                part_us_ci95=[lo, hi],
                part_per_checkpoint_us=part / checkpoints,
            )
        rows[v] = row
    return {
        "shape": shape,
        "mode": "dropped" if dropped else "sampled",
        "rounds": rounds,
        "checkpoints_per_invoke": checkpoints,
        "variants": rows,
    }


def _median_ci(values: list[float], n_boot: int = 1000) -> tuple[float, float]:
    """95% bootstrap CI of the median."""
    rng = random.Random(1)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n_boot))
    return meds[int(0.025 * n_boot)], meds[int(0.975 * n_boot) - 1]


def bench_breakdown(quick: bool = False, shape: str = "sequential") -> dict[str, Any]:
    rounds = 40 if quick else 150
    started = time.perf_counter()
    runs = [measure(shape, dropped, rounds) for dropped in (False, True)]
    return {"runs": runs, "elapsed_s": time.perf_counter() - started}


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"Where the added CPU goes ({result['elapsed_s']:.0f} s): ours - ours without a part"]
    for run in result["runs"]:
        rows = run["variants"]
        lines.append(
            f"  {matrix.SHAPES[run['shape']]}, InMemory, traces {run['mode']} ({run['rounds']} "
            f"rounds, {run['checkpoints_per_invoke']:.1f} checkpoints/invoke): bare "
            f"{rows['bare']['cpu_us']:.0f} us, ours +{rows['ours']['added_us']:.0f} us "
            f"({rows['ours']['ratio']:.2f}x), floor +{rows[matrix.FLOOR]['added_us']:.0f} us "
            f"({rows[matrix.FLOOR]['ratio']:.2f}x)"
        )
        for part, (what, _) in PARTS.items():
            row = rows[part]
            lo, hi = row["part_us_ci95"]
            lines.append(
                f"    {what:56} {row['part_us']:6.0f} us/invoke [{lo:.0f},{hi:.0f}] "
                f"{row['part_per_checkpoint_us']:5.0f} us/checkpoint"
            )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 rounds instead of 150")
    parser.add_argument("--shape", default="sequential", choices=sorted(matrix.SHAPES))
    parser.add_argument("--json", help="also write the result as JSON to this file")
    args = parser.parse_args()
    result = bench_breakdown(args.quick, args.shape)
    print("\n".join(report_lines(result)))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
