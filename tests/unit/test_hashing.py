"""Canonical, incremental channel hashing (pure: no OpenTelemetry, no saver)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import hashlib
import math
import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Send
from pydantic import BaseModel, ConfigDict

from langgraph.checkpoint.otel.analysis.encoding import (
    LIST_PERSON,
    NESTED_CHAIN_MIN,
    VOLATILE_MESSAGE_FIELDS,
    UnhashableValueError,
    canonical_encode,
)
from langgraph.checkpoint.otel.analysis.hashing import (
    ChannelDigest,
    StateHasher,
    combine_state_hash,
    digest_value,
    hash_value,
)

# --------------------------------------------------------------------------------------------
# Canonical encoding
# --------------------------------------------------------------------------------------------


def _chain(elements: list[Any]) -> bytes:
    chain = hashlib.blake2b(digest_size=16, person=LIST_PERSON).digest()
    for element in elements:
        digest = hashlib.blake2b(_digest_form(element), digest_size=16).digest()
        chain = hashlib.blake2b(digest, digest_size=16, key=chain, person=LIST_PERSON).digest()
    return chain


def _digest_form(value: Any) -> bytes:
    """The documented hashing form, rebuilt from `canonical_encode` for lists of scalars and
    dicts of them: every nested list of 8 or more elements replaced by ``L`` + its chain."""
    if isinstance(value, list):
        if len(value) < NESTED_CHAIN_MIN:
            return b"[" + b"".join(map(_digest_form, value)) + b"]"
        return b"L" + _chain(value)
    if isinstance(value, dict):
        pairs = sorted((canonical_encode(k), _digest_form(v)) for k, v in value.items())
        return b"{" + b"".join(k + v for k, v in pairs) + b"}"
    return canonical_encode(value)


def test_hash_is_blake2b_16_of_the_digest_form_of_the_canonical_encoding() -> None:
    flat = {"a": 1, "b": b"\x00\x01", "c": "x"}
    assert hash_value(flat) == hashlib.blake2b(canonical_encode(flat), digest_size=16).hexdigest()
    nested = {
        "a": [1, 2.5, "x", None, True],
        "b": b"\x00\x01",
        "d": {"e": [[1], [], list(range(9))]},
        "f": list(range(8)),
    }
    h = hash_value(nested)
    assert len(h) == 32
    assert h == hashlib.blake2b(_digest_form(nested), digest_size=16).hexdigest()
    # the reported size is the inline encoding's, whatever the hashing form
    assert digest_value(nested).size == len(canonical_encode(nested))


def test_a_list_hash_is_a_chain_over_its_element_digests() -> None:
    """The documented construction, rebuilt here from the encoding alone."""
    elements: list[Any] = [{"a": 1}, "two", [3, 4.0], None]
    assert hash_value([]) == _chain([]).hex()
    assert hash_value(elements) == _chain(elements).hex()
    # a list differs from the tuple with the same elements, and from the list one shorter
    assert hash_value(elements) != hash_value(tuple(elements))
    assert hash_value(elements) != hash_value(elements[:-1])
    # a long list nested in another value hashes as its chain there too; a short one inline
    long = elements * 2
    assert (
        hash_value({"m": long})
        == hashlib.blake2b(
            b"{" + canonical_encode("m") + b"L" + _chain(long) + b"}", digest_size=16
        ).hexdigest()
    )
    assert (
        hash_value({"m": elements})
        == hashlib.blake2b(
            b"{" + canonical_encode("m") + _digest_form(elements) + b"}", digest_size=16
        ).hexdigest()
    )


def test_sizes_are_inline_encoding_lengths_for_every_shape() -> None:
    msg = AIMessage(
        "hi", tool_calls=[{"name": "t", "args": {"q": [1, [2, {"r": [3]}]]}, "id": "c"}]
    )
    shapes: list[Any] = [
        [],
        [[]],
        [[[1]], {"a": [2, [3]]}],
        {"a": [1, 2], "b": ({"c": [3]},), "s": {1, 2}},
        [msg, HumanMessage("x"), [msg]],
        (1, [2, [3, [4]]]),
        [Send("n", {"messages": [msg] * 9})],
    ]
    for value in shapes:
        assert digest_value(value).size == len(canonical_encode(value)), value
        hasher = StateHasher()
        digest = hasher.digest_state("t", {"c": value}, {"c": 1}, {"c"})
        assert digest.channels["c"] == digest_value(value)


def test_dict_insertion_order_does_not_matter() -> None:
    a = {"x": 1, "y": [1, 2], "z": {"p": None, "q": "s"}, 3: "int key"}
    b = {3: "int key", "z": {"q": "s", "p": None}, "y": [1, 2], "x": 1}
    assert list(a) != list(b)
    assert canonical_encode(a) == canonical_encode(b)


def test_set_order_does_not_matter() -> None:
    items = [f"item-{i}" for i in range(50)]
    a = set(items)
    b = set(reversed(items))
    assert canonical_encode(a) == canonical_encode(b)
    assert canonical_encode(frozenset(items)) == canonical_encode(a)  # set == frozenset


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (1, True),
        (0, False),
        (1, 1.0),
        (0.0, -0.0),
        ("1", 1),
        ("a", b"a"),
        ([1, 2], (1, 2)),
        ([], {}),
        (None, ""),
        ([[1], 2], [1, [2]]),
        (["ab"], ["a", "b"]),
        ({"a": 1}, {"a": 2}),
        ({"a": 1}, {"b": 1}),
        (decimal.Decimal("1.0"), decimal.Decimal("1")),
        (dt.date(2024, 1, 2), dt.datetime(2024, 1, 2)),
        (2**70, -(2**70)),
    ],
)
def test_distinct_values_hash_differently(left: Any, right: Any) -> None:
    assert hash_value(left) != hash_value(right)


def test_nan_is_stable() -> None:
    assert hash_value(math.nan) == hash_value(float("nan")) == hash_value(-math.nan)
    assert hash_value([math.nan]) == hash_value([float("nan")])
    assert hash_value(math.nan) != hash_value(math.inf)


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Shade(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_scalars_and_stdlib_types_are_supported() -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    values = [
        dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC),
        dt.date(2024, 5, 1),
        dt.time(12, 30),
        dt.timedelta(days=1, seconds=3),
        u,
        decimal.Decimal("3.14"),
        Color.RED,
        Point(1, 2),
        bytearray(b"xy"),
        "snow ☃ and a lone surrogate \ud800",
    ]
    encoded = [canonical_encode(v) for v in values]
    assert len(set(encoded)) == len(values)
    assert canonical_encode(uuid.UUID(str(u))) == canonical_encode(u)
    assert hash_value(Color.RED) != hash_value(Color.BLUE)
    assert hash_value(Color.RED) != hash_value(Shade.RED)  # class qualname is part of it
    assert hash_value(Point(1, 2)) == hash_value(Point(1, 2))
    assert hash_value(Point(1, 2)) != hash_value(Point(2, 1))
    assert hash_value(Point(1, 2)) != hash_value({"x": 1, "y": 2})


class Inner(BaseModel):
    a: int
    b: list[str]


class Outer(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    inner: Inner


def test_pydantic_models_hash_by_fields() -> None:
    one = Outer(name="n", inner=Inner(a=1, b=["x"]))
    two = Outer(inner=Inner(b=["x"], a=1), name="n")
    assert one is not two
    assert hash_value(one) == hash_value(two)
    assert hash_value(one) != hash_value(Outer(name="n", inner=Inner(a=2, b=["x"])))
    # extras count
    plain = {"name": "n", "inner": {"a": 1, "b": []}}
    assert hash_value(Outer.model_validate({**plain, "extra_field": 1})) != hash_value(
        Outer.model_validate(plain)
    )
    assert hash_value(Outer.model_validate({**plain, "p": 1, "q": 2})) == hash_value(
        Outer.model_validate({"q": 2, **plain, "p": 1})
    )
    # a model is not the dict of its fields
    assert hash_value(Inner(a=1, b=[])) != hash_value({"a": 1, "b": []})


# --------------------------------------------------------------------------------------------
# Volatile identifiers of LangChain messages
# --------------------------------------------------------------------------------------------


def _conversation(run: str) -> list[Any]:
    """The same behaviour with the identifiers a fresh run would assign."""
    call_id = f"call_{run}"
    return [
        SystemMessage("be brief", id=f"sys-{run}"),
        HumanMessage("weather in Paris?", id=f"h-{run}"),
        AIMessage(
            "",
            id=f"ai-{run}",
            tool_calls=[{"name": "search", "args": {"q": "Paris weather"}, "id": call_id}],
            additional_kwargs={
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "Paris weather"}'},
                    }
                ]
            },
            response_metadata={"model": "m", "created": run},
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        ),
        ToolMessage("sunny", tool_call_id=call_id, name="search", id=f"t-{run}"),
        AIMessage(
            [{"type": "text", "text": "It is sunny.", "id": f"block-{run}"}],
            id=f"ai2-{run}",
        ),
    ]


def test_message_ids_and_tool_call_ids_do_not_change_the_hash() -> None:
    first, second = _conversation("one"), _conversation("two")
    assert first[2].id != second[2].id
    assert first[2].tool_calls[0]["id"] != second[2].tool_calls[0]["id"]
    assert hash_value(first) == hash_value(second)
    for a, b in zip(first, second, strict=True):
        assert hash_value(a) == hash_value(b)


def test_message_content_and_behaviour_change_the_hash() -> None:
    base = hash_value(_conversation("one"))
    changed_text = _conversation("one")
    changed_text[1] = HumanMessage("weather in Rome?", id="h-one")
    assert hash_value(changed_text) != base

    other_tool = _conversation("one")
    other_tool[2] = AIMessage(
        "", id="ai-one", tool_calls=[{"name": "lookup", "args": {"q": "Paris weather"}, "id": "c"}]
    )
    assert hash_value(other_tool) != base

    other_args = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "Rome"}, "id": "c"}])
    same_args = AIMessage("", tool_calls=[{"name": "search", "args": {"q": "Paris"}, "id": "c"}])
    assert hash_value(other_args) != hash_value(same_args)

    assert hash_value(HumanMessage("hi")) != hash_value(AIMessage("hi"))  # type counts
    assert hash_value(ToolMessage("x", tool_call_id="1", name="a")) != hash_value(
        ToolMessage("x", tool_call_id="1", name="b")
    )


def test_volatile_field_set_is_documented_constant() -> None:
    assert {"id", "response_metadata", "usage_metadata", "tool_call_id"} == set(
        VOLATILE_MESSAGE_FIELDS
    )
    assert "content" not in VOLATILE_MESSAGE_FIELDS
    assert "name" not in VOLATILE_MESSAGE_FIELDS


# --------------------------------------------------------------------------------------------
# Unknown objects, cycles
# --------------------------------------------------------------------------------------------


class Opaque:
    def __init__(self, payload: str) -> None:
        self.payload = payload


def test_unknown_object_without_fallback_raises_without_content() -> None:
    secret = "TOP-SECRET-VALUE"
    with pytest.raises(UnhashableValueError) as info:
        hash_value({"k": [Opaque(secret)]})
    assert info.value.type_name.endswith("Opaque")
    assert info.value.channel is None
    assert secret not in str(info.value)


def test_unknown_object_uses_fallback_tagged_with_qualname() -> None:
    def fallback(v: Any) -> bytes:
        return str(v.payload).encode()

    assert hash_value(Opaque("a"), fallback=fallback) == hash_value(Opaque("a"), fallback=fallback)
    assert hash_value(Opaque("a"), fallback=fallback) != hash_value(Opaque("b"), fallback=fallback)
    # the qualname tags the fallback bytes: a different class with the same bytes differs
    assert hash_value(Opaque("a"), fallback=fallback) != hash_value(b"a")
    assert b"Opaque" in canonical_encode(Opaque("a"), fallback=fallback)


def test_failing_fallback_raises_unhashable() -> None:
    def fallback(v: Any) -> bytes:
        raise TypeError("nope")

    with pytest.raises(UnhashableValueError):
        hash_value(Opaque("a"), fallback=fallback)


@pytest.mark.parametrize("kind", ["list", "dict", "nested"])
def test_cycles_raise_unhashable_not_recursion_error(kind: str) -> None:
    value: Any
    if kind == "list":
        value = [1]
        value.append(value)
    elif kind == "dict":
        value = {"a": 1}
        value["self"] = value
    else:
        inner: list[Any] = []
        value = {"x": [inner]}
        inner.append(value)
    with pytest.raises(UnhashableValueError) as info:
        hash_value(value)
    assert "cycle" in str(info.value)


def test_shared_non_cyclic_references_are_fine() -> None:
    shared = [1, 2]
    assert hash_value([shared, shared]) == hash_value([[1, 2], [1, 2]])


def test_very_deep_nesting_raises_unhashable() -> None:
    value: Any = "leaf"
    for _ in range(5000):
        value = [value]
    with pytest.raises(UnhashableValueError):
        hash_value(value)


def test_cycle_in_a_changed_list_channel_names_the_channel() -> None:
    value: list[Any] = [1]
    value.append(value)
    with pytest.raises(UnhashableValueError) as info:
        StateHasher().digest_state("s", {"messages": value}, {"messages": 1}, {"messages"})
    assert info.value.channel == "messages"


# --------------------------------------------------------------------------------------------
# State hash
# --------------------------------------------------------------------------------------------


def test_combine_state_hash_uses_channel_name_order() -> None:
    a = combine_state_hash({"a": "0" * 32, "b": "1" * 32})
    b = combine_state_hash({"b": "1" * 32, "a": "0" * 32})
    assert a == b
    assert a != combine_state_hash({"a": "1" * 32, "b": "0" * 32})
    assert a != combine_state_hash({"a": "0" * 32})
    assert len(a) == 32


def test_digest_state_fields() -> None:
    values = {"messages": [HumanMessage("hi")], "counter": 3, "meta": {"a": 1, "b": 2}}
    digest = StateHasher().digest_state(
        "t", values, {"messages": 1, "counter": 1, "meta": 1}, ["meta", "counter", "gone"]
    )
    assert set(digest.channels) == set(values)
    assert digest.changed == ("counter", "meta")  # sorted, only channels present in values
    for name, value in values.items():
        assert digest.channels[name].hash == hash_value(value)
        assert digest.channels[name].size == len(canonical_encode(value))
    assert digest.channels["messages"].count == 1
    assert digest.channels["meta"].count == 2
    assert digest.channels["counter"].count is None
    assert digest.size_bytes == sum(d.size for d in digest.channels.values())
    assert digest.written_bytes == digest.channels["counter"].size + digest.channels["meta"].size
    assert digest.state_hash == combine_state_hash({n: hash_value(v) for n, v in values.items()})
    assert digest.previous == {}


def test_previous_holds_the_last_digest_seen_for_the_channel() -> None:
    hasher = StateHasher()
    hasher.digest_state("t", {"c": {"a": 1}}, {"c": 1}, {"c"})
    second = hasher.digest_state("t", {"c": {"a": 1, "b": 2}}, {"c": 2}, {"c"})
    assert second.previous == {
        "c": ChannelDigest(hash_value({"a": 1}), second.previous["c"].size, 1)
    }
    other_scope = hasher.digest_state("u", {"c": {"a": 1}}, {"c": 2}, {"c"})
    assert other_scope.previous == {}


# --------------------------------------------------------------------------------------------
# Reuse of unchanged channels
# --------------------------------------------------------------------------------------------


class Counted:
    """An unknown type whose encoding goes through a counting fallback."""

    def __init__(self, n: int) -> None:
        self.n = n


def test_unchanged_channel_with_same_version_is_not_re_encoded() -> None:
    calls: list[int] = []

    def fallback(v: Any) -> bytes:
        calls.append(v.n)
        return str(v.n).encode()

    hasher = StateHasher(fallback=fallback)
    values = {"big": Counted(1), "small": 1}
    first = hasher.digest_state("t", values, {"big": 1, "small": 1}, {"big", "small"})
    assert calls == [1]
    for step in range(2, 6):
        d = hasher.digest_state(
            "t", {"big": Counted(99), "small": step}, {"big": 1, "small": step}, {"small"}
        )
        # "big" kept version 1: its cached digest is reused, the new object is never encoded
        assert d.channels["big"] == first.channels["big"]
    assert calls == [1]
    # a new version of "big" (even if not listed as changed) is encoded
    hasher.digest_state("t", {"big": Counted(2), "small": 1}, {"big": 2, "small": 1}, set())
    assert calls == [1, 2]
    # a changed channel is always encoded, even at a cached version
    hasher.digest_state("t", {"big": Counted(3), "small": 1}, {"big": 2, "small": 1}, {"big"})
    assert calls == [1, 2, 3]
    # another scope does not share the cache
    hasher.digest_state("other", {"big": Counted(4), "small": 1}, {"big": 1, "small": 1}, set())
    assert calls == [1, 2, 3, 4]


def test_channel_without_version_is_always_encoded() -> None:
    calls: list[int] = []

    def fallback(v: Any) -> bytes:
        calls.append(v.n)
        return b""

    hasher = StateHasher(fallback=fallback)
    for _ in range(3):
        hasher.digest_state("t", {"x": Counted(1)}, {}, set())
    assert calls == [1, 1, 1]


# --------------------------------------------------------------------------------------------
# Incremental list hashing
# --------------------------------------------------------------------------------------------


def _digest_list(hasher: StateHasher, value: list[Any], version: int) -> ChannelDigest:
    digest = hasher.digest_state("t", {"messages": value}, {"messages": version}, {"messages"})
    return digest.channels["messages"]


def _scratch(value: list[Any]) -> ChannelDigest:
    return ChannelDigest(hash_value(value), len(canonical_encode(value)), len(value))


def test_incremental_list_hash_equals_from_scratch() -> None:
    hasher = StateHasher()
    msgs: list[Any] = []
    for i in range(30):
        msgs = [*msgs, HumanMessage(f"q{i}"), AIMessage(f"a{i}", id=f"id{i}")]
        assert _digest_list(hasher, msgs, i) == _scratch(msgs)
    assert hasher.cache_sizes()["lists"] == 1


def test_incremental_list_hash_after_prefix_breaks() -> None:
    hasher = StateHasher()
    a, b, c = HumanMessage("a"), AIMessage("b"), HumanMessage("c")
    steps: list[list[Any]] = [
        [a],
        [a, b],
        [a, b, c],
        [a, AIMessage("replaced"), c],  # same length, a middle element replaced
        [a],  # shrunk
        [b, a],  # different first element
        [],
        [c, c, c],
        [c, c, c, {"plain": [1, 2]}, 5, "s"],
    ]
    for version, value in enumerate(steps):
        assert _digest_list(hasher, value, version) == _scratch(value), value


def test_equal_but_not_identical_elements_do_not_reuse_the_prefix() -> None:
    hasher = StateHasher()
    first = [1, 2]
    assert _digest_list(hasher, first, 1) == _scratch(first)
    # 1.0 == 1 but encodes differently: an equality-based prefix check would get this wrong
    second = [1.0, 2, 3]
    assert _digest_list(hasher, second, 2) == _scratch(second)
    assert _digest_list(hasher, second, 2).hash != _scratch([1, 2, 3]).hash


def test_list_mutated_in_place_between_steps_is_handled() -> None:
    hasher = StateHasher()
    value: list[Any] = [HumanMessage("a"), HumanMessage("b")]
    _digest_list(hasher, value, 1)
    value[0] = HumanMessage("changed")  # the same list object, an element replaced
    value.append(HumanMessage("c"))
    assert _digest_list(hasher, value, 2) == _scratch(value)


def test_prefix_reuse_encodes_only_new_elements() -> None:
    calls: list[int] = []

    def fallback(v: Any) -> bytes:
        calls.append(v.n)
        return str(v.n).encode()

    hasher = StateHasher(fallback=fallback)
    items: list[Any] = [Counted(i) for i in range(10)]
    hasher.digest_state("t", {"l": items}, {"l": 1}, {"l"})
    assert calls == list(range(10))
    calls.clear()
    items = [*items, Counted(10)]
    d = hasher.digest_state("t", {"l": items}, {"l": 2}, {"l"})
    assert calls == [10]
    assert d.channels["l"] == _scratch_fb(items, fallback)


def _scratch_fb(value: list[Any], fallback: Any) -> ChannelDigest:
    enc = canonical_encode(value, fallback=fallback)
    return ChannelDigest(hash_value(value, fallback=fallback), len(enc), len(value))


def test_prefix_reuse_matches_from_scratch_for_shared_and_unshared_prefixes() -> None:
    hasher = StateHasher()
    a, b = HumanMessage("a"), HumanMessage("b")
    for version, value in enumerate([[a], [a, b], [a, HumanMessage("b")], [b, b, a]]):
        assert _digest_list(hasher, value, version) == _scratch(value)


# --------------------------------------------------------------------------------------------
# Bounded caches
# --------------------------------------------------------------------------------------------


def test_caches_stay_bounded() -> None:
    hasher = StateHasher(max_entries=8, max_list_memos=3)
    for i in range(200):
        hasher.digest_state(
            f"thread-{i}",
            {"messages": [HumanMessage(str(i))], "n": i, "d": {"k": i}},
            {"messages": i, "n": i, "d": i},
            {"messages"} if i % 2 else set(),
        )
        sizes = hasher.cache_sizes()
        assert sizes["digests"] <= 8 * 3  # 8 scopes of 3 channels
        assert sizes["lists"] <= 3
    sizes = hasher.cache_sizes()
    assert (sizes["digests"], sizes["lists"]) == (8 * 3, 3)
    assert sizes["list_bytes"] > 0
    hasher.clear()
    assert hasher.cache_sizes() == {"digests": 0, "lists": 0, "messages": 0, "list_bytes": 0}


def test_list_memos_stay_within_their_byte_budget() -> None:
    hasher = StateHasher(max_list_memo_bytes=2_000)
    for i in range(50):
        digest = hasher.digest_state(
            f"thread-{i}",
            {"messages": [HumanMessage("x" * 300)] * 3},
            {"messages": 1},
            {"messages"},
        )
        assert hasher.cache_sizes()["list_bytes"] <= 2_000
    assert 0 < hasher.cache_sizes()["lists"] < 50
    # a list larger than the whole budget is hashed, and not memoized
    big = StateHasher(max_list_memo_bytes=100)
    again = big.digest_state(
        "t", {"messages": [HumanMessage("x" * 300)] * 3}, {"messages": 1}, {"messages"}
    )
    assert again.state_hash == digest.state_hash
    assert big.cache_sizes()["lists"] == 0


def test_lru_keeps_recently_used_entries() -> None:
    calls: list[int] = []

    def fallback(v: Any) -> bytes:
        calls.append(v.n)
        return b""

    hasher = StateHasher(max_entries=2, fallback=fallback)
    hasher.digest_state("a", {"x": Counted(1)}, {"x": 1}, set())
    hasher.digest_state("b", {"x": Counted(2)}, {"x": 1}, set())
    hasher.digest_state("a", {"x": Counted(1)}, {"x": 1}, set())  # hit, refreshes "a"
    hasher.digest_state("c", {"x": Counted(3)}, {"x": 1}, set())  # evicts "b"
    hasher.digest_state("a", {"x": Counted(1)}, {"x": 1}, set())  # still a hit
    assert calls == [1, 2, 3]
    hasher.digest_state("b", {"x": Counted(2)}, {"x": 1}, set())  # was evicted
    assert calls == [1, 2, 3, 2]


def test_bad_bounds_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        StateHasher(max_entries=0)


def test_concurrent_digests_of_one_scope_stay_correct() -> None:
    import threading

    hasher = StateHasher()
    base = [HumanMessage(f"m{i}") for i in range(50)]
    errors: list[str] = []

    def worker(k: int) -> None:
        msgs: list[Any] = list(base)
        for step in range(40):
            msgs = [*msgs, AIMessage(f"w{k}-{step}")]
            d = hasher.digest_state("t", {"m": msgs}, {"m": f"{k}.{step}"}, {"m"})
            if d.channels["m"] != _scratch(msgs):
                errors.append(f"worker {k} step {step}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_send_packets_hash_by_node_and_argument_without_a_fallback() -> None:
    from langgraph.types import Send

    assert hash_value([Send("work", {"a": 1, "b": 2})]) == hash_value(
        [Send("work", {"b": 2, "a": 1})]
    )
    assert hash_value(Send("work", {"a": 1})) != hash_value(Send("other", {"a": 1}))


def test_identity_prefix_check_is_exact_with_and_without_pointer_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph.checkpoint.otel.analysis import encoding

    a, b, c = HumanMessage("a"), HumanMessage("b"), HumanMessage("b")
    cases = [
        ([a, b], [(a,)], True),
        ([a, b], [(a,), (b,)], True),
        ([a, b], [(a, b)], True),
        ([a, c], [(a, b)], False),
        ([a, c], [(a,), (b,)], False),
        ([a], [(a, b)], False),
        ([], [], True),
        ([b, a], [(a,)], False),
    ]
    for check in (encoding._pointer_prefix, None):
        monkeypatch.setattr(encoding, "_pointer_prefix", check)
        for items, chunks, expected in cases:
            assert encoding.starts_with_same_objects(items, chunks) is expected, (items, chunks)


def test_many_appends_stay_equal_to_from_scratch_across_chunk_merges() -> None:
    hasher = StateHasher()
    value: list[Any] = []
    for version in range(80):  # more appends than the memo keeps chunks
        value = [*value, HumanMessage(str(version))]
        assert _digest_list(hasher, value, version) == _scratch(value)


def test_adopting_stored_hashes_continues_the_chain_without_the_old_elements() -> None:
    """What a fresh process does on its first load: the stored (hash, size) of each channel
    become its digests, and a list's stored hash the chain its append continues from; only the
    new element is encoded, and the digest equals the from-scratch one."""
    calls: list[int] = []

    def fallback(v: Any) -> bytes:
        calls.append(v.n)
        return str(v.n).encode()

    writer = StateHasher(fallback=fallback)
    history: list[Any] = [Counted(i) for i in range(50)]
    values = {"l": history, "big": Counted(-1)}
    written = writer.digest_state("t", values, {"l": 3, "big": 1}, {"l", "big"})
    stored = {name: (d.hash, d.size) for name, d in written.channels.items()}

    fresh = StateHasher(fallback=fallback)
    loaded: list[Any] = [Counted(i) for i in range(50)]  # a reload: equal, but new objects
    fresh.adopt("t", {"l": loaded, "big": Counted(-1)}, {"l": 3, "big": 1}, stored)
    calls.clear()
    appended = [*loaded, Counted(50)]
    d = fresh.digest_state("t", {"l": appended, "big": Counted(-1)}, {"l": 4, "big": 1}, {"l"})
    assert calls == [50]  # neither the history nor the unchanged channel was encoded
    assert d.channels["l"] == _scratch_fb(appended, fallback)
    assert d.channels["big"] == written.channels["big"]
    assert d.previous == {"l": written.channels["l"]}
    # a list that does not start with the loaded objects is hashed from scratch, still right
    calls.clear()
    other = [Counted(i) for i in range(51)]
    d = fresh.digest_state("t", {"l": other}, {"l": 5}, {"l"})
    assert len(calls) == 51 and d.channels["l"] == _scratch_fb(other, fallback)


def test_release_drops_the_element_references_and_malformed_stored_hashes_are_ignored() -> None:
    import weakref

    hasher = StateHasher()
    history = [HumanMessage(f"m{i}") for i in range(10)]
    probe = weakref.ref(history[0])
    hasher.digest_state("t", {"messages": history}, {"messages": 1}, {"messages"})
    assert hasher.cache_sizes()["lists"] == 1
    hasher.release("other")
    assert hasher.cache_sizes()["lists"] == 1
    hasher.release("t")
    assert hasher.cache_sizes()["lists"] == 0 and hasher.cache_sizes()["list_bytes"] == 0
    del history
    assert probe() is None, "the hasher still holds an element of a released list"
    # a planted hash that is not 32 hex chars does not become a chain
    for bad in ("zz" * 16, "ab", ""):
        hasher.adopt(
            "u", {"messages": [HumanMessage("a")]}, {"messages": 1}, {"messages": (bad, 9)}
        )
        assert hasher.cache_sizes()["lists"] == 0
