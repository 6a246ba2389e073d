"""Tool calls as the detectors, the wrapper and the harness see them: identified across runs by
their idempotency key (name + argument hash), read from the messages a step added.

Pure logic: nothing here knows OpenTelemetry or any saver.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.otel.analysis.hashing import hash_value
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text, key_text, repr_bytes


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call, identified across runs by its idempotency key (name + argument hash).

    The model-issued call id changes on every run; the key does not.
    """

    name: str
    key: str
    arguments: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    """Argument label (`argument_label` of its name) -> a short hash of its value ({} when
    unknown: an old stored record); says which arguments differ between two calls, never their
    names (a model's output) nor what they hold."""

    @classmethod
    def of_key(cls, key: str, arguments: Mapping[str, str] | None = None) -> ToolCall:
        """The call an idempotency key (`tool_call_key`) stands for."""
        return cls(key.rpartition(":")[0] or key, key, dict(arguments or {}))


ARGUMENT_HASH_LENGTH = 12
"""Hex digits kept of each argument's hash (enough to tell two values apart in one call)."""


def argument_label(name: Any) -> str:
    """The label telemetry gives a tool-call argument: 8 hex digits of its name's hash (an
    argument's name comes from the model, so it is not written as is; `argument_names`
    translates labels back where the messages are at hand)."""
    digest = hashlib.blake2b(key_text(name).encode(), digest_size=4, person=b"lgargument")
    return digest.hexdigest()


def argument_hashes(args: Any) -> dict[str, str]:
    """Argument label -> short hash of its value, for a call's arguments ({} unless a
    mapping)."""
    if not isinstance(args, Mapping):
        return {}
    return {
        argument_label(name): hash_value(value, fallback=repr_bytes)[:ARGUMENT_HASH_LENGTH]
        for name, value in args.items()
    }


def argument_names(messages: Iterable[Any]) -> dict[str, str]:
    """Label -> argument name, for every argument of the tool calls the AI messages among
    `messages` request (to show findings' `arguments` by name where the messages are read)."""
    return {
        argument_label(name): key_text(name)
        for message in messages
        for call in _requested_calls(message)
        if isinstance(call.get("args"), Mapping)
        for name in call["args"]
    }


def changed_arguments(before: ToolCall, after: ToolCall) -> tuple[str, ...]:
    """The labels of the arguments whose values differ between two calls of a tool (an
    argument only one has counts; () when either call's arguments are unknown)."""
    if not before.arguments or not after.arguments:
        return ()
    names = set(before.arguments) | set(after.arguments)
    return tuple(sorted(n for n in names if before.arguments.get(n) != after.arguments.get(n)))


@dataclass(frozen=True, slots=True)
class ToolActivity:
    """Tool calls requested and answered by what one step added (a checkpoint's messages, and
    its subgraphs' when they ran in the step)."""

    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolCall, ...] = ()

    def __add__(self, other: ToolActivity) -> ToolActivity:
        return ToolActivity(self.calls + other.calls, self.results + other.results)

    def merge(self, other: ToolActivity) -> ToolActivity:
        """This step's activity with a subgraph's that ran in it, each call once (a parent
        that takes over its subgraph's messages holds the same calls)."""
        calls = {call.key for call in self.calls}
        results = {call.key for call in self.results}
        return ToolActivity(
            self.calls + tuple(c for c in other.calls if c.key not in calls),
            self.results + tuple(c for c in other.results if c.key not in results),
        )


def tool_call_key(name: str, args: Any) -> str:
    """Idempotency key of a call: `<name>:<canonical hash of its arguments>`."""
    return f"{name}:{hash_value(args, fallback=repr_bytes)}"


def turn_start(messages: Sequence[Any]) -> int:
    """Where the current turn starts in a message list: the index of its last human message
    (0 when it has none). A call repeated in a later turn is a new request, not a duplicate."""
    for index in range(len(messages) - 1, -1, -1):
        if getattr(messages[index], "type", None) == "human":
            return index
    return 0


def message_tool_activity(
    messages: Sequence[Any], start: int = 0
) -> tuple[tuple[ToolCall, ...], tuple[ToolCall, ...]]:
    """Tool calls requested and answered by `messages[start:]` (see `added_tool_activity`)."""
    requested, answered = added_tool_activity(messages, start)
    return tuple(call for _, call in requested), answered


