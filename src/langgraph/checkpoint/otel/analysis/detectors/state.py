"""`state`: both branches ran the same nodes from the same state (equal state hashes before),
yet a channel's hash differs: a node is non-deterministic (or the world it read changed)."""

from __future__ import annotations

from langgraph.checkpoint.otel.analysis.detectors.finding import Detector, Finding, Step, finding
from langgraph.checkpoint.otel.analysis.records import is_state_channel


class State(Detector):
    kind = "state"

    def step(self, step: Step) -> list[Finding]:
        expected, actual = step.expected, step.record
        if expected is None or not step.same_start:
            return []
        if not expected.channel_hashes or not actual.channel_hashes:
            return []  # hashes were not stored for one of them: nothing to compare
        ignore = step.policy.ignore_channels | expected.unknown_channels | actual.unknown_channels
        channels = sorted(
            name
            for name in set(expected.channel_hashes) | set(actual.channel_hashes)
            if name not in ignore
            and is_state_channel(name)
            and expected.channel_hashes.get(name) != actual.channel_hashes.get(name)
        )
        return [
            finding(
                "state",
                expected.checkpoint_id,
                actual,
                channel=name,
                expected=expected.channel_hashes.get(name),
                actual=actual.channel_hashes.get(name),
            )
            for name in channels
        ]
