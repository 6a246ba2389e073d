"""`concurrent_write`: two runs wrote a child of one checkpoint, neither on a parent it chose
(a fork, `update_state`): they ran at once on one thread (double-texting, two workers), and
one run's checkpoints are not in the other's line. The later child's chain is not compared as a
branch (its input differs by design). Offline only (online it is the put's
``langgraph.concurrent_write`` event)."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.otel.analysis.detectors.finding import Detector, Finding
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord


class ConcurrentWrite(Detector):
    kind = "concurrent_write"

    def sibling(
        self, child: CheckpointRecord, earlier: Sequence[CheckpointRecord]
    ) -> list[Finding]:
        other = concurrent_sibling(earlier, child)
        if other is None:
            return []
        return [
            Finding(
                kind="concurrent_write",
                step=child.step,
                checkpoint_id=child.checkpoint_id,
                reference_checkpoint_id=other.checkpoint_id,
                node=",".join(child.nodes) or None,
                expected=other.trace_id,
                actual=child.trace_id,
                traces=tuple(t for t in (other.trace_id, child.trace_id) if t),
            )
        ]


def concurrent_sibling(
    earlier: Sequence[CheckpointRecord], child: CheckpointRecord
) -> CheckpointRecord | None:
    """The earlier sibling `child` was written beside by another run at once, if any: both on
    the parent as the thread's latest (neither a fork nor an `update_state`), by two traces."""
    if child.trace_id is None or child.parent_chosen:
        return None
    return next(
        (
            other
            for other in earlier
            if other.trace_id is not None
            and other.trace_id != child.trace_id
            and not other.parent_chosen
        ),
        None,
    )
