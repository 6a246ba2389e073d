"""Hostile channel values and hostile `otel` metadata: the wrapped saver gives the same results,
the same stored history and the same failures as the bare saver, and bounded span attributes.

LangGraph's default serializer rejects several of these values (a `__slots__` object, a cycle,
an int beyond 64 bits, `array.array`): the bare run then fails, and the wrapped run must fail
the same way (the wrapper adds nothing). With ``pickle_fallback=True`` they are stored, so the
wrapper has to hash and summarize them.
"""

from __future__ import annotations

import array
import contextlib
import pickle
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

from helpers import OTel
from langgraph.checkpoint.otel import instrument, names, stored_history

try:  # numpy is optional here: without it, array.array stands in for a numeric array
    import numpy

    def numeric_array() -> Any:
        return numpy.arange(6, dtype=numpy.float64).reshape(2, 3)

except ImportError:

    def numeric_array() -> Any:
        return array.array("d", [1.0, float("nan"), 3.0])


MAX_ATTRIBUTE_CHARS = 10_000
THREAD = "hostile"


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b


def recursive_list() -> list[Any]:
    value: list[Any] = [1, "x"]
    value.append(value)
    return value


def recursive_dict() -> dict[str, Any]:
    value: dict[str, Any] = {"a": 1}
    value["self"] = value
    return value


def deeply_nested() -> list[Any]:
    value: list[Any] = []
    for _ in range(5000):
        value = [value]
    return value


