"""Checkpoint diffs: which channels changed between two checkpoints, and how.

By default a diff is content-free: channel names, hashes, sizes and a summary made of types,
counts and graph-defined names (message types, tool names). Dict key names appear only with
``show_keys=True``, for a reader that already holds the content (the inspector CLI reading the
store). A content diff (an RFC 6902 JSON Patch per channel) is opt-in through a
:class:`ContentPolicy`: every value passes through the redaction hook first, and a patch larger
than the cap is replaced by its size.

Pure logic: no OpenTelemetry, no saver.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import enum
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from langgraph.checkpoint.otel.analysis.encoding import UnhashableValueError
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, digest_value, hash_value
from langgraph.checkpoint.otel.analysis.records import is_state_channel
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.analysis.summary import MAX_ITEMS, is_message, plural, summarize
from langgraph.checkpoint.otel.analysis.text_bounds import repr_bytes
from langgraph.checkpoint.otel.options import InstrumentOptions

__all__ = [
    "ChannelChange",
    "CheckpointDiff",
    "ContentPolicy",
    "PatchError",
    "TruncatedPatch",
    "apply_patch",
    "checkpoint_digests",
    "diff",
    "escape_pointer_token",
    "make_patch",
    "summarize_change",
    "to_json",
]

#: Key names longer than this are cut in ``show_keys`` summaries.
MAX_KEY_CHARS: Final[int] = 64


class CheckpointLike(Protocol):
    """What `diff` reads from a checkpoint (a `CheckpointTuple` fits)."""

    @property
    def checkpoint(self) -> Mapping[str, Any]: ...
    @property
    def metadata(self) -> Mapping[str, Any] | None: ...
    @property
    def config(self) -> Mapping[str, Any]: ...


class ContentPolicy(BaseModel):
    """Opt-in content diff: values pass through `redact`, patches are capped at `max_bytes`."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    redact: Callable[[str, Any], Any] | None = None
    """``(channel, value) -> value`` applied to both values before they are compared."""
    max_bytes: int = Field(default=4096, ge=0)
    """A patch whose compact JSON is larger becomes a `TruncatedPatch`."""

    @classmethod
    def from_options(cls, options: InstrumentOptions) -> ContentPolicy | None:
        """The policy of the instrumentation options; None unless `capture_content` is on."""
        if not options.capture_content:
            return None
        return cls(redact=options.redact, max_bytes=options.content_max_bytes)


class TruncatedPatch(BaseModel):
    """Stands in for a patch over the size cap."""

    truncated: Literal[True] = True
    bytes: int
    """Size of the patch's compact JSON (UTF-8)."""


ChangeStatus = Literal["added", "removed", "changed"]


class ChannelChange(BaseModel):
    """One channel that differs between two checkpoints."""

    name: str
    status: ChangeStatus
    hash_before: str | None = None
    hash_after: str | None = None
    size_before: int | None = None
    size_after: int | None = None
    size_delta: int
    """``size_after - size_before`` (a missing side counts as 0)."""
    summary: str
    """Content-free description (types, counts, tool names; key names only with show_keys)."""
    patch: list[dict[str, Any]] | TruncatedPatch | None = None
    """RFC 6902 patch from the redacted old value (null if absent) to the redacted new one;
    only with a content policy."""


class CheckpointDiff(BaseModel):
    """Channels added, removed or changed (by hash) from checkpoint `from` to checkpoint `to`."""

    from_checkpoint_id: str | None
    to_checkpoint_id: str | None
    state_hash_before: str | None
    state_hash_after: str | None
    changes: list[ChannelChange]
    """Sorted by channel name; channels with equal hashes are left out."""


# --------------------------------------------------------------------------------------------
# diff
# --------------------------------------------------------------------------------------------

_ABSENT: Final = object()


@dataclasses.dataclass(slots=True)
class _Side:
    checkpoint_id: str | None
    values: Mapping[str, Any]
    digests: dict[str, tuple[str, int]]
    state_hash: str | None


def _computed_digest(value: Any) -> tuple[str, int]:
    try:
        digest = digest_value(value, fallback=repr_bytes)
        return digest.hash, digest.size
    except UnhashableValueError:  # a reference cycle or extreme nesting
        data = repr_bytes(value)
        return hash_value(data), len(data)


