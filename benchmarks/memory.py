"""What the wrapper keeps in memory across many threads (target: at most 10 MB, any message size).

Each (variant, message size) runs in a fresh subprocess: N threads, each one `invoke` of a
5-node graph (every node appends one message of the given size: 5 steps, 6 checkpoints), then
the thread is deleted from the *inner* saver directly. The saver's own storage therefore stays
flat, and the wrapper is never told (as with threads that live on in a database): what grows is
what the wrapper keeps. Reported per run: RSS growth (``/proc/self/statm``, after a warm-up of
200 threads) and tracemalloc growth; the figure is instrumented minus bare, at ~400 B and at
20 KB messages (it must not depend on the message size).

The `approval` workload is a team's support desk instead: `create_react_agent` whose turns
each fetch a 100 KB order record and stop for a human's approval (`interrupt()`), every turn
resumed (so the divergence watch opens a session per thread): 2,000 threads of two approved
turns, 8,000 runs, RSS read every 2,000 runs; the figure is instrumented growth minus bare
growth from the first reading to the last (target: the same 10 MB).

    .venv/bin/python benchmarks/memory.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "apps"))

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


TARGET_MB = 10.0
THREADS = {"full": 10_000, "quick": 1_000}
SIZES = {"400B": 400, "20KB": 20 * 1024}
WARMUP = 200


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _saver(variant: str, inner: Any, tel: Any) -> Any:
    """`inner` itself (bare) or wrapped, reporting to `tel`'s providers."""
    if variant == "bare":
        return inner
    from langgraph.checkpoint.otel import instrument

    return instrument(inner, tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider)


def child(variant: str, size: int, threads: int) -> dict[str, Any]:
    """One measurement (run in its own process)."""
    import tracemalloc

    import _harness as h
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            # a fresh string per message: nothing is shared between threads
            text = f"{name} {len(state['messages'])} ".ljust(size, "x")
            return {"messages": [AIMessage(text, id=f"{name}-{len(state['messages'])}")]}

        return run

    builder = StateGraph(State)
    previous = START
    for i in range(5):
        builder.add_node(f"n{i}", node(f"n{i}"))
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    builder.add_edge(previous, END)

    tel = h.Telemetry("noop")
    inner = InMemorySaver()
    saver = _saver(variant, inner, tel)
    graph = builder.compile(checkpointer=saver)

    def one(i: int) -> None:
        thread = f"t{i}"
        text = f"question {i} ".ljust(size, "q")
        graph.invoke(
            {"messages": [HumanMessage(text, id=f"h{i}")]}, {"configurable": {"thread_id": thread}}
        )
        inner.delete_thread(thread)  # bare: the wrapper is not told

    for i in range(WARMUP):
        one(-1 - i)
    tel.drop_exported()
    gc.collect()
    tracemalloc.start()
    rss0, (traced0, _) = _rss_bytes(), tracemalloc.get_traced_memory()
    for i in range(threads):
        one(i)
        if i % 500 == 0:
            tel.drop_exported()
    tel.drop_exported()
    gc.collect()
    traced1, _ = tracemalloc.get_traced_memory()
    rss1 = _rss_bytes()
    tracemalloc.stop()
    cache = saver.observer.cache_sizes() if variant != "bare" else {}  # type: ignore[attr-defined]
    tel.shutdown()
    return {
        "rss_growth_mb": (rss1 - rss0) / 1e6,
        "traced_growth_mb": (traced1 - traced0) / 1e6,
        "caches": cache,
    }


APPROVAL_RUNS = {"full": 8_000, "quick": 2_000}
APPROVAL_EVERY = 1_000


