"""Divergence detectors: pure functions over checkpoint records.

A resumed or replayed run is compared with the reference branch, the earlier descendants of
the checkpoint it resumed or forked from, step by step (the i-th checkpoint after the fork
point in one branch against the i-th in the other):

- `state`: both branches ran the same nodes from the same state, yet a channel's hash
  differs: the node is non-deterministic.
- `trajectory`: the nodes, or the tool calls, of a step differ: the run took another path. Only
  the first departure is reported; after it the branches are no longer comparable.
- `concurrent_write`: two runs wrote a child of one checkpoint, neither on a parent it chose (a
  fork, `update_state`): they ran at once on one thread (double-texting, two workers), and one
  run's checkpoints are not in the other's line. The later child's chain is not compared as a
  branch (its input differs by design).
- `duplicate_tool_call`: a tool call whose idempotency key (name + argument hash) had already
  been answered before the resume is answered again: the side effect ran twice. (The
  inspector reports it from spans too: a side effect whose ``langgraph.tool.start`` record,
  `record_tool_start`, is in two traces, also when the first run died inside the tool.)

The online wrapper, the offline `divergences()` and the resume harness all use these.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, is_state_channel
from langgraph.checkpoint.otel.options import DETECTORS, DivergenceKind, DivergencePolicy

__all__ = [
    "DEFAULT_POLICY",
    "DETECTORS",
    "BranchComparison",
    "DivergenceKind",
    "DivergencePolicy",
    "Finding",
    "compare_branches",
    "divergences",
]


DEFAULT_POLICY = DivergencePolicy()


class Finding(BaseModel):
    """One divergence: where the new branch departed from the reference branch."""

    model_config = ConfigDict(frozen=True)

    kind: DivergenceKind
    step: int | None
    checkpoint_id: str
    """The checkpoint of the new branch that revealed it."""
    reference_checkpoint_id: str
    """The checkpoint of the earlier branch it was compared with."""
    node: str | None = None
    channel: str | None = None
    expected: str | None = None
    """Hash, node names or tool name(s) of the reference branch; never content."""
    actual: str | None = None
    traces: tuple[str, ...] = ()
    """Traces (32 hex digits) that started the side effect, oldest first: set on the
    `duplicate_tool_call` findings read from ``langgraph.tool.start`` spans."""


@dataclass(slots=True)
class BranchComparison:
    """Compares a growing branch with a reference branch, one checkpoint at a time."""

    reference: Sequence[CheckpointRecord]
    """Checkpoints after the fork point in the earlier branch, oldest first."""
    completed_before: Collection[str] = ()
    """Idempotency keys of tool calls answered before the resume."""
    policy: DivergencePolicy = DEFAULT_POLICY
    compared: list[CheckpointRecord] = field(default_factory=list)
    departed: bool = False

    def __post_init__(self) -> None:
        self.use_reference(self.reference)

    def use_reference(self, reference: Sequence[CheckpointRecord]) -> None:
        """Compare with `reference` from now on, without its fork copies: a reference branch
        that is itself a fork branch starts with the copy LangGraph wrote, which applies no
        writes, so the branches align on the checkpoints that ran nodes."""
        self.reference = [record for record in reference if record.source != "fork"]

    def add(self, record: CheckpointRecord) -> list[Finding]:
        """Findings revealed by the branch's next checkpoint (fork copies are skipped)."""
        if record.source == "fork":
            return []
        index = len(self.compared)
        self.compared.append(record)
        findings = self._duplicates(record)
        if self.departed or index >= min(len(self.reference), self.policy.window):
            return findings
        expected = self.reference[index]
        departure = self._trajectory(expected, record)
        if departure is not None:
            self.departed = True
            if "trajectory" in self.policy.detectors:
                findings.insert(0, departure)
            return findings
        if "state" in self.policy.detectors and self._same_start(index):
            findings[:0] = _state_findings(expected, record, self.policy.ignore_channels)
        return findings

    def _same_start(self, index: int) -> bool:
        if index == 0:
            return True  # both branches start from the fork point
        before, reference_before = self.compared[index - 1], self.reference[index - 1]
        return before.state_hash is not None and before.state_hash == reference_before.state_hash

    def _trajectory(self, expected: CheckpointRecord, actual: CheckpointRecord) -> Finding | None:
        if tuple(expected.nodes) != tuple(actual.nodes):
            return _finding(
                "trajectory",
                expected,
                actual,
                node=",".join(actual.nodes) or None,
                expected=",".join(expected.nodes),
                actual=",".join(actual.nodes),
            )
        attribute = "key" if self.policy.compare_tool_args else "name"
        want = [getattr(call, attribute) for call in expected.tool_calls]
        got = [getattr(call, attribute) for call in actual.tool_calls]
        if want != got:
            at = next((i for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g), None)
            at = min(len(want), len(got)) if at is None else at
            return _finding(
                "trajectory",
                expected,
                actual,
                node=",".join(actual.nodes) or None,
                expected=_tool_name(expected, at),
                actual=_tool_name(actual, at),
            )
        return None

    def _duplicates(self, record: CheckpointRecord) -> list[Finding]:
        if "duplicate_tool_call" not in self.policy.detectors:
            return []
        done = set(self.completed_before)
        for earlier in self.compared[:-1]:
            done.update(call.key for call in earlier.tool_results)
        return [
            Finding(
                kind="duplicate_tool_call",
                step=record.step,
                checkpoint_id=record.checkpoint_id,
                reference_checkpoint_id=_answered_in(self.reference, call.key) or "",
                node=",".join(record.nodes) or None,
                expected=None,
                actual=call.name,
            )
            for call in record.tool_results
            if not self.policy.is_repeatable(call.name)
            and (call.key in done or _answered_in(self.reference, call.key))
        ]


