"""`tool_arguments`: at the same step the branch's model asked for the same tools as the
reference, but a call with other arguments (its idempotency key differs). Reported with both
keys and the names of the arguments whose values differ; a departure, like `trajectory`. Off
with `DivergencePolicy(compare_tool_args=False)`."""

from __future__ import annotations

from langgraph.checkpoint.otel.analysis.detectors.finding import Detector, Finding, Step, finding
from langgraph.checkpoint.otel.analysis.tool_calls import changed_arguments


class ToolArguments(Detector):
    kind = "tool_arguments"
    departs = True

    def step(self, step: Step) -> list[Finding]:
        expected, actual = step.expected, step.record
        if expected is None or not step.policy.compare_tool_args:
            return []
        if not (expected.tools_known and actual.tools_known):
            return []
        if tuple(expected.nodes) != tuple(actual.nodes):
            return []  # a trajectory departure
        pairs = list(zip(expected.tool_calls, actual.tool_calls, strict=False))
        if len(expected.tool_calls) != len(actual.tool_calls) or any(
            a.name != b.name for a, b in pairs
        ):
            return []  # other tools: a trajectory departure
        for before, after in pairs:
            if before.key != after.key:
                return [
                    finding(
                        "tool_arguments",
                        expected.checkpoint_id,
                        actual,
                        tool=after.name,
                        expected=before.key,
                        actual=after.key,
                        arguments=changed_arguments(before, after),
                    )
                ]
        return []


def call_finding(
    tool: str,
    expected: str,
    actual: str,
    *,
    arguments: tuple[str, ...],
    step: int | None,
    graph: str | None,
    reference_id: str,
) -> Finding:
    """A call of `tool` that departs from the reference's call, found where the call is made
    (`replay`): other arguments than recorded (`actual`: the new key), or recorded arguments
    the new tool refuses (`actual` says so); `arguments`: those at fault."""
    return Finding(
        kind="tool_arguments",
        step=step,
        checkpoint_id="",
        reference_checkpoint_id=reference_id,
        node=tool,
        tool=tool,
        expected=expected,
        actual=actual,
        arguments=arguments,
        graph=graph,
    )
