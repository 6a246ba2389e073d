"""Checkpoint diffs over real LangGraph runs: hashes, sizes, content-free summaries, patches."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import operator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from helpers import OTel
from langgraph.checkpoint.otel import InstrumentOptions, instrument, names, stored_history
from langgraph.checkpoint.otel.analysis.checkpoint_diff import (
    CheckpointDiff,
    ContentPolicy,
    PatchError,
    TruncatedPatch,
    apply_patch,
    diff,
    make_patch,
    summarize_change,
    to_json,
)
from langgraph.checkpoint.otel.analysis.encoding import canonical_encode
from langgraph.checkpoint.otel.analysis.hashing import hash_value
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.analysis.text_bounds import repr_bytes

SECRET_TEXT = "SECRET-TEXT-91c2"
"""In message text, tool arguments and values: never in a diff without a content policy."""
SECRET_KEY = "SECRET-KEY-4d7e"
"""A dict key name: only with show_keys."""


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: dict[str, int]
    items: Annotated[list[str], operator.add]
    result: Any


def _agent(state: State) -> dict[str, Any]:
    if not any(m.type == "tool" for m in state["messages"]):
        call = {"name": "search", "args": {"q": SECRET_TEXT}, "id": "call-1"}
        return {
            "messages": [AIMessage(f"thinking {SECRET_TEXT}", id="ai-1", tool_calls=[call])],
            "notes": {"plan": 1, SECRET_KEY: 2},
            "items": ["agent"],
            "result": 0,
        }
    return {"messages": [AIMessage(f"answer {SECRET_TEXT}", id="ai-2")], "items": ["agent"]}


def _tools(state: State) -> dict[str, Any]:
    reply = ToolMessage(f"found {SECRET_TEXT}", tool_call_id="call-1", name="search", id="t-1")
    return {"messages": [reply], "notes": {"plan": 1, "draft": 3}, "items": ["tools"]}


def _trim(state: State) -> dict[str, Any]:
    return {"messages": [RemoveMessage(id="h-1")], "result": "done"}


def _graph() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("agent", _agent)
    builder.add_node("tools", _tools)
    builder.add_node("trim", _trim)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else "trim", ["tools", "trim"]
    )
    builder.add_edge("tools", "agent")
    return builder


def _history(saver: Any) -> dict[int, CheckpointTuple]:
    """Run the graph; its checkpoints by step (-1 input, 0 after input, ... 4 after trim)."""
    graph = _graph().compile(checkpointer=saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    graph.invoke(
        {"messages": [HumanMessage(f"hi {SECRET_TEXT}", id="h-1")], "items": ["in"]}, config
    )
    return {t.metadata["step"]: t for t in stored_history(saver, config)}


@pytest.fixture
def wrapped(otel: OTel) -> dict[int, CheckpointTuple]:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    return _history(saver)


@pytest.fixture
def bare() -> dict[int, CheckpointTuple]:
    return _history(InMemorySaver())


def _by_name(d: CheckpointDiff) -> dict[str, Any]:
    return {c.name: c for c in d.changes}


# --- hashes and sizes -----------------------------------------------------------------------


def test_changed_channels_hashes_and_sizes_are_the_stored_ones(
    wrapped: dict[int, CheckpointTuple],
) -> None:
    a, b = wrapped[1], wrapped[2]
    stored_a, stored_b = read_stored_telemetry(a.metadata), read_stored_telemetry(b.metadata)
    assert stored_a is not None and stored_b is not None and stored_b.channels
    d = diff(a, b)
    assert d.from_checkpoint_id == a.config["configurable"]["checkpoint_id"]
    assert d.to_checkpoint_id == b.config["configurable"]["checkpoint_id"]
    assert (d.state_hash_before, d.state_hash_after) == (stored_a.state_hash, stored_b.state_hash)
    # `result` did not change (equal hashes): left out; bookkeeping channels too
    assert [c.name for c in d.changes] == ["items", "messages", "notes"]
    for change in d.changes:
        assert change.status == "changed"
        assert (change.hash_before, change.size_before) == stored_a.channels[change.name]
        assert (change.hash_after, change.size_after) == stored_b.channels[change.name]
        assert change.size_delta == change.size_after - change.size_before  # type: ignore[operator]
        assert change.patch is None
    assert _by_name(d)["items"].size_delta == len(canonical_encode(["in", "agent", "tools"])) - len(
        canonical_encode(["in", "agent"])
    )


def test_stored_hashes_are_read_not_recomputed(wrapped: dict[int, CheckpointTuple]) -> None:
    a, b = wrapped[1], wrapped[2]
    meta = json.loads(json.dumps(b.metadata))
    meta[names.METADATA_KEY]["channels"]["notes"] = ["f" * 32, 1234]
    d = diff(a, b._replace(metadata=meta))
    notes = _by_name(d)["notes"]
    assert (notes.hash_after, notes.size_after) == ("f" * 32, 1234)


def test_internal_channels_only_on_request(wrapped: dict[int, CheckpointTuple]) -> None:
    d = diff(wrapped[1], wrapped[2], include_internal=True)
    assert {"branch:to:agent", "branch:to:tools"} <= {c.name for c in d.changes}
    assert _by_name(d)["branch:to:tools"].status == "removed"
    assert _by_name(d)["branch:to:agent"].status == "added"


def test_bare_checkpoints_diff_by_computing_hashes(
    bare: dict[int, CheckpointTuple], wrapped: dict[int, CheckpointTuple]
) -> None:
    assert read_stored_telemetry(bare[2].metadata) is None
    for x, y in [(-1, 0), (0, 2), (1, 2), (2, 3), (3, 4), (0, 4)]:
        computed, stored = diff(bare[x], bare[y]), diff(wrapped[x], wrapped[y])
        strip = {"from_checkpoint_id", "to_checkpoint_id"}
        assert computed.model_dump(exclude=strip) == stored.model_dump(exclude=strip)
    d = diff(bare[1], bare[2])
    messages = bare[2].checkpoint["channel_values"]["messages"]
    change = _by_name(d)["messages"]
    assert change.hash_after == hash_value(messages, fallback=repr_bytes)
    assert change.size_after == len(canonical_encode(messages))


# --- content-free summaries -----------------------------------------------------------------


def test_summaries_of_a_run(wrapped: dict[int, CheckpointTuple]) -> None:
    def summaries(x: int, y: int, **kw: Any) -> dict[str, str]:
        return {c.name: c.summary for c in diff(wrapped[x], wrapped[y], **kw).changes}

    assert summaries(-1, 0) == {"items": "list: 1 item", "messages": "+1 message: human"}
    assert summaries(0, 1) == {
        "items": "list: 1 → 2 items",
        "messages": "+1 message: ai(tool_calls=search)",
        "notes": "dict: 2 keys",
        "result": "int",
    }
    assert summaries(0, 2)["messages"] == "+2 messages: ai(tool_calls=search), tool(search)"
    assert summaries(1, 2) == {
        "items": "list: 2 → 3 items",
        "messages": "+1 message: tool(search)",
        "notes": "dict: 2 → 2 keys (+1 -1)",
    }
    assert summaries(3, 4) == {"messages": "-1 message: human", "result": "int → str"}
    assert summaries(2, 4)["messages"] == "+1 message: ai; -1 message: human"
    # key names only when asked for
    assert (
        summaries(1, 2, show_keys=True)["notes"] == f"dict: +1 key (draft), -1 key ({SECRET_KEY})"
    )
    assert summaries(0, 1, show_keys=True)["notes"] == f"dict: 2 keys (plan, {SECRET_KEY})"


def test_default_diff_never_shows_content(wrapped: dict[int, CheckpointTuple]) -> None:
    steps = sorted(wrapped)
    for x in steps:
        for y in steps:
            text = diff(wrapped[x], wrapped[y], include_internal=True).model_dump_json()
            assert SECRET_TEXT not in text and SECRET_KEY not in text
            shown = diff(wrapped[x], wrapped[y], show_keys=True).model_dump_json()
            assert SECRET_TEXT not in shown
    assert SECRET_KEY in diff(wrapped[1], wrapped[2], show_keys=True).model_dump_json()


def test_summaries_of_values() -> None:
    assert summarize_change({"a": 1, "b": 2}, {"a": 1, "c": 2, "d": 3}) == (
        "dict: 2 → 3 keys (+2 -1)"
    )
    assert summarize_change({"a": 1}, {"a": 2}) == "dict: 1 → 1 key (+0 -0 ~1)"
    assert summarize_change({"a": 1, "b": 1}, {"a": 2, "c": 1}, show_keys=True) == (
        "dict: +1 key (c), -1 key (b), ~1 key (a)"
    )
    assert summarize_change((1, 2), (1, 2, 3)) == "tuple: 2 → 3 items"
    assert summarize_change({1}, {1, 2, 3}) == "set: 1 → 3 items"
    assert summarize_change(1, 2) == "int"
    assert summarize_change("x", 2) == "str → int"
    assert summarize_change(None, [1]) == "NoneType → list"
    assert summarize_change([1], {"a": 1}) == "list → dict"
    old = [HumanMessage("a", id="1"), AIMessage("b", id="2")]
    new = [HumanMessage("a", id="1"), AIMessage("b edited", id="2")]
    assert summarize_change(old, new) == "~1 message: ai"
    assert summarize_change(old, old[::-1]) == "2 messages (reordered)"
    # messages without ids are matched by content hash
    assert summarize_change([HumanMessage("a")], [HumanMessage("a"), AIMessage("b")]) == (
        "+1 message: ai"
    )


# --- content patches ------------------------------------------------------------------------


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(SECRET_TEXT, "[REDACTED]").replace(SECRET_KEY, "[KEY]")
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def test_content_patch_only_when_requested_and_redacted(
    wrapped: dict[int, CheckpointTuple],
) -> None:
    a, b = wrapped[1], wrapped[2]
    assert all(c.patch is None for c in diff(a, b).changes)
    off = InstrumentOptions(capture_content=False, redact=lambda c, v: v)
    assert all(c.patch is None for c in diff(a, b, content=off).changes)

    seen: list[str] = []

    def redact(channel: str, value: Any) -> Any:
        seen.append(channel)
        return _scrub(to_json(value))

    d = diff(a, b, content=ContentPolicy(redact=redact, max_bytes=100_000))
    text = d.model_dump_json()
    assert "[REDACTED]" in text and "[KEY]" in text
    assert SECRET_TEXT not in text and SECRET_KEY not in text
    assert sorted(seen) == sorted(["items", "items", "messages", "messages", "notes", "notes"])
    values_a, values_b = a.checkpoint["channel_values"], b.checkpoint["channel_values"]
    for change in d.changes:
        assert isinstance(change.patch, list)
        old = _scrub(to_json(values_a[change.name]))
        assert apply_patch(old, change.patch) == _scrub(to_json(values_b[change.name]))
    assert _by_name(d)["notes"].patch == [
        {"op": "remove", "path": "/[KEY]"},
        {"op": "add", "path": "/draft", "value": 3},
    ]
    assert _by_name(d)["items"].patch == [{"op": "add", "path": "/2", "value": "tools"}]


def test_content_patch_through_instrument_options(wrapped: dict[int, CheckpointTuple]) -> None:
    options = InstrumentOptions(capture_content=True, content_max_bytes=100_000)
    d = diff(wrapped[-1], wrapped[0], content=options)
    messages = _by_name(d)["messages"]
    assert messages.status == "added"
    assert messages.patch == [
        {
            "op": "replace",
            "path": "",
            "value": to_json(wrapped[0].checkpoint["channel_values"]["messages"]),
        }
    ]
    assert apply_patch(None, messages.patch)[0]["content"] == f"hi {SECRET_TEXT}"


def test_content_patch_size_cap(wrapped: dict[int, CheckpointTuple]) -> None:
    full = diff(wrapped[1], wrapped[2], content=ContentPolicy(max_bytes=1_000_000))
    capped = diff(wrapped[1], wrapped[2], content=ContentPolicy(max_bytes=60))
    for big, small in zip(full.changes, capped.changes, strict=True):
        size = len(json.dumps(big.patch, ensure_ascii=False, separators=(",", ":")).encode())
        if size > 60:
            assert small.patch == TruncatedPatch(bytes=size)
            assert json.loads(small.model_dump_json())["patch"] == {
                "truncated": True,
                "bytes": size,
            }
        else:
            assert small.patch == big.patch
    assert isinstance(_by_name(capped)["messages"].patch, TruncatedPatch)
    assert _by_name(capped)["items"].patch == [{"op": "add", "path": "/2", "value": "tools"}]


def test_removed_channel_with_plain_tuples() -> None:
    def tup(cid: str, values: dict[str, Any]) -> Any:
        return SimpleNamespace(
            checkpoint={"id": cid, "channel_values": values}, metadata={}, config={}
        )

    d = diff(
        tup("1", {"plan": [1, 2], "gone": {"k": 1}}),
        tup("2", {"plan": [1, 2]}),
        content=ContentPolicy(),
    )
    [gone] = d.changes
    assert (gone.status, gone.hash_after, gone.size_after) == ("removed", None, None)
    assert gone.size_delta == -len(canonical_encode({"k": 1}))
    assert gone.summary == "dict: 1 key"
    assert gone.patch == [{"op": "replace", "path": "", "value": None}]
    assert (d.from_checkpoint_id, d.to_checkpoint_id) == ("1", "2")


# --- JSON forms and patches -----------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"


class Model(BaseModel):
    name: str
    tags: set[str]


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_json_forms() -> None:
    assert to_json({"a": (1, 2), 3: {2, 1}, "p": Point(1, 2)}) == {
        "a": [1, 2],
        "3": [1, 2],
        "p": {"x": 1, "y": 2},
    }
    assert to_json(Model(name="n", tags={"b", "a"})) == {"name": "n", "tags": ["a", "b"]}
    dumped = to_json(AIMessage("hi", id="x", tool_calls=[{"name": "s", "args": {}, "id": "1"}]))
    assert dumped["type"] == "ai" and dumped["tool_calls"][0]["name"] == "s"
    assert to_json(object)
    assert to_json([datetime.date(2024, 1, 2), Color.RED]) == ["2024-01-02", "red"]


def test_stored_digest_without_a_value() -> None:
    stored = {
        names.METADATA_KEY: {
            "v": names.META_FORMAT_VERSION,
            "state_hash": "s",
            "channels": {"big": ["a" * 32, 9]},
        }
    }
    a = SimpleNamespace(checkpoint={"id": "1", "channel_values": {}}, metadata={}, config={})
    b = SimpleNamespace(checkpoint={"id": "2", "channel_values": {}}, metadata=stored, config={})
    [change] = diff(a, b, content=ContentPolicy()).changes
    assert (change.status, change.size_delta, change.summary) == ("added", 9, "value not loaded")
    assert change.patch is None


SHAPES: list[tuple[Any, Any]] = [
    ({"a": 1, "b": [1, 2]}, {"a": 2, "b": [1, 2, 3], "c": None}),
    ([1, 2, 3, 4], [1, 4]),
    ([1, 2, 3], [0, 1, 2, 3]),
    ([1, 2, 3], [3, 2, 1]),
    ([{"x": 1}, {"x": 2}], [{"x": 1}, {"x": 3, "y": [1]}]),
    ({"a/b": 1, "m~n": {"c": 1}}, {"a/b": 2, "m~n": {}, "~1": True}),
    ({"a": 1}, [1]),
    (None, {"new": 1}),
    ("text", 5),
    ([1, True], [1.0, 1]),
    ({"deep": {"er": {"est": [1, {"k": "v"}]}}}, {"deep": {"er": {"est": [1, {"k": "w"}, 2]}}}),
    ([], [[]]),
]


@pytest.mark.parametrize(("old", "new"), SHAPES)
def test_patch_round_trips(old: Any, new: Any) -> None:
    patch = make_patch(old, new)
    result = apply_patch(old, patch)
    assert result == new and json.dumps(result) == json.dumps(new)
    assert make_patch(new, new) == []
    jsonpatch = pytest.importorskip("jsonpatch")  # the reference implementation agrees
    assert jsonpatch.apply_patch(old, patch) == new


def test_pointer_escaping_and_extra_ops() -> None:
    assert make_patch({"a/b": 1, "m~n": 1}, {"a/b": 2, "m~n": 1}) == [
        {"op": "replace", "path": "/a~1b", "value": 2}
    ]
    assert make_patch({}, {"~1": 1}) == [{"op": "add", "path": "/~01", "value": 1}]
    doc = {"a": [1, 2], "b": {"c": 1}}
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/a/1", "value": 2},
        {"op": "move", "from": "/b/c", "path": "/d"},
        {"op": "copy", "from": "/a", "path": "/e"},
        {"op": "add", "path": "/a/-", "value": 3},
    ]
    assert apply_patch(doc, patch) == {"a": [1, 2, 3], "b": {}, "d": 1, "e": [1, 2]}
    assert doc == {"a": [1, 2], "b": {"c": 1}}  # the input is not changed
    bad: list[dict[str, Any]]
    for bad in (
        [{"op": "remove", "path": "/zz"}],
        [{"op": "replace", "path": "/a/5", "value": 1}],
        [{"op": "test", "path": "/a/0", "value": True}],
        [{"op": "remove", "path": ""}],
        [{"op": "add", "path": "a", "value": 1}],
        [{"op": "frobnicate", "path": "/a"}],
    ):
        with pytest.raises(PatchError):
            apply_patch(doc, bad)
