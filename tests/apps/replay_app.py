"""A `create_agent` travel agent recorded by one release and replayed by the next
(`test_replay.py`): release 1 and five code changes, each a real way a release departs.

The agent has middleware a team would have: `TurnCounter` counts model turns in the state
(``turns``), `Guard` stops the run when the model asks for a blocked tool, `Normalize` may
rewrite a tool call's arguments before the tool runs. `build(change)` returns the compiled
agent of release 1 (`change` None) or of release 2 with one of `CHANGES`:

- ``route``: `Guard` blocks ``book`` (release 1 blocks only ``delete_account``);
- ``rename_tool``: ``search`` is called ``find_flights``;
- ``change_argument``: `Normalize` upper-cases the city it passes to ``lookup``;
- ``rename_state_key``: `TurnCounter` writes ``model_turns`` instead of ``turns``;
- ``add_node``: a `Trim` middleware runs before each model call (a node in the middle).
"""

from __future__ import annotations

from typing import Any, NotRequired

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, hook_config
from langchain_core.tools import BaseTool

import agents

CHANGES = ("route", "rename_tool", "change_argument", "rename_state_key", "add_node")


class CountedState(AgentState):  # type: ignore[type-arg]
    turns: NotRequired[int]
    model_turns: NotRequired[int]


class TurnCounter(AgentMiddleware):  # type: ignore[type-arg]
    state_schema = CountedState

    def __init__(self, key: str = "turns") -> None:
        super().__init__()
        self.key = key

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        return {self.key: int(state.get(self.key, 0)) + 1}


class Guard(AgentMiddleware):  # type: ignore[type-arg]
    def __init__(self, blocked: frozenset[str]) -> None:
        super().__init__()
        self.blocked = blocked

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        asked = {call["name"] for call in state["messages"][-1].tool_calls}
        return {"jump_to": "end"} if asked & self.blocked else None


class Normalize(AgentMiddleware):  # type: ignore[type-arg]
    def __init__(self, upper: bool) -> None:
        super().__init__()
        self.upper = upper

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        args = request.tool_call["args"]
        if self.upper and "city" in args:
            request.tool_call["args"] = {**args, "city": args["city"].upper()}
        return handler(request)


class Trim(AgentMiddleware):  # type: ignore[type-arg]
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return None


def _tools(tools: agents.Tools, rename: bool) -> list[BaseTool]:
    made = tools.all()
    if rename:
        for tool in made:
            if tool.name == "search":
                tool.name = "find_flights"
    return made


def build(
    change: str | None = None,
    checkpointer: Any = None,
    tools: agents.Tools | None = None,
    model: Any = None,
) -> Any:
    """The agent of release 1, or of release 2 with `change` (see the module docstring)."""
    middleware: list[Any] = [
        TurnCounter("model_turns" if change == "rename_state_key" else "turns"),
        Guard(frozenset({"book"} if change == "route" else {"delete_account"})),
        Normalize(upper=change == "change_argument"),
    ]
    if change == "add_node":
        middleware.insert(0, Trim())
    return create_agent(
        model or agents.ScriptedChatModel(script=agents.travel_script()),
        _tools(tools or agents.Tools(), rename=change == "rename_tool"),
        middleware=middleware,
        checkpointer=checkpointer,
        name="travel",
    )


def release_1() -> Any:
    return build()


def route() -> Any:
    return build("route")


def rename_tool() -> Any:
    return build("rename_tool")


def change_argument() -> Any:
    return build("change_argument")


def rename_state_key() -> Any:
    return build("rename_state_key")


def add_node() -> Any:
    return build("add_node")
