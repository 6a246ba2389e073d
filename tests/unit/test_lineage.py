"""Pure resume lineage: carriers, classification, the resume log."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Send

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import scheduled_nodes
from langgraph.checkpoint.otel.analysis.carrier import TraceContext, parse_carrier
from langgraph.checkpoint.otel.analysis.resume_events import resume_log
from langgraph.checkpoint.otel.analysis.resume_kinds import (
    LoadedCheckpoint,
    RunRequest,
    classify_resume,
)
from langgraph.checkpoint.otel.analysis.span_records import SpanFact

TRACE = 0x0AF7651916CD43DD8448EB211C80319C
SPAN = 0xB7AD6B7169203331


def test_carrier_round_trip() -> None:
    context = TraceContext(TRACE, SPAN, 1, "vendor=abc")
    carrier = context.carrier()
    assert carrier == {
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "tracestate": "vendor=abc",
    }
    assert parse_carrier(carrier) == context
    assert "baggage" not in carrier


@pytest.mark.parametrize(
    "carrier",
    [
        None,
        "garbage",
        {},
        {"traceparent": ""},
        {"traceparent": "garbage"},
        {"traceparent": 42},
        {"traceparent": "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},  # version
        {"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"},  # zero id
        {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"},
        {"traceparent": "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"},  # upper
        {"uber-trace-id": "0af7651916cd43dd:b7ad6b7169203331:0:1"},  # another tool's carrier
        {"sentry-trace": "0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1"},
        ["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
    ],
)
def test_malformed_or_foreign_carriers_give_no_context(carrier: Any) -> None:
    assert parse_carrier(carrier) is None


def test_a_bad_tracestate_is_dropped_not_fatal() -> None:
    parsed = parse_carrier(
        {
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "tracestate": 7,
        }
    )
    assert parsed == TraceContext(TRACE, SPAN, 1, "")


def loaded(
    values: dict[str, Any] | None = None,
    writes: tuple[str, ...] = (),
    source: str = "loop",
    nodes: tuple[str, ...] = (),
) -> LoadedCheckpoint:
    return LoadedCheckpoint("cp-1", source, values or {}, list(writes), nodes)


SCHEDULED = {"branch:to:tools": None, "messages": [1]}


@pytest.mark.parametrize(
    ("checkpoint", "run", "kind"),
    [
        (loaded(SCHEDULED), RunRequest(explicit_checkpoint=True), "fork"),
        (loaded(SCHEDULED, writes=("__error__",)), RunRequest(), "error"),
        (loaded(SCHEDULED, writes=("messages", "__error__")), RunRequest(), "error"),
        (loaded(SCHEDULED, writes=("__interrupt__",)), RunRequest(), "interrupt"),
        (loaded(SCHEDULED), RunRequest(interrupt_before=("tools",)), "interrupt"),
        (loaded(SCHEDULED), RunRequest(interrupt_before="*"), "interrupt"),
        (loaded(SCHEDULED, nodes=("agent",)), RunRequest(interrupt_after=("agent",)), "interrupt"),
        (loaded(SCHEDULED), RunRequest(interrupt_before=("other",)), "crash"),
        (loaded(SCHEDULED, writes=("messages",)), RunRequest(), "crash"),  # a sibling finished
        (loaded(SCHEDULED, source="update"), RunRequest(), "update"),
        (loaded(SCHEDULED, source="update"), RunRequest(interrupt_before=("tools",)), "update"),
        (loaded(SCHEDULED, ("__interrupt__",), "update"), RunRequest(), "interrupt"),
        (loaded({"messages": [1]}, source="update"), RunRequest(), "update"),
        (loaded({"messages": [1]}), RunRequest(), "continue"),
        (loaded({"messages": [1]}), RunRequest(interrupt_before="*"), "continue"),
        # killed right after the input checkpoint: its __start__ task never ran
        (loaded({"__start__": {"messages": [1]}}, source="input"), RunRequest(), "crash"),
        (
            loaded({"__start__": {"n": 1}}, source="input"),
            RunRequest(interrupt_before="*"),
            "crash",
        ),
    ],
)
def test_classification(checkpoint: LoadedCheckpoint, run: RunRequest, kind: str) -> None:
    resume = classify_resume(checkpoint, run)
    assert resume.kind == kind
    assert resume.from_checkpoint_id == "cp-1"
    assert resume.pending_writes == len(checkpoint.pending_write_channels)


def test_scheduled_nodes_are_branch_triggers_and_send_targets() -> None:
    values = {"branch:to:b": None, "branch:to:a": None, "__pregel_tasks": [Send("w", 1)], "x": 1}
    assert scheduled_nodes(values) == ["a", "b", "w"]
    assert scheduled_nodes({"__start__": {"x": 1}}) == ["__start__"]
    # a waiting edge's barrier schedules its node once every source has written
    assert scheduled_nodes({"join:left+right:merge": {"left", "right"}}) == ["merge"]
    assert scheduled_nodes({"join:left+right:merge": {"left"}}) == []
    assert scheduled_nodes({"join:left+right:merge": set()}) == []


def fact(name: str, t: int, **attributes: Any) -> SpanFact:
    base = {names.THREAD_ID: "t1", names.CHECKPOINT_NS: ""}
    return SpanFact(name, t, {**base, **{k.replace("__", "."): v for k, v in attributes.items()}})


def test_resume_log_from_spans_alone() -> None:
    spans = [
        fact(names.SPAN_PUT, 1),
        fact(names.SPAN_PUT_WRITES, 2, langgraph__task__node="agent"),
        fact(
            names.SPAN_RESUME,
            10,
            langgraph__resume__kind="crash",
            langgraph__resume__from_checkpoint_id="cp-2",
        ),
        fact(names.SPAN_PUT_WRITES, 11, langgraph__task__node="__input__"),
        SpanFact(names.SPAN_PUT_WRITES, 12, {names.THREAD_ID: "other", names.TASK_NODE: "x"}),
        fact(names.SPAN_PUT_WRITES, 13, langgraph__task__node="tools"),
        fact(
            names.SPAN_RESUME,
            20,
            langgraph__resume__kind="interrupt",
            langgraph__resume__from_checkpoint_id="cp-5",
        ),
    ]
    log = resume_log(reversed(spans), thread_id="t1")
    assert [(e.at_ns, e.kind, e.from_checkpoint_id, e.first_node) for e in log] == [
        (10, "crash", "cp-2", "tools"),
        (20, "interrupt", "cp-5", None),
    ]
    assert resume_log(spans, thread_id="nobody") == []
