"""A small tool-calling agent with a scripted, offline chat model.

    START -> agent -> (tool calls?) -> tools -> agent -> ... -> END

`build_agent()` returns an uncompiled `StateGraph` with a *fresh* scripted model, so every call
starts the script from the beginning: exactly what the resume harness needs (it builds the
graph again for every run). Swap `scripted_model()` for a real chat model bound to the tools
(`ChatOpenAI(...).bind_tools(TOOLS)`) and the graph is the usual ReAct loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

QUESTION = {"messages": [HumanMessage("Find a flight to Lisbon and check my calendar for May 3.")]}


@tool
def search_flights(destination: str) -> str:
    """Search flights to a destination."""
    return f"2 flights to {destination}: TP1353 08:05, TP1355 13:40"


@tool
def check_calendar(date: str) -> str:
    """List the events on a date (YYYY-MM-DD)."""
    return f"{date}: free all day"


TOOLS = [search_flights, check_calendar]


def _call(name: str, **args: Any) -> dict[str, Any]:
    # Real models issue a new, random tool-call id on every call; the harness ignores them.
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}


def script() -> Iterator[AIMessage]:
    """What the model answers, turn by turn."""
    yield AIMessage("", tool_calls=[_call("search_flights", destination="Lisbon")])
    yield AIMessage("", tool_calls=[_call("check_calendar", date="2025-05-03")])
    yield AIMessage("TP1353 at 08:05 fits: your calendar is free on May 3.")


def scripted_model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=script())


def build_agent(model: Any = None) -> StateGraph[Any, Any, Any, Any]:
    """The agent graph, uncompiled, with a fresh scripted model unless one is given."""
    chat = model if model is not None else scripted_model()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


if __name__ == "__main__":
    from langgraph.checkpoint.memory import InMemorySaver

    graph = build_agent().compile(checkpointer=InMemorySaver())
    result = graph.invoke(QUESTION, {"configurable": {"thread_id": "demo"}})
    for message in result["messages"]:
        message.pretty_print()
