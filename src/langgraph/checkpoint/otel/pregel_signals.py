"""What LangGraph's own run loop tells about a load: the one module that reads Pregel internals.

A run starts by loading its checkpoint from `PregelLoop.__enter__` / `__aenter__`; loads from
anywhere else (get_state, get_state_history, update_state, LangGraph's superseded check, an
inspector) start no run. The loop also knows the graph's static interrupts.
"""

from __future__ import annotations

from types import FrameType
from typing import Any

from langgraph.checkpoint.otel.lineage import RunStart

try:
    from langgraph.pregel._loop import PregelLoop
except ImportError:  # pragma: no cover - a LangGraph layout this version does not know
    PregelLoop = None  # type: ignore[assignment,misc]

_LOOP_ENTRIES = frozenset({"__enter__", "__aenter__"})


def run_start(caller: FrameType | None) -> RunStart | None:
    """How the run whose loop is `caller` started, or None when `caller` is not a run's load.

    `explicit_checkpoint` is provisional here: it says a checkpoint id was requested; whether
    that checkpoint is older than the thread's latest is settled after the load.
    """
    if caller is None or PregelLoop is None or caller.f_code.co_name not in _LOOP_ENTRIES:
        return None
    loop: Any = caller.f_locals.get("self")
    if not isinstance(loop, PregelLoop):
        return None
    configurable = (loop.checkpoint_config or {}).get("configurable") or {}
    return RunStart(
        explicit_checkpoint=bool(configurable.get("checkpoint_id")),
        interrupt_before=_selector(loop.interrupt_before),
        interrupt_after=_selector(loop.interrupt_after),
    )


def _selector(value: Any) -> tuple[str, ...] | str:
    if isinstance(value, str):
        return value
    return tuple(str(v) for v in value or ())
