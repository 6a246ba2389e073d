"""A finding, and what one detector sees of one step of a branch: the small interface every
detector implements (`Detector`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from langgraph.checkpoint.otel.analysis.records import CheckpointRecord
from langgraph.checkpoint.otel.analysis.tool_calls import ToolCall
from langgraph.checkpoint.otel.options import DivergenceKind, DivergencePolicy

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
    """Hash, node names, tool name or idempotency key of the reference branch; never
    content."""
    actual: str | None = None
    traces: tuple[str, ...] = ()
    """Traces (32 hex digits) that started the side effect, oldest first: set on the
    `duplicate_tool_call` findings read from ``langgraph.tool.start`` spans."""
    tool: str | None = None
    """The tool of a tool-call finding (`tool_arguments`, `duplicate_tool_call`,
    `repeated_side_effect`)."""
    arguments: tuple[str, ...] = ()
    """The arguments whose values differ between the two calls (`tool_arguments`,
    `repeated_side_effect`): their labels (`tool_calls.argument_label`, 8 hex digits of the
    name's hash: an argument's name is the model's output); the inspector shows their names."""
    graph: str | None = None
    """The subgraph whose checkpoint revealed it, as its namespace without task ids
    (``billing_agent``); None for the root graph."""


@dataclass(frozen=True, slots=True)
class Step:
    """What the detectors see of one checkpoint of a branch being compared."""

    record: CheckpointRecord
    """The branch's checkpoint."""
    expected: CheckpointRecord | None
    """The reference branch's checkpoint at the same position; None past the reference's end,
    after the branches departed, or with no reference (a resume of the latest checkpoint)."""
    same_start: bool
    """Both branches were in the same state before this step (its values are comparable)."""
    answered: Mapping[str, str]
    """Idempotency key -> the checkpoint that answered it before this step: before the
    resume, earlier on this branch, or anywhere on the reference branch."""
    reference_calls: Mapping[str, Sequence[tuple[ToolCall, str]]]
    """Tool name -> (each call of it answered on the reference branch, its checkpoint)."""
    policy: DivergencePolicy


class Detector:
    """One kind of finding. A detector judges each compared step (`step`) or, offline, each
    checkpoint written beside an earlier sibling (`sibling`); both find nothing by default.
    `departs`: a finding of this kind ends the comparison (the branches no longer align)."""

    kind: ClassVar[DivergenceKind]
    departs: ClassVar[bool] = False

    def step(self, step: Step) -> list[Finding]:
        return []

    def sibling(
        self, child: CheckpointRecord, earlier: Sequence[CheckpointRecord]
    ) -> list[Finding]:
        return []


def finding(
    kind: DivergenceKind,
    reference_id: str,
    revealed_by: CheckpointRecord,
    **fields: object,
) -> Finding:
    """A finding revealed by `revealed_by`, compared with the reference checkpoint
    `reference_id`, naming the nodes of `revealed_by` unless `fields` name others."""
    fields.setdefault("node", ",".join(revealed_by.nodes) or None)
    return Finding(
        kind=kind,
        step=revealed_by.step,
        checkpoint_id=revealed_by.checkpoint_id,
        reference_checkpoint_id=reference_id,
        **fields,  # type: ignore[arg-type]
    )
