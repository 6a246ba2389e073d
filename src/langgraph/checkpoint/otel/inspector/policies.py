"""The divergence policy each checkpoint of a thread was written under, as the wrapper stored
it (checkpoint metadata, else the put span's ``langgraph.divergence.policy``), with the policy
an offline command's flags add (`--repeatable`).

Offline findings are computed with what every stored policy allows (its detectors, the tools
every run declared repeatable), then each finding is kept only if the policy of the checkpoint
that revealed it keeps it: a release that renames a read-only tool and declares the new name
does not turn the old branch's calls of the old name into duplicates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import reduce

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord
from langgraph.checkpoint.otel.options import DivergencePolicy

REPEATS = frozenset({"duplicate_tool_call", "repeated_side_effect"})


class ThreadPolicies:
    """The policies a thread's checkpoints were written under, with the flags' additions."""

    def __init__(
        self,
        tuples: Sequence[CheckpointTuple],
        puts: Iterable[SpanRecord],
        flags: DivergencePolicy,
    ) -> None:
        self.flags = flags
        self.by_checkpoint: dict[str, DivergencePolicy] = {}
        for span in puts:
            stored = _span_policy(span)
            if stored is not None:
                cid = str(span.attributes.get(names.CHECKPOINT_ID, ""))
                self.by_checkpoint[cid] = stored.adding(flags)
        for tup in tuples:
            telemetry = read_stored_telemetry(tup.metadata)
            if telemetry is not None:
                policy = DivergencePolicy.from_stored(telemetry.policy)
                self.by_checkpoint[str(tup.checkpoint["id"])] = policy.adding(flags)
        newest = max(self.by_checkpoint, default=None)
        self.latest = flags if newest is None else self.by_checkpoint[newest]
        """The policy of the thread's newest checkpoint that stored one (else the flags)."""

    @property
    def detection(self) -> DivergencePolicy:
        """The policy the detectors run with: the latest, declaring repeatable only what every
        stored policy declares (each finding is then judged by its own checkpoint's)."""
        policies = list(self.by_checkpoint.values()) or [self.latest]
        repeatable = reduce(lambda a, b: a & b, (p.repeatable_tools for p in policies))
        control = reduce(lambda a, b: a & b, (p.control_tools for p in policies))
        return self.latest.model_copy(
            update={"repeatable_tools": repeatable, "control_tools": control}
        )

    def keeps(self, finding: Finding) -> bool:
        """Whether the policy of the checkpoint that revealed `finding` reports it."""
        return kept(finding, self.by_checkpoint.get(finding.checkpoint_id, self.latest))


def kept(finding: Finding, policy: DivergencePolicy) -> bool:
    """Whether `policy` reports `finding` (one found under another policy, online): its kind
    is enabled, and a tool-call repeat is not of a tool the policy declares repeatable."""
    if finding.kind not in policy.detectors:
        return False
    tool = finding.tool or finding.actual
    return not (finding.kind in REPEATS and tool is not None and policy.is_repeatable(tool))


def _span_policy(span: SpanRecord) -> DivergencePolicy | None:
    """The policy a put span carries; the default when it carries none (the writer ran with
    the default, or with a release before the attribute)."""
    text = span.attributes.get(names.DIVERGENCE_POLICY)
    if text is None:
        return DivergencePolicy()
    try:
        value = json.loads(str(text))
    except ValueError:
        return None
    return DivergencePolicy.from_stored(value) if isinstance(value, dict) else None
