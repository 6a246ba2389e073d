"""`duplicate_tool_call`: a tool call whose idempotency key (tool name + argument hash) was
already answered (before the resume, earlier on the branch, or on the branch a fork left) is
answered again: the side effect ran twice. Repeatable tools (`DivergencePolicy.is_repeatable`:
declared, or a handoff or delegation tool) are exempt. The inspector also reports it from
``langgraph.tool.start`` spans (`started_twice`): a side effect started in two traces from one
checkpoint, also when the first run died inside the tool."""

from __future__ import annotations

from langgraph.checkpoint.otel.analysis.detectors.finding import Detector, Finding, Step, finding


class DuplicateToolCall(Detector):
    kind = "duplicate_tool_call"

    def step(self, step: Step) -> list[Finding]:
        return [
            finding(
                "duplicate_tool_call",
                step.answered[call.key],
                step.record,
                tool=call.name,
                actual=call.name,
            )
            for call in step.record.tool_results
            if call.key in step.answered and not step.policy.is_repeatable(call.name)
        ]


def started_twice(
    key: str, tool: str, checkpoint_id: str, first_checkpoint_id: str, traces: tuple[str, ...]
) -> Finding:
    """The finding for a side effect (idempotency `key`) whose ``langgraph.tool.start`` record
    is in several traces (`traces`, oldest first)."""
    return Finding(
        kind="duplicate_tool_call",
        step=None,
        checkpoint_id=checkpoint_id,
        reference_checkpoint_id=first_checkpoint_id,
        expected=key,
        actual=tool,
        tool=tool,
        traces=traces,
    )
