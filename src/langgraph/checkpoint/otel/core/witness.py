"""What the put and load witnesses share: the memory of one instrumented saver between calls,
and the guard every gathering of facts runs under."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, Protocol, TypeVar

from langgraph.checkpoint.otel.analysis.hashing import StateHasher
from langgraph.checkpoint.otel.core.runs import ActiveRuns
from langgraph.checkpoint.otel.core.scope_state import ScopeStates
from langgraph.checkpoint.otel.core.watch import DivergenceWatch
from langgraph.checkpoint.otel.options import InstrumentOptions

P = ParamSpec("P")
T = TypeVar("T")


class Guard(Protocol):
    """`Telemetry.guard`: runs a call, logging (once) and swallowing what it raises."""

    def __call__(
        self, where: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T | None: ...


@dataclass(frozen=True, slots=True)
class SaverMemory:
    """What one instrumented saver remembers between calls, and the guard its facts are
    gathered under."""

    options: InstrumentOptions
    states: ScopeStates
    runs: ActiveRuns
    hasher: StateHasher
    watch: DivergenceWatch
    guard: Guard


class Witness:
    """The base of `PutWitness` and `LoadWitness`: a saver's memory, unpacked."""

    def __init__(self, memory: SaverMemory) -> None:
        self._options = memory.options
        self._states = memory.states
        self._runs = memory.runs
        self._hasher = memory.hasher
        self._watch = memory.watch
        self._guard = memory.guard
        self._policy = memory.options.divergence.stored
        self._policy_text = policy_text(self._policy)


def policy_text(stored: Mapping[str, Any]) -> str | None:
    """The `langgraph.divergence.policy` attribute of a stored policy (None: the default)."""
    return json.dumps(stored, sort_keys=True, separators=(",", ":")) if stored else None
