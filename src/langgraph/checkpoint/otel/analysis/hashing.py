"""Hashes and sizes of LangGraph channel values and checkpoint states, and the incremental
`StateHasher` that reuses work across the checkpoints of a thread.

Pure logic: this module knows nothing of OpenTelemetry or of any checkpoint saver. The bytes a
hash and a size are computed over, and the list chain that lets a hash be continued, are
`encoding`'s (see its module docstring).

Incremental hashing and its limitation
--------------------------------------
:class:`StateHasher` reuses the digest of an unchanged channel (same scope, channel and version)
from a bounded LRU cache of each (scope, channel)'s last digest. For a changed channel whose
value is a ``list`` it keeps, per (scope, channel), the chain over the elements it last hashed,
their count, and references to those element *objects*; when the new list starts with the very
same objects (identity), only the new elements are encoded. The references exist only to make
that identity test exact: a run's own channels hold the same objects, so they cost nothing while
the run lasts, and :meth:`StateHasher.release` drops them when it ends (the next run continues
from the loaded checkpoint's stored hash). Known limitation: an element mutated *in place* after
it was hashed (same object, different content) is not seen by this prefix reuse; the
from-scratch hash of the same list would differ. LangGraph reducers such as ``add_messages``
build new lists and replace messages by new objects, so this does not happen with them. The
identity check costs a copy of the appended elements (a tuple) and an identity test of the prefix (a
C loop of ``operator.is_``, or for long lists on CPython a memcmp of the element pointers: see
``starts_with_same_objects``), a few nanoseconds per element.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from langgraph.checkpoint.otel.analysis.encoding import (
    _DIGEST_SIZE,
    _LIST_SEED,
    UnhashableValueError,
    _chain_items,
    _Ctx,
    _encode_into,
    _Fallback,
    _list_chain,
    _qualname,
    _str_bytes,
    starts_with_same_objects,
)
from langgraph.checkpoint.otel.bounded import BoundedDict

__all__ = [
    "ChannelDigest",
    "StateDigest",
    "StateHasher",
    "combine_state_hash",
    "digest_value",
    "hash_value",
]


@dataclass(frozen=True, slots=True)
class ChannelDigest:
    """Hash and size of one channel value."""

    hash: str
    """32 hex chars: blake2b(digest_size=16) of the canonical encoding."""
    size: int
    """Length in bytes of the canonical encoding."""
    count: int | None
    """``len()`` for list, tuple, dict, set and frozenset values, else None."""


@dataclass(frozen=True, slots=True)
class StateDigest:
    """Digests of a whole checkpoint state."""

    channels: Mapping[str, ChannelDigest]
    """Every channel in ``values``."""
    changed: tuple[str, ...]
    """Sorted names of the changed channels present in ``values``."""
    previous: Mapping[str, ChannelDigest]
    """For changed channels: the last digest this hasher saw for the same (scope, channel)."""
    state_hash: str
    """:func:`combine_state_hash` over all channel hashes."""
    size_bytes: int
    """Sum of all channel sizes."""
    written_bytes: int
    """Sum of the sizes of the changed channels."""
    largest: str | None = None
    """The channel with the largest size (None: no channels)."""


def hash_value(value: Any, *, fallback: _Fallback | None = None) -> str:
    """Return the 32-hex-char hash of ``value`` (see the module docstring)."""
    return digest_value(value, fallback=fallback).hash


def digest_value(value: Any, *, fallback: _Fallback | None = None) -> ChannelDigest:
    """Hash, size (``len(canonical_encode(value))``) and count of one value, in one pass."""
    return _digest(value, _Ctx(fallback))


def _digest(value: Any, ctx: _Ctx) -> ChannelDigest:
    try:
        if type(value) is list:
            ctx.active.add(id(value))
            ctx.depth = 1
            chain, size = _list_chain(value, ctx)
            return ChannelDigest(chain.hex(), size, len(value))
        hidden = ctx.hidden
        buf = bytearray()
        _encode_into(value, buf, ctx)
        size = len(buf) + ctx.hidden - hidden
        ctx.hidden = hidden
    except RecursionError:
        raise UnhashableValueError(
            _qualname(type(value)), reason="nested too deeply (recursion limit)"
        ) from None
    return ChannelDigest(
        hashlib.blake2b(buf, digest_size=_DIGEST_SIZE).hexdigest(), size, _count(value)
    )


def combine_state_hash(channel_hashes: Mapping[str, str]) -> str:
    """Combine channel hashes (hex strings) into one state hash, in channel-name order."""
    h = hashlib.blake2b(b"lgstate1", digest_size=_DIGEST_SIZE)
    for name in sorted(channel_hashes):
        h.update(_name_bytes(name))
        h.update(_str_bytes(channel_hashes[name]))
    return h.hexdigest()


_NAMES: dict[str, bytes] = {}


def _name_bytes(name: str) -> bytes:
    """`_str_bytes` of a channel name, remembered (names repeat on every put; bounded)."""
    encoded = _NAMES.get(name)
    if encoded is None:
        encoded = _str_bytes(name)
        if len(_NAMES) < 4096:
            _NAMES[name] = encoded
    return encoded


def _count(value: Any) -> int | None:
    if isinstance(value, list | tuple | dict | set | frozenset):
        return len(value)
    return None


# --------------------------------------------------------------------------------------------
# StateHasher
# --------------------------------------------------------------------------------------------


_MAX_CHUNKS: Final = 32
"""A list memo keeps its elements in at most this many tuples (merged when exceeded)."""


class _ListMemo:
    __slots__ = ("chain", "chunks", "count", "size", "version")

    def __init__(
        self, chunks: list[tuple[Any, ...]], chain: bytes, size: int, version: object
    ) -> None:
        self.chunks = chunks  # the element objects the chain covers, in order (identity test)
        self.count = sum(map(len, chunks))
        self.chain = chain  # the list chain over those elements (module docstring)
        self.size = size  # bytes those elements encode to
        self.version = version  # the channel version the elements were hashed at


class _ScopeMemo:
    """What one scope's incremental hashing keeps: list memos by channel, and the digests of
    the messages seen (with the message objects, so identities stay exact)."""

    __slots__ = ("element_bytes", "elements", "lists")

    def __init__(self) -> None:
        self.lists: dict[str, _ListMemo] = {}
        self.elements: dict[int, tuple[Any, bytes, int]] = {}
        self.element_bytes = 0

    @property
    def size(self) -> int:
        return self.element_bytes + sum(memo.size for memo in self.lists.values())


_MISSING: Final[object] = object()


def _chain_from_hex(text: str) -> bytes | None:
    """A stored list hash as the chain to continue, or None if it is not 32 hex chars."""
    if len(text) != 2 * _DIGEST_SIZE:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        return None


class StateHasher:
    """Digests checkpoint states, reusing work across the checkpoints of a thread.

    ``scope`` identifies a sequence of checkpoints whose channel versions are comparable (for
    example ``(thread_id, checkpoint_ns)``). Thread-safe.

    Args:
        max_entries: bound on the scopes whose last digest (and version) of each channel is
            cached.
        fallback: turns a value of an unknown type into bytes (type-tagged with its class
            qualname); without it such values raise :class:`UnhashableValueError`.
        max_list_memos: bound on the scopes whose list memos are kept: per (scope, channel)
            the chain of the last list hashed and references to its elements (dropped by
            `release` when a run ends; outside runs these bounds alone apply).
        max_list_memo_bytes: bound on the size of the elements those memos keep referenced,
            measured as their canonical encoding (least recently used scopes are dropped
            beyond it; a dropped memo only means the next digest of that list starts from
            scratch, or from the loaded checkpoint's stored hash, see `adopt`).
    """

    def __init__(
        self,
        max_entries: int = 10_000,
        *,
        fallback: _Fallback | None = None,
        max_list_memos: int = 1024,
        max_list_memo_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        if max_list_memos < 0:
            raise ValueError(f"max_list_memos must be >= 0, got {max_list_memos!r}")
        self.max_entries = max_entries
        self.max_list_memos = min(max_list_memos, max_entries)
        self.max_list_memo_bytes = max_list_memo_bytes
        self._fallback = fallback
        self._digests: BoundedDict[Hashable, dict[str, tuple[object, ChannelDigest]]] = BoundedDict(
            max_entries
        )
        """scope -> channel -> (version, digest) of the last value digested: reused while the
        version stays, and the `previous` digest when it changes (least recently used scope
        dropped beyond `max_entries` scopes)."""
        self._lists: OrderedDict[Hashable, _ScopeMemo] = OrderedDict()
        """scope -> its memos, least recently used scope first."""
        self._list_bytes = 0
        """Sum of the kept scopes' `size`: what the elements they keep alive encode to."""
        self._lock = threading.Lock()

    def cache_sizes(self) -> dict[str, int]:
        """Current number of entries of each internal cache (for tests and diagnostics)."""
        with self._lock:
            return {
                "digests": sum(map(len, self._digests.values())),
                "lists": sum(len(memo.lists) for memo in self._lists.values()),
                "messages": sum(len(memo.elements) for memo in self._lists.values()),
                "list_bytes": self._list_bytes,
            }

    def forget(self, stale: Callable[[Hashable], bool]) -> None:
        """Drop the cached digests and memos of every scope that is `stale`."""
        with self._lock:
            self._digests.evict(stale)
            for scope in [scope for scope in self._lists if stale(scope)]:
                self._drop_scope(scope)

    def release(self, scope: Hashable) -> None:
        """Drop everything kept for `scope` (a run on it ended): digests, list memos, the
        element references.

        The next run continues from its loaded checkpoint (see `adopt`); nothing stays here
        between runs.
        """
        with self._lock:
            self._drop_scope(scope)
            self._digests.pop(scope, None)

    def _scope_digests(self, scope: Hashable) -> dict[str, tuple[object, ChannelDigest]]:
        """The scope's digests, created if missing, as most recently used (lock held)."""
        known = self._digests.get(scope)
        if known is None:
            self._digests[scope] = known = {}
        else:
            self._digests.move_to_end(scope)
        return known

    def clear(self) -> None:
        """Drop every cached digest and memo."""
        with self._lock:
            self._digests.clear()
            self._lists.clear()
            self._list_bytes = 0

    def adopt(
        self,
        scope: Hashable,
        values: Mapping[str, Any],
        versions: Mapping[str, object],
        stored: Mapping[str, tuple[str, int]] | None = None,
    ) -> None:
        """Continue from a freshly loaded checkpoint instead of hashing it again.

        `stored` are the (hash, size) pairs the checkpoint's metadata holds, written by this
        hasher's construction when the channel was at the loaded version: they become the
        cached digests of the loaded versions, and a list channel's stored hash becomes the chain
        its next append continues from (with the loaded elements as the identity prefix). So
        the first put after a restart, or after the caches dropped the thread, costs what the
        change costs. Without `stored`, a memo that hashed the very version loaded adopts the
        loaded elements (a reload gives new objects equal to the old).
        """
        stored = stored or {}
        for channel, (digest, size) in stored.items():
            # a channel stored without a value (a delta channel between its snapshots): its
            # stored digest stands for it while its version stays
            version = versions.get(channel, _MISSING)
            if channel not in values and version is not _MISSING:
                with self._lock:
                    known = self._scope_digests(scope)
                    if channel not in known or known[channel][0] != version:
                        known[channel] = (version, ChannelDigest(digest, size, None))
        for channel, value in values.items():
            version = versions.get(channel, _MISSING)
            if version is _MISSING:
                continue
            entry = stored.get(channel)
            with self._lock:
                if entry is not None:
                    self._scope_digests(scope)[channel] = (
                        version,
                        ChannelDigest(entry[0], entry[1], _count(value)),
                    )
                if type(value) is not list:
                    continue
                chain = _chain_from_hex(entry[0]) if entry is not None else None
                scope_memo = self._lists.get(scope)
                memo = scope_memo.lists.get(channel) if scope_memo is not None else None
                if entry is not None and chain is not None and entry[1] >= 2:
                    self._store_memo(
                        scope, channel, _ListMemo([tuple(value)], chain, entry[1] - 2, version)
                    )
                elif memo is not None and memo.version == version and memo.count == len(value):
                    memo.chunks = [tuple(value)]

    # -- digesting --

    def _digest_list(
        self, scope: Hashable, channel: str, value: list[Any], version: object, ctx: _Ctx
    ) -> ChannelDigest:
        memo: _ListMemo | None = None
        with self._lock:
            scope_memo = self._lists.get(scope)
            if scope_memo is not None:
                memo = scope_memo.lists.get(channel)
        ctx.active.add(id(value))
        ctx.depth = 1
        if memo is not None and starts_with_same_objects(value, memo.chunks, memo.count):
            # the list starts with the very objects already hashed: chain only the rest
            fresh = tuple(value[memo.count :])
            chain, size = _chain_items(memo.chain, fresh, ctx)
            size += memo.size
            chunks = [*memo.chunks, fresh] if fresh else list(memo.chunks)
            if len(chunks) > _MAX_CHUNKS:
                chunks = [tuple(value)]
        else:
            fresh = tuple(value)  # a stable copy: ``value`` may be mutated later
            chain, size = _chain_items(_LIST_SEED, fresh, ctx)
            chunks = [fresh]
        ctx.active.discard(id(value))
        ctx.depth = 0
        if self.max_list_memos and size <= self.max_list_memo_bytes:
            with self._lock:
                self._store_memo(scope, channel, _ListMemo(chunks, chain, size, version))
        return ChannelDigest(chain.hex(), size + 2, len(value))

    def _scope_memo(self, scope: Hashable) -> _ScopeMemo:
        """The scope's memo, created if missing, as most recently used (lock held)."""
        scope_memo = self._lists.get(scope)
        if scope_memo is None:
            scope_memo = self._lists[scope] = _ScopeMemo()
        else:
            self._lists.move_to_end(scope)
        return scope_memo

    def _store_memo(self, scope: Hashable, channel: str, memo: _ListMemo) -> None:
        """Keep `memo`, then drop the least recently used scopes beyond both bounds (call with
        the lock held)."""
        scope_memo = self._scope_memo(scope)
        old = scope_memo.lists.get(channel)
        if old is not None:
            self._list_bytes -= old.size
        scope_memo.lists[channel] = memo
        self._list_bytes += memo.size
        self._enforce_bounds()

    def _enforce_bounds(self) -> None:
        while self._lists and (
            len(self._lists) > self.max_list_memos or self._list_bytes > self.max_list_memo_bytes
        ):
            self._drop_scope(next(iter(self._lists)))

    def _drop_scope(self, scope: Hashable) -> None:
        scope_memo = self._lists.pop(scope, None)
        if scope_memo is not None:
            self._list_bytes -= scope_memo.size

    def _compute(
        self, scope: Hashable, channel: str, value: Any, version: object, ctx: _Ctx
    ) -> ChannelDigest:
        try:
            if type(value) is list:
                return self._digest_list(scope, channel, value, version, ctx)
            return _digest(value, ctx)
        except UnhashableValueError as exc:
            raise exc.with_channel(channel) from exc.__cause__
        except RecursionError:
            raise UnhashableValueError(
                _qualname(type(value)), channel, "nested too deeply (recursion limit)"
            ) from None
        finally:
            ctx.active.clear()
            ctx.depth = 0

    def digest_state(
        self,
        scope: Hashable,
        values: Mapping[str, Any],
        versions: Mapping[str, object],
        changed: Collection[str],
        absent: Collection[str] = (),
    ) -> StateDigest:
        """Digest every channel of ``values``, and of `absent` (channels a checkpoint stores
        without their value: a delta channel between snapshots) those whose digest at their
        version is cached.

        Channels not in ``changed`` whose digest at this version is cached (the last one of each
        (scope, channel)) are not encoded again. Channels without a version in ``versions`` are
        always encoded (but not reported as changed).

        Raises:
            UnhashableValueError: a channel value cannot be encoded (``.channel`` names it).
        """
        changed_set = changed if isinstance(changed, set | frozenset) else set(changed)
        channels: dict[str, ChannelDigest] = {}
        previous: dict[str, ChannelDigest] = {}
        changed_present: list[str] = []
        largest: str | None = None
        largest_size = -1
        size_bytes = 0
        written = 0
        scope_memo: _ScopeMemo | None = None
        with self._lock:
            known = self._scope_digests(scope)
            if self.max_list_memos:
                scope_memo = self._scope_memo(scope)
                memos = list(scope_memo.lists.values())
        if scope_memo is not None:
            # shared by every channel: a message is encoded once wherever it appears
            ctx = _Ctx(self._fallback, memos=memos, elements=scope_memo.elements)
        else:
            ctx = _Ctx(self._fallback)
        for channel in absent:
            # stored without a value (a delta channel between its snapshots) and unchanged:
            # its last digest at this version stands for it
            cached = known.get(channel)
            if (
                cached is not None
                and channel not in changed_set
                and channel not in values
                and versions.get(channel, _MISSING) == cached[0]
            ):
                channels[channel] = cached[1]
                size_bytes += cached[1].size
        for channel, value in values.items():
            version = versions.get(channel, _MISSING)
            is_changed = channel in changed_set
            cached = known.get(channel)
            digest: ChannelDigest | None = None
            if (
                cached is not None
                and not is_changed
                and version is not _MISSING
                and cached[0] == version
            ):
                digest = cached[1]
            if digest is None:
                digest = self._compute(scope, channel, value, version, ctx)
                if is_changed and cached is not None:
                    previous[channel] = cached[1]
                known[channel] = (version, digest)
            if is_changed:
                changed_present.append(channel)
                written += digest.size
            channels[channel] = digest
            size_bytes += digest.size
            if digest.size > largest_size:
                largest, largest_size = channel, digest.size
        if scope_memo is not None and ctx.new_bytes:
            with self._lock:
                scope_memo.element_bytes += ctx.new_bytes
                if self._lists.get(scope) is scope_memo:
                    self._list_bytes += ctx.new_bytes
                self._enforce_bounds()
        return StateDigest(
            channels=channels,
            changed=tuple(sorted(changed_present)),
            previous=previous,
            state_hash=combine_state_hash({c: d.hash for c, d in channels.items()}),
            size_bytes=size_bytes,
            written_bytes=written,
            largest=largest,
        )
