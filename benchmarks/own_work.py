"""The library's own CPU per `put`, beyond the OpenTelemetry SDK calls it makes.

    .venv/bin/python benchmarks/own_work.py            # full run (~30 s on 2 cores)
    .venv/bin/python benchmarks/own_work.py --quick    # ~8 s, noisier

What is measured
----------------
For each `put` of the instrumented saver, with all CPU as `time.thread_time_ns()` of the
thread that runs the put (LangGraph runs puts on an executor thread)::

    own = outer - inner - sdk

* outer: the wrapper's `put` as LangGraph calls it (an instance-level shim, like
  `_harness.OuterPutTimer`: `put` is not frame-inspected by the library, so shimming it does
  not change what the library does);
* inner: the inner saver's own `put` (`_harness.TimedInMemorySaver`, a subclass timing itself);
* sdk: the CPU spent inside OpenTelemetry SDK calls during that put, measured by wrapping, in
  this process only and restored afterwards, the SDK entry points the library calls
  (`SDK_ENTRY_POINTS`: `Tracer.start_span`; `Span.set_attributes`, `set_attribute`,
  `add_event`, `add_link`, `set_status`, `update_name`, `end`; the synchronous metric
  instruments' `record`/`add`/`set`; `context.attach`/`detach`; `trace.set_span_in_context`)
  with per-thread CPU accumulators. An SDK call made inside another wrapped SDK call is not
  counted again (a per-thread depth guard).

Corrections, both measured in this process before the turns:

* Timer overhead of one wrapped call: an empty function wrapped the same way is called in a
  tight loop. The part of its cost that falls *inside* the accumulator's window is taken off
  the SDK figure; the part *outside* the window (still inside `outer`) is taken off `own`,
  once per wrapped call the put made.
* Shim overhead: the same outer/inner shims on a bare `TimedInMemorySaver` (no library in
  between) give `outer - inner` of nothing; its median is taken off `own`.

Cheap API calls the library also makes (`Span.is_recording`, `get_span_context`,
`trace.get_current_span`, `context.get_current`, `is_instrumentation_enabled`) are not wrapped:
each is well under a microsecond, less than the wrapper's own timer, so they count as own.

Durability `sync` is used: the main thread then waits for each step's put, so the put's
thread is not competing for the GIL with the next step (CPU time excludes GIL waits anyway;
`sync` mostly keeps caches and the allocator quieter). Exported spans go through a real
`BatchSpanProcessor` into a no-op exporter (`_harness.Telemetry("noop")`), metrics into an
`InMemoryMetricReader`; the export thread's CPU is not the put's and is not counted.

Two figures (targets in `TARGETS`):

* `per_put_us`: median own CPU of the put that appends one message to a ~10 KB `messages`
  history (1-node graph, `_harness.linear_graph(1)`). Histories are sized like `run.py`'s
  `bench_history` (by `serde.dumps_typed`). Appending grows the history, so the turns are run
  in blocks: each block pre-fills a new thread through the instrumented saver, runs one
  warm-up turn and then a few measured turns, so every measured put sees 10-12 KB.
* `per_extra_channel_us`: a 1-node graph whose node writes K small int channels `c0..cK-1`
  (a new value each turn), at K=1 and K=50; slope = (median own(50) - median own(1)) / 49.

All four graphs (history, K=1, K=50, control) run one turn each per round, in an order that
rotates every round, so drift hits all of them alike.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.metrics._internal import instrument as sdk_instrument

TARGETS = {"per_put_us": 100, "per_extra_channel_us": 20}
HISTORY_BYTES = 10 * 1024
CHANNEL_COUNTS = (1, 50)
DURABILITY: Final[Literal["sync"]] = "sync"

SDK_ENTRY_POINTS: tuple[tuple[Any, str], ...] = (
    (sdk_trace.Tracer, "start_span"),
    *(
        (sdk_trace.Span, name)
        for name in (
            "set_attributes",
            "set_attribute",
            "add_event",
            "add_link",
            "set_status",
            "update_name",
            "end",
        )
    ),
    (sdk_instrument.Histogram, "record"),
    (sdk_instrument.Counter, "add"),
    (sdk_instrument.UpDownCounter, "add"),
    (sdk_instrument.Gauge, "set"),
    (otel_context, "attach"),
    (otel_context, "detach"),
    (otel_trace, "set_span_in_context"),
)
"""(owner, attribute) of every wrapped SDK entry point; owners are classes or modules."""


@dataclass(frozen=True)
class Plan:
    blocks: int  # new history threads
    turns_per_block: int  # measured turns per history thread (each appends one message)
    label: str


FULL = Plan(blocks=220, turns_per_block=5, label="full")
QUICK = Plan(blocks=50, turns_per_block=5, label="quick")


# --- SDK CPU accounting -------------------------------------------------------------------


class _Tally(threading.local):
    """Per-thread: SDK CPU so far (ns), wrapped calls so far, and the nesting depth."""

    def __init__(self) -> None:
        self.ns = 0
        self.calls = 0
        self.depth = 0


class SdkMeter:
    """Thread-CPU accumulators around the SDK entry points, installed in this process only."""

    def __init__(self) -> None:
        self.tally = _Tally()
        self.inside_ns = 0.0
        """Timer overhead of one wrapped call that the accumulator counts as SDK time."""
        self.outside_ns = 0.0
        """Timer overhead of one wrapped call outside the accumulator's window."""
        self._saved: list[tuple[Any, str, Any, bool]] = []

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        tally = self.tally
        clock = time.thread_time_ns

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if tally.depth:  # called from inside another SDK call: already counted
                return fn(*args, **kwargs)
            tally.depth = 1
            started = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                tally.ns += clock() - started
                tally.calls += 1
                tally.depth = 0

        return timed

    def install(self) -> None:
        for owner, name in SDK_ENTRY_POINTS:
            own = name in vars(owner)
            original = vars(owner)[name] if own else getattr(owner, name)
            self._saved.append((owner, name, original, own))
            setattr(owner, name, self.wrap(original))

    def restore(self) -> None:
        while self._saved:
            owner, name, original, own = self._saved.pop()
            if own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

    @contextmanager
    def installed(self) -> Iterator[SdkMeter]:
        self.install()
        try:
            yield self
        finally:
            self.restore()

    def calibrate(self, calls: int = 20_000, repeats: int = 7) -> None:
        """Measure the timer overhead of one wrapped call on an empty function (median of
        `repeats` loops of `calls`), split into the part the accumulator counts and the rest."""

        def empty(*args: Any, **kwargs: Any) -> None:
            return None

        timed = self.wrap(empty)
        clock = time.thread_time_ns
        tally = self.tally
        inside, total = [], []
        for _ in range(repeats):
            c0 = clock()
            for _ in range(calls):
                empty(1, 2)
            plain = clock() - c0
            ns0 = tally.ns
            c0 = clock()
            for _ in range(calls):
                timed(1, 2)
            wrapped = clock() - c0
            # the empty call itself (plain / calls) would be part of a real SDK call
            inside.append(max(0.0, (tally.ns - ns0 - plain) / calls))
            total.append(max(0.0, (wrapped - plain) / calls))
        self.inside_ns = statistics.median(inside)
        self.outside_ns = max(0.0, statistics.median(total) - self.inside_ns)


