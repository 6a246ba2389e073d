"""Run `retention --apply` (keep the last 2 checkpoints) on a store and SIGKILL this process at
the `nth` time the apply reaches `point` (see `retention.apply.STEPS`); used by
tests/integration/test_retention_sigkill.py.

    python retention_kill.py SOURCE ARCHIVE POINT NTH
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from langgraph.checkpoint.otel.analysis.retention import RetentionPolicy
from langgraph.checkpoint.otel.inspector.sources import open_sources
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery
from langgraph.checkpoint.otel.retention.apply import apply_plans
from langgraph.checkpoint.otel.retention.scan import plan_threads

POLICY = RetentionPolicy(keep_last=2)
FAR = datetime.now(UTC) + timedelta(days=3650)


def main(source: str, archive: str, point: str, nth: int) -> int:
    seen: list[str] = []

    def kill_there(reached: str) -> None:
        seen.append(reached)
        if reached == point and seen.count(point) == nth:
            os.kill(os.getpid(), signal.SIGKILL)

    with open_sources([source], writable=True) as sources:
        assert sources.saver is not None
        plans = list(plan_threads(sources.saver, POLICY, ThreadQuery(limit=None), FAR))
        apply_plans(sources.saver, plans, Path(archive), policy=POLICY, on_step=kill_there)
    return 3  # not killed: the point was never reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
