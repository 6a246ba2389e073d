"""The context cliff's cost: counting the message history (messages, estimated tokens, window
share) on every put that changes it, against the same instrumentation with the counts off.

    .venv/bin/python benchmarks/message_history.py            # full run (~1 min on 2 cores)
    .venv/bin/python benchmarks/message_history.py --quick    # ~15 s, fewer rounds
    .venv/bin/python benchmarks/run.py --only messages

Method
------
A messages-heavy agent turn: `_harness.linear_graph(10)` (ten nodes, each appending one
~200-character `AIMessage`) invoked with one `HumanMessage` on ONE thread that keeps growing,
as a long conversation does; the thread is pre-filled with H messages (100 and 1,000) through
each variant's own saver, then one unmeasured turn. Three variants, each with its own
`TimedInMemorySaver` (an `InMemorySaver` timing its own `put`) and thread:

* **bare**: the timed saver alone;
* **counts on**: `instrument(timed, context_window=128000)` (the default `approximate` counter);
* **counts off**: `instrument(timed, message_history=False)`: everything else identical.

Rounds run every variant's turn once, the order rotating every round. Per put that writes
`messages`, the wrapper's added CPU is the thread CPU of the put as LangGraph calls it
(`_harness.OuterPutTimer`) minus that of the inner `put` (`durability="sync"`: the put runs
in the main thread, alone). Reported:

* **added CPU per put, on - off** (median of each, split into the run's first put, which counts
  the loaded history once, and the later puts, which count only the message they add): the
  cost of the counts;
* **invoke wall time ratios**: on / off (the target figure: the counts' share of a turn) and
  on / bare, ratio of medians over the interleaved rounds with a 95% bootstrap CI.

Target: counts on / off invoke time <= 1.03 at both history sizes.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.otel import instrument

SIZES = (100, 1000)
ROUNDS = {"full": 40, "quick": 10}
VARIANTS = ("bare", "on", "off")
WINDOW = 128_000
TARGET = 1.03


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Variant:
    """One variant's saver, graph, thread and timers."""

    def __init__(self, name: str, tel: h.Telemetry, prefill: int) -> None:
        self.name = name
        self.inner = h.TimedInMemorySaver()
        saver: Any = self.inner
        self.outer: h.OuterPutTimer | None = None
        if name != "bare":
            options: dict[str, Any] = (
                {"context_window": WINDOW} if name == "on" else {"message_history": False}
            )
            saver = instrument(
                self.inner,
                tracer_provider=tel.tracer_provider,
                meter_provider=tel.meter_provider,
                **options,
            )
            self.outer = h.OuterPutTimer(saver)
        self.graph = h.linear_graph(10).compile(checkpointer=saver)
        self.config = {"configurable": {"thread_id": f"{name}-{prefill}"}}
        self.turns = 0
        self.invoke({"messages": h.history_messages(prefill, f"{name}-pre")})
        self.invoke()  # one unmeasured turn
        self.wall: list[float] = []
        self.first_added: list[int] = []
        self.later_added: list[int] = []

    def invoke(self, payload: dict[str, Any] | None = None) -> float:
        self.turns += 1
        message = HumanMessage(f"turn {self.turns}: " + h.TEXT, id=f"{self.name}-h{self.turns}")
        before_inner = len(self.inner.put_cpu)
        before_outer = len(self.outer.put_cpu) if self.outer else 0
        gc.disable()
        t0 = time.perf_counter()
        self.graph.invoke(payload or {"messages": [message]}, self.config, durability="sync")
        elapsed = time.perf_counter() - t0
        gc.enable()
        if self.outer is not None:
            inner = self.inner.put_cpu[before_inner:]
            outer = self.outer.put_cpu[before_outer:]
            added = [o - i for (wrote, o), (_, i) in zip(outer, inner, strict=True) if wrote]
            self._last_added = added
        return elapsed

    def measured_turn(self) -> None:
        self.wall.append(self.invoke())
        if self.outer is not None and self._last_added:
            self.first_added.append(self._last_added[0])
            self.later_added.extend(self._last_added[1:])


def bench_size(prefill: int, rounds: int) -> dict[str, Any]:
    tel = h.Telemetry("noop")
    try:
        variants = [Variant(name, tel, prefill) for name in VARIANTS]
        for r in range(rounds):
            order = variants[r % 3 :] + variants[: r % 3]
            for variant in order:
                variant.measured_turn()
            tel.drop_exported()
            gc.collect()
        by = {v.name: v for v in variants}
        out: dict[str, Any] = {"prefill": prefill, "rounds": rounds}
        out["history_at_end"] = prefill + 11 * (rounds + 2)
        for name in ("on", "off"):
            v = by[name]
            out[f"first_put_added_us_{name}"] = statistics.median(v.first_added) / 1000
            out[f"later_put_added_us_{name}"] = statistics.median(v.later_added) / 1000
        out["first_put_counts_us"] = out["first_put_added_us_on"] - out["first_put_added_us_off"]
        out["later_put_counts_us"] = out["later_put_added_us_on"] - out["later_put_added_us_off"]
        for num, den in (("on", "off"), ("on", "bare"), ("off", "bare")):
            a, b = by[num].wall, by[den].wall
            out[f"ratio_{num}_{den}"] = statistics.median(a) / statistics.median(b)
            out[f"ratio_{num}_{den}_ci95"] = h.bootstrap_ratio_ci(a, b)
        out["invoke_ms"] = {v.name: statistics.median(v.wall) * 1000 for v in variants}
        return out
    finally:
        tel.shutdown()


def bench_message_history(label: str) -> dict[str, Any]:
    """Every size's figures (see the module docstring)."""
    results = []
    for size in SIZES:
        log(f"[messages] history of {size} messages, {ROUNDS[label]} rounds ...")
        results.append(bench_size(size, ROUNDS[label]))
    return {"sizes": results, "target_on_off": TARGET}


def targets(result: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, value, limit) of each size's on / off invoke ratio."""
    return [
        (
            f"message counts, history of {r['prefill']}: counts on / off invoke",
            r["ratio_on_off"],
            result["target_on_off"],
        )
        for r in result["sizes"]
    ]


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        "Message history counts (context cliff): a 10-node turn on one growing thread",
        f"{'history':>8} {'first put: counts':>18} {'later puts: counts':>19} "
        f"{'on/off invoke [95% CI]':>28} {'on/bare':>8}",
    ]
    for r in result["sizes"]:
        lo, hi = r["ratio_on_off_ci95"]
        lines.append(
            f"{r['prefill']:>8} {r['first_put_counts_us']:>15.1f} us "
            f"{r['later_put_counts_us']:>16.1f} us "
            f"{r['ratio_on_off']:>10.3f} [{lo:.3f}, {hi:.3f}] {r['ratio_on_bare']:>8.3f}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args()
    result = bench_message_history("quick" if args.quick else "full")
    if args.json:
        print(json.dumps(result, indent=2))
    print("\n".join(report_lines(result)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
