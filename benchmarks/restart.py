"""Cost follows the change, also after a restart: the first put of a fresh process.

    .venv/bin/python benchmarks/restart.py            # full run (~25 s on 2 cores)
    .venv/bin/python benchmarks/restart.py --quick    # ~10 s, fewer processes
    .venv/bin/python benchmarks/restart.py --processes 10 --json   # more processes, raw JSON

Target: the added CPU of a put that appends one message to a 10 MB history is at most 1.5x
that at 10 KB, including the first put of an invoke in a fresh process (nothing cached: the
library has to continue the `messages` list hash from the hash stored in the loaded
checkpoint's metadata instead of hashing the history again).

Method
------
For each size (10 KB and 10 MB of `messages`, sized by `serde.dumps_typed` like `run.py`'s
`bench_history`), the parent process creates a `SqliteSaver` file in a temporary directory and
pre-fills one thread through the instrumented saver, so its checkpoints carry the library's
stored hashes in their metadata. Then, K times per size (the sizes alternating), it copies the
file (SQLite backup API, so every child starts from the same checkpoint) and starts a FRESH
interpreter (`sys.executable restart.py --child ...`) which:

* opens the copy with a `SqliteSaver` subclass timing its own `put` (inner) and wraps it with
  `instrument(...)` with real SDK providers (`BatchSpanProcessor` into a no-op exporter,
  `MeterProvider` with an `InMemoryMetricReader`: `_harness.Telemetry("noop")`);
* shims the instrumented saver's `put` as LangGraph calls it (outer, an instance attribute like
  `_harness.OuterPutTimer`; `put` is not frame-inspected by the library);
* runs one turn, `invoke({"count": i}, cfg)` on `_harness.linear_graph(1)` (one node appends
  one message), then a second turn in the same process;
* prints JSON: for the put of each turn that wrote `messages`, the added CPU (thread CPU time
  of the put's thread, outer - inner) and the added wall-clock time, plus diagnostics.

The parent takes medians over the K processes and reports `ratio_10MB_over_10KB` of the first
put (the target figure) and of the second. The wrapper releases its per-thread caches when a
run ends, so the second turn also starts from the loaded checkpoint: it differs from the first
only in what a warm process has (imports done, code paths run once, SDK instruments created).

The child also wraps the OpenTelemetry SDK entry points with per-thread CPU accumulators
(`own_work.SdkMeter`, the same as in `own_work.py`; its timer overhead is calibrated and taken
off every figure), so the added CPU splits into the SDK's part and the library's own part, and
into what runs before and after the inner put.

Diagnostics, to tell a re-hash from other costs: the list elements the library's hasher chained
(`encoding._chain_items`, wrapped in the child only and counted per thread) during the measured
put and during the whole turn (the load included), and the CPU of `StateHasher.adopt` (the load
taking the stored hashes over). A fresh process that re-hashed the 10 MB history would chain
~25 000 elements; continuing from the stored hash chains only the appended one.

`durability="sync"` (the main thread waits for each step's put, so the put's wall time is not
stretched by the next step competing for the GIL), and the garbage collector is disabled during
each turn (collected between turns): a collection's pause lands in whichever window allocates
when the threshold is hit, which with 25 000 freshly loaded messages would be an arbitrary tens
of ms in one window or another, not the cost of the change.

Reading the result: the SDK's part is the same calls with the same kind of attributes at both
sizes, so its 10MB/10KB ratio measures how much slower *fixed* work runs right around a 10 MB
put (the inner put serializes and writes 10 MB, the load before it deserialized 10 MB: the CPU
caches are cold). The library's own part carries that same slowdown plus whatever really grows
with the history.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Final, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from own_work import SdkMeter

from langgraph.checkpoint.otel import names

TARGET_RATIO = 1.5
SIZES = {"10KB": 10 * 1024, "10MB": 10 * 1024 * 1024}
PROCESSES = {"full": 5, "quick": 2}
DURABILITY: Final[Literal["sync"]] = "sync"
THREAD_ID = "restart"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def history_size(serde: Any, target_bytes: int) -> int:
    """Messages of `_harness.history_messages` that serialize to about `target_bytes`."""
    per_msg = len(serde.dumps_typed(h.history_messages(200, "probe"))[1]) / 200
    return max(1, round(target_bytes / per_msg))


# --- child: one fresh process, two turns ----------------------------------------------------


class TimedSqliteSaver(SqliteSaver):
    """SqliteSaver recording, for each `put`: its CPU and wall time (ns), when it started (the
    thread's CPU clock) and the SDK meter's tally (SDK ns, calls) of its thread at that moment,
    so the wrapper's added time splits into before and after the inner call."""

    def __init__(self, conn: sqlite3.Connection, tally: Any) -> None:
        super().__init__(conn)
        self.tally = tally
        self.puts: list[tuple[int, int, int, int, int]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        sdk0, calls0 = self.tally.ns, self.tally.calls
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        result = super().put(config, checkpoint, metadata, new_versions)
        cpu = time.thread_time_ns() - c0
        self.puts.append((cpu, time.perf_counter_ns() - t0, c0, sdk0, calls0))
        return result


class _Chained(threading.local):
    def __init__(self) -> None:
        self.items = 0


class HashProbe:
    """Counts the list elements the library's hasher chains, and times `StateHasher.adopt`.

    Private internals, read defensively: a layout this does not know leaves the counts None.
    """

    def __init__(self) -> None:
        self.local = _Chained()
        self.total = 0
        self.adopt_ns = 0
        self.adopt_calls = 0
        self.available = False
        try:
            from langgraph.checkpoint.otel.analysis import hashing
        except ImportError:
            return
        try:  # the encoder and its list chain have their own module since issue 32
            from langgraph.checkpoint.otel.analysis import encoding
        except ImportError:
            encoding = hashing
        chain = getattr(encoding, "_chain_items", None)
        hasher: Any = getattr(hashing, "StateHasher", None)
        adopt = getattr(hasher, "adopt", None)
        if not callable(chain) or not callable(adopt):
            return
        probe = self

        @functools.wraps(chain)
        def counted(chain_: Any, items: Any, ctx: Any) -> Any:
            n = len(items)
            probe.local.items += n
            probe.total += n
            return chain(chain_, items, ctx)

        @functools.wraps(adopt)
        def timed(*args: Any, **kwargs: Any) -> Any:
            c0 = time.thread_time_ns()
            try:
                return adopt(*args, **kwargs)
            finally:
                probe.adopt_ns += time.thread_time_ns() - c0
                probe.adopt_calls += 1

        for module in (encoding, hashing):
            if hasattr(module, "_chain_items"):
                module._chain_items = counted  # type: ignore[attr-defined]
        hasher.adopt = timed
        self.available = True


def child(path: str, size_label: str) -> dict[str, Any]:
    probe = HashProbe()
    meter = SdkMeter()
    meter.install()
    meter.calibrate()
    tally = meter.tally
    per_call = meter.inside_ns + meter.outside_ns
    tel = h.Telemetry("noop")
    conn = sqlite3.connect(path, check_same_thread=False)
    inner = TimedSqliteSaver(conn, tally)
    inst = h.instrumented(inner, tel)
    # per put: channels written, CPU, wall, CPU clock at start, chained items, SDK ns and SDK
    # calls at start, and during the put
    outer: list[tuple[list[str], int, int, int, int, int, int, int, int]] = []
    bound = inst.put

    def put(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        items0, sdk0, calls0 = probe.local.items, tally.ns, tally.calls
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        result = bound(config, checkpoint, metadata, new_versions)
        cpu = time.thread_time_ns() - c0
        wall = time.perf_counter_ns() - t0
        outer.append(
            (
                sorted(new_versions),
                cpu,
                wall,
                c0,
                probe.local.items - items0,
                sdk0,
                calls0,
                tally.ns - sdk0,
                tally.calls - calls0,
            )
        )
        return result

    def figures(
        o: tuple[list[str], int, int, int, int, int, int, int, int],
        i: tuple[int, int, int, int, int],
    ) -> dict[str, Any]:
        channels, o_cpu, o_wall, o_start, chained, o_sdk0, o_calls0, sdk, calls = o
        i_cpu, i_wall, i_start, i_sdk0, i_calls0 = i
        overhead = calls * per_call  # the SDK meter's own timers, taken off again
        added = o_cpu - i_cpu - overhead
        # the part before the inner call, and its SDK share
        pre_calls = i_calls0 - o_calls0
        pre = i_start - o_start - pre_calls * per_call
        pre_sdk = i_sdk0 - o_sdk0 - pre_calls * meter.inside_ns
        sdk_true = sdk - calls * meter.inside_ns
        return {
            "channels": channels,
            "added_cpu_us": added / 1e3,
            "added_wall_us": (o_wall - i_wall - overhead) / 1e3,
            "sdk_cpu_us": sdk_true / 1e3,
            "own_cpu_us": (o_cpu - i_cpu - sdk - calls * meter.outside_ns) / 1e3,
            "sdk_calls": calls,
            "added_before_inner_cpu_us": pre / 1e3,
            "added_after_inner_cpu_us": (added - pre) / 1e3,
            "sdk_before_inner_cpu_us": pre_sdk / 1e3,
            "sdk_after_inner_cpu_us": (sdk_true - pre_sdk) / 1e3,
            "inner_put_cpu_ms": i_cpu / 1e6,
            "inner_put_wall_ms": i_wall / 1e6,
            "chained_in_put": chained if probe.available else None,
        }

    inst.put = put  # type: ignore[method-assign]
    graph = h.linear_graph(1).compile(checkpointer=inst)
    cfg: RunnableConfig = {"configurable": {"thread_id": THREAD_ID}}
    turns: list[dict[str, Any]] = []
    for turn in (1, 2):
        outer.clear()
        inner.puts.clear()
        total0, adopt0, adopt_calls0 = probe.total, probe.adopt_ns, probe.adopt_calls
        gc.collect()
        gc.disable()
        t0, p0 = time.perf_counter_ns(), time.process_time_ns()
        graph.invoke({"count": turn}, cfg, durability=DURABILITY)
        invoke_wall, invoke_cpu = time.perf_counter_ns() - t0, time.process_time_ns() - p0
        gc.enable()
        assert len(outer) == len(inner.puts), (len(outer), len(inner.puts))
        puts = [figures(o, i) for o, i in zip(outer, inner.puts, strict=True)]
        # the node's put: the one that wrote `messages` (the invoke's input and step-0 puts
        # come first; they carry the history unchanged)
        measured = [p for p in puts if "messages" in p["channels"]]
        assert len(measured) == 1, puts
        turns.append(
            {
                **measured[0],
                "chained_in_turn": probe.total - total0 if probe.available else None,
                "adopt_cpu_us": (probe.adopt_ns - adopt0) / 1e3 if probe.available else None,
                "adopt_calls": probe.adopt_calls - adopt_calls0 if probe.available else None,
                "invoke_wall_ms": invoke_wall / 1e6,
                "invoke_process_cpu_ms": invoke_cpu / 1e6,
                "invoke_first_put_added_cpu_us": puts[0]["added_cpu_us"],
                "puts": puts,
            }
        )
        gc.collect()
    messages = len(graph.get_state(cfg).values["messages"])
    tel.shutdown()
    conn.close()
    meter.restore()
    return {"size": size_label, "messages_after": messages, "turns": turns}


# --- parent ---------------------------------------------------------------------------------


def prefill(path: str, size_label: str) -> dict[str, Any]:
    """Create the SQLite file and pre-fill one thread through the instrumented saver."""
    tel = h.Telemetry("noop")
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    n_msgs = history_size(saver.serde, SIZES[size_label])
    graph = h.linear_graph(1).compile(checkpointer=h.instrumented(saver, tel))
    cfg: RunnableConfig = {"configurable": {"thread_id": THREAD_ID}}
    t0 = time.perf_counter()
    graph.invoke({"messages": h.history_messages(n_msgs, size_label)}, cfg, durability=DURABILITY)
    elapsed = time.perf_counter() - t0
    loaded = saver.get_tuple(cfg)
    assert loaded is not None
    values = loaded.checkpoint["channel_values"]["messages"]
    stored = len(saver.serde.dumps_typed(values)[1])
    has_hashes = names.METADATA_KEY in (loaded.metadata or {})
    tel.shutdown()
    conn.close()
    return {
        "messages": len(values),
        "channel_bytes": stored,
        "prefill_s": elapsed,
        "file_mb": os.path.getsize(path) / 2**20,
        "stored_telemetry_in_metadata": has_hashes,
    }


def copy_db(src: str, dst: str) -> None:
    with (
        contextlib.closing(sqlite3.connect(src)) as a,
        contextlib.closing(sqlite3.connect(dst)) as b,
    ):
        a.backup(b)


def run_child(path: str, size_label: str) -> tuple[dict[str, Any], float]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", path, size_label],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), elapsed


def _med(runs: list[dict[str, Any]], turn: int, key: str) -> float | None:
    xs = [r["turns"][turn][key] for r in runs]
    if any(x is None for x in xs):
        return None
    return float(statistics.median(xs))


def bench_restart(label: str, processes: int | None = None) -> dict[str, Any]:
    """Run the benchmark (`label` "full" or "quick"; `processes` fresh processes per size
    overrides the mode's count)."""
    k = processes or PROCESSES["quick" if label == "quick" else "full"]
    started = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SIZES}
    child_s: dict[str, list[float]] = {s: [] for s in SIZES}
    with tempfile.TemporaryDirectory(prefix="lgotel-restart-") as tmp:
        bases: dict[str, str] = {}
        prefilled: dict[str, Any] = {}
        for size in SIZES:
            bases[size] = os.path.join(tmp, f"{size}.sqlite")
            log(f"[restart] pre-filling a ~{size} thread (SqliteSaver, instrumented) ...")
            prefilled[size] = prefill(bases[size], size)
            gc.collect()
        for i in range(k):
            order = list(SIZES) if i % 2 == 0 else list(reversed(SIZES))
            for size in order:
                path = os.path.join(tmp, f"{size}-child{i}.sqlite")
                copy_db(bases[size], path)
                log(f"[restart] fresh process {i + 1}/{k}, {size} ...")
                result, elapsed = run_child(path, size)
                runs[size].append(result)
                child_s[size].append(elapsed)
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(path + suffix)

    keys = (
        "added_cpu_us",
        "added_wall_us",
        "own_cpu_us",
        "sdk_cpu_us",
        "sdk_calls",
        "inner_put_cpu_ms",
        "inner_put_wall_ms",
        "chained_in_put",
        "chained_in_turn",
        "adopt_cpu_us",
        "invoke_wall_ms",
        "invoke_first_put_added_cpu_us",
        "added_before_inner_cpu_us",
        "added_after_inner_cpu_us",
        "sdk_before_inner_cpu_us",
        "sdk_after_inner_cpu_us",
    )
    per_size: dict[str, Any] = {}
    for size in SIZES:
        per_size[size] = {
            **prefilled[size],
            "processes": len(runs[size]),
            "child_process_s": statistics.median(child_s[size]),
            "first_put": {key: _med(runs[size], 0, key) for key in keys},
            "second_put": {key: _med(runs[size], 1, key) for key in keys},
            "first_put_added_cpu_us_all": [r["turns"][0]["added_cpu_us"] for r in runs[size]],
            "second_put_added_cpu_us_all": [r["turns"][1]["added_cpu_us"] for r in runs[size]],
        }

    def ratio(turn: str, key: str) -> float:
        return float(per_size["10MB"][turn][key] / per_size["10KB"][turn][key])

    first, second = ratio("first_put", "added_cpu_us"), ratio("second_put", "added_cpu_us")
    chained = per_size["10MB"]["first_put"]["chained_in_turn"]
    return {
        "mode": "quick" if label == "quick" else "full",
        "saver": "SqliteSaver (file)",
        "durability": DURABILITY,
        "exporter": "BatchSpanProcessor -> no-op exporter; InMemoryMetricReader",
        "sizes": per_size,
        "ratio_10MB_over_10KB": {
            "first_put": first,
            "second_put": second,
            "first_put_wall": ratio("first_put", "added_wall_us"),
            "second_put_wall": ratio("second_put", "added_wall_us"),
            # the library's own part (added less the SDK calls it makes)
            "first_put_own": ratio("first_put", "own_cpu_us"),
            "second_put_own": ratio("second_put", "own_cpu_us"),
            # the SDK does the same work at both sizes (same calls): this ratio is how much
            # slower fixed work runs right after a 10 MB load/serialization (cold caches)
            "first_put_sdk": ratio("first_put", "sdk_cpu_us"),
            "second_put_sdk": ratio("second_put", "sdk_cpu_us"),
            # the invoke's very first put (its input checkpoint: history unchanged)
            "first_invoke_first_put": ratio("first_put", "invoke_first_put_added_cpu_us"),
        },
        "rehashed_history_in_fresh_process": None if chained is None else chained > 100,
        "target": TARGET_RATIO,
        "pass": first <= TARGET_RATIO,
        "elapsed_s": time.perf_counter() - started,
    }


def report_lines(result: dict[str, Any]) -> list[str]:
    sizes = result["sizes"]
    ratios = result["ratio_10MB_over_10KB"]
    lines = [
        f"Fresh-process put: added time vs history size ({result['mode']}, "
        f"{result['saver']}, durability={result['durability']}, {result['elapsed_s']:.0f} s)",
        "  size    msgs procs put  added CPU us  wall us  own us  SDK us  inner put ms"
        "  chained put/turn  adopt us",
    ]
    for size, s in sizes.items():
        for turn, name in (("first_put", "1st"), ("second_put", "2nd")):
            f = s[turn]
            chained = (
                "n/a"
                if f["chained_in_put"] is None
                else f"{f['chained_in_put']:.0f}/{f['chained_in_turn']:.0f}"
            )
            adopt = "n/a" if f["adopt_cpu_us"] is None else f"{f['adopt_cpu_us']:.0f}"
            lines.append(
                f"  {size:<5} {s['messages']:>6} {s['processes']:>5} {name}  "
                f"{f['added_cpu_us']:>12.0f}  {f['added_wall_us']:>7.0f}  "
                f"{f['own_cpu_us']:>6.0f}  {f['sdk_cpu_us']:>6.0f}  "
                f"{f['inner_put_cpu_ms']:>12.1f}  {chained:>16}  {adopt:>8}"
            )
    verdict = "PASS" if result["pass"] else "FAIL"
    lines += [
        f"  {verdict} ratio_10MB_over_10KB (first put of a fresh process, CPU) = "
        f"{ratios['first_put']:.2f} (target <= {result['target']}); wall "
        f"{ratios['first_put_wall']:.2f}",
        f"  second put (in-process following turn): CPU {ratios['second_put']:.2f}, wall "
        f"{ratios['second_put_wall']:.2f}",
        f"  own part (added - SDK): first {ratios['first_put_own']:.2f}, second "
        f"{ratios['second_put_own']:.2f}; SDK part (same calls at both sizes): first "
        f"{ratios['first_put_sdk']:.2f}, second {ratios['second_put_sdk']:.2f}",
        f"  the fresh invoke's first put (input checkpoint, history unchanged): "
        f"{sizes['10KB']['first_put']['invoke_first_put_added_cpu_us']:.0f} us at 10KB, "
        f"{sizes['10MB']['first_put']['invoke_first_put_added_cpu_us']:.0f} us at 10MB, "
        f"ratio {ratios['first_invoke_first_put']:.2f}",
    ]
    for size, sz in sizes.items():
        f = sz["first_put"]
        lines.append(
            f"  {size} first put, added CPU before/after the inner put: "
            f"{f['added_before_inner_cpu_us']:.0f}/{f['added_after_inner_cpu_us']:.0f} us "
            f"(SDK {f['sdk_before_inner_cpu_us']:.0f}/{f['sdk_after_inner_cpu_us']:.0f})"
        )
    rehashed = result["rehashed_history_in_fresh_process"]
    if rehashed:
        lines.append("  FINDING: the fresh process hashed the 10 MB history again")
    elif rehashed is None:
        lines.append("  (hash probe unavailable: re-hashing not checked)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer fresh processes")
    parser.add_argument("--json", action="store_true", help="print the result as JSON too")
    parser.add_argument("--processes", type=int, help="fresh processes per size")
    parser.add_argument("--child", nargs=2, metavar=("DB", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    result = bench_restart("quick" if args.quick else "full", args.processes)
    print("\n".join(report_lines(result)))
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
