"""A compiled graph's builder, read and rewritten: its structure (`graph_description`, for the
graph fingerprint), and its nodes rewritten (the resume harness injects failures through it):
the builder's node specs, its default error handler and LangGraph's own node runnable."""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import inspect
import textwrap
import typing
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


MAX_SUBGRAPH_DEPTH = 8
"""Subgraphs nested deeper than this are named by their node only (no structure hash)."""


def graph_description(graph: Any, depth: int = 0) -> dict[str, Any]:
    """The structure of a compiled graph as plain data, by name only (never a value, default
    or docstring): the fields of `analysis.graph_structure.GraphStructure`, with `subgraphs`
    mapping a node to its subgraph's description and `tools` a tool node to its tools' names.
    A graph without a `StateGraph` builder (a bare `Pregel`) gives its channels and nodes
    alone."""
    builder = getattr(graph, "builder", None)
    node_specs: dict[str, Any] = dict(getattr(builder, "nodes", None) or {})
    nodes = list(node_specs) or list(getattr(graph, "nodes", None) or ())
    subgraphs: dict[str, Any] = {}
    if depth < MAX_SUBGRAPH_DEPTH:
        get_subgraphs = getattr(graph, "get_subgraphs", None)
        for node, subgraph in get_subgraphs() if callable(get_subgraphs) else ():
            subgraphs[str(node)] = graph_description(subgraph, depth + 1)
    return {
        "nodes": [str(n) for n in nodes],
        "edges": [(str(a), str(b)) for a, b in getattr(builder, "edges", None) or ()],
        "branches": [
            (str(source), str(name), sorted(str(t) for t in (spec.ends or {}).values()))
            for source, named in (getattr(builder, "branches", None) or {}).items()
            for name, spec in named.items()
        ],
        "channels": {
            str(name): _channel_kind(channel)
            for name, channel in (getattr(graph, "channels", None) or {}).items()
        },
        "interrupt_before": _node_names(getattr(graph, "interrupt_before_nodes", ())),
        "interrupt_after": _node_names(getattr(graph, "interrupt_after_nodes", ())),
        "deferred": [str(n) for n, spec in node_specs.items() if getattr(spec, "defer", False)],
        "subgraphs": subgraphs,
        "tools": node_tools(graph),
    }


def _channel_kind(channel: Any) -> str:
    """A channel's class, and its reducer's qualified name where it has one."""
    kind = type(channel).__name__
    operator = getattr(channel, "operator", None)
    if operator is None:
        return kind
    name = getattr(operator, "__qualname__", None) or type(operator).__name__
    return f"{kind}({name})"


def _node_names(value: Any) -> tuple[str, ...]:
    """Static interrupt nodes: `"*"` (all) or a sequence of names."""
    if isinstance(value, str):
        return (value,)
    return tuple(sorted(str(v) for v in value or ()))


def static_interrupts(graph: Any) -> tuple[tuple[str, ...] | str, tuple[str, ...] | str]:
    """The compiled graph's `interrupt_before` and `interrupt_after` nodes, as
    `resume_kinds.RunRequest` takes them (the string `"*"`: every node)."""
    before, after = (getattr(graph, f"interrupt_{at}_nodes", ()) for at in ("before", "after"))
    return (
        before if isinstance(before, str) else _node_names(before),
        after if isinstance(after, str) else _node_names(after),
    )


def runs_only_async(graph: Any) -> bool:
    """Whether a node of the compiled graph or of its subgraphs has only an async body (an
    `async def` node, an async-only middleware hook): such a graph runs only through
    `ainvoke`/`astream`."""
    graphs = [graph]
    with contextlib.suppress(Exception):  # a graph LangGraph cannot walk: its own nodes count
        graphs += [subgraph for _, subgraph in graph.get_subgraphs(recurse=True)]
    return any(
        _async_only(getattr(node, "bound", None))
        for each in graphs
        for node in (getattr(each, "nodes", None) or {}).values()
    )


