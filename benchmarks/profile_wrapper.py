"""Where the instrumented saver spends its time: CPU-time cProfile across all threads.

    .venv/bin/python benchmarks/profile_wrapper.py graph    # 10-node graph, InMemorySaver
    .venv/bin/python benchmarks/profile_wrapper.py history  # one turn on a ~10 MB thread
    .venv/bin/python benchmarks/profile_wrapper.py agent    # create_react_agent, InMemorySaver

LangGraph runs checkpointer calls on executor threads, so a plain cProfile of the main thread
sees only waiting. Every thread started while profiling gets its own profiler, timed with
`time.thread_time_ns` (CPU time of that thread, so GIL waits are not charged to whoever
waits), and the profiles are merged. cProfile inflates call-heavy code; read shares, not ms.
"""

from __future__ import annotations

import contextlib
import cProfile
import pstats
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
from langchain_core.messages import HumanMessage

WRAPPER_FUNCS = [
    "saver.py:.*\\((put|put_writes|get_tuple)\\)",
    "observer.py:.*\\((put|put_writes|load)\\)",
    "_describe_put",
    "_describe_writes",
    "digest_state",
    "_digest_list",
    "_enc_items",
    "_channel_events",
    "summarize",
    "_summarize_sequence",
    "_is_message",
    "record_sizes",
    "count_task_outcome",
    "telemetry.py:.*\\(operation\\)",
    "telemetry.py:.*\\(_finish\\)",
    "telemetry.py:.*\\(set\\)",
    "telemetry.py:.*\\(event\\)",
    "sdk/trace/__init__.py:.*\\(start_span\\)",
    "sdk/trace/__init__.py:.*\\(end\\)",
    "_stored_hashes",
]


class AllThreads:
    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _new(self) -> cProfile.Profile:
        p = cProfile.Profile(time.thread_time_ns, 1e-9)
        with self._lock:
            self.profiles.append(p)
        return p

    def __enter__(self) -> AllThreads:
        threading.setprofile(lambda *a: self._new().enable())
        self._main = self._new()
        self._main.enable()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._main.disable()
        threading.setprofile(None)
        time.sleep(0.2)

    def stats(self) -> pstats.Stats:
        stats = pstats.Stats(self.profiles[0])
        for p in self.profiles[1:]:
            with contextlib.suppress(TypeError, ValueError):  # a thread that ran no Python
                stats.add(p)
        return stats


def report(stats: pstats.Stats, label: str) -> None:
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"\n== {label}: {total:.2f} s CPU in all threads (profiled) ==")
    print(f"{'share':>6} {'cum s':>7} {'calls':>7}  function")
    raw = stats.stats  # type: ignore[attr-defined]
    import re

    rows = []
    for pattern in WRAPPER_FUNCS:
        rx = re.compile(pattern)
        for (file, line, fn), (_cc, nc, _tt, ct, _callers) in raw.items():
            if rx.search(f"{file}:{line}({fn})"):
                rows.append((ct, nc, f"{Path(file).name}:{line}({fn})"))
    seen = set()
    for ct, nc, name in rows:
        if name in seen:
            continue
        seen.add(name)
        print(f"{100 * ct / total:5.1f}% {ct:7.3f} {nc:7d}  {name}")
    print("\ntop functions by own (tottime) CPU:")
    stats.sort_stats("tottime").print_stats(15)


def profile_graph(n: int = 100) -> None:
    tel = h.Telemetry("memory")
    g = h.linear_graph(10).compile(checkpointer=h.instrumented(h.make_saver("memory"), tel))
    inp = {"messages": [HumanMessage("hello")], "count": 0}
    for _ in range(20):
        g.invoke(inp, h.fresh_config())
    with AllThreads() as prof:
        for _ in range(n):
            g.invoke(inp, h.fresh_config())
    report(prof.stats(), f"{n} invokes of the 10-node graph, instrumented InMemorySaver")
    tel.shutdown()


def profile_history(n_msgs: int = 25_000, turns: int = 2) -> None:
    tel = h.Telemetry("memory")
    g = h.linear_graph(1).compile(checkpointer=h.instrumented(h.make_saver("memory"), tel))
    cfg = {"configurable": {"thread_id": "history"}}
    g.invoke({"messages": h.history_messages(n_msgs, "p")}, cfg)
    g.invoke({"count": -1}, cfg)  # caches warm from the previous put of this thread
    with AllThreads() as prof:
        for i in range(turns):
            g.invoke({"count": i}, cfg)
    report(prof.stats(), f"{turns} turns on a {n_msgs}-message thread, instrumented InMemorySaver")
    tel.shutdown()


def profile_agent(n: int = 200) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "apps"))
    import agents

    tel = h.Telemetry("noop")
    g = agents.react_agent(h.instrumented(h.make_saver("memory"), tel))
    for _ in range(20):
        g.invoke(agents.question(), h.fresh_config())
    with AllThreads() as prof:
        for _ in range(n):
            g.invoke(agents.question(), h.fresh_config())
    stats = prof.stats()
    report(stats, f"{n} turns of create_react_agent (scripted model), instrumented InMemorySaver")
    print("\nthe library's own functions by own (tottime) CPU:")
    stats.sort_stats("tottime").print_stats("checkpoint/otel/", 30)
    tel.shutdown()


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "graph"
    {"graph": profile_graph, "history": profile_history, "agent": profile_agent}[which]()