HOSTILE: dict[str, Callable[[], Any]] = {
    "slots": lambda: Slotted(1, "x"),
    "recursive_list": recursive_list,
    "recursive_dict": recursive_dict,
    "nested_5000": deeply_nested,
    "huge_int": lambda: 10**10000,
    "nan_inf": lambda: {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")},
    "bytes": lambda: bytes(range(256)) * 4,
    "lone_surrogate": lambda: "a\ud800b\udfff",
    "numeric_array": numeric_array,
    "str_10mb": lambda: "x" * 10_000_000,
}


class State(TypedDict, total=False):
    v: Any
    n: int


def build(saver: BaseCheckpointSaver[Any], make: Callable[[], Any]) -> Any:
    builder = StateGraph(State)
    builder.add_node("write", lambda state: {"v": make(), "n": 1})
    builder.add_node("after", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "write")
    builder.add_edge("write", "after")
    return builder.compile(checkpointer=saver)


def serde(kind: str) -> JsonPlusSerializer:
    return JsonPlusSerializer(pickle_fallback=kind == "pickle")


def bare_and_wrapped(
    run: Callable[[BaseCheckpointSaver[Any]], Any], saver_kind: str, tmp_path: Any, otel: OTel
) -> tuple[Any, Any]:
    """`run` on a bare saver, then on a fresh one of the same kind wrapped: (bare, wrapped)."""
    with saver_of(saver_kind, "default", tmp_path / "bare.sqlite") as bare:
        expected = run(bare)
    with saver_of(saver_kind, "default", tmp_path / "wrapped.sqlite") as inner:
        got = run(
            instrument(
                inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
            )
        )
    return expected, got


@contextlib.contextmanager
def saver_of(kind: str, serde_kind: str, path: Any) -> Iterator[BaseCheckpointSaver[Any]]:
    if kind == "memory":
        yield InMemorySaver(serde=serde(serde_kind))
        return
    with SqliteSaver.from_conn_string(str(path)) as saver:
        saver.serde = serde(serde_kind)
        yield saver


def comparable(value: Any) -> Any:
    """A form compared with ==: pickle bytes (handle NaN, cycles, huge ints, slots)."""
    try:
        return pickle.dumps(value, protocol=5)
    except RecursionError:  # too deep to pickle: compare the nesting depth and leaf
        depth = 0
        while isinstance(value, list) and len(value) == 1:
            value, depth = value[0], depth + 1
        return ("nested", depth, repr(value))


def without_otel(metadata: Any) -> Any:
    return {k: v for k, v in (metadata or {}).items() if k != names.METADATA_KEY}


def history(saver: BaseCheckpointSaver[Any], *, strip: bool) -> list[Any]:
    out = []
    for tup in stored_history(saver, {"configurable": {"thread_id": THREAD}}):
        values = tup.checkpoint["channel_values"]
        out.append(
            (
                sorted(values),
                {k: comparable(v) for k, v in values.items()},
                without_otel(tup.metadata) if strip else comparable(tup.metadata),
                sorted((c, comparable(v)) for _, c, v in tup.pending_writes or []),
            )
        )
    return out


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        result = call()
    except Exception as exc:
        return type(exc).__name__, str(exc)[:500]
    return "ok", {k: comparable(v) for k, v in result.items()}


def assert_bounded(otel: OTel) -> None:
    def check(where: str, value: Any) -> None:
        items = value if isinstance(value, tuple | list) else [value]
        assert len(items) < 1_000, where
        for item in items:
            if isinstance(item, str):
                assert len(item) < MAX_ATTRIBUTE_CHARS, where

    spans = otel.spans()
    assert spans  # the run went through the wrapper
    for span in spans:
        for key, value in (span.attributes or {}).items():
            check(f"{span.name} {key}", value)
        for event in span.events:
            for key, value in (event.attributes or {}).items():
                check(f"{span.name} {event.name} {key}", value)
        assert len(span.status.description or "") < MAX_ATTRIBUTE_CHARS


@pytest.mark.parametrize("serde_kind", ["default", "pickle"])
@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_value_is_stored_and_fails_as_it_does_bare(
    name: str, saver_kind: str, serde_kind: str, otel: OTel, tmp_path: Any
) -> None:
    make = HOSTILE[name]
    config = {"configurable": {"thread_id": THREAD}}
    with saver_of(saver_kind, serde_kind, tmp_path / "bare.sqlite") as bare:
        expected = outcome(lambda: build(bare, make).invoke({"n": 0}, config, durability="sync"))
        expected_history = history(bare, strip=False)
        assert all(names.METADATA_KEY not in t.metadata for t in stored_history(bare, config))
    with saver_of(saver_kind, serde_kind, tmp_path / "wrapped.sqlite") as inner:
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        got = outcome(lambda: build(saver, make).invoke({"n": 0}, config, durability="sync"))
        got_history = history(saver, strip=True)
        stored = [t.metadata for t in stored_history(saver, config)]
    assert got == expected
    assert len(got_history) == len(expected_history) >= 1
    for (k1, v1, m1, w1), (k2, v2, m2, w2) in zip(got_history, expected_history, strict=True):
        assert (k1, v1, w1) == (k2, v2, w2)
        assert comparable(m1) == m2
    assert any(names.METADATA_KEY in m for m in stored)  # the wrapper did store its telemetry
    assert_bounded(otel)


def test_the_default_serializer_rejects_and_pickle_stores_the_hostile_values(
    tmp_path: Any,
) -> None:
    """Pins which cases compare failures and which compare stored values (both are covered)."""
    config = {"configurable": {"thread_id": THREAD}}

    def runs(make: Callable[[], Any], serde_kind: str) -> bool:
        saver = InMemorySaver(serde=serde(serde_kind))
        return outcome(lambda: build(saver, make).invoke({"n": 0}, config))[0] == "ok"

    rejected = {name for name, make in HOSTILE.items() if not runs(make, "default")}
    assert {"slots", "recursive_list", "recursive_dict", "nested_5000", "huge_int"} <= rejected
    assert {"nan_inf", "bytes", "lone_surrogate", "str_10mb"}.isdisjoint(rejected)
    stored = {name for name, make in HOSTILE.items() if runs(make, "pickle")}
    assert set(HOSTILE) - {"nested_5000"} <= stored


# --- a user's own value under the `otel` metadata key ----------------------------------------

PLANTED: dict[str, Any] = {
    "string": "not telemetry",
    "list": [1, "two", None, [3]],
    "v1_with_garbage": {
        "v": names.META_FORMAT_VERSION,
        "state_hash": 42,
        "channels": {"n": ["not-a-hash"], "7": "x"},
        "nodes": "write",
        "traceparent": ["00-bad"],
        "resume": "yes",
        "extra": {"deep": [1, 2, 3]},
    },
    "future_format": {"v": 99, "state_hash": "abc"},
    "huge_dict": {f"key-{i}": "x" * 32 for i in range(20_000)},
}


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_users_own_otel_metadata_is_kept_and_nothing_is_stored(
    name: str, saver_kind: str, otel: OTel, tmp_path: Any
) -> None:
    planted = PLANTED[name]
    config = {"configurable": {"thread_id": THREAD}, "metadata": {names.METADATA_KEY: planted}}

    def run(saver: BaseCheckpointSaver[Any]) -> tuple[Any, ...]:
        graph = build(saver, lambda: "value")
        result = outcome(lambda: graph.invoke({"n": 0}, config, durability="sync"))
        read = [t.metadata for t in saver.list({"configurable": {"thread_id": THREAD}})]
        state = graph.get_state({"configurable": {"thread_id": THREAD}})
        return result, history(saver, strip=False), read, state.metadata, state.values

    expected, got = bare_and_wrapped(run, saver_kind, tmp_path, otel)
    assert expected[0][0] == "ok"
    # LangGraph copies only scalar `config["metadata"]` values into checkpoint metadata: the
    # string reaches the store bare (so the comparison below is meaningful), the others do not
    if isinstance(planted, str):
        assert expected[2] and all(m[names.METADATA_KEY] == planted for m in expected[2])
    else:
        assert expected[2] and all(names.METADATA_KEY not in m for m in expected[2])
    assert got[0] == expected[0]  # same result
    assert got[1] == expected[1]  # same stored history, metadata included (nothing stored)
    assert got[2] == expected[2]  # the caller reads the user's value as it does bare
    assert got[3] == expected[3] and got[4] == expected[4]
    assert_bounded(otel)


@pytest.mark.parametrize("saver_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_users_own_otel_value_put_as_checkpoint_metadata_is_kept(
    name: str, saver_kind: str, otel: OTel, tmp_path: Any
) -> None:
    """Metadata given to `put` directly keeps any shape: stored and read back as bare."""
    planted = PLANTED[name]
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}

    def run(saver: BaseCheckpointSaver[Any]) -> tuple[Any, ...]:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"v": "value"}
        checkpoint["channel_versions"] = {"v": saver.get_next_version(None, None)}
        metadata: Any = {"source": "update", "step": 0, names.METADATA_KEY: planted}
        saved = saver.put(config, checkpoint, metadata, checkpoint["channel_versions"])
        tup = saver.get_tuple(saved)
        assert tup is not None
        listed = [t.metadata for t in saver.list(config)]
        return tup.metadata, listed, [t.metadata for t in stored_history(saver, config)]

    expected, got = bare_and_wrapped(run, saver_kind, tmp_path, otel)
    assert expected[0][names.METADATA_KEY] == planted
    assert got[2] == expected[2]  # stored: the user's value, nothing of the wrapper's
    # read back through the wrapper as bare: a user's value with keys the wrapper never
    # writes is not taken for the wrapper's own, even with `"v": 1`
    assert got[0] == expected[0]
    assert got[1] == expected[1]
    assert otel.spans()
    assert_bounded(otel)
