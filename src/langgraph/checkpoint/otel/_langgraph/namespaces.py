"""LangGraph's checkpoint namespaces (``checkpoint_ns``), and the node names other layers need.

A subgraph's checkpoints carry the namespace of the graph that runs it: one segment per level of
nesting, ``<node>:<task id>``, joined by ``|`` (``researcher:1f2|agent:9c``); the root graph's is
``""``. Every reading of that format in the package goes through this module (pure functions
over strings), so a change of format in a LangGraph release is met here.
"""

from __future__ import annotations

from langgraph.constants import START

__all__ = [
    "NAMESPACE_SEPARATOR",
    "START",
    "TASK_SEPARATOR",
    "graph_key",
    "namespace_depth",
    "parent_namespace",
    "subgraph_node",
]

NAMESPACE_SEPARATOR = "|"
"""Joins the namespaces of nested subgraphs: ``parent:<task id>|child:<task id>``."""
TASK_SEPARATOR = ":"
"""Joins a subgraph's node and task id inside one namespace segment: ``<node>:<task id>``."""


def graph_key(namespace: str) -> str:
    """A graph's namespace without its task ids: ``researcher:1f2|agent:9c`` ->
    ``researcher|agent`` (the same subgraph in every run and on every branch)."""
    return NAMESPACE_SEPARATOR.join(
        part.partition(TASK_SEPARATOR)[0] for part in namespace.split(NAMESPACE_SEPARATOR) if part
    )


def parent_namespace(namespace: str) -> str:
    """The namespace of the graph that runs a subgraph (or a task) whose namespace is
    `namespace`: ``a:1|b:2`` -> ``a:1``, ``a:1`` -> ``""`` (the root graph)."""
    return namespace.rpartition(NAMESPACE_SEPARATOR)[0]


def namespace_depth(namespace: str) -> int:
    """How deep a subgraph's namespace is nested: ``a:1`` -> 1 (run by the root graph),
    ``a:1|b:2`` -> 2."""
    return namespace.count(NAMESPACE_SEPARATOR) + 1


def subgraph_node(namespace: str) -> str:
    """The node that runs the innermost subgraph of `namespace` (``a:<id>|b:<id>`` -> ``b``)."""
    return namespace.rpartition(NAMESPACE_SEPARATOR)[2].partition(TASK_SEPARATOR)[0]
