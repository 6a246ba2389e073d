"""Spans from facts: a put's and a load's facts, gathered without a graph, and the pure functions
that turn them into span attributes, events and stored telemetry (`core.put_span`,
`core.load_span`); the load-to-put hand-over kept by `ScopeStates`."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.otel import InstrumentOptions, names
from langgraph.checkpoint.otel.analysis.carrier import TraceContext
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.graph_structure import StructureChange
from langgraph.checkpoint.otel.analysis.hashing import StateHasher
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord
from langgraph.checkpoint.otel.analysis.resume_kinds import Resume, RunRequest
from langgraph.checkpoint.otel.analysis.tool_calls import ToolCall
from langgraph.checkpoint.otel.core.load_facts import (
    GraphChange,
    LoadFacts,
    LoadWitness,
    ResumeFacts,
)
from langgraph.checkpoint.otel.core.load_span import load_attributes, resume_events
from langgraph.checkpoint.otel.core.put_facts import (
    ChannelChange,
    PutFacts,
    PutWitness,
    StateFacts,
)
from langgraph.checkpoint.otel.core.put_span import put_attributes, put_events, stored_telemetry
from langgraph.checkpoint.otel.core.runs import ActiveRuns
from langgraph.checkpoint.otel.core.scope_state import LoadNote, ScopeStates
from langgraph.checkpoint.otel.core.telemetry import Telemetry
from langgraph.checkpoint.otel.core.watch import DivergenceWatch
from langgraph.checkpoint.otel.core.witness import SaverMemory

CONTEXT = TraceContext(trace_id=0xABC, span_id=0xDEF)


def _put(**changes: Any) -> PutFacts:
    base: dict[str, Any] = {
        "checkpoint_id": "c2",
        "parent_id": "c1",
        "version": 4,
        "step": 2,
        "source": "loop",
        "nodes": ("agent",),
        "channels_changed": ("messages",),
        "resumed_from": None,
        "schema_version": None,
        "structure": None,
        "policy": {},
        "policy_text": None,
    }
    return PutFacts(**{**base, **changes})


def _state(**changes: Any) -> StateFacts:
    base: dict[str, Any] = {
        "state_hash": "h" * 32,
        "size_bytes": 120,
        "written_bytes": 40,
        "largest_channel": ("messages", 100),
        "lineage": (3, 200),
        "channel_sizes": (("messages", 40),),
        "channel_changes": (ChannelChange("messages", "m" * 32, 40, "list: 2 items (+1)"),),
        "channel_digests": {"messages": ("m" * 32, 100)},
    }
    return StateFacts(**{**base, **changes})


def _finding(kind: str = "state") -> Finding:
    return Finding(
        kind=kind,  # type: ignore[arg-type]
        step=2,
        checkpoint_id="c2",
        reference_checkpoint_id="r2",
        channel="messages",
        expected="e",
        actual="a",
    )


# --- put -------------------------------------------------------------------------------------


def test_put_attributes_without_a_state_name_no_hash() -> None:
    attributes = put_attributes(_put())
    assert list(attributes[names.NODES]) == ["agent"]  # type: ignore[arg-type]
    assert attributes[names.PARENT_ID] == "c1"
    assert names.STATE_HASH not in attributes
    assert names.THREAD_CHECKPOINTS not in attributes


def test_put_attributes_give_the_state_its_size_and_line() -> None:
    attributes = put_attributes(_put(state=_state()))
    assert attributes[names.STATE_HASH] == "h" * 32
    assert attributes[names.WRITTEN_BYTES] == 40
    assert attributes[names.LARGEST_CHANNEL] == "messages"
    assert (attributes[names.THREAD_CHECKPOINTS], attributes[names.THREAD_WRITTEN_BYTES]) == (
        3,
        200,
    )


def test_put_attributes_flag_a_divergence_and_a_concurrent_write() -> None:
    attributes = put_attributes(
        _put(
            findings=(_finding(),),
            finding_kinds=("divergence.state", "concurrent_write"),
        )
    )
    assert attributes[names.DIVERGENCE_DETECTED] is True
    assert attributes[names.FINDINGS] == ["concurrent_write", "divergence.state"]
    assert attributes[names.FLAGGED] is True


def test_put_events_come_channels_first_then_tool_calls_findings_and_concurrency() -> None:
    other = CheckpointRecord("x", "p", 1, "loop", trace_id="t" * 32)
    calls = tuple((f"call{i}", ToolCall("search", f"k{i}")) for i in range(5))
    events = put_events(
        _put(
            state=_state(),
            requested_tools=calls,
            findings=(_finding(),),
            concurrent_with=other,
        ),
        max_events=3,
    )
    assert [name for name, _ in events] == [
        names.EVENT_CHANNEL,
        *[names.EVENT_TOOL_CALL] * 3,
        names.EVENT_DIVERGENCE,
        names.EVENT_CONCURRENT_WRITE,
    ]
    assert events[1][1][names.TOOL_CALL_ID] == "call0"
    assert events[-1][1][names.CONCURRENT_OTHER_TRACE_ID] == "t" * 32


def test_nothing_is_stored_where_the_user_owns_the_metadata_key() -> None:
    assert stored_telemetry(_put(state=_state(), user_claims_metadata_key=True)) is None
    assert stored_telemetry(_put()) is None  # no hash, context, line, schema or structure


def test_without_stored_hashes_the_line_and_context_are_still_stored() -> None:
    stored = stored_telemetry(_put(state=_state(), trace_context=CONTEXT, store_hashes=False))
    assert stored is not None
    assert stored.state_hash is None and stored.channels == {}
    assert stored.lineage == (3, 200)
    assert stored.carrier == CONTEXT.carrier()


# --- load ------------------------------------------------------------------------------------


def _resume(**changes: Any) -> ResumeFacts:
    base: dict[str, Any] = {
        "resume": Resume("interrupt", "c1", 1, ("approve",)),
        "subgraph": False,
        "age_s": 1.5,
        "policy_text": None,
        "writer": CONTEXT,
        "schema_version": None,
        "schema_mismatch": None,
        "migration": None,
        "structure_hash": None,
        "graph_change": None,
        "graph_name": "g",
        "execution_id": "c0",
        "pause_id": None,
        "finding_kinds": (),
    }
    return ResumeFacts(**{**base, **changes})


def test_a_plain_load_names_its_checkpoint_only() -> None:
    attributes = load_attributes(LoadFacts(None, "c1", 3, "loop"))
    assert attributes[names.CHECKPOINT_ID] == "c1"
    assert attributes[names.STEP] == 3
    assert names.RESUME_KIND not in attributes


def test_a_resume_names_its_kind_and_writer() -> None:
    attributes = load_attributes(LoadFacts(None, "c1", 3, "loop", _resume()))
    assert attributes[names.RESUME_KIND] == "interrupt"
    assert attributes[names.RESUME_TASKS] == ["approve"]
    assert attributes[names.RESUME_WRITER_TRACE_ID] == f"{0xABC:032x}"
    assert attributes[names.RESUME_WRITER_SPAN_ID] == f"{0xDEF:016x}"


def test_a_resume_reports_schema_and_graph_changes_in_that_order() -> None:
    change = GraphChange("old", StructureChange(nodes_added=("review",)))
    events = resume_events(
        _resume(schema_mismatch=("1", "2"), structure_hash="new", graph_change=change)
    )
    assert [name for name, _ in events] == [names.EVENT_SCHEMA_MISMATCH, names.EVENT_GRAPH_CHANGED]
    assert events[1][1][names.GRAPH_NODES_ADDED] == ["review"]
    assert resume_events(_resume()) == []


# --- the hand-over ---------------------------------------------------------------------------


def _checkpoint(checkpoint_id: str, **values: Any) -> dict[str, Any]:
    return {
        "v": 4,
        "id": checkpoint_id,
        "ts": "2026-12-06T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": dict.fromkeys(values, 1),
        "versions_seen": {},
    }


def test_a_loads_note_reaches_the_first_put_only() -> None:
    states = ScopeStates(8)
    scope = ("t", "")
    states.loaded(scope, _checkpoint("c1"), LoadNote("crash", "c1"), None)  # type: ignore[arg-type]
    first = states.begin_put(scope, _checkpoint("c2"), "c1")  # type: ignore[arg-type]
    second = states.begin_put(scope, _checkpoint("c3"), "c2")  # type: ignore[arg-type]
    assert first.resumed_from == ("crash", "c1")
    assert first.previous is not None and first.previous.id == "c1"
    assert second.resumed_from is None


def test_migrated_channels_are_taken_once() -> None:
    states = ScopeStates(8)
    scope = ("t", "")
    states.loaded(scope, _checkpoint("c1"), LoadNote("crash", "c1"), None)  # type: ignore[arg-type]
    states.note_migrated(scope, {"messages": 7})
    assert states.take_migrated(scope) == {"messages": 7}
    assert states.take_migrated(scope) == {}


def test_a_line_continues_only_from_a_known_parent() -> None:
    states = ScopeStates(8)
    scope = ("t", "")
    assert states.extend_lineage(scope, "c1", None, 10) == (1, 10)
    assert states.extend_lineage(scope, "c2", "c1", 5) == (2, 15)
    assert states.extend_lineage(scope, "c9", "unknown", 5) is None


def test_the_lock_stays_inside_the_scope_states() -> None:
    assert not hasattr(ScopeStates(1), "lock")


# --- gathered without a graph ----------------------------------------------------------------


def _witnesses(options: InstrumentOptions) -> tuple[PutWitness, LoadWitness]:
    telemetry = Telemetry("test", None, None)
    states = ScopeStates(8)
    hasher = StateHasher(8)
    watch = DivergenceWatch(options.divergence, messages_channel=options.messages_channel)
    runs = ActiveRuns(telemetry, states, hasher, 8)
    memory = SaverMemory(options, states, runs, hasher, watch, telemetry.guard)
    return PutWitness(memory), LoadWitness(memory)


def test_a_put_after_a_resume_is_its_first_and_grows_the_stored_line() -> None:
    puts, loads = _witnesses(InstrumentOptions())
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}}
    loaded = CheckpointTuple(
        config,  # type: ignore[arg-type]
        _checkpoint("c1", messages=[]),  # type: ignore[arg-type]
        {"source": "loop", "step": 1},
        None,
        [],
    )
    load, walk = loads.gather(loaded, RunRequest(), None)
    assert load.resume is not None and walk is None
    facts = puts.gather(
        ("t", ""),
        config,  # type: ignore[arg-type]
        _checkpoint("c2", messages=["hi"]),  # type: ignore[arg-type]
        {"source": "loop", "step": 2},
        {"messages": 2},
        None,
        recording=True,
        hash_state=True,
        trace_context=CONTEXT,
    )
    assert facts.resumed_from == (load.resume.resume.kind, "c1")
    assert facts.state is not None and facts.state.lineage is None  # c1's line is unknown
    assert [c.name for c in facts.state.channel_changes] == ["messages"]
    stored = stored_telemetry(facts)
    assert stored is not None and stored.resume == facts.resumed_from