def _side(tup: CheckpointLike) -> _Side:
    checkpoint = tup.checkpoint
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    stored = read_stored_telemetry(tup.metadata)
    digests: dict[str, tuple[str, int]] = dict(stored.channels) if stored else {}
    for name, value in values.items():
        if name not in digests:  # stored hashes are never recomputed
            digests[name] = _computed_digest(value)
    state_hash = stored.state_hash if stored and stored.state_hash else None
    if state_hash is None and digests:
        state_hash = combine_state_hash({name: h for name, (h, _) in digests.items()})
    configurable = tup.config.get("configurable") or {}
    raw_id = checkpoint.get("id") or configurable.get("checkpoint_id")
    return _Side(str(raw_id) if raw_id else None, values, digests, state_hash)


def checkpoint_digests(tup: CheckpointLike) -> dict[str, tuple[str, int]]:
    """Every channel's (hash, size) of a checkpoint: stored ones, else computed."""
    return _side(tup).digests


def diff(
    a: CheckpointLike,
    b: CheckpointLike,
    *,
    show_keys: bool = False,
    content: ContentPolicy | InstrumentOptions | None = None,
    include_internal: bool = False,
) -> CheckpointDiff:
    """The changes from checkpoint `a` (older) to checkpoint `b`.

    Hashes and sizes come from the wrapper's stored metadata when present, else are computed
    (unknown types encoded by ``repr``). Bookkeeping channels (``branch:to:*``, dunders) are
    skipped unless `include_internal`. `show_keys` adds dict key names to summaries. `content`
    (a policy, or options with `capture_content` on) adds a redacted, capped JSON Patch per
    change; an exception from the redaction hook propagates.
    """
    policy = (
        ContentPolicy.from_options(content) if isinstance(content, InstrumentOptions) else content
    )
    before, after = _side(a), _side(b)
    changes: list[ChannelChange] = []
    for name in sorted(set(before.digests) | set(after.digests)):
        if not include_internal and not is_state_channel(name):
            continue
        d_before, d_after = before.digests.get(name), after.digests.get(name)
        if d_before is not None and d_after is not None and d_before[0] == d_after[0]:
            continue
        status: ChangeStatus = (
            "added" if d_before is None else "removed" if d_after is None else "changed"
        )
        old = before.values.get(name, _ABSENT)
        new = after.values.get(name, _ABSENT)
        # a stored digest without a loaded value: only hashes and sizes can be compared
        loaded = (d_before is None or old is not _ABSENT) and (
            d_after is None or new is not _ABSENT
        )
        size_before = d_before[1] if d_before else None
        size_after = d_after[1] if d_after else None
        changes.append(
            ChannelChange(
                name=name,
                status=status,
                hash_before=d_before[0] if d_before else None,
                hash_after=d_after[0] if d_after else None,
                size_before=size_before,
                size_after=size_after,
                size_delta=(size_after or 0) - (size_before or 0),
                summary=_safe_summary(old, new, show_keys) if loaded else "value not loaded",
                patch=_content_patch(name, old, new, policy)
                if policy is not None and loaded
                else None,
            )
        )
    return CheckpointDiff(
        from_checkpoint_id=before.checkpoint_id,
        to_checkpoint_id=after.checkpoint_id,
        state_hash_before=before.state_hash,
        state_hash_after=after.state_hash,
        changes=changes,
    )


def _content_patch(
    channel: str, old: Any, new: Any, policy: ContentPolicy
) -> list[dict[str, Any]] | TruncatedPatch:
    redact = policy.redact
    docs: list[Any] = []
    for value in (old, new):
        if value is _ABSENT:
            docs.append(None)
        else:
            docs.append(to_json(redact(channel, value) if redact is not None else value))
    patch = make_patch(docs[0], docs[1])
    size = len(json.dumps(patch, ensure_ascii=False, separators=(",", ":")).encode())
    if size > policy.max_bytes:
        return TruncatedPatch(bytes=size)
    return patch


# --------------------------------------------------------------------------------------------
# content-free summaries
# --------------------------------------------------------------------------------------------