def child_approval(variant: str, runs: int) -> dict[str, Any]:
    """RSS every `APPROVAL_EVERY` runs of the approval workload (run in its own process)."""
    import _harness as h
    from langgraph.checkpoint.memory import InMemorySaver

    import agents

    tel = h.Telemetry("noop")
    inner = InMemorySaver()
    saver = _saver(variant, inner, tel)
    graph = agents.refund_desk(saver)
    readings: list[tuple[int, float]] = []
    done = 0
    for i in range(runs // 4):
        agents.two_approved_turns(graph, f"t{i}")
        inner.delete_thread(f"t{i}")  # the wrapper is not told
        done += 4
        if done % APPROVAL_EVERY == 0:
            tel.drop_exported()
            gc.collect()
            readings.append((done, _rss_bytes() / 1e6))
    cache = saver.observer.cache_sizes() if variant != "bare" else {}  # type: ignore[attr-defined]
    tel.shutdown()
    return {"readings": readings, "caches": cache}


def bench_approval(label: str) -> dict[str, Any]:
    """The approval workload, bare and instrumented, each in its own subprocess."""
    runs = APPROVAL_RUNS[label]
    result: dict[str, Any] = {"runs": runs, "target_mb": TARGET_MB}
    for variant in ("bare", "instrumented"):
        out = subprocess.run(
            [sys.executable, __file__, "--approval", variant, str(runs)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        row = json.loads(out.strip().splitlines()[-1])
        readings = row["readings"]
        row["growth_mb"] = readings[-1][1] - readings[0][1]
        result[variant] = row
    result["added_growth_mb"] = result["instrumented"]["growth_mb"] - result["bare"]["growth_mb"]
    result["passed"] = result["added_growth_mb"] <= TARGET_MB
    return result


def approval_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        f"memory, approval workload: {result['runs']} runs (threads of two approved refund "
        "turns, 100 KB tool results, every turn a resume); RSS in MB at each reading"
    ]
    for variant in ("bare", "instrumented"):
        readings = "  ".join(f"{runs}: {mb:6.1f}" for runs, mb in result[variant]["readings"])
        lines.append(f"  {variant:12s} {readings}")
    lines.append(
        f"  growth from the first reading: bare {result['bare']['growth_mb']:.1f}, instrumented "
        f"{result['instrumented']['growth_mb']:.1f}, added {result['added_growth_mb']:.1f} "
        f"(target <= {result['target_mb']:.0f})"
    )
    return lines


def bench_memory(label: str) -> dict[str, Any]:
    """Every (size, variant) in its own subprocess; JSON-serializable."""
    threads = THREADS[label]
    result: dict[str, Any] = {"threads": threads, "steps": 5, "target_mb": TARGET_MB, "sizes": {}}
    for size_label, size in SIZES.items():
        row: dict[str, Any] = {}
        for variant in ("bare", "instrumented"):
            out = subprocess.run(
                [sys.executable, __file__, "--child", variant, str(size), str(threads)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            row[variant] = json.loads(out.strip().splitlines()[-1])
        row["added_rss_mb"] = row["instrumented"]["rss_growth_mb"] - row["bare"]["rss_growth_mb"]
        row["added_traced_mb"] = (
            row["instrumented"]["traced_growth_mb"] - row["bare"]["traced_growth_mb"]
        )
        result["sizes"][size_label] = row
    added = [row["added_rss_mb"] for row in result["sizes"].values()]
    result["passed"] = max(added) <= TARGET_MB
    return result


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        f"memory: {result['threads']} threads x {result['steps']} steps, each thread deleted from "
        "the inner saver (the wrapper keeps what it keeps); growth in MB"
    ]
    for size_label, row in result["sizes"].items():
        bare, instrumented = row["bare"], row["instrumented"]
        lines.append(
            f"  {size_label:5s} messages: RSS bare {bare['rss_growth_mb']:7.2f}  "
            f"instrumented {instrumented['rss_growth_mb']:7.2f}  "
            f"added {row['added_rss_mb']:6.2f}   (tracemalloc added {row['added_traced_mb']:6.2f})"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "SIZE", "THREADS"))
    parser.add_argument("--approval", nargs=2, metavar=("VARIANT", "RUNS"))
    args = parser.parse_args()
    if args.child:
        variant, size, threads = args.child
        print(json.dumps(child(variant, int(size), int(threads))))
        return 0
    if args.approval:
        variant, runs = args.approval
        print(json.dumps(child_approval(variant, int(runs))))
        return 0
    label = "quick" if args.quick else "full"
    result = bench_memory(label)
    print("\n".join(report_lines(result)))
    approval = bench_approval(label)
    print("\n".join(approval_lines(approval)))
    print(json.dumps({**result, "approval": approval}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