# --- timing shims -------------------------------------------------------------------------


class OwnPutTimer:
    """Times `put` on a saver object from the outside, as LangGraph calls it, together with
    the SDK CPU and SDK calls its thread made during it. Installed as an instance attribute."""

    def __init__(self, saver: Any, meter: SdkMeter, channel: str) -> None:
        self.puts: list[tuple[bool, int, int, int]] = []
        """(wrote `channel`, outer CPU ns, SDK CPU ns, SDK calls) per put."""
        bound = saver.put
        tally = meter.tally
        clock = time.thread_time_ns

        def put(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            ns0, calls0 = tally.ns, tally.calls
            c0 = clock()
            result = bound(config, checkpoint, metadata, new_versions)
            cpu = clock() - c0
            self.puts.append((channel in new_versions, cpu, tally.ns - ns0, tally.calls - calls0))
            return result

        saver.put = put


# --- graphs -------------------------------------------------------------------------------


def channels_graph(k: int) -> StateGraph[Any]:
    """START -> n0 -> END; n0 writes `k` int channels `c0..c{k-1}`, new values every turn."""
    fields: dict[str, Any] = {f"c{j}": int for j in range(k)}
    fields["count"] = int
    state = TypedDict(f"Channels{k}State", fields, total=False)  # type: ignore[misc]

    def n0(s: dict[str, Any]) -> dict[str, Any]:
        base = s.get("count", 0) * 1000
        return {f"c{j}": base + j for j in range(k)}

    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("n0", n0)  # type: ignore[call-overload]
    builder.add_edge(START, "n0")
    builder.add_edge("n0", END)
    return builder


class Variant:
    """One compiled graph on a timed saver; its puts that wrote `channel`, paired outer/inner."""

    def __init__(
        self,
        name: str,
        builder: StateGraph[Any],
        channel: str,
        meter: SdkMeter,
        tel: h.Telemetry | None,
    ) -> None:
        self.name = name
        self.channel = channel
        self.inner = h.TimedInMemorySaver(channel)
        saver: Any = self.inner if tel is None else h.instrumented(self.inner, tel)
        self.outer = OwnPutTimer(saver, meter, channel)
        self.graph = builder.compile(checkpointer=saver)
        self.cfg: RunnableConfig = h.fresh_config()  # type: ignore[assignment]
        self.samples: list[tuple[int, int, int, int]] = []
        """(outer - inner CPU, inner CPU, SDK CPU, SDK calls), ns, per measured put."""

    def turn(self, i: int) -> None:
        self.graph.invoke({"count": i}, self.cfg, durability=DURABILITY)

    def reset(self) -> None:
        self.inner.put_cpu.clear()
        self.inner.put_times.clear()
        self.outer.puts.clear()

    def harvest(self) -> None:
        """Move the last turns' puts that wrote the channel into `samples`, then reset."""
        inner = self.inner.put_cpu
        outer = self.outer.puts
        assert len(inner) == len(outer), (self.name, len(inner), len(outer))
        for (wrote, inner_ns), (wrote_o, outer_ns, sdk_ns, calls) in zip(inner, outer, strict=True):
            assert wrote == wrote_o
            if wrote:
                self.samples.append((outer_ns - inner_ns, inner_ns, sdk_ns, calls))
        self.reset()


def history_bytes(v: Variant) -> int:
    """Serialized size of the history thread's `messages` channel now."""
    values = v.graph.get_state(v.cfg).values["messages"]
    return len(v.inner.serde.dumps_typed(values)[1])


def history_size(serde: Any, target_bytes: int) -> int:
    """Messages of `_harness.history_messages` that serialize to about `target_bytes`."""
    per_msg = len(serde.dumps_typed(h.history_messages(200, "probe"))[1]) / 200
    return max(1, round(target_bytes / per_msg))


# --- the benchmark ------------------------------------------------------------------------


def bench_own_work(label: str) -> dict[str, Any]:
    plan = QUICK if label == "quick" else FULL
    started = time.perf_counter()
    meter = SdkMeter()
    tel = h.Telemetry("noop")
    with meter.installed():
        meter.calibrate()
        history = Variant("history", h.linear_graph(1), "messages", meter, tel)
        # the pre-fill (+1 by its own node run) and the warm-up turn (+1) come first, and each
        # measured turn appends one: the middle measured put holds ~HISTORY_BYTES
        n_target = history_size(history.inner.serde, HISTORY_BYTES)
        n_prefill = max(1, n_target - 3 - plan.turns_per_block // 2)
        channels = {
            k: Variant(f"channels_{k}", channels_graph(k), "c0", meter, tel) for k in CHANNEL_COUNTS
        }
        control = Variant("control", channels_graph(1), "c0", meter, None)
        rotating: list[Variant] = [history, *channels.values(), control]
        for v in (*channels.values(), control):
            v.turn(0)  # warm-up: the thread exists, the wrapper has seen it
            v.reset()
        before: list[int] = []  # the messages channel's bytes before each block's first turn
        after: list[int] = []  # and after its last
        turn = 1
        for block in range(plan.blocks):
            # a new ~10 KB thread, pre-filled through the instrumented saver, one warm-up turn
            history.cfg = {"configurable": {"thread_id": f"own-work-{block}"}}
            history.graph.invoke(
                {"messages": h.history_messages(n_prefill, f"b{block}")},
                history.cfg,
                durability=DURABILITY,
            )
            history.turn(0)
            history.reset()
            before.append(history_bytes(history))
            gc.collect()
            for r in range(plan.turns_per_block):
                k = (block * plan.turns_per_block + r) % len(rotating)
                for v in rotating[k:] + rotating[:k]:
                    v.turn(turn)
                turn += 1
            after.append(history_bytes(history))
            for v in rotating:
                v.harvest()
            tel.drop_exported()
    tel.shutdown()

    shim_ns = statistics.median(s[0] for s in control.samples)

    def figures(v: Variant) -> dict[str, Any]:
        # own = (outer - inner) - SDK as accumulated (true SDK + the timer overhead inside the
        # window) - the timer overhead outside the window - the shims' own overhead
        own_us = [
            (added - sdk - calls * meter.outside_ns - shim_ns) / 1e3
            for added, _, sdk, calls in v.samples
        ]
        sdk_us = [(sdk - calls * meter.inside_ns) / 1e3 for _, _, sdk, calls in v.samples]
        added_us = [(added - shim_ns - calls * (meter.inside_ns + meter.outside_ns)) / 1e3
                    for added, _, _, calls in v.samples]  # fmt: skip
        med_added = statistics.median(added_us)
        med_sdk = statistics.median(sdk_us)
        return {
            "puts": len(v.samples),
            "own_us": h.summary(own_us),
            "sdk_us": h.summary(sdk_us),
            "added_us": h.summary(added_us),
            "inner_put_us": h.summary([s[1] / 1e3 for s in v.samples]),
            "sdk_calls_per_put": statistics.median(s[3] for s in v.samples),
            "sdk_share_of_added": med_sdk / med_added if med_added > 0 else None,
        }

    per_k = {str(k): figures(v) for k, v in channels.items()}
    hist = figures(history)
    per_msg = (statistics.median(after) - statistics.median(before)) / plan.turns_per_block
    hist["messages_per_put"] = [n_prefill + 3, n_prefill + 2 + plan.turns_per_block]
    hist["channel_bytes_per_put"] = [round(min(before) + per_msg), max(after)]
    k_lo, k_hi = CHANNEL_COUNTS
    slope = (per_k[str(k_hi)]["own_us"]["median"] - per_k[str(k_lo)]["own_us"]["median"]) / (
        k_hi - k_lo
    )
    sdk_slope = (per_k[str(k_hi)]["sdk_us"]["median"] - per_k[str(k_lo)]["sdk_us"]["median"]) / (
        k_hi - k_lo
    )
    per_put = hist["own_us"]["median"]
    return {
        "mode": plan.label,
        "durability": DURABILITY,
        "saver": "InMemorySaver",
        "exporter": "BatchSpanProcessor -> no-op exporter; InMemoryMetricReader",
        "per_put_us": per_put,
        "per_extra_channel_us": slope,
        "sdk_per_extra_channel_us": sdk_slope,
        "targets": dict(TARGETS),
        "pass": {
            "per_put_us": per_put <= TARGETS["per_put_us"],
            "per_extra_channel_us": slope <= TARGETS["per_extra_channel_us"],
        },
        "history_10KB": hist,
        "channels": per_k,
        "calibration": {
            "timer_inside_ns_per_sdk_call": meter.inside_ns,
            "timer_outside_ns_per_sdk_call": meter.outside_ns,
            "shim_overhead_us": shim_ns / 1e3,
        },
        "sdk_entry_points": [f"{getattr(o, '__name__', o)}.{n}" for o, n in SDK_ENTRY_POINTS],
        "elapsed_s": time.perf_counter() - started,
    }


def report_lines(result: dict[str, Any]) -> list[str]:
    t = result["targets"]

    def verdict(key: str) -> str:
        return "PASS" if result["pass"][key] else "FAIL"

    hist = result["history_10KB"]
    cal = result["calibration"]
    lines = [
        f"Own CPU per put beyond the OpenTelemetry SDK ({result['mode']}, InMemorySaver, "
        f"durability={result['durability']}, {result['elapsed_s']:.0f} s)",
        f"  calibration: timer {cal['timer_inside_ns_per_sdk_call']:.0f}+"
        f"{cal['timer_outside_ns_per_sdk_call']:.0f} ns per SDK call, "
        f"shim {cal['shim_overhead_us']:.2f} us per put",
        "  graph            puts  own us (IQR)          SDK us   SDK calls  added us  SDK share",
    ]

    def row(name: str, f: dict[str, Any]) -> str:
        share = "n/a" if f["sdk_share_of_added"] is None else f"{f['sdk_share_of_added']:.0%}"
        return (
            f"  {name:<16}{f['puts']:>5}  {f['own_us']['median']:>7.1f} "
            f"({f['own_us']['q1']:.1f}-{f['own_us']['q3']:.1f}){'':<3}"
            f"{f['sdk_us']['median']:>7.1f}  {f['sdk_calls_per_put']:>9.0f}  "
            f"{f['added_us']['median']:>8.1f}  {share:>8}"
        )

    lo, hi = hist["channel_bytes_per_put"]
    lines.append(row("10KB history", hist))
    for k, f in result["channels"].items():
        lines.append(row(f"{k} channel(s)", f))
    lines += [
        f"  (the history puts held {lo / 1024:.1f}-{hi / 1024:.1f} KB of messages)",
        f"  {verdict('per_put_us')} per_put_us = {result['per_put_us']:.1f} "
        f"(target <= {t['per_put_us']})",
        f"  {verdict('per_extra_channel_us')} per_extra_channel_us = "
        f"{result['per_extra_channel_us']:.2f} (target <= {t['per_extra_channel_us']}); "
        f"SDK per extra channel {result['sdk_per_extra_channel_us']:.2f} us",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~10 s run, noisier")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")
    args = parser.parse_args()
    result = bench_own_work("quick" if args.quick else "full")
    print("\n".join(report_lines(result)))
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
