"""Savers that delegate to other savers: the Agent Server's `_CustomCheckpointerAdapter`
(which keeps the custom checkpointer as `_inner`), users' caches and retry layers, AWS's
`DeferredCheckpointSaver`. None of them says so in a public API; each keeps its delegate as an
instance attribute, which is what is read here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

DELEGATION_DEPTH = 4
"""Layers of delegating savers looked through."""


def delegates(saver: object, depth: int = DELEGATION_DEPTH) -> Iterator[BaseCheckpointSaver[Any]]:
    """The savers `saver` keeps as instance attributes, and theirs, `depth` layers deep."""
    if depth <= 0:
        return
    try:
        attributes = list(vars(saver).values())
    except TypeError:  # no instance dictionary (slots)
        return
    for value in attributes:
        if isinstance(value, BaseCheckpointSaver) and value is not saver:
            yield value
            yield from delegates(value, depth - 1)
