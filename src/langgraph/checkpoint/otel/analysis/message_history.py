"""The message history of a checkpoint, counted without its content: how many messages, an
estimate of their tokens, and how a history that shrank was cut (the context cliff).

Pure logic: no OpenTelemetry, no saver, and no import of LangChain at module load (LangChain
is an optional dependency of this library). A message list is recognised by its value's type:
a ``list`` whose first and last elements are LangChain ``BaseMessage`` objects (looked up in
``sys.modules``: no message can exist before LangChain's message module is imported).

Token estimates
---------------
The default counter is LangChain's ``count_tokens_approximately`` (``langchain_core >= 0.3.46``):
per message, the characters of its text content, of an AI message's tool calls (their
``repr``), of a tool message's call id, of its role and its name, divided by 4 and rounded
up, plus 3 tokens; a fixed 85 per image block. It adds up per message, so a history is
counted once per message and a longer history only counts what was added. ``tiktoken``
counts the same parts with a real encoding (offered only when ``tiktoken`` imports and its
encoding loads). A user's callable (``messages -> int``, LangChain's ``token_counter``
convention) is called with one message at a time and summed.

Incremental counting
--------------------
`count_history` keeps, per history, the message objects last counted and their tokens
(`HistoryMemo`). A history that starts with the very same objects (identity, as the state
hasher does) counts only the messages added; otherwise each message already counted is found
by identity (the memo holds it, so its id cannot be reused) and only new ones are counted.
Known limitation (as for hashing): a message mutated in place after it was counted keeps its
old count.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

from langgraph.checkpoint.otel.analysis.encoding import starts_with_same_objects

TokenCounter = Callable[[Sequence[Any]], int]
"""Messages -> tokens (LangChain's ``token_counter`` convention)."""

APPROXIMATE: Final = "approximate"
TIKTOKEN: Final = "tiktoken"
DEFAULT_TIKTOKEN_ENCODING: Final = "o200k_base"
CUSTOM: Final = "custom"

SHRINK_REMOVED: Final = "removed"
"""Messages were removed and none put in their place (trimmed, `RemoveMessage`)."""
SHRINK_REPLACED: Final = "replaced"
"""Messages were removed and others put in their place (a summary)."""
SHRINK_EDITED: Final = "edited"
"""No message was removed; some were replaced by shorter ones under the same id."""

MESSAGE_OVERHEAD_BYTES: Final = 64
"""Bytes a memo counts per message beyond its estimated text (pointers, the count)."""
BYTES_PER_TOKEN: Final = 4
_MAX_CHUNKS: Final = 64


def message_class() -> type | None:
    """LangChain's ``BaseMessage``, if LangChain's messages are loaded (never imports it)."""
    module = sys.modules.get("langchain_core.messages.base")
    found = getattr(module, "BaseMessage", None) if module is not None else None
    return found if isinstance(found, type) else None


def is_message_list(value: Any, message_type: type | None = None) -> TypeGuard[list[Any]]:
    """Whether `value` is a non-empty list of LangChain messages (first and last elements)."""
    if type(value) is not list or not value:
        return False
    cls = message_type or message_class()
    return cls is not None and isinstance(value[0], cls) and isinstance(value[-1], cls)


def history_channel(
    values: Mapping[str, Any],
    changed: Collection[str],
    preferred: str | None = None,
    last: str | None = None,
) -> str | None:
    """The channel holding the message history, where this put changed it (None: it did not,
    or no channel holds messages).

    The history is `preferred` (the ``messages_channel`` option) wherever the state holds a
    list there, else the channel it was last found in (`last`), else the changed channel
    whose value is the longest list of messages (by type): a second message list beside the
    history (``llm_input_messages`` of a ``pre_model_hook``) is never taken for it."""
    cls = message_class()
    if cls is None:
        return None
    for channel in (preferred, last):
        value = values.get(channel) if channel is not None else None
        if type(value) is list and (not value or is_message_list(value, cls)):
            return channel if channel in changed else None
    best: str | None = None
    best_len = 0
    for channel in changed:
        value = values.get(channel)
        if is_message_list(value, cls):
            length = len(value)
            if length > best_len:
                best, best_len = channel, length
    return best


# --- token counters ---------------------------------------------------------------------------


def approximate_counter() -> TokenCounter | None:
    """LangChain's ``count_tokens_approximately`` (None: langchain_core lacks it)."""
    try:
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:  # pragma: no cover - langchain_core < 0.3.46
        return None
    return count_tokens_approximately


def tiktoken_counter(encoding_name: str = DEFAULT_TIKTOKEN_ENCODING) -> TokenCounter:
    """A counter on a ``tiktoken`` encoding: the parts ``count_tokens_approximately`` counts,
    encoded, plus 3 tokens per message.

    Raises:
        ValueError: ``tiktoken`` is not installed or the encoding does not load (it is fetched
            over the network the first time, then cached).
    """
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]

        encoding = tiktoken.get_encoding(encoding_name)
    except Exception as exc:  # any failure means: not usable here
        raise ValueError(
            f"token_counter 'tiktoken:{encoding_name}' is not usable here "
            f"({type(exc).__name__}: {exc}); install tiktoken and make its encoding available "
            "offline (TIKTOKEN_CACHE_DIR), or use 'approximate'"
        ) from None

    def count(messages: Sequence[Any]) -> int:
        total = 0
        for message in messages:
            text = "".join(_message_texts(message))
            total += len(encoding.encode(text, disallowed_special=())) + 3
        return total

    return count


