"""Divergences over a thread's stored history: every fork point's later branches against its
first, checkpoints written beside an earlier sibling by another run, and resumed runs that
answered again what their line had answered before the resume."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.otel.analysis.detectors.branch import compare_branches
from langgraph.checkpoint.otel.analysis.detectors.concurrent_write import concurrent_sibling
from langgraph.checkpoint.otel.analysis.detectors.finding import DEFAULT_POLICY, Finding, Step
from langgraph.checkpoint.otel.analysis.detectors.registry import REGISTRY
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord
from langgraph.checkpoint.otel.options import DivergencePolicy

_Children = dict[tuple[str, str | None], list[CheckpointRecord]]
"""(namespace, parent checkpoint id) -> the checkpoints written on it."""


def divergences(
    records: Sequence[CheckpointRecord], policy: DivergencePolicy = DEFAULT_POLICY
) -> list[Finding]:
    """Findings over a thread's stored history (see `records.history_records`).

    Checkpoints are compared only within their namespace: a subgraph's checkpoints never with
    the root's, nor with another run of the subgraph (a subgraph's tool calls are compared as
    part of the parent step that ran it: the wrapper stores them with that step's checkpoint).
    Every checkpoint with more than one child is a fork point: each later child's chain is
    compared with the earliest child's chain, unless a detector finds it was written beside an
    earlier sibling by another run (`concurrent_write`). A run that resumed without new input
    (its first checkpoint carries the wrapper's stored resume kind, other than `continue`) is
    checked for tool calls its line had answered since its turn's input.
    """
    by_parent: _Children = {}
    for record in records:
        by_parent.setdefault((record.ns, record.parent_id), []).append(record)
    sibling_detectors = [d for d in REGISTRY if d.kind in policy.detectors]
    findings: list[Finding] = []
    for children in by_parent.values():
        if len(children) < 2:
            continue
        ordered = sorted(children, key=lambda r: r.checkpoint_id)
        reference = _chain(ordered[0], by_parent, policy.window)
        for index, child in enumerate(ordered[1:], 1):
            beside = [f for d in sibling_detectors for f in d.sibling(child, ordered[:index])]
            if beside or _written_beside(child, ordered[:index]):
                findings += beside
                continue
            findings += compare_branches(
                reference, _chain(child, by_parent, policy.window), policy=policy
            )
    findings += _resumed_run_findings(records, policy)
    unique = {(f.kind, f.checkpoint_id, f.channel, f.actual): f for f in findings}
    return list(unique.values())


def _written_beside(child: CheckpointRecord, earlier: Sequence[CheckpointRecord]) -> bool:
    """A concurrent write (compared with no one, found or not by an enabled detector)."""
    return concurrent_sibling(earlier, child) is not None


def _chain(first: CheckpointRecord, by_parent: _Children, limit: int) -> list[CheckpointRecord]:
    """`first` and its first-born descendants; a fork copy continues into its own children."""
    chain = [first]
    while len(chain) <= limit:
        children = sorted(
            by_parent.get((first.ns, chain[-1].checkpoint_id), []), key=lambda r: r.checkpoint_id
        )
        if not children:
            break
        chain.append(children[0])
    return chain


def _resumed_run_findings(
    records: Sequence[CheckpointRecord], policy: DivergencePolicy
) -> list[Finding]:
    """Tool calls answered after a resume (other than `continue`) that its line had answered
    before the resume point, since the turn's input (a new turn ends the search)."""
    by_id = {record.checkpoint_id: record for record in records}
    detectors = [d for d in REGISTRY if d.kind in policy.detectors and not d.departs]
    findings: list[Finding] = []
    for record in records:
        if not record.tool_results:
            continue
        lineage = [record]
        while (parent := by_id.get(lineage[-1].parent_id or "")) is not None:
            lineage.append(parent)
        resume_at = next(
            (
                i
                for i, r in enumerate(lineage)
                if r.resume_kind not in (None, "continue") or r.source == "input"
            ),
            None,
        )
        if resume_at is None or lineage[resume_at].resume_kind in (None, "continue"):
            continue
        answered: dict[str, str] = {}
        for index, earlier in enumerate(lineage[resume_at + 1 :], resume_at + 1):
            before = lineage[index + 1] if index + 1 < len(lineage) else None
            if earlier.source == "input" or (before is not None and before.source == "input"):
                break  # the turn's input, and the step applying it (a subgraph's: the history)
            for call in earlier.tool_results:
                answered[call.key] = earlier.checkpoint_id
        step = Step(record, None, False, answered, {}, policy)
        findings += [f for d in detectors for f in d.step(step)]
    return findings