def added_tool_activity(
    messages: Sequence[Any], start: int = 0, known: Mapping[str, ToolCall] | None = None
) -> tuple[list[tuple[str, ToolCall]], tuple[ToolCall, ...]]:
    """(model-issued call id, call) for each tool call `messages[start:]` request, in order,
    and the calls their tool messages answer.

    A tool message is matched to the request it answers through its `tool_call_id`: among the
    added messages' requests, then in `known` (requests already keyed, by call id), then from
    the newest message backwards (so the cost follows the new messages, not the history); its
    key carries the request's name and arguments.
    """
    added = messages[start:]
    requested = [
        (str(call.get("id") or ""), _tool_call(call))
        for message in added
        for call in _requested_calls(message)
    ]
    wanted = {
        str(getattr(message, "tool_call_id", ""))
        for message in added
        if getattr(message, "type", None) == "tool"
    }
    requests: dict[str, ToolCall] = {}
    if wanted:
        for call_id, added_call in reversed(requested):
            if call_id in wanted:
                requests.setdefault(call_id, added_call)
        for call_id in wanted - requests.keys():
            known_call = (known or {}).get(call_id)
            if known_call is not None:
                requests[call_id] = known_call
        if len(requests) < len(wanted):
            for message in reversed(messages[:start]):
                for call in _requested_calls(message):
                    call_id = str(call.get("id") or "")
                    if call_id in wanted and call_id not in requests:
                        requests[call_id] = _tool_call(call)
                if len(requests) == len(wanted):
                    break
    answered = []
    for message in added:
        if getattr(message, "type", None) != "tool":
            continue
        request = requests.get(str(getattr(message, "tool_call_id", "")))
        name = str(getattr(message, "name", None) or (request.name if request else ""))
        answered.append(request or ToolCall(name, f"{name}:?"))
    return requested, tuple(answered)


def requested_tool_calls(messages: Iterable[Any]) -> list[tuple[str, ToolCall]]:
    """(model-issued call id, call) for each tool call the AI messages among `messages`
    request, in order (a call without an id has id "")."""
    return [
        (bounded_text(call.get("id") or ""), _tool_call(call))
        for message in messages
        for call in _requested_calls(message)
    ]


LAST_REQUEST_WINDOW = 256
"""Messages `last_tool_requests` reads back at most (a history without tool calls costs that)."""


def last_tool_requests(messages: Sequence[Any]) -> tuple[list[tuple[str, ToolCall]], set[str]]:
    """The calls the last AI message that requests tools asks for, as in
    `requested_tool_calls`, and the ids among them that a later tool message answers (read
    from the newest message backwards, at most `LAST_REQUEST_WINDOW` messages: the cost
    follows the messages since that request)."""
    answered: set[str] = set()
    for message in reversed(messages[-LAST_REQUEST_WINDOW:]):
        if getattr(message, "type", None) == "tool":
            answered.add(bounded_text(getattr(message, "tool_call_id", "") or ""))
        elif _requested_calls(message):
            calls = requested_tool_calls([message])
            return calls, {call_id for call_id, _ in calls if call_id in answered}
    return [], set()


def _requested_calls(message: Any) -> list[Mapping[str, Any]]:
    calls = getattr(message, "tool_calls", None) or ()
    return [call for call in calls if isinstance(call, Mapping)]


def _tool_call(call: Mapping[str, Any]) -> ToolCall:
    name = str(call.get("name", ""))
    args = call.get("args")
    return ToolCall(name, tool_call_key(name, args), argument_hashes(args))


MARKED_ID_LIMIT = 256
"""Longest message id a `MessagesMark` keeps (a longer one is not kept: the count is)."""


@dataclass(frozen=True, slots=True)
class MessagesMark:
    """Where a message list ended, kept without its content: how many messages it held and
    its last message's id, from which the messages a later list added are found."""

    count: int
    last_id: str | None = None

    @classmethod
    def of(cls, messages: Sequence[Any]) -> MessagesMark:
        last = getattr(messages[-1], "id", None) if messages else None
        keep = isinstance(last, str) and len(last) <= MARKED_ID_LIMIT
        return cls(len(messages), last if keep else None)

    def first_added(self, messages: Sequence[Any]) -> int:
        """The index of the first message of `messages` added since the mark: the one after
        the marked last message (found by id, newest first), else after `count` messages."""
        n = self.count
        if n == 0:
            return 0
        if self.last_id is not None:
            if len(messages) >= n and getattr(messages[n - 1], "id", None) == self.last_id:
                return n  # appended to (what add_messages does): no scan of the history
            for index in range(len(messages) - 1, -1, -1):
                if getattr(messages[index], "id", None) == self.last_id:
                    return index + 1
        return min(n, len(messages))


def first_added(messages: Sequence[Any], previous: Sequence[Any] | MessagesMark | None) -> int:
    """The index of the first message of `messages` added since `previous` (the earlier list,
    or its `MessagesMark`; None: nothing was added)."""
    if previous is None:
        return len(messages)
    mark = previous if isinstance(previous, MessagesMark) else MessagesMark.of(previous)
    return mark.first_added(messages)
