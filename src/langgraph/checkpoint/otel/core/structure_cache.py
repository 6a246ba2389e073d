"""The structure of each compiled graph a run uses, described and hashed once per graph."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from langgraph.checkpoint.otel._langgraph.graph import graph_description
from langgraph.checkpoint.otel.analysis.graph_structure import GraphStructure, StructureSummary

_lock = threading.Lock()
_by_graph: weakref.WeakKeyDictionary[Any, StructureSummary] = weakref.WeakKeyDictionary()
"""Held as long as the graph lives: graphs built per run (a server's graph factory) go with
their runs."""


def structure_of(graph: Any) -> StructureSummary:
    """The structure summary of a compiled graph (raises on a graph it cannot read)."""
    try:
        with _lock:
            known = _by_graph.get(graph)
    except TypeError:  # not hashable or not weakly referenceable: described every run
        return _described(graph)
    if known is None:
        known = _described(graph)
        with _lock:
            _by_graph[graph] = known
    return known


def _described(graph: Any) -> StructureSummary:
    return GraphStructure.of(graph_description(graph)).summary()
