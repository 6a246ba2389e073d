"""One thread written by several processes at once (`test_concurrent_writes.py`).

    python concurrent_app.py BACKEND THREAD_ID MEETING_DIR COUNT

runs one turn of a slow graph on the thread (its node takes half a second), through the
instrumented saver with a real SDK (so every checkpoint stores the trace that wrote it). After
loading the thread's latest checkpoint it waits until COUNT processes have loaded theirs (each
leaves a file in MEETING_DIR), as two workers taking one thread together do: all load before any
writes, however the machine schedules them.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from opentelemetry.sdk.trace import TracerProvider

from crash_app import open_saver
from graphs import slow_turns
from langgraph.checkpoint.otel import instrument


def meet_after_loading(saver: Any, meeting: Path, count: int) -> None:
    """The saver's first load returns once `count` processes have made theirs."""
    load, met = saver.get_tuple, False

    def get_tuple(config: Any) -> Any:
        nonlocal met
        loaded = load(config)
        if not met:
            met = True
            (meeting / str(os.getpid())).touch()
            deadline = time.monotonic() + 60
            while len(list(meeting.iterdir())) < count and time.monotonic() < deadline:
                time.sleep(0.005)
        return loaded

    saver.get_tuple = get_tuple


def main() -> None:
    backend, thread_id, meeting, count = sys.argv[1:5]
    with open_saver(backend) as inner:
        meet_after_loading(inner, Path(meeting), int(count))
        graph = slow_turns().compile(
            checkpointer=instrument(inner, tracer_provider=TracerProvider())
        )
        graph.invoke({"log": [thread_id]}, {"configurable": {"thread_id": thread_id}})


if __name__ == "__main__":
    main()
