"""Content-free channel summaries for the ``langgraph.channel`` span event."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import BaseModel

from langgraph.checkpoint.otel.analysis.summary import MAX_SUMMARY_CHARS, summarize

SECRET = "SECRET-7f3a"


def _conversation() -> list[Any]:
    return [
        SystemMessage(f"system {SECRET}"),
        HumanMessage(f"question {SECRET}"),
        AIMessage(
            f"thinking {SECRET}",
            tool_calls=[
                {"name": "search", "args": {"q": SECRET}, "id": f"call-{SECRET}"},
                {"name": "lookup", "args": {SECRET: 1}, "id": "c2"},
            ],
        ),
        ToolMessage(f"result {SECRET}", tool_call_id="c1", name="search"),
        ToolMessage(f"result {SECRET}", tool_call_id="c2", name="lookup"),
        AIMessage(f"answer {SECRET}"),
    ]


def test_new_messages_are_described_by_type_and_tool_names() -> None:
    msgs = _conversation()
    assert summarize(msgs[:4], 2) == "+2 messages: ai(tool_calls=search,lookup), tool(search)"
    assert summarize(msgs[:6], 5) == "+1 message: ai"


def test_all_messages_when_previous_count_is_unknown() -> None:
    assert summarize(_conversation()[:3], None) == (
        "3 messages: system, human, ai(tool_calls=search,lookup)"
    )


def test_many_new_messages_are_cut() -> None:
    msgs = [HumanMessage(f"m{i} {SECRET}") for i in range(12)]
    assert summarize(msgs, 0) == "+12 messages: human, human, human, human, human, …+7 more"


def test_shrunk_and_same_length_message_lists() -> None:
    msgs = _conversation()
    assert summarize(msgs[:3], 5) == "-2 messages (3 total)"
    assert summarize(msgs, 6) == "6 messages (+0)"


def test_other_message_kinds() -> None:
    assert summarize([RemoveMessage(id="x")], 0) == "+1 message: remove"
    assert summarize([AIMessageChunk(content=SECRET)], 0) == "+1 message: ai_chunk"
    assert summarize(
        AIMessage(SECRET, tool_calls=[{"name": "s", "args": {}, "id": "1"}]), None
    ) == ("ai(tool_calls=s)")


def test_tool_names_that_are_not_identifiers_are_hidden() -> None:
    msg = AIMessage("", tool_calls=[{"name": f"call {SECRET} now!", "args": {}, "id": "1"}])
    assert summarize([msg], 0) == "+1 message: ai(tool_calls=?)"
    tool = ToolMessage("x", tool_call_id="1", name="weird name with spaces")
    assert summarize([tool], None) == "1 message: tool(?)"


def test_lists_dicts_sets() -> None:
    assert summarize([1, 2, 3, SECRET, 5, 6, 7], 5) == "list: 7 items (+2)"
    assert summarize([1, 2, 3], 5) == "list: 3 items (-2)"
    assert summarize([SECRET], None) == "list: 1 item"
    assert summarize([], None) == "list: 0 items"
    assert summarize((1, 2), None) == "tuple: 2 items"
    assert summarize({SECRET: 1, "b": 2, "c": 3, "d": SECRET}, 3) == "dict: 4 keys (+1)"
    assert summarize({SECRET: 1}, None) == "dict: 1 key"
    assert summarize({SECRET, "x"}, 2) == "set: 2 items (+0)"
    # a list that mixes messages and other things is a plain list
    assert summarize([HumanMessage(SECRET), SECRET], 1) == "list: 2 items (+1)"


class Profile(BaseModel):
    name: str


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (SECRET, "str"),
        (42, "int"),
        (4.2, "float"),
        (True, "bool"),
        (None, "NoneType"),
        (SECRET.encode(), "bytes"),
        (Profile(name=SECRET), "Profile"),
        (Point(1), "Point"),
    ],
)
def test_scalars_and_objects_are_their_type_name(value: Any, expected: str) -> None:
    assert summarize(value, None) == expected


def test_summaries_never_contain_content() -> None:
    msgs = _conversation()
    values: list[Any] = [
        msgs,
        msgs[:1],
        {SECRET: msgs},
        {"k": SECRET},
        [SECRET] * 3,
        SECRET,
        Profile(name=SECRET),
        {SECRET},
        msgs[2],
    ]
    for value in values:
        for previous in (None, 0, 1, 10):
            text = summarize(value, previous)
            assert SECRET not in text
            assert "question" not in text and "result" not in text and "answer" not in text
            assert "call-" not in text  # tool call ids
            assert len(text) <= MAX_SUMMARY_CHARS


def test_summary_is_capped() -> None:
    name = "t" * 60
    msgs = [
        AIMessage("", tool_calls=[{"name": name, "args": {}, "id": str(i)}] * 3) for i in range(5)
    ]
    text = summarize(msgs, 0)
    assert len(text) == MAX_SUMMARY_CHARS
    assert text.endswith("…")


def test_a_broken_value_still_gets_a_summary() -> None:
    class Weird(list[Any]):
        def __len__(self) -> int:
            raise RuntimeError(SECRET)

    text = summarize(Weird(), None)
    assert text == "Weird"