def _message_texts(message: Any) -> list[str]:
    """The parts of a message a tokenizer counts: text content, tool calls, call id, role,
    name (images and other blocks by their ``repr``)."""
    parts = [str(getattr(message, "type", ""))]
    content = getattr(message, "content", "")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif not (isinstance(block, dict) and block.get("type") in ("image", "image_url")):
                parts.append(repr(block))
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        parts.append(json.dumps(tool_calls, default=str, sort_keys=True))
    for name in ("tool_call_id", "name"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            parts.append(value)
    return parts


def resolve_counter(spec: str | TokenCounter) -> tuple[TokenCounter | None, str]:
    """The counter `spec` names and its name for telemetry: ``approximate``,
    ``tiktoken[:<encoding>]`` or a callable (``custom``).

    Raises:
        ValueError: an unknown name, or ``tiktoken`` not usable here.
    """
    if callable(spec):
        return spec, CUSTOM
    if spec == APPROXIMATE:
        return approximate_counter(), APPROXIMATE
    if spec == TIKTOKEN or spec.startswith(TIKTOKEN + ":"):
        encoding = spec.partition(":")[2] or DEFAULT_TIKTOKEN_ENCODING
        return tiktoken_counter(encoding), f"{TIKTOKEN}:{encoding}"
    raise ValueError(
        f"unknown token_counter {spec!r}: use 'approximate', 'tiktoken' or "
        "'tiktoken:<encoding>', or pass a callable (messages -> int) in code"
    )


# --- counting ---------------------------------------------------------------------------------


@dataclass(slots=True)
class HistoryMemo:
    """The message objects a history last counted and their tokens (holds the objects: an
    identity test against them is exact)."""

    checkpoint_id: str
    channel: str
    chunks: list[tuple[Any, ...]]
    """The messages, in order, as the chunks they were added in (shared with the next memo:
    a put that appends costs its new messages, not a copy of the history)."""
    token_chunks: list[tuple[int, ...] | None]
    """Each message's tokens, chunked as `chunks` (None: a chunk whose total alone is known,
    the history a run loaded with its stored count)."""
    messages: int
    total: int
    counter: str = ""
    """The token counter that counted it (a memo of another counter is not continued)."""

    @property
    def bytes(self) -> int:
        """An estimate of the bytes the memo keeps alive: its messages' text (tokens times 4)
        and a fixed overhead per message."""
        return self.total * BYTES_PER_TOKEN + MESSAGE_OVERHEAD_BYTES * self.messages


@dataclass(frozen=True, slots=True)
class Shrink:
    """A history shorter (in messages or tokens) than its parent checkpoint's."""

    before_messages: int
    before_tokens: int
    after_messages: int
    after_tokens: int
    removed: int
    """Messages of the parent's history no longer present (by message id, else identity)."""
    added: int
    """Messages present that the parent's history did not hold."""

    @property
    def kind(self) -> str:
        """`removed`, `replaced` or `edited` (see the constants)."""
        if not self.removed:
            return SHRINK_EDITED
        return SHRINK_REPLACED if self.added else SHRINK_REMOVED


def count_history(
    messages: list[Any],
    counter: TokenCounter,
    memo: HistoryMemo | None,
    *,
    checkpoint_id: str,
    channel: str,
    parent_id: str | None,
) -> tuple[HistoryMemo, Shrink | None]:
    """Count `messages` (the history of `checkpoint_id` in `channel`), reusing `memo` (the
    last count of the same history); and the shrink from the parent's history when `memo`
    counted the parent (`parent_id`) and this history is shorter."""
    if memo is not None and memo.channel != channel:
        memo = None
    if memo is not None and starts_with_same_objects(messages, memo.chunks, memo.messages):
        fresh = tuple(messages[memo.messages :])
        added = tuple(counter([m]) for m in fresh)
        chunks, token_chunks = memo.chunks, memo.token_chunks
        if fresh:
            chunks, token_chunks = [*chunks, fresh], [*token_chunks, added]
        if len(chunks) > _MAX_CHUNKS:
            chunks, token_chunks = _merged(chunks, token_chunks)
        total = memo.total + sum(added)
        return HistoryMemo(
            checkpoint_id, channel, chunks, token_chunks, len(messages), total, memo.counter
        ), None
    known: dict[int, int] = {}
    if memo is not None:
        for chunk, counts in zip(memo.chunks, memo.token_chunks, strict=True):
            if counts is not None:
                for message, count in zip(chunk, counts, strict=True):
                    known[id(message)] = count
    tokens = tuple(known[id(m)] if id(m) in known else counter([m]) for m in messages)
    new = HistoryMemo(
        checkpoint_id,
        channel,
        [tuple(messages)],
        [tokens],
        len(messages),
        sum(tokens),
        memo.counter if memo is not None else "",
    )
    if memo is None or parent_id is None or memo.checkpoint_id != parent_id:
        return new, None
    if new.messages >= memo.messages and new.total >= memo.total:
        return new, None
    before = {_key(m) for m in _objects(memo)}
    after = {_key(m) for m in messages}
    return new, Shrink(
        memo.messages,
        memo.total,
        new.messages,
        new.total,
        len(before - after),
        len(after - before),
    )


def loaded_memo(
    checkpoint_id: str,
    values: Mapping[str, Any],
    stored: tuple[str, int, int, str] | None,
) -> HistoryMemo | None:
    """The memo of a loaded checkpoint's history from its stored count (`names.META_HISTORY`):
    the loaded messages with their total, per message unknown, so the run's first put counts
    only what it adds. None when nothing was stored or the loaded value does not match it (a
    delta channel between snapshots holds no value)."""
    if stored is None:
        return None
    channel, messages, tokens, counter = stored
    value = values.get(channel)
    if type(value) is not list or len(value) != messages:
        return None
    return HistoryMemo(checkpoint_id, channel, [tuple(value)], [None], messages, tokens, counter)


def _merged(
    chunks: list[tuple[Any, ...]], token_chunks: list[tuple[int, ...] | None]
) -> tuple[list[tuple[Any, ...]], list[tuple[int, ...] | None]]:
    """Many chunks as few: a first chunk of unknown counts stays, the others become one."""
    keep = 1 if token_chunks[0] is None else 0
    rest = tuple(m for chunk in chunks[keep:] for m in chunk)
    counts = tuple(t for chunk in token_chunks[keep:] for t in chunk or ())
    return [*chunks[:keep], rest], [*token_chunks[:keep], counts]


def window_share(tokens: int, window: int | None) -> float | None:
    """`tokens` as a share of a model's context `window` (None: no window)."""
    if not window:
        return None
    return math.floor(tokens / window * 10_000) / 10_000


def _objects(memo: HistoryMemo) -> list[Any]:
    return [m for chunk in memo.chunks for m in chunk]


def _key(message: Any) -> object:
    """A message's identity across copies: its id where it has one (``add_messages`` gives
    every message one), else the object itself."""
    message_id = getattr(message, "id", None)
    return message_id if isinstance(message_id, str) and message_id else id(message)
