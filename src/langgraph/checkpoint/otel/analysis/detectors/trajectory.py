"""`trajectory`: the branch ran other nodes than the reference at this step, or its model
asked for other tools (by name, in order), or one of the two ends its run here while the other
goes on: the run took another path. The first departure ends the comparison (after it the
branches are no longer comparable). Calls of the same tools with other arguments are
`tool_arguments`."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.otel.analysis.detectors.finding import Detector, Finding, Step, finding
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord


class Trajectory(Detector):
    kind = "trajectory"
    departs = True

    def step(self, step: Step) -> list[Finding]:
        expected, actual = step.expected, step.record
        if expected is None:
            return []
        if tuple(expected.nodes) != tuple(actual.nodes):
            return [
                finding(
                    "trajectory",
                    expected.checkpoint_id,
                    actual,
                    expected=",".join(expected.nodes),
                    actual=",".join(actual.nodes),
                )
            ]
        if not (expected.tools_known and actual.tools_known):
            return _ends(expected, actual)
        want = [call.name for call in expected.tool_calls]
        got = [call.name for call in actual.tool_calls]
        if want == got:
            return _ends(expected, actual)
        at = next((i for i, (w, g) in enumerate(zip(want, got, strict=False)) if w != g), None)
        at = min(len(want), len(got)) if at is None else at
        return [
            finding(
                "trajectory",
                expected.checkpoint_id,
                actual,
                expected=_name_at(want, at),
                actual=_name_at(got, at),
                tool=_name_at(got, at) if at < len(got) else _name_at(want, at),
            )
        ]


def _ends(expected: CheckpointRecord, actual: CheckpointRecord) -> list[Finding]:
    """One run ends at this step while the other goes on (same nodes, same tools asked)."""
    if (
        expected.scheduled is None
        or actual.scheduled is None
        or bool(expected.scheduled) == bool(actual.scheduled)
    ):
        return []
    return [
        finding(
            "trajectory",
            expected.checkpoint_id,
            actual,
            expected=_next(expected.scheduled),
            actual=_next(actual.scheduled),
        )
    ]


def _next(scheduled: Sequence[str]) -> str:
    return "then " + ",".join(scheduled) if scheduled else "(end)"


def _name_at(names: Sequence[str], index: int) -> str:
    return names[index] if index < len(names) else "(none)"


def length_finding(
    expected: Sequence[CheckpointRecord],
    actual: Sequence[CheckpointRecord],
    failure: str | None = None,
    graph: str | None = None,
) -> Finding | None:
    """Where a branch that matched the reference checkpoint by checkpoint stops matching by
    its length: it runs on past the reference's end (at its first extra checkpoint), or it
    ends (or fails, `failure`) short of it; None when both have the same length and nothing
    failed."""
    if len(actual) > len(expected):
        extra = actual[len(expected)]
        return finding(
            "trajectory",
            expected[-1].checkpoint_id if expected else "",
            extra,
            expected=f"{len(expected)} checkpoints",
            actual=f"{len(actual)} checkpoints",
            graph=graph,
        )
    if len(actual) == len(expected) and failure is None:
        return None
    at = min(len(actual), len(expected))
    reference = expected[at] if at < len(expected) else expected[-1]
    last = actual[at - 1] if 0 < at <= len(actual) else None
    return Finding(
        kind="trajectory",
        step=reference.step,
        checkpoint_id=last.checkpoint_id if last else "",
        reference_checkpoint_id=reference.checkpoint_id,
        node=",".join(reference.nodes) or None,
        expected=f"{len(expected)} checkpoints",
        actual=failure or f"{len(actual)} checkpoints",
        graph=graph,
    )


def next_after_end(
    expected: Sequence[CheckpointRecord], actual: Sequence[CheckpointRecord]
) -> Finding | None:
    """For a reference that ends mid-run (a killed process): the nodes its last checkpoint
    scheduled (what was about to run when it died) against those the branch scheduled at the
    same position; None when they agree or either is unknown."""
    if not expected or len(actual) < len(expected):
        return None
    want, got = expected[-1].scheduled, actual[len(expected) - 1].scheduled
    if want is None or got is None or set(want) == set(got):
        return None
    return finding(
        "trajectory",
        expected[-1].checkpoint_id,
        actual[len(expected) - 1],
        node=",".join(want) or None,
        expected=_next(want),
        actual=_next(got),
    )


def unoffered_tool(tool: str, graph: str, step: int | None, reference_id: str) -> Finding:
    """A reference model answer asks for a tool the branch's graph no longer offers that model
    (its tool node lacks it: renamed or removed)."""
    return Finding(
        kind="trajectory",
        step=step,
        checkpoint_id="",
        reference_checkpoint_id=reference_id,
        node=tool,
        tool=tool,
        expected=tool,
        actual="(not a tool of the new graph)",
        graph=graph or None,
    )


def run_count(graph: str, expected: int, actual: int, first: CheckpointRecord) -> Finding:
    """A subgraph ran more times on the branch than in the reference (at its first extra
    run's first checkpoint)."""
    return Finding(
        kind="trajectory",
        step=first.step,
        checkpoint_id=first.checkpoint_id,
        reference_checkpoint_id="",
        node=graph,
        expected=f"{expected} runs of {graph}",
        actual=f"{actual} runs of {graph}",
        graph=graph,
    )
