"""The message history's counts (`analysis.message_history`): which channel holds it, its
incremental token count, and the shrink it shows against its parent's history."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from langgraph.checkpoint.otel.analysis.message_history import (
    SHRINK_EDITED,
    SHRINK_REMOVED,
    SHRINK_REPLACED,
    HistoryMemo,
    count_history,
    history_channel,
    is_message_list,
    loaded_memo,
    resolve_counter,
    window_share,
)
from langgraph.checkpoint.otel.analysis.stored_metadata import (
    StoredTelemetry,
    read_stored_telemetry,
    without_stored_telemetry,
)
from langgraph.checkpoint.otel.options import InstrumentOptions


class Counting:
    """`count_tokens_approximately`, remembering how many messages it was asked about."""

    def __init__(self) -> None:
        self.messages = 0

    def __call__(self, messages: Any) -> int:
        self.messages += len(messages)
        return count_tokens_approximately(messages)


def _turns(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out.append(HumanMessage(f"question {i} " * 5, id=f"h{i}"))
        call = {"name": "lookup", "args": {"q": i}, "id": f"c{i}", "type": "tool_call"}
        out.append(AIMessage("", tool_calls=[call], id=f"a{i}"))
        out.append(ToolMessage(f"answer {i}", tool_call_id=f"c{i}", id=f"t{i}"))
    return out


def _count(messages: list[Any], memo: HistoryMemo | None, counter: Any, cid: str, parent: Any):
    return count_history(
        messages, counter, memo, checkpoint_id=cid, channel="messages", parent_id=parent
    )


def test_found_by_value_type_not_by_name() -> None:
    history = _turns(2)
    values = {"chat": history, "notes": ["a", "b"], "n": 1, "empty": []}
    assert is_message_list(history)
    assert not is_message_list(["a"]) and not is_message_list([]) and not is_message_list(())
    assert history_channel(values, {"chat", "notes", "n"}, "messages") == "chat"
    assert history_channel(values, {"notes", "n"}, "messages") is None  # unchanged: not counted
    # the option's channel first, even emptied (a RemoveMessage of everything)
    assert history_channel({**values, "messages": []}, {"chat", "messages"}, "messages") == (
        "messages"
    )
    # of several message lists, the longest
    longer = {"a": history[:1], "b": history}
    assert history_channel(longer, {"a", "b"}, None) == "b"
    # a second message list beside the history (a pre_model_hook's llm_input_messages) is not
    # the history, changed or not; nor is the history's channel when it holds no messages
    hook = {"messages": history, "llm_input_messages": history[-1:]}
    assert history_channel(hook, {"llm_input_messages"}, "messages") is None
    assert history_channel(hook, {"llm_input_messages", "messages"}, "messages") == "messages"
    assert history_channel(longer, {"a"}, None, last="b") is None  # where it was found before
    assert history_channel({"messages": ["a"], "b": history}, {"b"}, "messages") == "b"


def test_incremental_count_equals_the_whole_count() -> None:
    counter = Counting()
    history = _turns(5)
    memo, shrink = _count(history[:3], None, counter, "1", None)
    assert shrink is None and counter.messages == 3
    grown = [*history[:3], *history[3:9]]  # add_messages: a new list of the same objects
    memo, shrink = _count(grown, memo, counter, "2", "1")
    assert shrink is None
    assert counter.messages == 9  # only the 6 added were counted
    assert memo.messages == 9
    assert memo.total == count_tokens_approximately(grown)
    assert memo.bytes == memo.total * 4 + 64 * 9


def test_trimmed_history_is_a_removal() -> None:
    counter = Counting()
    history = _turns(4)
    memo, _ = _count(history, None, counter, "1", None)
    kept = history[-3:]
    after, shrink = _count(kept, memo, counter, "2", "1")
    assert counter.messages == 12  # the kept messages were counted before: found by identity
    assert shrink is not None
    assert (shrink.before_messages, shrink.after_messages) == (12, 3)
    assert shrink.before_tokens == count_tokens_approximately(history)
    assert shrink.after_tokens == count_tokens_approximately(kept) == after.total
    assert (shrink.removed, shrink.added, shrink.kind) == (9, 0, SHRINK_REMOVED)


def test_summary_is_a_replacement() -> None:
    counter = Counting()
    history = _turns(3)
    memo, _ = _count(history, None, counter, "1", None)
    summarised = [SystemMessage("summary of the first two turns", id="s"), *history[-3:]]
    _, shrink = _count(summarised, memo, counter, "2", "1")
    assert shrink is not None
    assert (shrink.removed, shrink.added, shrink.kind) == (6, 1, SHRINK_REPLACED)
    assert counter.messages == 9 + 1  # the summary alone is new


def test_copies_with_the_same_ids_are_not_removals() -> None:
    history = _turns(2)
    memo, _ = _count(history, None, count_tokens_approximately, "1", None)
    edited = [m.model_copy() for m in history]
    edited[0] = HumanMessage("short", id=history[0].id)
    _, shrink = _count(edited, memo, count_tokens_approximately, "2", "1")
    assert shrink is not None and shrink.kind == SHRINK_EDITED and shrink.removed == 0


def test_no_shrink_against_a_checkpoint_that_is_not_the_parent() -> None:
    history = _turns(3)
    memo, _ = _count(history, None, count_tokens_approximately, "5", None)
    # a fork from an earlier checkpoint: shorter, but its parent is not the memo's checkpoint
    memo2, shrink = _count(history[:3], memo, count_tokens_approximately, "6", "2")
    assert shrink is None and memo2.messages == 3
    # another channel's memo is not reused
    other = count_history(history, len, memo, checkpoint_id="7", channel="chat", parent_id="5")  # type: ignore[arg-type]
    assert other[1] is None and other[0].total == sum(1 for _ in history)


def test_everything_removed() -> None:
    history = _turns(1)
    memo, _ = _count(history, None, count_tokens_approximately, "1", None)
    memo2, shrink = _count([], memo, count_tokens_approximately, "2", "1")
    assert memo2.messages == 0 and memo2.total == 0
    assert shrink is not None and shrink.after_messages == 0 and shrink.kind == SHRINK_REMOVED


def test_window_share() -> None:
    assert window_share(64_000, 128_000) == 0.5
    assert window_share(1, None) is None
    assert window_share(99_999, 100_000) == 0.9999  # rounded down: never over the threshold


def test_counters_and_their_names() -> None:
    counter, name = resolve_counter("approximate")
    assert name == "approximate" and counter is count_tokens_approximately
    assert resolve_counter(len) == (len, "custom")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown token_counter"):
        resolve_counter("bpe")
    try:
        import tiktoken  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="not usable here"):
            resolve_counter("tiktoken")


def test_the_options() -> None:
    assert InstrumentOptions.load({}, {}).message_history is True
    options = InstrumentOptions.load({}, {"LANGGRAPH_OTEL_CONTEXT_WINDOW": "128k"})
    assert options.context_window == 128_000
    assert InstrumentOptions.load({"context_window": "1m"}).context_window == 1_000_000
    for bad in ("0", "lots", "-5"):
        with pytest.raises(ValueError, match="context_window"):
            InstrumentOptions.load({}, {"LANGGRAPH_OTEL_CONTEXT_WINDOW": bad})
    with pytest.raises(ValueError, match="unknown token counter 'bpe'"):
        InstrumentOptions.load({"token_counter": "bpe"})


def test_a_loaded_history_continues_from_its_stored_count() -> None:
    counter = Counting()
    history = _turns(4)
    stored = ("messages", 12, count_tokens_approximately(history), "approximate")
    memo = loaded_memo("1", {"messages": history}, stored)
    assert memo is not None and memo.token_chunks == [None] and memo.counter == "approximate"
    grown = [*history, AIMessage("more", id="m")]
    after, shrink = _count(grown, memo, counter, "2", "1")
    assert counter.messages == 1 and shrink is None
    assert after.total == count_tokens_approximately(grown)
    # cut: the kept loaded messages are counted then (their counts were not stored)
    kept, shrink = _count(grown[-2:], after, counter, "3", "2")
    assert counter.messages == 1 + 1 and kept.total == count_tokens_approximately(grown[-2:])
    assert shrink is not None and shrink.removed == 11 and shrink.kind == SHRINK_REMOVED
    # nothing stored, or a value that is not the one counted (a delta channel between snapshots)
    assert loaded_memo("1", {"messages": history}, None) is None
    assert loaded_memo("1", {}, stored) is None
    assert loaded_memo("1", {"messages": history[:3]}, stored) is None


def test_many_appends_keep_few_chunks() -> None:
    history = _turns(1)
    memo = loaded_memo("0", {"messages": history}, ("messages", 3, 7, "approximate"))
    assert memo is not None
    messages = list(history)
    for i in range(100):
        messages = [*messages, AIMessage(f"m{i}", id=f"m{i}")]
        memo, _ = _count(messages, memo, count_tokens_approximately, str(i + 1), str(i))
    assert len(memo.chunks) <= 65 and memo.token_chunks[0] is None  # the loaded chunk stays
    assert memo.messages == 103
    assert memo.total == 7 + count_tokens_approximately(messages[3:])


def test_the_stored_count_round_trips() -> None:
    stored = StoredTelemetry(nodes=("a",), history=("messages", 3, 42, "approximate"))
    value = stored.to_metadata()
    assert value["history"] == ["messages", 3, 42, "approximate"]
    read = read_stored_telemetry({"otel": value})
    assert read is not None and read.history == ("messages", 3, 42, "approximate")
    for bad in (["messages", -1, 4, "x"], ["messages", 3, True, "x"], "x", [1, 2, 3, 4]):
        read = read_stored_telemetry({"otel": {**value, "history": bad}})
        assert read is not None and read.history is None
    assert without_stored_telemetry({"otel": value, "step": 1}) == {"step": 1}
