"""What hashing one message costs warm, and with the CPU caches evicted before each call.

    .venv/bin/python benchmarks/cold_hash.py    # ~10 s

Inside a real put the hasher runs between two graph steps, whose data has replaced its code
and tables in the CPU caches; this shows how much that alone changes the cost of the same
call. "Cold" touches 12.8 MB of unrelated memory before each timed call (thread CPU time).
"""

from __future__ import annotations

import hashlib
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h
import ormsgpack
from langchain_core.messages import AIMessage

from langgraph.checkpoint.otel.analysis import encoding

_JUNK = [bytearray(64) for _ in range(200_000)]


def _evict_caches() -> None:
    for block in _JUNK:
        block[0] = 1


def median_us(fn: Callable[[int], Any], calls: int, cold: bool) -> float:
    times = []
    for i in range(calls):
        if cold:
            _evict_caches()
        started = time.thread_time_ns()
        fn(i)
        times.append(time.thread_time_ns() - started)
    return statistics.median(times) / 1e3


def main() -> int:
    calls = 1500
    messages = [AIMessage(h.TEXT, name="n0", id=str(uuid.uuid4())) for _ in range(2 * calls)]
    ctx = encoding._Ctx(None)
    seed = b"\0" * 16
    fields = {"content": h.TEXT, "name": "n0", "type": "ai", "additional_kwargs": {}}
    blob = b"x" * 300
    # each timed call hashes a message not hashed before (the warm calls take the first half)
    cases: dict[str, Callable[[int], Any]] = {
        "chain one new message": lambda i: encoding._chain_items(seed, (messages[i],), ctx),
        "ormsgpack.packb of its fields": lambda i: ormsgpack.packb(
            fields, option=encoding._PACK_OPTIONS
        ),
        "blake2b of 300 bytes": lambda i: hashlib.blake2b(blob, digest_size=16).digest(),
        "an empty call (timer floor)": lambda i: None,
    }
    print(f"median thread CPU per call, {calls} calls each")
    print(f"  {'':32s} {'warm us':>8s} {'cold us':>8s}")
    for label, fn in cases.items():
        warm = median_us(fn, calls, cold=False)
        cold = median_us(lambda i, fn=fn: fn(calls + i), calls, cold=True)
        print(f"  {label:32s} {warm:8.1f} {cold:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