def _async_only(runnable: Any) -> bool:
    """A runnable with an async body and no sync one (LangGraph's `RunnableCallable`,
    LangChain's `RunnableLambda`), or a sequence holding one."""
    if getattr(runnable, "afunc", None) is not None and getattr(runnable, "func", None) is None:
        return True
    steps = getattr(runnable, "steps", None)
    return isinstance(steps, list | tuple) and any(_async_only(step) for step in steps)


def state_fields(graph: Any) -> dict[str, tuple[Any, bool]]:
    """The compiled graph's state keys: name -> (type annotation, required), read from its
    builder's state schema (a pydantic model: fields without a default are required; a
    TypedDict: its required keys; a dataclass: fields without a default). {} when unknown."""
    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    if schema is None:
        return {}
    model_fields = getattr(schema, "model_fields", None)
    if isinstance(model_fields, dict):  # pydantic
        return {name: (f.annotation, f.is_required()) for name, f in model_fields.items()}
    if dataclasses.is_dataclass(schema):
        hints = _hints(schema)
        return {
            f.name: (
                hints.get(f.name, Any),
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(schema)
        }
    hints = _hints(schema)
    required = getattr(schema, "__required_keys__", frozenset(hints))
    return {name: (hint, name in required) for name, hint in hints.items()}


def state_is_validated(graph: Any) -> bool:
    """Whether LangGraph builds the state schema for every node's input (a pydantic model or a
    dataclass: a missing required key fails every node), not a TypedDict (only a node that
    reads the key fails)."""
    schema = getattr(getattr(graph, "builder", None), "state_schema", None)
    return isinstance(getattr(schema, "model_fields", None), dict) or dataclasses.is_dataclass(
        schema
    )


def _hints(schema: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(schema, include_extras=True)
    except Exception:  # unresolvable forward references: the raw annotations
        return dict(getattr(schema, "__annotations__", {}))


def channel_restore_error(graph: Any, channel: str, stored: Any) -> str | None:
    """Why the compiled graph's `channel` cannot be restored from a stored value (its class
    and the exception's), or None when it can (or the graph has no such channel). This is
    what LangGraph does with each stored value when a run loads a checkpoint."""
    spec = (getattr(graph, "channels", None) or {}).get(channel)
    if spec is None:
        return None
    try:
        spec.from_checkpoint(stored)
    except Exception as exc:
        return f"{type(spec).__name__} cannot restore it ({type(exc).__name__})"
    return None


def node_tools(graph: Any) -> dict[str, tuple[str, ...]]:
    """The tool names of each node of the compiled graph that runs tools (a prebuilt
    `ToolNode`: `create_react_agent`'s and `create_agent`'s ``tools`` node), sorted."""
    found: dict[str, tuple[str, ...]] = {}
    for name, node in (getattr(graph, "nodes", None) or {}).items():
        tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
        if isinstance(tools, dict):
            found[str(name)] = tuple(sorted(str(t) for t in tools))
    return found


def graph_tools(graph: Any) -> dict[str, dict[str, Any]]:
    """The tools each graph can call, by its namespace without task ids ("" the root,
    ``billing_agent`` a supervisor's worker): name -> the `BaseTool`, for the graphs that run
    tools through a `ToolNode` (a graph that calls tools otherwise has no entry)."""
    graphs: list[tuple[str, Any]] = [("", graph)]
    with contextlib.suppress(Exception):  # a graph LangGraph cannot walk: the root alone
        graphs += [(str(ns), sub) for ns, sub in graph.get_subgraphs(recurse=True)]
    found: dict[str, dict[str, Any]] = {}
    for namespace, each in graphs:
        for node in (getattr(each, "nodes", None) or {}).values():
            tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
            if isinstance(tools, dict):
                found.setdefault(namespace, {}).update(tools)
    return found


def reads_key(graph: Any, key: str) -> bool | None:
    """Whether a node of the compiled graph (or of its subgraphs) reads state key `key`, as
    far as its source tells: the key as a string constant or an attribute name in the node's
    function, or in a function or an object's class it closes over. None when a node's source
    cannot be read (it may read it)."""
    graphs = [graph]
    with contextlib.suppress(Exception):
        graphs += [sub for _, sub in graph.get_subgraphs(recurse=True)]
    unknown = False
    for each in graphs:
        for spec in (getattr(getattr(each, "builder", None), "nodes", None) or {}).values():
            found = _mentions(getattr(spec, "runnable", None), key, depth=0)
            if found:
                return True
            unknown = unknown or found is None
    return None if unknown else False


_LIBRARY_PREFIXES = ("langgraph.", "langchain", "pydantic", "typing", "builtins")


def _mentions(target: Any, key: str, depth: int) -> bool | None:
    """Whether `target` (a runnable, function or object) mentions `key` in its source (see
    `reads_key`); None when a source of its own cannot be read."""
    if target is None or depth > 3:
        return False
    if isinstance(target, Runnable) and not isinstance(target, RunnableCallable):
        if hasattr(target, "get_subgraphs") or getattr(target, "tools_by_name", None) is not None:
            return False  # a subgraph (walked on its own) or a ToolNode
        steps = getattr(target, "steps", None) or getattr(target, "bound", None)
        if steps is None:
            return None
        items = steps if isinstance(steps, list | tuple) else [steps]
        return _any(_mentions(s, key, depth + 1) for s in items)
    functions: list[Any] = [getattr(target, "func", None), getattr(target, "afunc", None)]
    functions = [f for f in functions if f is not None] or [target]
    results: list[bool | None] = []
    for function in functions:
        function = getattr(function, "__func__", function)
        module = getattr(function, "__module__", "") or ""
        if module.startswith(_LIBRARY_PREFIXES):
            results.append(_closure_mentions(function, key, depth))
            continue
        try:
            source = textwrap.dedent(inspect.getsource(function))
            tree = ast.parse(source)
        except (OSError, TypeError, SyntaxError):
            results.append(None)
            continue
        results.append(
            any(
                (isinstance(n, ast.Constant) and n.value == key)
                or (isinstance(n, ast.Attribute) and n.attr == key)
                for n in ast.walk(tree)
            )
            or _closure_mentions(function, key, depth)
        )
    return _any(results)


def _closure_mentions(function: Any, key: str, depth: int) -> bool | None:
    """Whether a function or object `function` closes over mentions `key`."""
    cells = getattr(function, "__closure__", None) or ()
    results: list[bool | None] = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if inspect.isfunction(value) or inspect.ismethod(value):
            results.append(_mentions(value, key, depth + 1))
        elif hasattr(value, "__dict__") and not isinstance(value, type | Runnable):
            module = type(value).__module__ or ""
            if not module.startswith(_LIBRARY_PREFIXES):
                results.append(_class_mentions(type(value), key))
    return _any(results)


def _class_mentions(cls: type, key: str) -> bool | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return None
    return any(
        (isinstance(n, ast.Constant) and n.value == key)
        or (isinstance(n, ast.Attribute) and n.attr == key)
        for n in ast.walk(tree)
    )


def _any(results: Any) -> bool | None:
    """True if one is True, else None if one is None, else False."""
    seen = list(results)
    if any(r is True for r in seen):
        return True
    return None if any(r is None for r in seen) else False


def validation_error(tool: Any, arguments: Any) -> str | None:
    """The names of the arguments a tool refuses in a call (its own validation, as it runs
    before the tool's body), or None when it accepts them; never a value."""
    try:
        tool._parse_input(arguments, "compat-check")
    except Exception as exc:
        errors = getattr(exc, "errors", None)
        if callable(errors):
            with contextlib.suppress(Exception):
                names = sorted({str(e["loc"][0]) for e in errors() if e.get("loc")})
                return ", ".join(names) or type(exc).__name__
        return type(exc).__name__
    return None