def _answered_in(records: Iterable[CheckpointRecord], key: str) -> str | None:
    for record in records:
        if any(call.key == key for call in record.tool_results):
            return record.checkpoint_id
    return None


def _tool_name(record: CheckpointRecord, index: int) -> str:
    return record.tool_calls[index].name if index < len(record.tool_calls) else "(none)"


def _finding(
    kind: DivergenceKind,
    reference: CheckpointRecord,
    revealed_by: CheckpointRecord,
    *,
    node: str | None = None,
    channel: str | None = None,
    expected: str | None = None,
    actual: str | None = None,
) -> Finding:
    return Finding(
        kind=kind,
        step=revealed_by.step,
        checkpoint_id=revealed_by.checkpoint_id,
        reference_checkpoint_id=reference.checkpoint_id,
        node=node,
        channel=channel,
        expected=expected,
        actual=actual,
    )


def _state_findings(
    expected: CheckpointRecord, actual: CheckpointRecord, ignore: Collection[str]
) -> list[Finding]:
    if not expected.channel_hashes or not actual.channel_hashes:
        return []  # hashes were not stored for one of them: nothing to compare
    channels = sorted(
        name
        for name in set(expected.channel_hashes) | set(actual.channel_hashes)
        if name not in ignore
        and is_state_channel(name)
        and expected.channel_hashes.get(name) != actual.channel_hashes.get(name)
    )
    return [
        _finding(
            "state",
            expected,
            actual,
            node=",".join(actual.nodes) or None,
            channel=name,
            expected=expected.channel_hashes.get(name),
            actual=actual.channel_hashes.get(name),
        )
        for name in channels
    ]


def compare_branches(
    reference: Sequence[CheckpointRecord],
    branch: Sequence[CheckpointRecord],
    *,
    completed_before: Collection[str] = (),
    policy: DivergencePolicy = DEFAULT_POLICY,
) -> list[Finding]:
    """All findings of `branch` against `reference` (both oldest first, after the fork point)."""
    comparison = BranchComparison(reference, completed_before, policy)
    return [finding for record in branch for finding in comparison.add(record)]


