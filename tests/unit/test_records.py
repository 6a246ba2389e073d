"""Pure readings of checkpoints."""

from __future__ import annotations

from langgraph.types import Send

from langgraph.checkpoint.otel._langgraph.formats import NULL_TASK_ID, node_of_task, send_targets
from langgraph.checkpoint.otel.analysis.records import nodes_from_versions_seen, task_outcome


def test_nodes_are_the_versions_seen_entries_that_changed_without_bookkeeping_keys() -> None:
    parent = {"__input__": {}, "agent": {"branch:to:agent": "1"}, "tools": {"x": "1"}}
    child = {
        "__input__": {"__start__": "2"},
        "__interrupt__": {"branch:to:tools": "2"},
        "agent": {"branch:to:agent": "1"},
        "tools": {"x": "2"},
        "new": {},
    }
    assert nodes_from_versions_seen(parent, child) == ["new", "tools"]
    assert nodes_from_versions_seen(None, {"a": {}}) == ["a"]


def test_node_of_a_task() -> None:
    assert node_of_task("t", "~__pregel_pull, agent") == "agent"
    assert node_of_task("t", "~__pregel_push, 1, 0", ["a", "b"]) == "b"
    assert node_of_task("t", "~__pregel_push, 5, 0", ["a", "b"]) is None
    assert node_of_task(NULL_TASK_ID, "") == "__input__"
    assert node_of_task("t", "") is None


def test_send_targets_and_outcomes() -> None:
    assert send_targets([Send("a", 1), Send("b", 2)]) == ["a", "b"]
    assert send_targets(None) == []
    assert task_outcome(["x", "__error__"]) == "error"
    assert task_outcome(["__interrupt__"]) == "interrupt"
    assert task_outcome(["__resume__"]) == "resume"
    assert task_outcome(["__resume__", "x"]) == "ok"
    assert task_outcome(["x"]) == "ok"


def test_tool_activity_of_new_messages_matches_answers_to_their_requests() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from langgraph.checkpoint.otel.analysis.tool_calls import message_tool_activity, tool_call_key

    history = [
        HumanMessage("hi"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"q": 1}, "id": "a"}]),
        ToolMessage("r1", tool_call_id="a", name="search"),
        AIMessage("", tool_calls=[{"name": "mail", "args": {"to": "b"}, "id": "b"}]),
        ToolMessage("r2", tool_call_id="b"),
        ToolMessage("r3", tool_call_id="nobody", name="ghost"),
    ]
    requested, answered = message_tool_activity(history, start=3)
    mail = tool_call_key("mail", {"to": "b"})
    assert [(c.name, c.key) for c in requested] == [("mail", mail)]
    # the answer carries its request's name and arguments; an orphan keeps its own name
    assert [(c.name, c.key) for c in answered] == [("mail", mail), ("ghost", "ghost:?")]
    requested, answered = message_tool_activity(history)
    assert [c.name for c in requested] == ["search", "mail"]
    assert answered[0].key == tool_call_key("search", {"q": 1})
    # argument order does not change the key; other arguments do
    assert tool_call_key("s", {"a": 1, "b": 2}) == tool_call_key("s", {"b": 2, "a": 1})
    assert tool_call_key("s", {"a": 1}) != tool_call_key("s", {"a": 2})


def test_last_tool_requests_reads_the_last_request_and_its_answers() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from langgraph.checkpoint.otel.analysis.tool_calls import (
        LAST_REQUEST_WINDOW,
        last_tool_requests,
        tool_call_key,
    )

    def ask(*calls: tuple[str, str]) -> AIMessage:
        return AIMessage(
            "", tool_calls=[{"name": "book", "args": {"flight": f}, "id": i} for i, f in calls]
        )

    older = ask(("c0", "LH 1"))
    history = [
        HumanMessage("hi"),
        older,
        ToolMessage("ok", tool_call_id="c0"),
        ask(("c1", "LH 2"), ("c2", "LH 3")),
        ToolMessage("ok", tool_call_id="c1"),  # c2 was in flight when the run stopped
    ]
    calls, answered = last_tool_requests(history)
    assert [(i, c.key) for i, c in calls] == [
        ("c1", tool_call_key("book", {"flight": "LH 2"})),
        ("c2", tool_call_key("book", {"flight": "LH 3"})),
    ]
    assert answered == {"c1"}
    assert last_tool_requests([HumanMessage("hi")]) == ([], set())
    # a request further back than the window is not looked for
    padding = [HumanMessage(str(n)) for n in range(LAST_REQUEST_WINDOW)]
    assert last_tool_requests([older, *padding]) == ([], set())
    assert last_tool_requests([older, *padding[1:]])[0][0][0] == "c0"
