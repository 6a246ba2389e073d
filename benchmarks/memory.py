"""What the wrapper keeps in memory across many threads (target: at most 10 MB, any message size).

Each (variant, message size) runs in a fresh subprocess: N threads, each one `invoke` of a
5-node graph (every node appends one message of the given size: 5 steps, 6 checkpoints), then
the thread is deleted from the *inner* saver directly. The saver's own storage therefore stays
flat, and the wrapper is never told (as with threads that live on in a database): what grows is
what the wrapper keeps. Reported per run: RSS growth (``/proc/self/statm``, after a warm-up of
200 threads) and tracemalloc growth; the figure is instrumented minus bare, at ~400 B and at
20 KB messages (it must not depend on the message size).

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


def child(variant: str, size: int, threads: int) -> dict[str, Any]:
    """One measurement (run in its own process)."""
    import tracemalloc

    import _harness as h
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    from langgraph.checkpoint.otel import instrument

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
    saver = (
        inner
        if variant == "bare"
        else instrument(
            inner, tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider
        )
    )
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
    args = parser.parse_args()
    if args.child:
        variant, size, threads = args.child
        print(json.dumps(child(variant, int(size), int(threads))))
        return 0
    result = bench_memory("quick" if args.quick else "full")
    print("\n".join(report_lines(result)))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
