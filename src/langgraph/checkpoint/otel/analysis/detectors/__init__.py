"""Divergence detectors: pure functions over checkpoint records, one module per kind of
finding behind one small interface (`finding.Detector`), listed in `registry.REGISTRY`.

A resumed or replayed run is compared with the reference branch, the earlier descendants of
the checkpoint it resumed or forked from, step by step (`branch.BranchComparison`: the i-th
checkpoint after the fork point in one branch against the i-th in the other):

- `trajectory`: the nodes, or the tools the model asks for, of a step differ: the run took
  another path. Only the first departure is reported; after it the branches are no longer
  comparable.
- `tool_arguments`: the same tools, one called with other arguments (both idempotency keys,
  and the names of the arguments that differ); a departure too.
- `state`: both branches ran the same nodes from the same state, yet a channel's hash differs:
  the node is non-deterministic.
- `duplicate_tool_call`: a tool call whose idempotency key (name + argument hash) had already
  been answered (before the resume, or on the branch a fork left) is answered again: the side
  effect ran twice. (The inspector reports it from spans too: a side effect whose
  ``langgraph.tool.start`` record, `record_tool_start`, is in two traces.)
- `repeated_side_effect`: a fork answers again a side-effecting tool the branch it left
  answered, for the same thing with other values (both keys).
- `concurrent_write`: two runs wrote a child of one checkpoint at once (offline).

The online wrapper (`core.watch`), the offline `divergences()` (the inspector), `replay` and the
resume harness all use these.
"""

from __future__ import annotations

from langgraph.checkpoint.otel.analysis.detectors.branch import (
    BranchComparison,
    compare_branches,
)
from langgraph.checkpoint.otel.analysis.detectors.concurrent_write import concurrent_sibling
from langgraph.checkpoint.otel.analysis.detectors.finding import (
    DEFAULT_POLICY,
    Detector,
    Finding,
    Step,
)
from langgraph.checkpoint.otel.analysis.detectors.history import divergences
from langgraph.checkpoint.otel.analysis.detectors.registry import REGISTRY
from langgraph.checkpoint.otel.options import DETECTORS, DivergenceKind, DivergencePolicy

__all__ = [
    "DEFAULT_POLICY",
    "DETECTORS",
    "REGISTRY",
    "BranchComparison",
    "Detector",
    "DivergenceKind",
    "DivergencePolicy",
    "Finding",
    "Step",
    "compare_branches",
    "concurrent_sibling",
    "divergences",
]
