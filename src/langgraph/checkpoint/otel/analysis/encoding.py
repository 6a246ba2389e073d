"""The canonical, type-tagged encoding of LangGraph channel values: what a hash and a size
are computed over (the digests and the incremental hasher are in `hashing`).

Pure logic: this module knows nothing of OpenTelemetry or of any checkpoint saver.

Canonical encoding
------------------
Every value is turned into a self-delimiting, type-tagged byte string. Equal values give equal
bytes whatever the dict insertion order, the set iteration order, the process, the host or
``PYTHONHASHSEED``. A value's hash is ``blake2b(encoding, digest_size=16).hexdigest()``, except
for a ``list`` (a message history), whose hash is a chain over its elements (see below). A
channel size is ``len(encoding)`` in every case.

==========================  ===================================================================
value                       encoding
==========================  ===================================================================
``None``                    ``N``
``True`` / ``False``        ``T`` / ``F`` (so ``True`` and ``1`` differ)
``int``                     ``i`` + lower-case hex + ``;``
``float``                   ``f`` + IEEE-754 big-endian double (``1.0`` and ``1`` differ;
                            every NaN encodes as the one canonical quiet NaN; ``-0.0`` and
                            ``0.0`` differ)
``str``                     ``s`` + 4-byte big-endian length + UTF-8 (``S`` + 8 bytes if huge)
``bytes`` / ``bytearray``   ``b`` + 4-byte length + bytes (``B`` + 8 bytes if huge)
``list``                    ``[`` + element encodings + ``]``
``tuple``                   ``(`` + element encodings + ``)``
``dict``                    ``{`` + (key, value) encodings sorted by key encoding + ``}``
``set`` / ``frozenset``     ``<`` + sorted element encodings + ``>``
``datetime``/``date``/      ``D`` / ``d`` / ``t`` + ISO-8601 string (so equal instants with
``time``                    different UTC offsets differ); ``timedelta``: ``R`` + days,
                            seconds, microseconds
``UUID``                    ``u`` + 16 bytes
``Decimal``                 ``m`` + ``str(value)`` (so ``Decimal("1.0")`` and ``Decimal("1")``
                            differ)
``Enum``                    ``E`` + class qualname + encoding of ``.value``
dataclass                   ``C`` + class qualname + ``{`` fields sorted by name ``}``
pydantic model              ``P`` + class qualname + ``{`` fields and extras sorted by name ``}``
LangChain message           ``M`` + class qualname + ``m`` + MessagePack (sorted keys, pydantic
                            values as maps) of its fields minus the volatile identifiers below;
                            where MessagePack cannot encode them canonically (sets, non-str
                            keys, huge ints, unknown types): ``{`` fields sorted by name ``}``
anything else               ``X`` + class qualname + ``fallback(value)`` bytes, or
                            :class:`UnhashableValueError` when no fallback is given
==========================  ===================================================================

Subclasses of the built-in types (``namedtuple``, ``str`` subclasses, ...) that are not enums,
dataclasses or pydantic models are encoded as their built-in base. A reference cycle or a
nesting deeper than :data:`MAX_DEPTH` raises :class:`UnhashableValueError`.

Volatile identifiers
--------------------
``add_messages`` gives every message a random ``id`` and models issue random tool-call ids, so
the same behaviour replayed from a checkpoint produces different identifiers. A deterministic
replay must hash equal, so for LangChain ``BaseMessage`` subclasses the fields in
:data:`VOLATILE_MESSAGE_FIELDS` are not hashed, and the keys in :data:`VOLATILE_TOOL_CALL_KEYS`
are dropped from the dict entries of the fields in :data:`TOOL_CALL_FIELDS`, of
``additional_kwargs["tool_calls"]`` (raw provider tool calls) and of list ``content`` (content
blocks such as Anthropic ``tool_use``). Everything else, including ``content``, ``name``, tool
names and arguments, is hashed.

List hashes: a chain that can be continued
------------------------------------------
The hash of a ``list`` is ``c_n`` where ``c_0 = blake2b(b"", person=LIST_PERSON)`` and
``c_i = blake2b(encoding(element_i), key=c_(i-1), person=LIST_PERSON)`` (all 16-byte
digests, the hash is ``c_n`` in hex). Appending elements continues the chain from the stored
hash alone: no earlier element has to be encoded, or even kept, to hash the longer list. This
is what makes the cost of a put follow the change after a restart too: the hash stored in the
loaded checkpoint's metadata *is* the state to continue from (see
:meth:`hashing.StateHasher.adopt`).
Lists nested inside other values are encoded inline like any container.

"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import enum
import hashlib
import itertools
import math
import operator
import struct
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import ormsgpack

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.analysis.hashing import _ListMemo

__all__ = [
    "LIST_PERSON",
    "MAX_DEPTH",
    "NESTED_CHAIN_MIN",
    "TOOL_CALL_FIELDS",
    "VOLATILE_MESSAGE_FIELDS",
    "VOLATILE_TOOL_CALL_KEYS",
    "UnhashableValueError",
    "canonical_encode",
    "serde_fallback",
    "starts_with_same_objects",
]

#: Fields of every LangChain ``BaseMessage`` subclass that are left out of the hash: the random
#: message ``id`` (``add_messages``), ``response_metadata`` and ``usage_metadata`` (model
#: timings, request ids, token counts) and ``tool_call_id`` (``ToolMessage``, echoes a random
#: tool-call id).
VOLATILE_MESSAGE_FIELDS: Final[frozenset[str]] = frozenset(
    {"id", "response_metadata", "usage_metadata", "tool_call_id"}
)
#: Keys dropped from each dict entry of the message fields in :data:`TOOL_CALL_FIELDS`, of
#: ``additional_kwargs["tool_calls"]`` and of list ``content`` (content blocks).
VOLATILE_TOOL_CALL_KEYS: Final[frozenset[str]] = frozenset({"id"})
#: Message fields holding lists of tool calls whose entries lose :data:`VOLATILE_TOOL_CALL_KEYS`.
TOOL_CALL_FIELDS: Final[frozenset[str]] = frozenset(
    {"tool_calls", "invalid_tool_calls", "tool_call_chunks"}
)
#: Deepest nesting of containers that is encoded; deeper raises UnhashableValueError.
MAX_DEPTH: Final[int] = 200

_DIGEST_SIZE: Final[int] = 16
#: blake2b personalisation of the list chain (keeps list hashes apart from all other hashes).
LIST_PERSON: Final[bytes] = b"lg.list.chain.v2"
_LIST_SEED: Final[bytes] = hashlib.blake2b(digest_size=_DIGEST_SIZE, person=LIST_PERSON).digest()


class UnhashableValueError(Exception):
    """A value cannot be canonically encoded. The message never contains the value."""

    def __init__(self, type_name: str, channel: str | None = None, reason: str = "") -> None:
        self.type_name = type_name
        self.channel = channel
        self.reason = reason or "no canonical encoding for this type and no fallback"
        where = f" in channel {channel!r}" if channel is not None else ""
        super().__init__(f"cannot hash a value of type {type_name}{where}: {self.reason}")

    def with_channel(self, channel: str) -> UnhashableValueError:
        err = UnhashableValueError(self.type_name, channel, self.reason)
        err.__cause__ = self.__cause__
        return err


# --------------------------------------------------------------------------------------------
# Encoder
# --------------------------------------------------------------------------------------------

_Fallback = Callable[[Any], bytes]
_Handler = Callable[[Any, bytearray, "_Ctx"], None]

_pack_I = struct.Struct(">I").pack
_pack_Q = struct.Struct(">Q").pack
_pack_d = struct.Struct(">d").pack
_pack_qqq = struct.Struct(">qqq").pack
_NAN: Final[bytes] = b"f" + _pack_d(math.nan)
_U32: Final[int] = 1 << 32


class _Ctx:
    """State of one encoding: cycle and depth checks, and for hashing (``inline`` False) the
    digests that make lists cheap (see "List hashes" in the module docstring)."""

    __slots__ = (
        "active",
        "depth",
        "elements",
        "fallback",
        "hidden",
        "inline",
        "memos",
        "new_bytes",
    )

    def __init__(
        self,
        fallback: _Fallback | None,
        *,
        inline: bool = False,
        memos: Sequence[_ListMemo] = (),
        elements: dict[int, tuple[Any, bytes, int]] | None = None,
    ) -> None:
        self.fallback = fallback
        self.active: set[int] = set()
        self.depth = 0
        self.inline = inline
        """Encode lists element by element (`canonical_encode`), not as their chain."""
        self.hidden = 0
        """Bytes of the inline encoding that digest form left out (sizes stay inline sizes)."""
        self.elements: dict[int, tuple[Any, bytes, int]] = {} if elements is None else elements
        """id -> (message, digest, inline size) of the messages digested (in this call, or
        while the scope's memo lives: see `StateHasher`)."""
        self.new_bytes = 0
        """Inline size of the messages added to `elements` by this encoding."""
        self.memos = memos
        """Lists already hashed in this scope: a nested list that starts with one's elements
        continues its chain (a `Send` carrying the graph's messages)."""


def _qualname(t: type) -> str:
    return getattr(t, "__qualname__", None) or t.__name__


def _str_bytes(s: str) -> bytes:
    b = s.encode("utf-8", "surrogatepass")
    n = len(b)
    if n < _U32:
        return b"s" + _pack_I(n) + b
    return b"S" + _pack_Q(n) + b


def _enc_str(v: str, buf: bytearray, ctx: _Ctx) -> None:
    b = v.encode("utf-8", "surrogatepass")
    n = len(b)
    if n < _U32:
        buf += b"s"
        buf += _pack_I(n)
    else:
        buf += b"S"
        buf += _pack_Q(n)
    buf += b


def _enc_bytes(v: bytes | bytearray | memoryview, buf: bytearray, ctx: _Ctx) -> None:
    n = len(v) if not isinstance(v, memoryview) else v.nbytes
    if n < _U32:
        buf += b"b"
        buf += _pack_I(n)
    else:
        buf += b"B"
        buf += _pack_Q(n)
    buf += v


def _enc_int(v: int, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"i%x;" % v


def _enc_bool(v: bool, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"T" if v else b"F"


def _enc_none(v: None, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"N"


def _enc_float(v: float, buf: bytearray, ctx: _Ctx) -> None:
    if v != v:
        buf += _NAN
    else:
        buf += b"f"
        buf += _pack_d(v)


def _enter(v: object, ctx: _Ctx) -> int:
    i = id(v)
    if i in ctx.active:
        raise UnhashableValueError(_qualname(type(v)), reason="reference cycle")
    if ctx.depth >= MAX_DEPTH:
        raise UnhashableValueError(_qualname(type(v)), reason=f"nested deeper than {MAX_DEPTH}")
    ctx.active.add(i)
    ctx.depth += 1
    return i


def _leave(i: int, ctx: _Ctx) -> None:
    ctx.active.discard(i)
    ctx.depth -= 1


def _enc_items(items: Any, buf: bytearray, ctx: _Ctx) -> None:
    handlers = _HANDLERS
    for x in items:
        h = handlers.get(type(x))
        if h is None:
            h = _resolve(type(x))
        h(x, buf, ctx)


def _enc_list(v: list[Any], buf: bytearray, ctx: _Ctx) -> None:
    i = _enter(v, ctx)
    if ctx.inline or len(v) < NESTED_CHAIN_MIN:
        buf += b"["
        _enc_items(v, buf, ctx)
        buf += b"]"
    else:
        chain, size = _list_chain(v, ctx)
        buf += b"L"
        buf += chain
        ctx.hidden += size - 1 - _DIGEST_SIZE
    _leave(i, ctx)


#: A list nested in another value is hashed as its chain from this many elements on (shorter
#: ones, such as a message's tool calls, inline: cheaper).
NESTED_CHAIN_MIN: Final = 8


def _list_chain(v: list[Any], ctx: _Ctx) -> tuple[bytes, int]:
    """The chain and inline size of a list (entered by the caller)."""
    if len(v) >= NESTED_CHAIN_MIN:
        for memo in ctx.memos:
            if memo.count and starts_with_same_objects(v, memo.chunks):
                chain, size = _chain_items(memo.chain, v[memo.count :], ctx)
                return chain, memo.size + size + 2
    chain, size = _chain_items(_LIST_SEED, v, ctx)
    return chain, size + 2


def _element_digest(x: Any, ctx: _Ctx) -> tuple[bytes, int]:
    """blake2b of one list element's hashing form, and its inline size."""
    h = _HANDLERS.get(type(x))
    if h is None:
        h = _resolve(type(x))
    hidden = ctx.hidden
    buf = bytearray()
    h(x, buf, ctx)
    size = len(buf) + ctx.hidden - hidden
    ctx.hidden = hidden
    return hashlib.blake2b(buf, digest_size=_DIGEST_SIZE).digest(), size


def _chain_items(chain: bytes, items: Sequence[Any], ctx: _Ctx) -> tuple[bytes, int]:
    """Continue a list chain over `items`; returns the chain and their inline size."""
    blake2b = hashlib.blake2b
    size = 0
    for x in items:
        digest, n = _element_digest(x, ctx)
        chain = blake2b(digest, digest_size=_DIGEST_SIZE, key=chain, person=LIST_PERSON).digest()
        size += n
    return chain, size


def _enc_tuple(v: tuple[Any, ...], buf: bytearray, ctx: _Ctx) -> None:
    i = _enter(v, ctx)
    buf += b"("
    _enc_items(v, buf, ctx)
    buf += b")"
    _leave(i, ctx)


def _enc_send(v: Any, buf: bytearray, ctx: _Ctx) -> None:
    """A `Send` packet (in the tasks channel): its target node and argument."""
    buf += b"S"
    _enc_str(v.node, buf, ctx)
    _encode_into(v.arg, buf, ctx)


def _encode_one(v: Any, ctx: _Ctx) -> bytes:
    b = bytearray()
    h = _HANDLERS.get(type(v))
    if h is None:
        h = _resolve(type(v))
    h(v, b, ctx)
    return bytes(b)


def _enc_sorted_pairs(pairs: list[tuple[bytes, Any]], buf: bytearray, ctx: _Ctx) -> None:
    """Encode (key encoding, value) pairs sorted by key encoding, ties broken by value."""
    pairs.sort(key=operator.itemgetter(0))
    prev: bytes | None = None
    tie = False
    for k, _ in pairs:
        if k == prev:
            tie = True
            break
        prev = k
    if tie:
        full = sorted(k + _encode_one(x, ctx) for k, x in pairs)
        for item in full:
            buf += item
        return
    handlers = _HANDLERS
    for k, x in pairs:
        buf += k
        h = handlers.get(type(x))
        if h is None:
            h = _resolve(type(x))
        h(x, buf, ctx)


def _enc_dict(v: Mapping[Any, Any], buf: bytearray, ctx: _Ctx) -> None:
    i = _enter(v, ctx)
    buf += b"{"
    if v:
        pairs: list[tuple[bytes, Any]] = []
        for k, x in v.items():
            kb = _str_bytes(k) if type(k) is str else _encode_one(k, ctx)
            pairs.append((kb, x))
        _enc_sorted_pairs(pairs, buf, ctx)
    buf += b"}"
    _leave(i, ctx)


def _enc_set(v: set[Any] | frozenset[Any], buf: bytearray, ctx: _Ctx) -> None:
    i = _enter(v, ctx)
    buf += b"<"
    for item in sorted(_encode_one(x, ctx) for x in v):
        buf += item
    buf += b">"
    _leave(i, ctx)


def _enc_datetime(v: _dt.datetime, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"D"
    buf += _str_bytes(v.isoformat())


def _enc_date(v: _dt.date, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"d"
    buf += _str_bytes(v.isoformat())


def _enc_time(v: _dt.time, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"t"
    buf += _str_bytes(v.isoformat())


def _enc_timedelta(v: _dt.timedelta, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"R"
    buf += _pack_qqq(v.days, v.seconds, v.microseconds)


def _enc_uuid(v: uuid.UUID, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"u"
    buf += v.bytes


def _enc_decimal(v: decimal.Decimal, buf: bytearray, ctx: _Ctx) -> None:
    buf += b"m"
    buf += _str_bytes(str(v))


def _strip_keys(entries: Any) -> Any:
    """Copy a list of dicts without the volatile identifier keys (other items unchanged)."""
    if not isinstance(entries, list | tuple):
        return entries
    drop = VOLATILE_TOOL_CALL_KEYS
    return [
        {k: x for k, x in e.items() if k not in drop} if isinstance(e, dict) else e for e in entries
    ]


def _message_value(name: str, x: Any) -> Any:
    if name in TOOL_CALL_FIELDS or name == "content":
        return _strip_keys(x)
    if name == "additional_kwargs" and isinstance(x, dict) and "tool_calls" in x:
        x = dict(x)
        x["tool_calls"] = _strip_keys(x["tool_calls"])
    return x


def _make_model_handler(t: type, *, message: bool) -> _Handler:
    fields_attr = getattr(t, "model_fields", None) or getattr(t, "__pydantic_fields__", {})
    names = sorted(str(n) for n in fields_attr)
    if message:
        names = [n for n in names if n not in VOLATILE_MESSAGE_FIELDS]
    head = (b"M" if message else b"P") + _str_bytes(_qualname(t)) + b"{"
    packed_head = b"M" + _str_bytes(_qualname(t)) + b"m"
    encoded_names = {n: _str_bytes(n) for n in names}
    handlers = _HANDLERS

    def handler(v: Any, buf: bytearray, ctx: _Ctx) -> None:
        if message and not ctx.inline:
            _message_reference(v, buf, ctx, inline_handler)
            return
        inline_handler(v, buf, ctx)

    def inline_handler(v: Any, buf: bytearray, ctx: _Ctx) -> None:
        i = _enter(v, ctx)
        d = v.__dict__
        extra = getattr(v, "__pydantic_extra__", None)
        if message:
            packed = _pack_message(d, names, extra)
            if packed is not None:
                buf += packed_head
                buf += packed
                _leave(i, ctx)
                return
        buf += head
        if extra:
            pairs = [(encoded_names[n], n, d.get(n)) for n in names]
            pairs.extend(
                (_str_bytes(k), k, x)
                for k, x in extra.items()
                if not (message and k in VOLATILE_MESSAGE_FIELDS)
            )
            pairs.sort(key=operator.itemgetter(0))
            items: Any = pairs
        else:
            items = ((encoded_names[n], n, d.get(n)) for n in sorted_names)
        for kb, n, x in items:
            if message:
                x = _message_value(n, x)
            buf += kb
            h = handlers.get(type(x))
            if h is None:
                h = _resolve(type(x))
            h(x, buf, ctx)
        buf += b"}"
        _leave(i, ctx)

    sorted_names = sorted(names, key=encoded_names.__getitem__)
    return handler


_PACK_OPTIONS: Final = ormsgpack.OPT_SORT_KEYS | ormsgpack.OPT_SERIALIZE_PYDANTIC
_CLEANED_MESSAGE_FIELDS: Final = (*sorted(TOOL_CALL_FIELDS), "content", "additional_kwargs")
"""The message fields `_message_value` may change."""


def _pack_message(
    fields: Mapping[str, Any], names: Sequence[str], extra: Mapping[str, Any] | None
) -> bytes | None:
    """A message's fields (volatile ones left out) as MessagePack with sorted keys, at C speed;
    None when MessagePack cannot encode them canonically (sets, non-str keys, huge ints,
    unknown types: the Python form is used)."""
    data = {n: fields.get(n) for n in names}
    for n in _CLEANED_MESSAGE_FIELDS:
        x = data.get(n)
        if x and not isinstance(x, str):  # str content (the usual case) is kept as it is
            data[n] = _message_value(n, x)
    if extra:
        data.update((k, x) for k, x in extra.items() if k not in VOLATILE_MESSAGE_FIELDS)
    try:
        return ormsgpack.packb(data, option=_PACK_OPTIONS)
    except Exception:  # ormsgpack.MsgpackEncodeError (a TypeError): not encodable
        return None


def _message_reference(v: Any, buf: bytearray, ctx: _Ctx, inline: _Handler) -> None:
    """Hashing form of a message: ``m`` + blake2b of its inline encoding, computed once per
    message object while the scope's memo lives (a run), wherever the message appears."""
    key = id(v)
    hit = ctx.elements.get(key)
    if hit is None or hit[0] is not v:
        hidden = ctx.hidden
        own = bytearray()
        inline(v, own, ctx)
        size = len(own) + ctx.hidden - hidden
        ctx.hidden = hidden
        hit = (v, hashlib.blake2b(own, digest_size=_DIGEST_SIZE).digest(), size)
        ctx.elements[key] = hit
        ctx.new_bytes += size
    buf += b"m"
    buf += hit[1]
    ctx.hidden += hit[2] - 1 - _DIGEST_SIZE


def _make_dataclass_handler(t: type) -> _Handler:
    names = [f.name for f in dataclasses.fields(t)]
    encoded = sorted((_str_bytes(n), n) for n in names)
    head = b"C" + _str_bytes(_qualname(t)) + b"{"
    handlers = _HANDLERS

    def handler(v: Any, buf: bytearray, ctx: _Ctx) -> None:
        i = _enter(v, ctx)
        buf += head
        for kb, n in encoded:
            x = getattr(v, n)
            buf += kb
            h = handlers.get(type(x))
            if h is None:
                h = _resolve(type(x))
            h(x, buf, ctx)
        buf += b"}"
        _leave(i, ctx)

    return handler


def _make_enum_handler(t: type) -> _Handler:
    head = b"E" + _str_bytes(_qualname(t))

    def handler(v: Any, buf: bytearray, ctx: _Ctx) -> None:
        buf += head
        x = v.value
        h = _HANDLERS.get(type(x))
        if h is None:
            h = _resolve(type(x))
        h(x, buf, ctx)

    return handler


def _make_fallback_handler(t: type) -> _Handler:
    qual = _qualname(t)
    head = b"X" + _str_bytes(qual)

    def handler(v: Any, buf: bytearray, ctx: _Ctx) -> None:
        fb = ctx.fallback
        if fb is None:
            raise UnhashableValueError(qual)
        try:
            data = fb(v)
        except UnhashableValueError:
            raise
        except Exception as exc:
            raise UnhashableValueError(qual, reason="fallback failed") from exc
        if not isinstance(data, bytes | bytearray | memoryview):
            raise UnhashableValueError(qual, reason="fallback did not return bytes")
        buf += head
        _enc_bytes(data, buf, ctx)

    return handler


def _is_message_type(t: type) -> bool:
    return any(
        c.__name__ == "BaseMessage" and c.__module__.startswith("langchain_core.messages")
        for c in t.__mro__
    )


def _is_pydantic_type(t: type) -> bool:
    return any(
        c.__name__ == "BaseModel" and c.__module__.startswith("pydantic.main") for c in t.__mro__
    )


_BASE_HANDLERS: tuple[tuple[type, _Handler], ...] = (
    (bool, _enc_bool),
    (int, _enc_int),
    (float, _enc_float),
    (str, _enc_str),
    (bytes, _enc_bytes),
    (bytearray, _enc_bytes),
    (list, _enc_list),
    (tuple, _enc_tuple),
    (dict, _enc_dict),
    (frozenset, _enc_set),
    (set, _enc_set),
    (_dt.datetime, _enc_datetime),
    (_dt.date, _enc_date),
    (_dt.time, _enc_time),
    (_dt.timedelta, _enc_timedelta),
    (uuid.UUID, _enc_uuid),
    (decimal.Decimal, _enc_decimal),
)

_HANDLERS: dict[type, _Handler] = {t: h for t, h in _BASE_HANDLERS}
_HANDLERS[type(None)] = _enc_none
_MAX_HANDLER_TYPES: Final[int] = 4096
_handlers_lock = threading.Lock()


def _send_type() -> type | None:
    """LangGraph's `Send`, once loaded: a value of it exists only then (importing
    `langgraph.types` here would cost every process that only reads hashes, the inspector's)."""
    module = sys.modules.get("langgraph.types")
    send = getattr(module, "Send", None) if module is not None else None
    return send if isinstance(send, type) else None


def _resolve(t: type) -> _Handler:
    """Find (and cache) the encoder for a type that is not in the handler table yet."""
    handler: _Handler
    send = _send_type()
    if send is not None and issubclass(t, send):
        handler = _enc_send
    elif issubclass(t, enum.Enum):
        handler = _make_enum_handler(t)
    elif _is_message_type(t):
        handler = _make_model_handler(t, message=True)
    elif _is_pydantic_type(t):
        handler = _make_model_handler(t, message=False)
    elif dataclasses.is_dataclass(t):
        handler = _make_dataclass_handler(t)
    else:
        for base, h in _BASE_HANDLERS:
            if issubclass(t, base):
                handler = h
                break
        else:
            handler = _enc_dict if issubclass(t, Mapping) else _make_fallback_handler(t)
    with _handlers_lock:
        if len(_HANDLERS) < _MAX_HANDLER_TYPES:
            _HANDLERS[t] = handler
    return handler


def _encode_into(value: Any, buf: bytearray, ctx: _Ctx) -> None:
    h = _HANDLERS.get(type(value))
    if h is None:
        h = _resolve(type(value))
    try:
        h(value, buf, ctx)
    except RecursionError:
        raise UnhashableValueError(
            _qualname(type(value)), reason="nested too deeply (recursion limit)"
        ) from None


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def serde_fallback(serde: Any) -> _Fallback:
    """A fallback encoder for values of unknown types: a saver serializer's typed bytes.

    `serde` is anything with LangGraph's `dumps_typed(value) -> (type, bytes)`.
    """

    def encode(value: Any) -> bytes:
        kind, data = serde.dumps_typed(value)
        return str(kind).encode() + b"\0" + bytes(data)

    return encode


def canonical_encode(value: Any, *, fallback: _Fallback | None = None) -> bytes:
    """Return the canonical, type-tagged encoding of ``value`` (see the module docstring).

    Its length is the size reported for a value; the hash is computed over a form of it in
    which every list is replaced by its chain (see :func:`hash_value`).

    Raises:
        UnhashableValueError: ``value`` contains an object of a type with no canonical encoding
            and ``fallback`` is None, or a reference cycle.
    """
    buf = bytearray()
    _encode_into(value, buf, _Ctx(fallback, inline=True))
    return bytes(buf)


# --------------------------------------------------------------------------------------------
# The identity test of a list prefix (a list memo continued: `_list_chain`, `hashing.StateHasher`)
# --------------------------------------------------------------------------------------------


PrefixCheck = Callable[[list[Any], Sequence[tuple[Any, ...]]], bool]


def _pointer_prefix_check() -> PrefixCheck | None:
    """On CPython: whether a list starts with the objects of some tuples, by `memcmp`.

    Compares the list's element pointers with each tuple's, chunk by chunk, at C speed and
    with no copy. Equal pointers are an exact identity test: the tuples hold their elements, so
    no address is reused. A self-test at import checks the list and tuple layouts; where it
    fails, or on other interpreters, None (callers use `operator.is_`).
    """
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes

        # PyDLL: the call keeps the GIL (a CDLL call releases and re-takes it, handing the GIL
        # to any waiting thread for a compare of a few nanoseconds)
        memcmp = ctypes.PyDLL(None).memcmp
    except (ImportError, OSError, AttributeError):  # pragma: no cover
        return None
    memcmp.restype = ctypes.c_int
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    width = tuple.__itemsize__
    tuple_items = tuple.__basicsize__
    list_items = 3 * width  # PyObject_VAR_HEAD, then `PyObject **ob_item`
    read_pointer = ctypes.c_void_p.from_address

    def starts_with(items: list[Any], chunks: Sequence[tuple[Any, ...]]) -> bool:
        if len(items) < sum(map(len, chunks)):
            return False
        base = read_pointer(id(items) + list_items).value
        at = 0
        for chunk in chunks:
            n = len(chunk) * width
            if n and (base is None or memcmp(base + at, id(chunk) + tuple_items, n) != 0):
                return False
            at += n
        return True

    x, y = object(), object()
    probe = [x, y, "p"]
    if (
        starts_with(probe, [(x,), (y,)])
        and starts_with(probe, [(x, y, "p")])
        and not starts_with(probe, [(y,)])
        and not starts_with(probe, [(x, y, "p", 1)])
    ):
        return starts_with
    return None  # pragma: no cover


_pointer_prefix: Final = _pointer_prefix_check()


_POINTER_CHECK_MIN: Final = 512
"""From this many elements on the prefix is compared by `memcmp`; below it by `operator.is_`
in a C loop, which is cheaper than a ctypes call (a ctypes call costs about 10 us when its
code is cold, as it is between two puts)."""


def starts_with_same_objects(
    items: list[Any], chunks: Sequence[tuple[Any, ...]], count: int | None = None
) -> bool:
    """Whether `items` begins with the very same objects (identity) as `chunks`, in order
    (`count`: their number, when known)."""
    if count is None:
        count = sum(map(len, chunks))
    if len(items) < count:
        return False
    if _pointer_prefix is not None and count >= _POINTER_CHECK_MIN:
        return _pointer_prefix(items, chunks)
    if len(chunks) == 1:
        return all(map(operator.is_, items, chunks[0]))
    return all(map(operator.is_, items, itertools.chain.from_iterable(chunks)))
