"""Nothing of a thread's values outlives its run: after 300 threads of two approved refund
turns each (every turn a resume of an interrupt, with a 100 KB tool result), no message object
is alive once the runs have ended, as with the bare saver, and nothing the wrapper keeps
between runs (divergence-watch sessions, the tool-call registry, the per-thread caches) reaches
a message or a tool result. The RSS over 8,000 runs is measured by `make bench`
(benchmarks/memory.py, the `approval` workload)."""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

import agents
from helpers import OTel
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.core import runs as runs_module
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS

THREADS = 300
RESULT_SIZE = 100_000


def live_messages() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, BaseMessage))


CODE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType, types.CodeType)


def reachable(*roots: Any) -> Iterator[Any]:
    """Every object reachable from `roots` (by `gc.get_referents`), each once; code (modules,
    classes, functions) is not followed: what it reaches is the program, not kept data."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, CODE):
            continue
        seen.add(id(obj))
        yield obj
        stack.extend(gc.get_referents(obj))


@pytest.mark.parametrize("variant", ["bare", "instrumented"])
def test_no_message_is_alive_once_the_runs_end(otel: OTel, variant: str) -> None:
    inner = InMemorySaver()
    saver = inner
    if variant == "instrumented":
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
    graph = agents.refund_desk(saver, RESULT_SIZE)
    before = live_messages()
    for index in range(THREADS):
        agents.two_approved_turns(graph, f"t{index}")
        otel.exporter.clear()
    assert live_messages() - before == 0
    stored = inner.get_tuple(agents.thread("t0"))
    assert stored is not None and len(stored.checkpoint["channel_values"]["messages"]) == 10
    if variant == "instrumented":
        sizes = saver.observer.cache_sizes()
        assert sizes["watch_sessions"] > 0, "the resumes opened divergence-watch sessions"
        assert sizes["runs"] == 0 and sizes["hasher_list_bytes"] == 0


def test_what_the_wrapper_keeps_between_runs_holds_no_values(otel: OTel) -> None:
    """Walk everything the wrapper keeps (its observer, the process-wide tool-call registry
    and run table): no message, no tool result, no string longer than an id or a hash."""
    saver = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    graph = agents.refund_desk(saver, RESULT_SIZE)
    for index in range(20):
        agents.two_approved_turns(graph, f"t{index}")
    kept = list(reachable(saver.observer, TOOL_CALLS, runs_module._ASYNC_RUNS))
    assert not [o for o in kept if isinstance(o, BaseMessage)]
    long_texts = [o for o in kept if isinstance(o, str) and len(o) > 1024]
    assert long_texts == [], [text[:40] for text in long_texts]
    assert saver.observer.cache_sizes()["watch_sessions"] == 20
