"""A growing branch compared with a reference branch, one checkpoint at a time: the i-th
checkpoint after the fork point in one against the i-th in the other, each step judged by the
detectors of the registry the policy enables."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from langgraph.checkpoint.otel.analysis.detectors.finding import DEFAULT_POLICY, Finding, Step
from langgraph.checkpoint.otel.analysis.detectors.registry import REGISTRY
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, is_state_channel
from langgraph.checkpoint.otel.analysis.tool_calls import ToolCall
from langgraph.checkpoint.otel.options import DivergencePolicy


@dataclass(slots=True)
class BranchComparison:
    """Compares a growing branch with a reference branch, one checkpoint at a time."""

    reference: Sequence[CheckpointRecord]
    """Checkpoints after the fork point in the earlier branch, oldest first."""
    completed_before: Collection[str] = ()
    """Idempotency keys of tool calls answered before the resume."""
    policy: DivergencePolicy = DEFAULT_POLICY
    compared: int = 0
    """Checkpoints of the branch compared so far."""
    _last: CheckpointRecord | None = None
    """The branch's last checkpoint compared (the state before the next step), while there is
    a reference branch to compare it with."""
    departed: bool = False
    _reference_answered: dict[str, str] = field(default_factory=dict)
    _reference_calls: dict[str, list[tuple[ToolCall, str]]] = field(default_factory=dict)
    _answered: dict[str, str] = field(default_factory=dict)
    """Keys answered on this branch so far."""

    def __post_init__(self) -> None:
        self.use_reference(self.reference)

    def use_reference(self, reference: Sequence[CheckpointRecord]) -> None:
        """Compare with `reference` from now on, without its fork copies: a reference branch
        that is itself a fork branch starts with the copy LangGraph wrote, which applies no
        writes, so the branches align on the checkpoints that ran nodes."""
        self.reference = [record for record in reference if record.source != "fork"]
        self._reference_answered = {}
        self._reference_calls = {}
        for record in self.reference:
            for call in record.tool_results:
                self._reference_answered.setdefault(call.key, record.checkpoint_id)
                self._reference_calls.setdefault(call.name, []).append((call, record.checkpoint_id))

    def add(self, record: CheckpointRecord) -> list[Finding]:
        """Findings revealed by the branch's next checkpoint (fork copies are skipped)."""
        if record.source == "fork":
            return []
        index, self.compared = self.compared, self.compared + 1
        # kept only to compare with a reference branch (a session can outlive its run)
        before, self._last = self._last, record if self.reference else None
        comparable = not self.departed and index < min(len(self.reference), self.policy.window)
        answered = {key: "" for key in self.completed_before}
        answered.update(self._reference_answered)
        answered.update(self._answered)
        step = Step(
            record,
            self.reference[index] if comparable else None,
            comparable and self._same_start(index, before),
            answered,
            self._reference_calls,
            self.policy,
        )
        findings: list[Finding] = []
        for detector in REGISTRY:
            if detector.kind not in self.policy.detectors:
                continue
            if detector.departs and step.expected is None:
                continue
            found = detector.step(step)
            if found and detector.departs:
                self.departed = True
                step = Step(record, None, False, answered, self._reference_calls, self.policy)
            findings += found
        for call in record.tool_results:
            self._answered.setdefault(call.key, record.checkpoint_id)
        return findings

    def _same_start(self, index: int, before: CheckpointRecord | None) -> bool:
        """Whether both branches were in the same state before the step at `index`: equal
        hashes of their state channels (LangGraph's bookkeeping left out: a pending `Send` to
        a tool node carries the model's call id, new on every run), else equal state hashes."""
        if index == 0 or before is None:
            return True  # both branches start from the fork point
        reference_before = self.reference[index - 1]
        if before.channel_hashes and reference_before.channel_hashes:
            skip = (
                self.policy.ignore_channels
                | before.unknown_channels
                | reference_before.unknown_channels
            )
            return _state_of(before, skip) == _state_of(reference_before, skip)
        return before.state_hash is not None and before.state_hash == reference_before.state_hash


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


def _state_of(record: CheckpointRecord, skip: frozenset[str]) -> dict[str, str]:
    """A record's state-channel hashes, without the channels in `skip`."""
    return {
        name: digest
        for name, digest in record.channel_hashes.items()
        if is_state_channel(name) and name not in skip
    }