def divergences(
    records: Sequence[CheckpointRecord], policy: DivergencePolicy = DEFAULT_POLICY
) -> list[Finding]:
    """Findings over a thread's stored history (see `records.history_records`).

    Checkpoints are compared only within their namespace: a subgraph's checkpoints never with
    the root's, nor with another run of the subgraph (a subgraph's tool calls are compared as
    part of the parent step that ran it: the wrapper stores them with that step's checkpoint).
    Every checkpoint with more than one child is a fork point: each later child's chain is
    compared with the earliest child's chain, unless the two were written at once by two
    runs (`concurrent_write`, see `concurrent_sibling`). A run that resumed without new input
    (its first checkpoint carries the wrapper's stored resume kind, other than `continue`) is
    checked for tool calls its lineage had answered before the resume point.
    """
    by_parent: _Children = {}
    for record in records:
        by_parent.setdefault((record.ns, record.parent_id), []).append(record)
    findings: list[Finding] = []
    for children in by_parent.values():
        if len(children) < 2:
            continue
        ordered = sorted(children, key=lambda r: r.checkpoint_id)
        reference = _chain(ordered[0], by_parent, policy.window)
        for index, child in enumerate(ordered[1:], 1):
            other = concurrent_sibling(ordered[:index], child)
            if other is not None:
                if "concurrent_write" in policy.detectors:
                    findings.append(_concurrent_finding(child, other))
                continue
            findings += compare_branches(
                reference, _chain(child, by_parent, policy.window), policy=policy
            )
    findings += _resumed_run_duplicates(records, policy)
    unique = {(f.kind, f.checkpoint_id, f.channel, f.actual): f for f in findings}
    return list(unique.values())


def concurrent_sibling(
    earlier: Sequence[CheckpointRecord], child: CheckpointRecord
) -> CheckpointRecord | None:
    """The earlier sibling `child` was written beside by another run at once, if any: both on
    the parent as the thread's latest (neither a fork nor an `update_state`), by two traces."""
    if child.trace_id is None or child.parent_chosen:
        return None
    return next(
        (
            other
            for other in earlier
            if other.trace_id is not None
            and other.trace_id != child.trace_id
            and not other.parent_chosen
        ),
        None,
    )


def _concurrent_finding(child: CheckpointRecord, other: CheckpointRecord) -> Finding:
    return Finding(
        kind="concurrent_write",
        step=child.step,
        checkpoint_id=child.checkpoint_id,
        reference_checkpoint_id=other.checkpoint_id,
        node=",".join(child.nodes) or None,
        expected=other.trace_id,
        actual=child.trace_id,
        traces=tuple(t for t in (other.trace_id, child.trace_id) if t),
    )


_Children = dict[tuple[str, str | None], list[CheckpointRecord]]
"""(namespace, parent checkpoint id) -> the checkpoints written on it."""


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


def _resumed_run_duplicates(
    records: Sequence[CheckpointRecord], policy: DivergencePolicy
) -> list[Finding]:
    """Tool calls answered after a resume (other than `continue`) that its lineage had answered
    before the resume point."""
    if "duplicate_tool_call" not in policy.detectors:
        return []
    by_id = {record.checkpoint_id: record for record in records}
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
                if r.resume_kind not in (None, "continue")
                or r.source == "input"  # a new turn ends the search
            ),
            None,
        )
        if resume_at is None or lineage[resume_at].resume_kind in (None, "continue"):
            continue
        answered_before: dict[str, str] = {}
        for earlier in lineage[resume_at + 1 :]:
            for call in earlier.tool_results:
                answered_before[call.key] = earlier.checkpoint_id
        findings += [
            Finding(
                kind="duplicate_tool_call",
                step=record.step,
                checkpoint_id=record.checkpoint_id,
                reference_checkpoint_id=answered_before[call.key],
                node=",".join(record.nodes) or None,
                actual=call.name,
            )
            for call in record.tool_results
            if call.key in answered_before and not policy.is_repeatable(call.name)
        ]
    return findings