def _is_message_list(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(is_message(m) for m in value)


def _names(keys: Sequence[Any]) -> str:
    shown = [str(k)[:MAX_KEY_CHARS] for k in keys[:MAX_ITEMS]]
    if len(keys) > MAX_ITEMS:
        shown.append(f"…+{len(keys) - MAX_ITEMS} more")
    return ", ".join(shown)


def _messages_line(sign: str, messages: list[Any]) -> str:
    # summarize(msgs, None) -> "2 messages: ai(tool_calls=search), tool(search)"
    return sign + summarize(messages, None)


def _message_key(message: Any) -> tuple[str, str]:
    mid = getattr(message, "id", None)
    if isinstance(mid, str) and mid:
        return ("id", mid)
    return ("hash", _computed_digest(message)[0])


def _summarize_messages(old: Sequence[Any], new: Sequence[Any]) -> str:
    old_keys = [_message_key(m) for m in old]
    new_keys = [_message_key(m) for m in new]
    remaining = Counter(old_keys)
    added: list[Any] = []
    for key, message in zip(new_keys, new, strict=True):
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            added.append(message)
    kept = Counter(new_keys)
    removed: list[Any] = []
    for key, message in zip(old_keys, old, strict=True):
        if kept[key] > 0:
            kept[key] -= 1
        else:
            removed.append(message)
    old_by_id = {k[1]: m for k, m in zip(old_keys, old, strict=True) if k[0] == "id"}
    replaced = [
        m
        for k, m in zip(new_keys, new, strict=True)
        if k[0] == "id"
        and k[1] in old_by_id
        and _computed_digest(old_by_id[k[1]])[0] != _computed_digest(m)[0]
    ]
    parts = []
    if added:
        parts.append(_messages_line("+", added))
    if removed:
        parts.append(_messages_line("-", removed))
    if replaced:
        parts.append(_messages_line("~", replaced))
    if not parts:
        return f"{plural(len(new), 'message')} (reordered)"
    return "; ".join(parts)


def _kind(value: Any) -> str:
    """Content-free name of a value's kind: a message description or a class name."""
    if isinstance(value, list | tuple | dict | set | frozenset):
        return type(value).__name__
    return summarize(value, None)


def _describe(value: Any, show_keys: bool, sign: str) -> str:
    """One side only (an added or removed channel)."""
    if isinstance(value, list | tuple) and value and _is_message_list(value):
        return _messages_line(sign, list(value))
    if isinstance(value, dict) and show_keys and value:
        return f"{type(value).__name__}: {plural(len(value), 'key')} ({_names(list(value))})"
    return summarize(value, None)


def _summarize_dict(old: dict[Any, Any], new: dict[Any, Any], show_keys: bool) -> str:
    kind = type(new).__name__
    added = [k for k in new if k not in old]
    removed = [k for k in old if k not in new]
    changed = [
        k for k in new if k in old and _computed_digest(old[k])[0] != _computed_digest(new[k])[0]
    ]
    if show_keys:
        parts = [
            f"{sign}{plural(len(keys), 'key')} ({_names(keys)})"
            for sign, keys in (("+", added), ("-", removed), ("~", changed))
            if keys
        ]
        return f"{kind}: {', '.join(parts) or 'no key changed'}"
    text = f"{kind}: {len(old)} → {plural(len(new), 'key')} (+{len(added)} -{len(removed)}"
    return text + (f" ~{len(changed)})" if changed else ")")


def summarize_change(old: Any, new: Any, *, show_keys: bool = False) -> str:
    """Content-free description of a channel going from `old` to `new`.

    Dict key names appear only with `show_keys`; values and message text never do.
    """
    if _is_message_list(old) and _is_message_list(new) and (old or new):
        return _summarize_messages(old, new)
    if isinstance(old, dict) and isinstance(new, dict):
        return _summarize_dict(old, new, show_keys)
    same_type = type(old) is type(new)
    if same_type and isinstance(new, list | tuple | set | frozenset):
        return f"{type(new).__name__}: {len(old)} → {plural(len(new), 'item')}"
    before, after = _kind(old), _kind(new)
    return before if before == after else f"{before} → {after}"


def _safe_summary(old: Any, new: Any, show_keys: bool) -> str:
    try:
        if old is _ABSENT:
            return _describe(new, show_keys, "+")
        if new is _ABSENT:
            return _describe(old, show_keys, "-")
        return summarize_change(old, new, show_keys=show_keys)
    except Exception:  # a summary never breaks a diff; the type names are always safe
        return " → ".join(type(v).__name__ for v in (old, new) if v is not _ABSENT)


# --------------------------------------------------------------------------------------------
# JSON forms and RFC 6902 patches
# --------------------------------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """A JSON-compatible form of a channel value, for content patches.

    Messages and other pydantic models -> ``model_dump()``, dataclasses -> ``asdict``, each then
    converted by these rules; tuples -> lists; sets -> sorted lists; dict keys -> ``str``;
    dates and times -> ISO 8601; enums -> their value; anything else that is not a JSON
    scalar -> ``str``.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_json(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, BaseModel):
        # python mode, then the rules here: sets come out sorted (mode="json" keeps set order)
        return to_json(value.model_dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(dataclasses.asdict(value))
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return to_json(value.value)
    return str(value)


def escape_pointer_token(token: str) -> str:
    """RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1``, ``1.0`` and ``True`` differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_equal, a, b))
    return bool(a == b)


def make_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """An RFC 6902 patch (add, remove, replace) turning JSON document `old` into `new`."""
    ops: list[dict[str, Any]] = []
    _diff_into(old, new, "", ops)
    return ops


def _diff_into(old: Any, new: Any, path: str, ops: list[dict[str, Any]]) -> None:
    if _equal(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{escape_pointer_token(key)}"})
        for key, value in new.items():
            sub = f"{path}/{escape_pointer_token(key)}"
            if key in old:
                _diff_into(old[key], value, sub, ops)
            else:
                ops.append({"op": "add", "path": sub, "value": copy.deepcopy(value)})
        return
    if isinstance(old, list) and isinstance(new, list):
        _diff_lists(old, new, path, ops)
        return
    ops.append({"op": "replace", "path": path, "value": copy.deepcopy(new)})


def _diff_lists(old: list[Any], new: list[Any], path: str, ops: list[dict[str, Any]]) -> None:
    # trim the common prefix and suffix, then pair the middles element by element
    limit = min(len(old), len(new))
    start = 0
    while start < limit and _equal(old[start], new[start]):
        start += 1
    tail = 0
    while tail < limit - start and _equal(old[-1 - tail], new[-1 - tail]):
        tail += 1
    old_mid, new_mid = old[start : len(old) - tail], new[start : len(new) - tail]
    paired = min(len(old_mid), len(new_mid))
    for i in range(paired):
        _diff_into(old_mid[i], new_mid[i], f"{path}/{start + i}", ops)
    for i in range(paired, len(new_mid)):
        ops.append({"op": "add", "path": f"{path}/{start + i}", "value": copy.deepcopy(new_mid[i])})
    for _ in range(paired, len(old_mid)):
        ops.append({"op": "remove", "path": f"{path}/{start + paired}"})


class PatchError(ValueError):
    """A JSON Patch cannot be applied to the document."""


def _parse_pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _resolve(doc: Any, tokens: list[str]) -> Any:
    for token in tokens:
        doc = _child(doc, token)
    return doc


def _index(container: list[Any], token: str, *, insert: bool = False) -> int:
    if insert and token == "-":
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"bad array index {token!r}")
    index = int(token)
    if index > len(container) or (index == len(container) and not insert):
        raise PatchError(f"array index {index} out of range")
    return index


def _child(doc: Any, token: str) -> Any:
    if isinstance(doc, dict):
        if token not in doc:
            raise PatchError(f"no member {token!r}")
        return doc[token]
    if isinstance(doc, list):
        return doc[_index(doc, token)]
    raise PatchError(f"cannot step into a {type(doc).__name__} with {token!r}")


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, insert=True), value)
    else:
        raise PatchError(f"cannot add to a {type(parent).__name__}")
    return doc


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"no member {last!r}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last))
    raise PatchError(f"cannot remove from a {type(parent).__name__}")


def _replace(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1])
    _child(parent, tokens[-1])  # must exist
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    else:
        parent[_index(parent, tokens[-1])] = value
    return doc


def apply_patch(doc: Any, patch: Sequence[Mapping[str, Any]]) -> Any:
    """Apply an RFC 6902 patch (add, remove, replace, move, copy, test) to a copy of `doc`."""
    doc = copy.deepcopy(doc)
    for op in patch:
        kind, tokens = op.get("op"), _parse_pointer(str(op.get("path", "")))
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, tokens)
        elif kind == "replace":
            doc = _replace(doc, tokens, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = _parse_pointer(str(op["from"]))
            if kind == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_resolve(doc, source))
            doc = _add(doc, tokens, value)
        elif kind == "test":
            if not _equal(_resolve(doc, tokens), op["value"]):
                raise PatchError(f"test failed at {op.get('path')!r}")
        else:
            raise PatchError(f"unknown op {kind!r}")
    return doc
