"""Malformed stored telemetry: every reader drops what is malformed and never raises."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.analysis import checkpoint_diff
from langgraph.checkpoint.otel.analysis.records import history_records
from langgraph.checkpoint.otel.analysis.stored_metadata import (
    StoredTelemetry,
    read_stored_telemetry,
    without_stored_telemetry,
)
from langgraph.checkpoint.otel.analysis.tool_calls import ToolActivity, ToolCall
from langgraph.checkpoint.otel.core.saver import InstrumentedSaver, stored_history

CONFIG: Any = {"configurable": {"thread_id": "t1"}}

# one field of the wrapper's own format replaced by a malformed value (the rest kept)
MALFORMED: dict[str, tuple[str, Any]] = {
    "size-str": (names.META_CHANNELS, {"steps": ["abc", "n/a"]}),
    "size-none": (names.META_CHANNELS, {"steps": ["abc", None]}),
    "size-nan": (names.META_CHANNELS, {"steps": ["abc", float("nan")]}),
    "size-huge-str": (names.META_CHANNELS, {"steps": ["abc", "9" * 100_000]}),
    "size-negative": (names.META_CHANNELS, {"steps": ["abc", -1]}),
    "size-bool": (names.META_CHANNELS, {"steps": ["abc", True]}),
    "size-float": (names.META_CHANNELS, {"steps": ["abc", 3.5]}),
    "hash-none": (names.META_CHANNELS, {"steps": [None, 3]}),
    "entry-short": (names.META_CHANNELS, {"steps": ["abc"]}),
    "entry-str": (names.META_CHANNELS, {"steps": "abc"}),
    "channels-list": (names.META_CHANNELS, ["steps", "abc", 3]),
    "nodes-mixed": (names.META_NODES, ["a", 5, None, ["x"]]),
    "nodes-str": (names.META_NODES, "abc"),
    "state-hash-int": (names.META_STATE_HASH, 5),
    "resume-ints": (names.META_RESUME, {"kind": 1, "from": None}),
    "resume-str": (names.META_RESUME, "interrupt"),
    "tracestate-list": ("tracestate", ["x"]),
    "traceparent-int": ("traceparent", 5),
}


def plant(saver: InstrumentedSaver, key: str, value: Any) -> None:
    """Replace one field of the latest checkpoint's stored telemetry, through the inner saver."""
    inner = saver.inner
    latest = inner.get_tuple(CONFIG)
    assert latest is not None and latest.parent_config is not None
    stored = dict(latest.metadata[names.METADATA_KEY])  # type: ignore[literal-required]
    stored[key] = value
    metadata = {**latest.metadata, names.METADATA_KEY: stored}
    inner.put(latest.parent_config, latest.checkpoint, metadata, {})  # type: ignore[arg-type]
    again = inner.get_tuple(CONFIG)
    assert again is not None and again.checkpoint["id"] == latest.checkpoint["id"]
    assert key in again.metadata[names.METADATA_KEY]  # type: ignore[literal-required]


def bare_result() -> Any:
    bare = graphs.steps_then_ask(InMemorySaver())
    bare.invoke({"steps": []}, CONFIG)
    return bare.invoke(Command(resume="ok"), CONFIG)


