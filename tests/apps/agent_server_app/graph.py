"""The graphs the Agent Server tests deploy (`langgraph.json` -> ``./graph.py:agent`` and
``./graph.py:approval``).

The server imports this file by path, from a temporary copy of this folder, so it finds the
shared test agents (`tests/apps/agents.py`) through ``AGENT_APP_APPS_DIR`` (set by the fixture;
by default the folder above this file, which is right when the app runs in place).

- `agent`: `langgraph.prebuilt.create_react_agent` over the offline `ScriptedChatModel` of
  tests/apps/agents.py, with its read-only and side-effecting tools; the model asks for two tools at
  once, so tool calls run as parallel `Send` tasks.
- `approval`: ``draft -> review -> publish``, whose ``review`` node calls ``interrupt()``.

Neither is compiled with a checkpointer: the server attaches its own (or the custom one of
``langgraph.json``) to every run, and refuses to start a graph that brings one.

The model "changes its answer" (a model that is not deterministic across a replay) once a
file named ``model_variant`` next to this module says ``changed``: from then on, its second
turn asks for another tool than before. The tests write that file before the replay.
"""

from __future__ import annotations

import operator
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
_APPS = os.environ.get("AGENT_APP_APPS_DIR") or str(HERE.parent)
if _APPS not in sys.path:
    sys.path.insert(0, _APPS)

from langchain_core.messages import AIMessage  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402
from langgraph.types import interrupt  # noqa: E402

from agents import Script, ScriptedChatModel, Tools, Turn, calls  # noqa: E402

VARIANT_FILE = HERE / "model_variant"
"""Holds ``changed`` once the model should answer its second turn differently."""

CHANGED_TURN = 1
CHANGED_ANSWER = calls(("search", {"query": "LIS May 4"}))
"""What the model asks for at its second turn once it has changed (the original asks for
``book`` and ``send_email``)."""


def turns() -> list[Turn]:
    """The first question's two rounds of parallel tool calls and answer, then a second
    question's single tool call and answer."""
    return [
        calls(("lookup", {"city": "Lisbon"}), ("search", {"query": "LIS May 3"})),
        calls(("book", {"flight": "TP1353"}), ("send_email", {"to": "me@example.com"})),
        Turn("Booked TP1353 and emailed you the ticket."),
        calls(("lookup", {"city": "Porto"})),
        Turn("Porto is sunny too: 21C."),
    ]


class SwitchableScript(Script):
    """`Script` whose second turn changes once ``model_variant`` says so."""

    def answer(self, turn: int, name: str | None) -> AIMessage:
        # Read on each call, in the model's executor thread (not on the server's event loop).
        changed = VARIANT_FILE.is_file() and VARIANT_FILE.read_text().strip() == "changed"
        if changed and self.turns[CHANGED_TURN] != CHANGED_ANSWER:
            self.change(CHANGED_TURN, CHANGED_ANSWER)
        return super().answer(turn, name)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of create_agent
    agent = create_react_agent(
        ScriptedChatModel(script=SwitchableScript(turns())), Tools().all(), name="agent"
    )


class Approval(TypedDict, total=False):
    request: str
    decision: str
    log: Annotated[list[str], operator.add]


def draft(state: Approval) -> dict[str, Any]:
    return {"log": [f"draft:{state.get('request', '')}"]}


def review(state: Approval) -> dict[str, Any]:
    decision = interrupt({"approve": state.get("request", "")})
    return {"decision": str(decision), "log": ["review"]}


def publish(state: Approval) -> dict[str, Any]:
    return {"log": [f"publish:{state.get('decision', '')}"]}


_builder = StateGraph(Approval)
_builder.add_node("draft", draft)
_builder.add_node("review", review)
_builder.add_node("publish", publish)
_builder.add_edge(START, "draft")
_builder.add_edge("draft", "review")
_builder.add_edge("review", "publish")
_builder.add_edge("publish", END)
approval = _builder.compile(name="approval")
