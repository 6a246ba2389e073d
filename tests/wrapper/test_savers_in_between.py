"""Runs are recognised whatever sits between LangGraph and the wrapper: a user's delegating
saver (a cache, a retry layer), two of them, the Agent Server's own `_CustomCheckpointerAdapter`,
a saver that hops to a worker thread, or a delegating saver inside the wrapper. Each gives the
same spans as the wrapper alone: runs, linked resumes of every kind, nodes, divergence."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from opentelemetry.sdk.trace import ReadableSpan

import agents
from delegating_savers import Delegating, server_adapter
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from sync_adapter import to_thread_adapter

Arrangement = Callable[[OTel], BaseCheckpointSaver[Any]]


def wrapped(otel: OTel, inner: BaseCheckpointSaver[Any] | None = None) -> Any:
    return instrument(
        inner if inner is not None else InMemorySaver(),
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
    )


SYNC_ARRANGEMENTS: dict[str, Arrangement] = {
    "alone": lambda otel: wrapped(otel),
    "one delegating saver in front": lambda otel: Delegating(wrapped(otel)),
    "two delegating savers in front": lambda otel: Delegating(Delegating(wrapped(otel))),
    "a delegating saver inside": lambda otel: wrapped(otel, Delegating(InMemorySaver())),
}
ASYNC_ARRANGEMENTS: dict[str, Arrangement] = {
    **SYNC_ARRANGEMENTS,
    "the Agent Server's adapter": lambda otel: server_adapter(wrapped(otel)),
    "the server's adapter over a user's saver": lambda otel: server_adapter(
        Delegating(wrapped(otel))
    ),
    "a saver hopping to a worker thread": lambda otel: to_thread_adapter(wrapped(otel)),
}


def summary(spans: Sequence[ReadableSpan]) -> list[str]:
    """What a user sees of the runs, trace by trace, in a form that does not depend on ids."""
    by_trace: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    writers = {
        f"{s.context.trace_id:032x}": index
        for index, trace in enumerate(sorted(by_trace.values(), key=_started))
        for s in trace
        if s.context is not None
    }
    lines = []
    for index, trace in enumerate(sorted(by_trace.values(), key=_started)):
        for span in sorted(trace, key=lambda s: s.start_time or 0):
            attrs = span.attributes or {}
            parts = [f"trace {index}", span.name.removeprefix("langgraph.checkpoint.")]
            for key in (
                names.GRAPH_NAME,
                names.RUN_OUTCOME,
                names.RESUME_KIND,
                names.STEP,
                names.SOURCE,
                names.NODES,
                names.TASK_NODE,
                names.TASK_OUTCOME,
            ):
                if key in attrs:
                    value = attrs[key]
                    parts.append(f"{key.rsplit('.', 1)[-1]}={_text(value)}")
            writer = attrs.get(names.RESUME_WRITER_TRACE_ID)
            if writer is not None:
                parts.append(f"writer=trace {writers.get(str(writer), '?')}")
            parts += [
                f"{event.name}:{(event.attributes or {}).get(names.DIVERGENCE_KIND)}"
                for event in span.events
                if event.name == names.EVENT_DIVERGENCE
            ]
            lines.append(" ".join(parts))
    return lines


def _started(trace: list[ReadableSpan]) -> int:
    return min(s.start_time or 0 for s in trace)


def _text(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def story(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    """Sync: a tool-calling run, a second turn, an interrupt and its resume, an update and a
    run from it, and a fork of the first turn whose model changes its answer."""
    script = agents.travel_script()
    agent = agents.react_agent(saver, script)
    results = [agent.invoke(agents.question(), agents.thread("a"))["messages"]]
    results.append(agent.invoke(agents.question("And a hotel?"), agents.thread("a")))
    approval = agents.approval_agent(saver)
    approval.invoke(agents.question(), agents.thread("b"))
    results.append(approval.invoke(Command(resume="yes"), agents.thread("b")))
    approval.update_state(agents.thread("b"), agents.question("One more thing."))
    results.append(approval.invoke(None, agents.thread("b")))
    first_model_step = [
        s for s in agent.get_state_history(agents.thread("a")) if s.next == ("agent",)
    ][-1]
    script.change(0, agents.calls(("book", {"flight": "FR7290"})))
    results.append(agent.invoke(None, first_model_step.config))
    return results


async def astory(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    """`story`, async."""
    script = agents.travel_script()
    agent = agents.react_agent(saver, script)
    results = [(await agent.ainvoke(agents.question(), agents.thread("a")))["messages"]]
    results.append(await agent.ainvoke(agents.question("And a hotel?"), agents.thread("a")))
    approval = agents.approval_agent(saver)
    await approval.ainvoke(agents.question(), agents.thread("b"))
    results.append(await approval.ainvoke(Command(resume="yes"), agents.thread("b")))
    await approval.aupdate_state(agents.thread("b"), agents.question("One more thing."))
    results.append(await approval.ainvoke(None, agents.thread("b")))
    history = [s async for s in agent.aget_state_history(agents.thread("a"))]
    first_model_step = [s for s in history if s.next == ("agent",)][-1]
    script.change(0, agents.calls(("book", {"flight": "FR7290"})))
    results.append(await agent.ainvoke(None, first_model_step.config))
    return results


@pytest.fixture(scope="module")
def sync_alone() -> list[str]:
    otel = OTel()
    story(SYNC_ARRANGEMENTS["alone"](otel))
    return summary(otel.spans())


@pytest.fixture(scope="module")
def async_alone() -> list[str]:
    otel = OTel()
    asyncio.run(astory(ASYNC_ARRANGEMENTS["alone"](otel)))
    return summary(otel.spans())


def test_async_runs_give_the_same_traces_as_sync_runs(
    sync_alone: list[str], async_alone: list[str]
) -> None:
    """Every span of a run in its trace, sync or async (also the loads a run makes that are
    not its own: LangGraph's superseded check on a fork)."""
    assert async_alone == sync_alone


def test_the_wrapper_alone_sees_every_run_resume_and_the_divergence(
    sync_alone: list[str], async_alone: list[str]
) -> None:
    for seen in (sync_alone, async_alone):
        runs = [line for line in seen if " invoke_workflow " in line]
        assert len(runs) == 6, seen
        resumes = [line.split("kind=")[1].split()[0] for line in seen if " resume " in line]
        assert resumes == ["continue", "interrupt", "update", "fork"], seen
        assert all("writer=trace" in line for line in seen if " resume " in line), seen
        assert any("langgraph.divergence" in line for line in seen), seen
        loop_puts = [line for line in seen if " put " in line and "source=loop" in line]
        assert loop_puts and all("nodes=" in line for line in loop_puts), seen


@pytest.mark.parametrize("arrangement", sorted(SYNC_ARRANGEMENTS))
def test_sync_runs_through_savers_in_between_give_the_same_spans(
    arrangement: str, sync_alone: list[str]
) -> None:
    otel = OTel()
    story(SYNC_ARRANGEMENTS[arrangement](otel))
    assert summary(otel.spans()) == sync_alone


@pytest.mark.parametrize("arrangement", sorted(ASYNC_ARRANGEMENTS))
def test_async_runs_through_savers_in_between_give_the_same_spans(
    arrangement: str, async_alone: list[str]
) -> None:
    otel = OTel()
    asyncio.run(astory(ASYNC_ARRANGEMENTS[arrangement](otel)))
    assert summary(otel.spans()) == async_alone
