"""A compiled graph's structure, content-free, and its canonical hash (issue 22, first part).

The structure names only what the graph's code defines: nodes, static edges, conditional
branches and their declared targets, channels with their kinds and reducers' names, static
interrupts, deferred nodes, the tools of each tool node (a prebuilt agent's) and the structure
of subgraphs (a supervisor's workers, with their tools). Its hash is the same in every
process and host for the same structure (no Python hash seed, no insertion order), and
`structure_changes` says, by name only, what differs between two structures.

Pure logic: `_langgraph.graph.graph_description` reads a compiled graph as plain data, and
`GraphStructure.of` makes the structure of it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

STRUCTURE_VERSION = 2
"""Bumped whenever what the hash covers changes (old and new hashes then never compare).
2: the tools of each tool node."""


@dataclass(frozen=True)
class GraphStructure:
    """What a compiled graph is made of, by name.

    `channels` maps each channel to its kind (the channel class, and the reducer's qualified
    name where it has one, e.g. ``BinaryOperatorAggregate(add_messages)``); `branches` holds
    (source node, branch name, declared targets, sorted), ``()`` when the branch declares none
    (its targets are only known when it runs); `subgraphs` maps a node to its subgraph's
    structure hash.
    """

    nodes: frozenset[str] = frozenset()
    edges: frozenset[tuple[str, str]] = frozenset()
    branches: frozenset[tuple[str, str, tuple[str, ...]]] = frozenset()
    channels: Mapping[str, str] = field(default_factory=dict)
    interrupt_before: tuple[str, ...] = ()
    interrupt_after: tuple[str, ...] = ()
    deferred: frozenset[str] = frozenset()
    subgraphs: Mapping[str, str] = field(default_factory=dict)
    tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Tool node -> the names of its tools, sorted."""

    @classmethod
    def of(cls, description: Mapping[str, Any]) -> GraphStructure:
        """The structure of a graph description (`_langgraph.graph.graph_description`); each
        subgraph's description becomes its structure hash."""
        return cls(
            nodes=frozenset(description.get("nodes", ())),
            edges=frozenset((a, b) for a, b in description.get("edges", ())),
            branches=frozenset(
                (source, name, tuple(targets))
                for source, name, targets in description.get("branches", ())
            ),
            channels=dict(description.get("channels", {})),
            interrupt_before=tuple(description.get("interrupt_before", ())),
            interrupt_after=tuple(description.get("interrupt_after", ())),
            deferred=frozenset(description.get("deferred", ())),
            subgraphs={
                node: cls.of(sub).structure_hash()
                for node, sub in description.get("subgraphs", {}).items()
            },
            tools={
                node: tuple(sorted(names)) for node, names in description.get("tools", {}).items()
            },
        )

    def canonical(self) -> str:
        """The structure as canonical JSON (sorted everywhere): what the hash digests."""
        return json.dumps(
            {
                "v": STRUCTURE_VERSION,
                "nodes": sorted(self.nodes),
                "edges": sorted(list(edge) for edge in self.edges),
                "branches": sorted([s, n, list(t)] for s, n, t in self.branches),
                "channels": dict(sorted(self.channels.items())),
                "interrupt_before": sorted(self.interrupt_before),
                "interrupt_after": sorted(self.interrupt_after),
                "deferred": sorted(self.deferred),
                "subgraphs": dict(sorted(self.subgraphs.items())),
                "tools": {node: list(names) for node, names in sorted(self.tools.items())},
            },
            separators=(",", ":"),
            ensure_ascii=True,
        )

    def structure_hash(self) -> str:
        """32 hex digits of blake2b over `canonical()`."""
        digest = hashlib.blake2b(self.canonical().encode(), digest_size=16, person=b"lgstructure")
        return digest.hexdigest()

    def summary(self) -> StructureSummary:
        """The hash with the node and channel names: what each checkpoint stores."""
        return StructureSummary(
            self.structure_hash(), tuple(sorted(self.nodes)), dict(sorted(self.channels.items()))
        )


@dataclass(frozen=True)
class StructureSummary:
    """A structure's hash, its nodes and its channels' kinds: what a checkpoint stores of the
    structure it was written under, enough to name what another structure adds and removes."""

    structure_hash: str
    nodes: tuple[str, ...]
    channels: Mapping[str, str]

    @functools.cached_property
    def stored(self) -> list[Any]:
        """The JSON-compatible stored value: ``[hash, [node, ...], {channel: kind}]`` (made
        once: every checkpoint of the graph stores the same value; not to be mutated)."""
        return [self.structure_hash, list(self.nodes), dict(self.channels)]

    @classmethod
    def of_stored(cls, value: Any) -> StructureSummary | None:
        """A stored value back, or None when it is malformed."""
        if not isinstance(value, list | tuple) or len(value) != 3:
            return None
        digest, nodes, channels = value
        if (
            not isinstance(digest, str)
            or not isinstance(nodes, list | tuple)
            or not all(isinstance(n, str) for n in nodes)
            or not isinstance(channels, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in channels.items())
        ):
            return None
        return cls(digest, tuple(nodes), dict(channels))


@dataclass(frozen=True)
class StructureChange:
    """What differs between the structure a checkpoint was written under and the running one,
    by name only."""

    nodes_added: tuple[str, ...] = ()
    nodes_removed: tuple[str, ...] = ()
    channels_added: tuple[str, ...] = ()
    channels_removed: tuple[str, ...] = ()
    channels_changed: tuple[str, ...] = ()
    """Channels in both whose kind or reducer differs."""
    nodes_rewired: tuple[str, ...] = ()
    """Nodes in both whose edges, branches, deferral, interrupts, tools or subgraph differ."""

    def __bool__(self) -> bool:
        return any(
            (
                self.nodes_added,
                self.nodes_removed,
                self.channels_added,
                self.channels_removed,
                self.channels_changed,
                self.nodes_rewired,
            )
        )


def structure_changes(written: GraphStructure, running: GraphStructure) -> StructureChange:
    """What `running` adds, removes and changes against `written`."""
    both = written.nodes & running.nodes
    return dataclasses.replace(
        named_changes(written.summary(), running.summary()),
        nodes_rewired=tuple(sorted(n for n in both if _wiring(written, n) != _wiring(running, n))),
    )


def named_changes(written: StructureSummary, running: StructureSummary) -> StructureChange:
    """The nodes and channels `running` adds, removes and changes against `written` (rewired
    nodes need the whole structures: see `structure_changes`)."""
    shared_channels = written.channels.keys() & running.channels.keys()
    return StructureChange(
        nodes_added=tuple(sorted(set(running.nodes) - set(written.nodes))),
        nodes_removed=tuple(sorted(set(written.nodes) - set(running.nodes))),
        channels_added=tuple(sorted(running.channels.keys() - written.channels.keys())),
        channels_removed=tuple(sorted(written.channels.keys() - running.channels.keys())),
        channels_changed=tuple(
            sorted(c for c in shared_channels if written.channels[c] != running.channels[c])
        ),
    )


def _wiring(structure: GraphStructure, node: str) -> tuple[object, ...]:
    """Everything of the structure that belongs to `node`, comparable across structures."""
    return (
        sorted(target for source, target in structure.edges if source == node),
        sorted((name, targets) for source, name, targets in structure.branches if source == node),
        node in structure.deferred,
        node in structure.interrupt_before,
        node in structure.interrupt_after,
        structure.subgraphs.get(node),
        structure.tools.get(node),
    )
