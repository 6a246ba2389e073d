"""Overhead of langgraph-checkpoint-otel, as ratios against the bare saver of the same run.

    .venv/bin/python benchmarks/run.py            # full run (~3 min on 2 cores, +1 min for
                                                  # the inspector's, whose databases, 5.3 GB
                                                  # under .bench/, take ~2 min the first time;
                                                  # +6.5 min for the matrix, section 9,
                                                  # +1 min for the breakdown, section 10,
                                                  # +5 min for the service, section 12,
                                                  # +2.5 min for retention (plan and apply), 13,
                                                  # +1 min for the message counts, 14)
    .venv/bin/python benchmarks/run.py --quick    # ~2.5 min (1 min 45 s of it the matrix)

Prints a table and a PASS/FAIL summary per target, writes .bench/results.json, and always
exits 0 (it is a report, not a test). See benchmarks/README.md for the method.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
import breakdown
import inspector_scale
import matrix
import memory
import message_history as message_bench
import own_work
import peers
import restart
import retention as retention_bench
import service
from langchain_core.messages import HumanMessage

ROOT = Path(__file__).resolve().parent.parent
GRAPH_TARGETS = {"sqlite": 1.10, "memory": 1.25}
HISTORY_TARGET = 1.5
LATENCY_TARGET = 1.02
PEER_CELLS = ("agent_sqlite", "agent_postgres", "linear10_memory")
AGENT_MEMORY_TARGET = 1.25
SIZES = {"10KB": 10 * 1024, "10MB": 10 * 1024 * 1024}


@dataclass
class Plan:
    graph_rounds: dict[str, int]  # saver kind -> interleaved rounds per durability
    graph_warmup: int
    history_turns: dict[str, int]  # size label -> measured turns per variant
    label: str


FULL = Plan({"memory": 250, "sqlite": 100}, 15, {"10KB": 80, "10MB": 9}, "full")
QUICK = Plan({"memory": 40, "sqlite": 8}, 4, {"10KB": 20, "10MB": 2}, "quick")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- 1. 10-node linear graph: instrumented / bare invoke time --------------------------------


def bench_graph(saver_kind: str, durability: str, plan: Plan, tmp: str) -> dict[str, Any]:
    builder = h.linear_graph(10)
    tels = {
        "memory": h.Telemetry("memory"),
        "noop": h.Telemetry("noop"),
        "floor": h.Telemetry("noop"),
    }
    graphs: dict[str, Any] = {}
    for variant in ("bare", "inst_memory", "inst_noop", "floor"):
        path = os.path.join(tmp, f"{saver_kind}-{durability}-{variant}.sqlite")
        saver = h.make_saver(saver_kind, path)
        if variant == "floor":
            saver = h.SpanOnlySaver(saver, tels["floor"])
        elif variant != "bare":
            saver = h.instrumented(saver, tels[variant.removeprefix("inst_")])
        graphs[variant] = builder.compile(checkpointer=saver)
    order = list(graphs)

    def run(variant: str) -> float:
        inp = {"messages": [HumanMessage("hello")], "count": 0}
        t0 = time.perf_counter_ns()
        graphs[variant].invoke(inp, h.fresh_config(), durability=durability)
        return (time.perf_counter_ns() - t0) / 1e6

    for _ in range(plan.graph_warmup):
        for v in order:
            run(v)
    gc.collect()
    times: dict[str, list[float]] = {v: [] for v in order}
    rounds = plan.graph_rounds[saver_kind]
    for r in range(rounds):
        # Rotate the order every round so each variant takes each position equally often
        # (cancels drift and "runs right after the instrumented one" effects).
        k = r % len(order)
        for v in order[k:] + order[:k]:
            times[v].append(run(v))
        for tel in tels.values():
            tel.drop_exported()
    spans_check = tels["memory"].finished_spans()
    for tel in tels.values():
        tel.shutdown()

    result: dict[str, Any] = {
        "saver": saver_kind,
        "durability": durability,
        "rounds": rounds,
        "invoke_ms": {v: h.summary(t) for v, t in times.items()},
        "ratios": {},
    }
    bare_med = statistics.median(times["bare"])
    for v in ("inst_memory", "inst_noop", "floor"):
        lo, hi = h.bootstrap_ratio_ci(times[v], times["bare"])
        paired = [a / b for a, b in zip(times[v], times["bare"], strict=True)]
        result["ratios"][v] = {
            "ratio_of_medians": statistics.median(times[v]) / bare_med,
            "ci95": [lo, hi],
            "paired_ratio": h.summary(paired),
        }
    result["spans_exported_after_last_round"] = spans_check
    return result


# --- 2. per-put added time vs history size ------------------------------------------------


def bench_history(size_label: str, plan: Plan) -> dict[str, Any]:
    target_bytes = SIZES[size_label]
    bare = h.TimedInMemorySaver()
    per_msg = len(bare.serde.dumps_typed(h.history_messages(200, "probe"))[1]) / 200
    n_msgs = max(1, round(target_bytes / per_msg))
    tel = h.Telemetry("memory")
    inner = h.TimedInMemorySaver()
    inst = h.instrumented(inner, tel)
    outer = h.OuterPutTimer(inst)
    builder = h.linear_graph(1)
    graphs = {
        "bare": builder.compile(checkpointer=bare),
        "inst": builder.compile(checkpointer=inst),
    }
    cfgs = {v: {"configurable": {"thread_id": f"history-{size_label}-{v}"}} for v in graphs}

    # Pre-fill each thread through its own saver: the instrumented saver sees (and caches)
    # the whole history, exactly as it would have while the conversation grew.
    prefill_s = {}
    for v, g in graphs.items():
        t0 = time.perf_counter()
        g.invoke({"messages": h.history_messages(n_msgs, v)}, cfgs[v])
        prefill_s[v] = time.perf_counter() - t0
    state = graphs["bare"].get_state(cfgs["bare"]).values["messages"]
    stored_bytes = len(bare.serde.dumps_typed(state)[1])

    def turn(v: str, i: int) -> float:
        t0 = time.perf_counter_ns()
        graphs[v].invoke({"count": i}, cfgs[v])  # one node run: appends exactly one message
        return (time.perf_counter_ns() - t0) / 1e6

    # One unmeasured turn each: the instrumented saver's caches are now warm from the previous
    # put of this very thread (as in a long-running agent).
    for v in graphs:
        turn(v, -1)
    for timer in (bare, inner, outer):
        timer.put_times.clear()
        timer.put_cpu.clear()
    recorded_before = _recorded_put_seconds(tel)
    gc.collect()
    invoke: dict[str, list[float]] = {"bare": [], "inst": []}
    turns = plan.history_turns[size_label]
    for r in range(turns):
        for v in ("bare", "inst") if r % 2 == 0 else ("inst", "bare"):
            invoke[v].append(turn(v, r))
        tel.drop_exported()
        if size_label == "10MB":
            gc.collect()  # outside the timed region; keeps the many 10 MB blobs from piling up
    # honest latency: what operation.duration recorded for these puts against the inner saver's
    # own measurement of the same calls
    recorded = _recorded_put_seconds(tel) - recorded_before
    inner_seconds = sum(ns for _, ns in inner.put_times) / 1e9
    tel.shutdown()

    def msg_puts(times: list[tuple[bool, int]]) -> list[float]:
        return [ns / 1e6 for wrote, ns in times if wrote]

    bare_put, inst_put = msg_puts(bare.put_times), msg_puts(outer.put_times)
    inner_put = msg_puts(inner.put_times)
    # The outer and inner shims of the instrumented saver record the very same calls, in order.
    added_paired = [o - i for o, i in zip(inst_put, inner_put, strict=True)]
    # The same in CPU time of the put's own thread: LangGraph runs puts on a background thread,
    # whose wall time also counts waits for the GIL while the main thread does the graph's own
    # work on the history (add_messages copies the list), which is not the wrapper's cost.
    added_cpu = [
        o - i for o, i in zip(msg_puts(outer.put_cpu), msg_puts(inner.put_cpu), strict=True)
    ]
    lo, hi = h.bootstrap_diff_ci(inst_put, bare_put)
    return {
        "size": size_label,
        "messages": n_msgs + 1,
        "stored_channel_bytes": stored_bytes,
        "turns": turns,
        "prefill_s": prefill_s,
        "put_ms": {
            "bare": h.summary(bare_put),
            "inst": h.summary(inst_put),
            "inst_inner": h.summary(inner_put),
        },
        "added_ms": {
            "paired_exclusive_cpu": h.summary(added_cpu),
            "paired_exclusive": h.summary(added_paired),
            "median_difference": statistics.median(inst_put) - statistics.median(bare_put),
            "median_difference_ci95": [lo, hi],
        },
        "invoke_ms": {v: h.summary(t) for v, t in invoke.items()},
        "invoke_ratio_of_medians": statistics.median(invoke["inst"])
        / statistics.median(invoke["bare"]),
        "recorded_over_inner": recorded / inner_seconds,
    }


def _recorded_put_seconds(tel: h.Telemetry) -> float:
    """Sum of the `operation.duration` measurements of puts so far (cumulative reader)."""
    data = tel.reader.get_metrics_data()
    total = 0.0
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name != "langgraph.checkpoint.operation.duration":
                    continue
                for point in metric.data.data_points:
                    if point.attributes.get("langgraph.operation") == "put":
                        total += point.sum
    return total


# --- 3. reads: what hiding the stored telemetry from callers costs -------------------------


READ_CHECKPOINTS = 30


def bench_reads(saver_kind: str, plan: Plan, tmp: str) -> dict[str, Any]:
    """`get_tuple` and `list` of a 30-checkpoint thread: bare, wrapped with telemetry off
    (delegation and hiding the `otel` metadata key only), wrapped with telemetry on."""
    from langgraph.checkpoint.otel import instrument, uninstrument

    tel = h.Telemetry("noop")
    variants: dict[str, Any] = {}
    for variant in ("bare", "hidden_only", "instrumented"):
        saver = h.make_saver(saver_kind, os.path.join(tmp, f"reads-{saver_kind}-{variant}.db"))
        if variant == "hidden_only":
            saver = instrument(saver, enabled=False)
        elif variant == "instrumented":
            saver = h.instrumented(saver, tel)
        # the history is written instrumented for all three, so each stores the `otel` key
        writer = h.instrumented(uninstrument(saver), tel)
        cfg = h.fresh_config()
        h.linear_graph(READ_CHECKPOINTS - 2).compile(checkpointer=writer).invoke(
            {"messages": [HumanMessage("hello")], "count": 0}, cfg
        )
        variants[variant] = (saver, cfg)
    rounds = plan.graph_rounds[saver_kind]
    times: dict[str, dict[str, list[float]]] = {"get_tuple": {}, "list": {}}
    for op in times:
        times[op] = {v: [] for v in variants}
    order = list(variants)
    for r in range(rounds):
        k = r % len(order)
        for v in order[k:] + order[:k]:
            saver, cfg = variants[v]
            t0 = time.perf_counter_ns()
            saver.get_tuple(cfg)
            t1 = time.perf_counter_ns()
            n = sum(1 for _ in saver.list(cfg))
            t2 = time.perf_counter_ns()
            assert n == READ_CHECKPOINTS, n
            times["get_tuple"][v].append((t1 - t0) / 1e6)
            times["list"][v].append((t2 - t1) / 1e6)
        tel.drop_exported()
    tel.shutdown()
    result: dict[str, Any] = {"saver": saver_kind, "rounds": rounds, "ops": {}}
    for op, by_variant in times.items():
        bare = statistics.median(by_variant["bare"])
        result["ops"][op] = {
            "ms": {v: h.summary(t) for v, t in by_variant.items()},
            "ratios": {
                v: statistics.median(t) / bare for v, t in by_variant.items() if v != "bare"
            },
        }
    return result


# --- 4-7: own modules (memory, peers, own work, restart) ---------------------------------
# memory.py (4), peers.py (5), own_work.py (6), restart.py (7): each runnable on its own too.


# --- report -------------------------------------------------------------------------------


def fmt_ms(s: dict[str, float]) -> str:
    return f"{s['median']:9.2f} ms (IQR {s['iqr']:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~30 s run with fewer repetitions")
    parser.add_argument("--out", default=str(ROOT / ".bench" / "results.json"))
    parser.add_argument(
        "--only",
        choices=(
            "graph",
            "history",
            "reads",
            "memory",
            "peers",
            "own",
            "restart",
            "scale",
            "matrix",
            "breakdown",
            "service",
            "retention",
            "messages",
        ),
        help="run only one of the benchmarks",
    )
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    results: dict[str, Any] = {
        "mode": plan.label,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            **{
                p: version(p)
                for p in (
                    "langgraph",
                    "langgraph-checkpoint",
                    "langgraph-checkpoint-sqlite",
                    "langchain-core",
                    "opentelemetry-sdk",
                    "langgraph-checkpoint-otel",
                )
            },
        },
        "graph": [],
        "history": [],
        "reads": [],
        "memory": None,
        "peers": None,
        "own_work": None,
        "restart": None,
        "inspector_scale": None,
        "matrix": None,
        "breakdown": None,
        "service": None,
        "retention": None,
        "messages": None,
    }

    with tempfile.TemporaryDirectory(prefix="lgotel-bench-") as tmp:
        if args.only in (None, "graph"):
            for saver_kind in ("sqlite", "memory"):
                for durability in ("async", "sync"):
                    log(f"[graph] {saver_kind} durability={durability} ...")
                    results["graph"].append(bench_graph(saver_kind, durability, plan, tmp))
                    gc.collect()
        if args.only in (None, "history"):
            for size in SIZES:
                log(f"[history] InMemorySaver, messages channel ~{size} ...")
                results["history"].append(bench_history(size, plan))
                gc.collect()
        if args.only in (None, "reads"):
            for saver_kind in ("sqlite", "memory"):
                log(f"[reads] {saver_kind}: get_tuple and list of {READ_CHECKPOINTS} checkpoints")
                results["reads"].append(bench_reads(saver_kind, plan, tmp))
                gc.collect()
        if args.only in (None, "memory"):
            log(f"[memory] {memory.THREADS[plan.label]} threads x 5 steps, bare and instrumented")
            results["memory"] = memory.bench_memory(plan.label)
            log(f"[memory] approval workload: {memory.APPROVAL_RUNS[plan.label]} resumed runs")
            results["memory"]["approval"] = memory.bench_approval(plan.label)
        if args.only in (None, "peers"):
            log("[peers] this library next to the LangChain instrumentations")
            results["peers"] = peers.bench_peers(plan.label)
        if args.only in (None, "own"):
            log("[own] the library's CPU per put beyond its SDK calls")
            results["own_work"] = own_work.bench_own_work(plan.label)
        if args.only in (None, "restart"):
            log("[restart] first put of a fresh process, 10 KB and 10 MB histories")
            results["restart"] = restart.bench_restart(plan.label)
        if args.only in (None, "scale"):
            log("[scale] the inspector on 10,000 and 100,000 threads (SQLite), 10,000 (PostgreSQL)")
            results["inspector_scale"] = inspector_scale.bench_inspector_scale(plan.label)
        if args.only in (None, "matrix"):
            log("[matrix] shapes x savers x variants (issue 21), CPU of every thread")
            results["matrix"] = matrix.bench_matrix(plan.label)
        if args.only in (None, "breakdown"):
            log("[breakdown] where the added CPU goes, part by part (the floors)")
            results["breakdown"] = breakdown.bench_breakdown(quick=plan.label == "quick")
        if args.only in (None, "service"):
            log("[service] the support desk under load: bare, ours, official GenAI")
            results["service"] = service.bench_service(plan.label)
        if args.only in (None, "retention"):
            log("[retention] read-only plans: 10,000 and 100,000 threads (SQLite), 10,000 (PG)")
            results["retention"] = retention_bench.bench_retention(plan.label)
        if args.only in (None, "messages"):
            log("[messages] the message history's counts: on / off on a growing thread")
            results["messages"] = message_bench.bench_message_history(plan.label)
    results["elapsed_s"] = time.perf_counter() - started

    targets = evaluate(results)
    results["targets"] = targets
    print_report(results, targets)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"\nresults written to {out}  (elapsed {results['elapsed_s']:.0f} s, mode {plan.label})")
    return 0


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []
    for g in results["graph"]:
        limit = GRAPH_TARGETS[g["saver"]]
        for v, r in g["ratios"].items():
            primary = g["durability"] == "async" and v != "floor"
            value = r["ratio_of_medians"]
            what = (
                "reference floor (span + duration metric per call only)/bare invoke"
                if v == "floor"
                else f"exporter={v.removeprefix('inst_')}: instrumented/bare invoke"
            )
            targets.append(
                {
                    "name": f"10-node graph, {g['saver']}, durability={g['durability']}, {what}",
                    "value": value,
                    "ci95": r["ci95"],
                    "limit": limit,
                    "kind": "target" if primary else "secondary",
                    "status": "PASS" if value <= limit else "FAIL",
                }
            )
    hist = {x["size"]: x for x in results["history"]}
    if {"10KB", "10MB"} <= hist.keys():
        small = hist["10KB"]["added_ms"]["paired_exclusive_cpu"]["median"]
        big = hist["10MB"]["added_ms"]["paired_exclusive_cpu"]["median"]
        value = big / small
        targets.append(
            {
                "name": "added put time, 10 MB / 10 KB history (InMemorySaver, paired exclusive, "
                "CPU time of the put's thread)",
                "value": value,
                "limit": HISTORY_TARGET,
                "kind": "target",
                "status": "PASS" if value <= HISTORY_TARGET else "FAIL",
                "added_ms": {"10KB": small, "10MB": big},
            }
        )
        small_w = hist["10KB"]["added_ms"]["paired_exclusive"]["median"]
        big_w = hist["10MB"]["added_ms"]["paired_exclusive"]["median"]
        targets.append(
            {
                "name": "added put time, 10 MB / 10 KB history (paired exclusive, wall time)",
                "value": big_w / small_w,
                "limit": HISTORY_TARGET,
                "kind": "secondary",
                "status": "PASS" if big_w / small_w <= HISTORY_TARGET else "FAIL",
                "added_ms": {"10KB": small_w, "10MB": big_w},
            }
        )
        small_d = hist["10KB"]["added_ms"]["median_difference"]
        big_d = hist["10MB"]["added_ms"]["median_difference"]
        if small_d > 0:
            value = big_d / small_d
            targets.append(
                {
                    "name": "added put time, 10 MB / 10 KB history (median difference cross-check)",
                    "value": value,
                    "limit": HISTORY_TARGET,
                    "kind": "secondary",
                    "status": "PASS" if value <= HISTORY_TARGET else "FAIL",
                    "added_ms": {"10KB": small_d, "10MB": big_d},
                }
            )
    targets.extend(_latency_targets(results))
    targets.extend(_module_targets(results))
    return targets


def _target(name: str, value: float | None, limit: float, **extra: Any) -> dict[str, Any]:
    ok = value is not None and value <= limit
    return {
        "name": name,
        "value": float("nan") if value is None else value,
        "limit": limit,
        "kind": "target",
        "status": "PASS" if ok else "FAIL",
        **extra,
    }


def _latency_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    hist = {x["size"]: x for x in results["history"]}
    if "10KB" not in hist or "recorded_over_inner" not in hist["10KB"]:
        return []
    value = hist["10KB"]["recorded_over_inner"]
    return [
        _target(
            "honest latency: recorded operation.duration / inner saver's put, 10 KB history",
            value,
            LATENCY_TARGET,
        )
    ]


def _module_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    targets: list[dict[str, Any]] = []
    if results["memory"]:
        for size, row in results["memory"]["sizes"].items():
            targets.append(
                _target(
                    f"memory: RSS added over {results['memory']['threads']} threads x 5 steps, "
                    f"{size} messages (MB)",
                    row["added_rss_mb"],
                    memory.TARGET_MB,
                )
            )
        approval = results["memory"].get("approval")
        if approval:
            targets.append(
                _target(
                    f"memory: RSS growth added over {approval['runs']} resumed runs (approval "
                    "workload, MB)",
                    approval["added_growth_mb"],
                    memory.TARGET_MB,
                )
            )
    if results["peers"]:
        p = results["peers"]
        for cell in PEER_CELLS:
            ours, official = peers.ratio(p, cell, "ours"), peers.ratio(p, cell, "otel_genai")
            targets.append(
                _target(
                    f"peers, {cell}: ours/bare <= official GenAI/bare ({official})",
                    ours,
                    official if official is not None else float("nan"),
                )
            )
        targets.append(
            _target(
                "peers, agent_memory: ours/bare",
                peers.ratio(p, "agent_memory", "ours"),
                AGENT_MEMORY_TARGET,
            )
        )
    if results["own_work"]:
        o = results["own_work"]
        for key, limit in o["targets"].items():
            targets.append(_target(f"own CPU beyond SDK calls: {key}", o.get(key), limit))
    if results["restart"]:
        r = results["restart"]
        ratios = r["ratio_10MB_over_10KB"]
        targets.append(
            _target(
                "restart: added put CPU, 10 MB / 10 KB, first put of a fresh process "
                f"(own part {ratios['first_put_own']:.2f}, SDK part {ratios['first_put_sdk']:.2f})",
                ratios["first_put"],
                HISTORY_TARGET,
            )
        )
    if results["inspector_scale"]:
        for name, value, limit in inspector_scale.targets(results["inspector_scale"]):
            targets.append(_target(name, value, limit))
    if results["retention"]:
        for name, value, limit in retention_bench.targets(results["retention"]):
            targets.append(_target(name, value, limit))
    if results["messages"]:
        for name, value, limit in message_bench.targets(results["messages"]):
            targets.append(_target(name, value, limit))
    if results["matrix"]:
        for t in matrix.targets(results["matrix"]):
            targets.append(_target(t["name"], t["value"], t["limit"]))
    return targets


def print_report(results: dict[str, Any], targets: list[dict[str, Any]]) -> None:
    env = results["environment"]
    print(
        f"\nlanggraph-checkpoint-otel overhead ({results['mode']} run; python {env['python']}, "
        f"langgraph {env['langgraph']}, otel-sdk {env['opentelemetry-sdk']}, {env['cpus']} CPUs)"
    )
    if results["graph"]:
        print("\n1. 10-node linear graph, invoke wall time (median, IQR); fresh thread per invoke")
        print(
            f"{'saver':8} {'durab.':6} {'rounds':>6} {'bare':>26} {'instr. in-mem exp.':>26} "
            f"{'instr. no-op exp.':>26}   ratio mem [95% CI]   ratio noop [95% CI]"
            "   floor ratio"
        )
        for g in results["graph"]:
            t, r = g["invoke_ms"], g["ratios"]
            rm, rn, rf = r["inst_memory"], r["inst_noop"], r["floor"]
            print(
                f"{g['saver']:8} {g['durability']:6} {g['rounds']:6d} {fmt_ms(t['bare']):>26} "
                f"{fmt_ms(t['inst_memory']):>26} {fmt_ms(t['inst_noop']):>26}   "
                f"{rm['ratio_of_medians']:5.3f} [{rm['ci95'][0]:.3f},{rm['ci95'][1]:.3f}]  "
                f"{rn['ratio_of_medians']:5.3f} [{rn['ci95'][0]:.3f},{rn['ci95'][1]:.3f}]"
                f"   {rf['ratio_of_medians']:5.3f}"
            )
        print(
            "   floor: a minimal wrapper (benchmarks/_harness.py SpanOnlySaver) doing only what"
            " the contract\n   requires of every call (one span with the common attributes, one"
            " duration measurement)"
        )
    if results["memory"]:
        print("\n4. " + "\n".join(memory.report_lines(results["memory"])))
        if results["memory"].get("approval"):
            print("   " + "\n   ".join(memory.approval_lines(results["memory"]["approval"])))
    if results["peers"]:
        print("\n5. " + "\n".join(peers.report_lines(results["peers"])))
    if results["own_work"]:
        print("\n6. " + "\n".join(own_work.report_lines(results["own_work"])))
    if results["restart"]:
        print("\n7. " + "\n".join(restart.report_lines(results["restart"])))
    if results["inspector_scale"]:
        print("\n8. " + "\n".join(inspector_scale.report_lines(results["inspector_scale"])))
    if results["matrix"]:
        print("\n9. " + "\n".join(matrix.report_lines(results["matrix"])))
    if results["breakdown"]:
        print("\n10. " + "\n".join(breakdown.report_lines(results["breakdown"])))
    if results["service"]:
        print("\n12. " + "\n".join(service.report_lines(results["service"])))
    if results["retention"]:
        print("\n13. " + "\n".join(retention_bench.report_lines(results["retention"])))
    if results["messages"]:
        print("\n14. " + "\n".join(message_bench.report_lines(results["messages"])))
    if results["reads"]:
        print(
            f"\n3. reads of a {READ_CHECKPOINTS}-checkpoint thread (median ms; ratio to bare): "
            "hidden_only = wrapper with telemetry off\n   (delegation + hiding the stored `otel` "
            "key), instrumented = telemetry on (no-op exporter)"
        )
        for x in results["reads"]:
            for op, o in x["ops"].items():
                ms, r = o["ms"], o["ratios"]
                print(
                    f"{x['saver']:8} {op:9} bare {ms['bare']['median']:8.3f}  hidden_only "
                    f"{ms['hidden_only']['median']:8.3f} ({r['hidden_only']:.3f})  instrumented "
                    f"{ms['instrumented']['median']:8.3f} ({r['instrumented']:.3f})"
                )
    if results["history"]:
        print(
            "\n2. InMemorySaver, 1-node graph appending one message per turn to a pre-filled "
            "thread;\n   put = the put that writes `messages` (median, IQR); "
            "added = instrumented put - inner put, per call"
        )
        print(
            f"{'history':8} {'msgs':>6} {'stored':>9} {'turns':>5} {'bare put':>24} "
            f"{'instr. put':>24} {'added (paired)':>24} {'added (diff of med.) [CI]':>30} "
            f"{'invoke ratio':>12}"
        )
        for x in results["history"]:
            p, a = x["put_ms"], x["added_ms"]
            ci = a["median_difference_ci95"]
            print(
                f"{x['size']:8} {x['messages']:6d} {x['stored_channel_bytes'] / 1e6:7.2f}MB "
                f"{x['turns']:5d} {fmt_ms(p['bare']):>24} {fmt_ms(p['inst']):>24} "
                f"{fmt_ms(a['paired_exclusive']):>24} "
                f"{a['median_difference']:9.2f} [{ci[0]:.2f},{ci[1]:.2f}] ms    "
                f"{x['invoke_ratio_of_medians']:8.2f}"
            )
    print("\nSUMMARY")
    for t in targets:
        extra = ""
        if "added_ms" in t:
            extra = f"  (added {t['added_ms']['10MB']:.3f} ms vs {t['added_ms']['10KB']:.3f} ms)"
        elif "ci95" in t:
            extra = f"  [95% CI {t['ci95'][0]:.3f}-{t['ci95'][1]:.3f}]"
        if t["kind"] == "target":
            mark = "PASS" if t["status"] == "PASS" else "*** FAIL ***"
        else:
            mark = f"info ({'within' if t['status'] == 'PASS' else 'over'} limit)"
        print(f"  {mark:24} {t['value']:8.3f} <= {t['limit']:<5.4g}  {t['name']}{extra}")
    failed = [t for t in targets if t["kind"] == "target" and t["status"] == "FAIL"]
    n = sum(t["kind"] == "target" for t in targets)
    if failed:
        print(f"\n!!! {len(failed)} of {n} TARGETS FAILED !!!")
    else:
        print(f"\nall {n} targets passed")


if __name__ == "__main__":
    sys.exit(main())