@pytest.mark.parametrize(("key", "value"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_run_resuming_from_malformed_telemetry_is_classified_and_readers_do_not_raise(
    key: str, value: Any, otel: OTel
) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    assert isinstance(saver, InstrumentedSaver)
    app = graphs.steps_then_ask(saver)
    app.invoke({"steps": []}, CONFIG)
    plant(saver, key, value)
    otel.clear()

    assert app.invoke(Command(resume="ok"), CONFIG) == bare_result()

    found = [s for s in otel.spans() if s.name == names.SPAN_RESUME]
    assert [s.attributes[names.RESUME_KIND] for s in found] == ["interrupt"]  # type: ignore[index]
    if key != "traceparent":  # the writer's carrier is intact
        assert len(found[0].links) == 1
    counted = {
        p.attributes[names.RESUME_KIND]: p.value for p in otel.metrics()[names.METRIC_RESUMES]
    }
    assert counted == {"interrupt": 1}
    # the run's first put still records where it resumed from
    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    assert (
        puts[0].attributes[names.RESUME_FROM_CHECKPOINT_ID]
        == (
            found[0].attributes[names.CHECKPOINT_ID]  # type: ignore[index]
        )
    )

    # the offline readers
    tuples = stored_history(saver, CONFIG)
    records = history_records(tuples)
    assert len(records) == len(tuples)
    assert all(isinstance(r.state_hash, str) for r in records)
    ordered = sorted(tuples, key=lambda t: str(t.checkpoint["id"]))
    for older, newer in itertools.pairwise(ordered):
        checkpoint_diff.diff(older, newer)
    # what the caller sees carries no stored telemetry, malformed or not
    assert all(names.METADATA_KEY not in t.metadata for t in saver.list(CONFIG))


def test_each_field_is_validated_on_its_own() -> None:
    stored = read_stored_telemetry(
        {
            names.METADATA_KEY: {
                "v": names.META_FORMAT_VERSION,
                "state_hash": "s",
                "channels": {
                    "ok": ["h", 3],
                    "zero": ["h0", 0],
                    "str": ["h", "n/a"],
                    "none": ["h", None],
                    "nan": ["h", float("nan")],
                    "bool": ["h", False],
                    "neg": ["h", -2],
                    "hash": [1, 2],
                    7: ["h", 1],
                },
                "nodes": ["a", 1, None, "b"],
                "resume": {"kind": "crash", "from": "c1"},
                "traceparent": 5,
                "tracestate": "k=v",
            }
        }
    )
    assert stored is not None
    assert dict(stored.channels) == {"ok": ("h", 3), "zero": ("h0", 0)}
    assert stored.nodes == ("a", "b")
    assert stored.state_hash == "s"
    assert stored.resume == ("crash", "c1")
    assert dict(stored.carrier) == {"tracestate": "k=v"}

    broken = read_stored_telemetry(
        {
            names.METADATA_KEY: {
                "v": names.META_FORMAT_VERSION,
                "state_hash": ["s"],
                "channels": None,
                "nodes": {"a": 1},
                "resume": {"kind": "crash", "from": 3},
            }
        }
    )
    assert broken is not None
    assert (broken.state_hash, dict(broken.channels), broken.nodes, broken.resume) == (
        None,
        {},
        (),
        None,
    )
    # not the wrapper's format: a foreign value, a bool version, metadata that is no mapping
    for foreign in ({"v": True}, {"v": "1"}, "otel", None):
        assert read_stored_telemetry({names.METADATA_KEY: foreign}) is None
        metadata = {names.METADATA_KEY: foreign}
        assert without_stored_telemetry(metadata) is metadata
    assert read_stored_telemetry(["not", "a", "mapping"]) is None  # type: ignore[arg-type]


def test_an_earlier_format_is_hidden_and_its_hashes_are_not_compared() -> None:
    """Format 1 stored list hashes of another construction: read, hidden from callers, but its
    hashes are dropped so no reader compares them with current ones (nodes, trace context and
    resume still count)."""
    old = {
        "v": 1,
        "state_hash": "a" * 32,
        "channels": {"messages": ["b" * 32, 40]},
        "nodes": ["agent"],
        "resume": {"kind": "crash", "from": "c1"},
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    }
    stored = read_stored_telemetry({names.METADATA_KEY: old})
    assert stored is not None
    assert stored.state_hash is None and dict(stored.channels) == {}
    assert stored.nodes == ("agent",) and stored.resume == ("crash", "c1")
    assert stored.carrier["traceparent"] == old["traceparent"]
    assert without_stored_telemetry({"step": 1, names.METADATA_KEY: old}) == {"step": 1}
    unknown = {**old, "v": 99}
    assert read_stored_telemetry({names.METADATA_KEY: unknown}) is None


def test_tool_keys_are_stored_and_read_back_and_malformed_ones_are_dropped() -> None:
    book, lookup = ToolCall("book", "book:" + "a" * 32), ToolCall("look:up", "look:up:" + "b" * 32)
    stored = StoredTelemetry(
        "s",
        {"messages": ("h", 1)},
        tools=ToolActivity((book,), (lookup,)),
        run_tools=ToolActivity((book, book), ()),
    )
    metadata = {names.METADATA_KEY: stored.to_metadata()}
    read = read_stored_telemetry(metadata)
    assert read is not None
    assert read.tools == ToolActivity((book,), (lookup,))  # a name may hold ':'
    assert read.run_tools == ToolActivity((book, book), ())
    assert without_stored_telemetry(metadata) == {}  # still the wrapper's own: hidden
    assert names.META_TOOLS not in StoredTelemetry("s", tools=ToolActivity()).to_metadata()
    for malformed in ({"calls": "book:x"}, {"calls": [1]}, ["book:x"], {"results": None}):
        value = {"v": names.META_FORMAT_VERSION, names.META_TOOLS: malformed}
        read = read_stored_telemetry({names.METADATA_KEY: value})
        assert read is not None and read.tools is None
