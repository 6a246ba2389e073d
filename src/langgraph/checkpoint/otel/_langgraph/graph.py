"""Rewriting a graph's nodes (the resume harness injects failures through it): the builder's
node specs, its default error handler and LangGraph's own node runnable."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import StateGraph

DEFAULT_ERROR_HANDLER = "__default_error_handler__"
"""The error-handler node `compile()` adds itself when the builder declares a default one."""

NodeWrapper = Callable[[str, Runnable[Any, Any]], Runnable[Any, Any]]
"""(node name, its runnable) -> the runnable to run instead."""


def with_wrapped_nodes(
    builder: StateGraph[Any, Any, Any, Any], wrap: NodeWrapper
) -> StateGraph[Any, Any, Any, Any]:
    """A copy of `builder` whose nodes (not error handlers) run `wrap(name, runnable)`;
    `builder` is left untouched.

    `StateGraph.compile` mutates the builder (``compiled``, node specs, a default error handler
    node), so the copy gets its own node dict and new `StateNodeSpec`s; edges, branches,
    channels and schemas are only read by `compile` and stay shared.
    """
    clone = copy.copy(builder)
    defaults = getattr(builder, "_node_defaults", None)
    nodes: dict[str, Any] = {}
    for name, spec in builder.nodes.items():
        if spec.is_error_handler:
            if name == DEFAULT_ERROR_HANDLER and getattr(defaults, "error_handler", None):
                continue  # compile() adds it again
            nodes[name] = dataclasses.replace(spec)
            continue
        runnable: Any = spec.runnable
        nodes[name] = dataclasses.replace(spec, runnable=wrap(name, runnable))
    clone.nodes = nodes
    clone.compiled = False
    return clone


def node_runnable(
    name: str,
    run: Callable[[Any, RunnableConfig], Any],
    arun: Callable[[Any, RunnableConfig], Awaitable[Any]],
) -> Runnable[Any, Any]:
    """A node body as LangGraph runs its own: no trace of its own, the config passed in."""
    return RunnableCallable(run, arun, name=name, trace=False, recurse=False)
