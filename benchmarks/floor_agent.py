"""What the SDK calls alone cost on the agent: the wrapper with its own computation stubbed.

    .venv/bin/python benchmarks/floor_agent.py [ROUNDS]    # default 300, ~1 min on 2 cores

`create_react_agent` (tests/apps/agents.py, scripted model) on SqliteSaver files, three variants
interleaved with a rotating order: bare; the instrumented saver; and the instrumented saver
whose hasher returns constant digests and whose channel summaries are a constant string, so
it makes the same SDK calls (spans, attributes, events, metric records) without hashing or
summarizing. CPU time of the whole process per invoke plus a span flush, as in `peers.py`.
The third ratio is an upper bound of the floor the SDK calls set: node naming, attribute
building and stored metadata still run.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tests" / "apps"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _harness as h  # noqa: E402
from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402

import agents  # noqa: E402
from langgraph.checkpoint.otel import instrument  # noqa: E402
from langgraph.checkpoint.otel.analysis import hashing  # noqa: E402
from langgraph.checkpoint.otel.core import put_facts  # noqa: E402


class ConstantHasher(hashing.StateHasher):
    """Digests every channel as the same constant: no encoding, no hashing."""

    def digest_state(
        self, scope: Any, values: Any, versions: Any, changed: Any
    ) -> hashing.StateDigest:
        digest = hashing.ChannelDigest("0" * 32, 10, 1)
        return hashing.StateDigest(
            {c: digest for c in values},
            tuple(sorted(c for c in changed if c in values)),
            {},
            "0" * 32,
            10 * len(values),
            10,
        )


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    tel = h.Telemetry("noop")
    tmp = tempfile.mkdtemp(prefix="lgotel-floor-")

    def saver(name: str) -> SqliteSaver:
        inner = SqliteSaver(sqlite3.connect(os.path.join(tmp, name), check_same_thread=False))
        inner.setup()
        return inner

    def wrapped(name: str) -> Any:
        return instrument(
            saver(name), tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider
        )

    floor = wrapped("floor.db")
    floor.observer._hasher.__class__ = ConstantHasher
    put_facts.summarize = lambda value, previous: "list: 1 item"  # this process only
    graphs = {
        "bare": agents.react_agent(saver("bare.db")),
        "instrumented": agents.react_agent(wrapped("ours.db")),
        "sdk_calls_only": agents.react_agent(floor),
    }

    def run(variant: str) -> float:
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        started = time.process_time_ns()
        graphs[variant].invoke(agents.question(), config)
        tel.tracer_provider.force_flush()
        return (time.process_time_ns() - started) / 1e6

    order = list(graphs)
    for _ in range(20):
        for variant in order:
            run(variant)
    times: dict[str, list[float]] = {v: [] for v in order}
    for r in range(rounds):
        k = r % len(order)
        for variant in order[k:] + order[:k]:
            times[variant].append(run(variant))
    bare = statistics.median(times["bare"])
    print(f"create_react_agent, SqliteSaver, {rounds} rounds, CPU per invoke / bare:")
    for variant, values in times.items():
        median = statistics.median(values)
        print(f"  {variant:15s} {median:7.3f} ms  ratio {median / bare:.3f}")
    tel.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
