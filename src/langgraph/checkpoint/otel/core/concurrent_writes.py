"""Two runs writing one thread at once, seen as this process writes: a checkpoint put beside
another run's child of the same parent (see `detectors.concurrent_sibling`)."""

from __future__ import annotations

import threading

from langgraph.checkpoint.otel.analysis.detectors import concurrent_sibling
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, Scope
from langgraph.checkpoint.otel.bounded import BoundedDict

MAX_PARENTS = 1024
"""Parents whose children are remembered: concurrent writes are close in time. Each entry
holds at most `MAX_CHILDREN` small records of ids bounded to `names.MAX_ID_LENGTH`, so the
whole stays under about 2 MB."""
MAX_CHILDREN = 4


class ConcurrentWrites:
    """The children this process wrote on each recent parent, and by which trace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: BoundedDict[tuple[str, str, str], list[CheckpointRecord]] = BoundedDict(
            MAX_PARENTS
        )

    def note(self, scope: Scope, record: CheckpointRecord) -> CheckpointRecord | None:
        """Remember `record` as a child of its parent; the child another run wrote there at
        once, if any."""
        if record.parent_id is None:
            return None
        key = (scope[0], scope[1], record.parent_id)
        with self._lock:
            siblings = self._children.get(key, [])
            if any(s.checkpoint_id == record.checkpoint_id for s in siblings):
                return None  # the same checkpoint put again (an exiting loop's last put)
            self._children[key] = [*siblings, record][-MAX_CHILDREN:]
        return concurrent_sibling(siblings, record)
