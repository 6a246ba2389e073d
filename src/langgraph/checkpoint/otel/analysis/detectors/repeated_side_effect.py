"""`repeated_side_effect`: a fork (or any branch compared with the branch it left) answers a
call of a tool that the branch it left answered too, for the same thing with other values (some
arguments equal, some not: the same order refunded for another amount): the side effect ran
again, differently. With all arguments equal it is a `duplicate_tool_call`; with none equal it
is another call (another order), not a repeat. Reported with both idempotency keys and the
names of the arguments that differ; repeatable tools are exempt, and calls whose argument
hashes are unknown (stored by an older release) are not judged."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.checkpoint.otel.analysis.detectors.finding import Detector, Finding, Step, finding
from langgraph.checkpoint.otel.analysis.tool_calls import ToolCall, changed_arguments


class RepeatedSideEffect(Detector):
    kind = "repeated_side_effect"

    def step(self, step: Step) -> list[Finding]:
        found = []
        for call in step.record.tool_results:
            if call.key in step.answered or step.policy.is_repeatable(call.name):
                continue
            earlier = _same_thing(call, step.reference_calls.get(call.name, ()))
            if earlier is None:
                continue
            before, checkpoint_id = earlier
            found.append(
                finding(
                    "repeated_side_effect",
                    checkpoint_id,
                    step.record,
                    tool=call.name,
                    expected=before.key,
                    actual=call.key,
                    arguments=changed_arguments(before, call),
                )
            )
        return found


def _same_thing(
    call: ToolCall, candidates: Sequence[tuple[ToolCall, str]]
) -> tuple[ToolCall, str] | None:
    """The earlier call of the tool that shares the most argument values with `call` (at least
    one, and not all), if any."""
    best: tuple[int, tuple[ToolCall, str]] | None = None
    for candidate in candidates:
        before = candidate[0]
        changed = changed_arguments(before, call)
        names = set(before.arguments) | set(call.arguments)
        shared = len(names) - len(changed)
        if changed and shared > 0 and (best is None or shared > best[0]):
            best = (shared, candidate)
    return None if best is None else best[1]
