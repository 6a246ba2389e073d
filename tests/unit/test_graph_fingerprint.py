"""The graph fingerprint (issue 22, first part): a compiled graph's structure by name, its
canonical hash, and what differs between two releases of a graph."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

import agents
from langgraph.checkpoint.otel._langgraph.graph import graph_description
from langgraph.checkpoint.otel.analysis.graph_structure import GraphStructure, structure_changes

SECRET = "do-not-leak-4242"


def graph_structure(graph: Any) -> GraphStructure:
    return GraphStructure.of(graph_description(graph))


class State(TypedDict):
    n: int
    log: Annotated[list[str], operator.add]


class Renamed(TypedDict):
    n: int
    history: Annotated[list[str], operator.add]


def release(
    *, extra_node: bool = False, defer_b: bool = False, state: type = State, sub: bool = False
) -> Any:
    def a(s: Any) -> dict[str, Any]:
        return {"n": s["n"] + 1, "log": [SECRET]} if state is State else {"n": s["n"] + 1}

    def b(s: Any) -> dict[str, Any]:
        return {"n": s["n"] + 1}

    builder = StateGraph(state)
    builder.add_node("a", a)
    builder.add_node("b", b, defer=defer_b)
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: "b", ["b", END])
    if extra_node:
        builder.add_node("audit", b)
        builder.add_edge("b", "audit")
    if sub:
        inner = StateGraph(State)
        inner.add_node("x", b)
        inner.add_edge(START, "x")
        builder.add_node("child", inner.compile())
        builder.add_edge("b", "child")
    return builder.compile(interrupt_before=["b"])


def test_a_structure_names_nodes_edges_branches_channels_interrupts_and_deferral() -> None:
    s = graph_structure(release(defer_b=True))
    assert s.nodes == {"a", "b"}
    assert ("__start__", "a") in s.edges
    assert ("a", "condition", ("__end__", "b")) in s.branches
    assert s.channels["log"] == "BinaryOperatorAggregate(add)"
    assert s.channels["n"] == "LastValue"
    assert s.interrupt_before == ("b",)
    assert s.deferred == {"b"}


def test_a_structure_holds_no_state_value() -> None:
    graph = release()
    assert graph.invoke({"n": 0, "log": []})["log"] == [SECRET]  # the node writes it
    assert SECRET not in graph_structure(graph).canonical()


def test_an_added_node_changes_the_hash_and_is_named() -> None:
    old, new = graph_structure(release()), graph_structure(release(extra_node=True))
    assert old.structure_hash() != new.structure_hash()
    change = structure_changes(old, new)
    assert change.nodes_added == ("audit",)
    assert "branch:to:audit" in change.channels_added
    assert change.nodes_rewired == ("b",)  # it gained an edge
    assert not change.nodes_removed


def test_toggling_defer_rewires_the_node() -> None:
    change = structure_changes(graph_structure(release()), graph_structure(release(defer_b=True)))
    assert change.nodes_rewired == ("b",)
    assert change.channels_changed == ("branch:to:b",)  # a deferred node's trigger channel
    assert not change.nodes_added


def test_a_renamed_state_key_is_a_channel_removed_and_one_added() -> None:
    change = structure_changes(graph_structure(release()), graph_structure(release(state=Renamed)))
    assert change.channels_removed == ("log",)
    assert change.channels_added == ("history",)


def test_a_subgraphs_change_reaches_its_parents_hash() -> None:
    with_sub = graph_structure(release(sub=True))
    assert set(with_sub.subgraphs) == {"child"}
    assert with_sub.structure_hash() != graph_structure(release()).structure_hash()


def test_no_change_between_two_builds_of_one_release() -> None:
    change = structure_changes(graph_structure(release()), graph_structure(release()))
    assert not change


def test_a_prebuilt_agent_has_its_agent_and_tools_nodes() -> None:
    s = graph_structure(agents.react_agent(None))
    assert {"agent", "tools"} <= s.nodes
    assert s.channels["messages"].startswith("BinaryOperatorAggregate(")
