"""One thread written by two processes at once (`test_concurrent_writes.py`).

    python concurrent_app.py BACKEND THREAD_ID GO_FILE

waits until GO_FILE exists, then runs one turn of a slow graph on the thread (its node takes
half a second), through the instrumented saver with a real SDK (so every checkpoint stores
the trace that wrote it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from opentelemetry.sdk.trace import TracerProvider

from crash_app import open_saver
from graphs import slow_turns
from langgraph.checkpoint.otel import instrument


def main() -> None:
    backend, thread_id, go = sys.argv[1:4]
    with open_saver(backend) as inner:
        graph = slow_turns().compile(
            checkpointer=instrument(inner, tracer_provider=TracerProvider())
        )
        deadline = time.monotonic() + 60
        while not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        graph.invoke({"log": [thread_id]}, {"configurable": {"thread_id": thread_id}})


if __name__ == "__main__":
    main()
