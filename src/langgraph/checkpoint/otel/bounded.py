"""The one bounded-memory mapping every in-process cache of the wrapper uses."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedDict(OrderedDict[K, V], Generic[K, V]):
    """A least-recently-stored mapping that forgets its oldest entries beyond `max_entries`.

    Readers that want least-recently-used order call `move_to_end(key)` on a hit.
    """

    def __init__(self, max_entries: int) -> None:
        super().__init__()
        self.max_entries = max_entries

    def evict(self, stale: Callable[[K], bool]) -> None:
        """Forget every entry whose key is `stale`."""
        for key in [key for key in self if stale(key)]:
            del self[key]

    def __setitem__(self, key: K, value: V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.max_entries:
            self.popitem(last=False)
