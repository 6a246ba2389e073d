"""Packaged agents teams install, built on the scripted offline model of `agents.py`, shared by
`test_agents_packaged.py` and `packaged_crash_app.py`.

- `deep_agent`: deepagents' `create_deep_agent` (graph ``deep_support``): the main agent has a
  read-only `lookup`, a side-effecting `notify` and deepagents' `task` tool, which runs the
  ``refunds`` sub-agent (its own scripted model, a side-effecting `issue_refund`).
- `supervisor_agent`: `langgraph_supervisor.create_supervisor` (graph ``support``) over two
  `create_react_agent` workers: ``researcher`` (read-only `lookup`) and ``refunds``
  (side-effecting `issue_refund`); the supervisor hands off with its ``transfer_to_*`` tools.
- `supervisor_full_history`: the same with ``output_mode="full_history"`` (the workers'
  whole histories, tool messages included, written back to the root).
- `swarm_agent`: `langgraph_swarm.create_swarm` (graph ``swarm_support``) of two
  `create_react_agent` agents: ``alice`` (read-only `lookup`, a handoff to bob) and ``bob``
  (side-effecting `issue_refund`, a handoff to alice), ``alice`` active first.

Each model has its own `Script` (named by its agent, so it counts only its own answers: a
replay from any checkpoint asks it the same question and gets the same answer). Side effects
go to an `Effects` ledger (and, for subprocesses, a file), so tests know how often each one
really ran.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.types import interrupt

import agents
from agents import Saver, Script, Turn, calls

ORDER = "A1"
CUSTOMER = "ana@example.com"
READ_ONLY = frozenset({"lookup"})
SIDE_EFFECTS = frozenset({"issue_refund", "notify"})
CONTROL_TOOLS = frozenset(
    {
        "task",  # deepagents: runs a sub-agent (its own tools' side effects are its findings)
        "transfer_to_researcher",
        "transfer_to_refunds",
        "transfer_back_to_supervisor",
        "transfer_to_bob",
        "transfer_to_alice",
    }
)
"""Delegation and handoff tools: control flow, no side effect of their own."""
REPEATABLE = READ_ONLY | CONTROL_TOOLS
"""What a test declares safe to repeat (`DivergencePolicy(repeatable_tools=REPEATABLE)`)."""


@dataclass
class Effects:
    """The tools of the packaged agents and the ledger of their side effects.

    `failing` names tools that raise `agents.ToolFailed` on their first call (before any side
    effect); with `approval`, `issue_refund` interrupts the run to ask a human first. `ledger` records every call of a side-effecting tool (name, argument) in order;
    with `path`, each is also appended (and fsynced) to that file as ``<tag> <name> <arg>``.
    `decorate` wraps the side-effecting tools' functions (e.g. `record_tool_start`) and
    `after_effect` runs right after a side effect is recorded (e.g. a SIGKILL).
    """

    failing: Collection[str] = ()
    ledger: list[tuple[str, str]] = field(default_factory=list)
    path: Path | None = None
    tag: str = ""
    approval: bool = False
    """`issue_refund` first asks a human (``interrupt()``); it refunds on the answer "yes"."""
    decorate: Callable[[Callable[..., str]], Callable[..., str]] | None = None
    after_effect: Callable[[str], None] | None = None
    _failed: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _maybe_fail(self, name: str) -> None:
        with self._lock:
            fail = name in self.failing and name not in self._failed
            if fail:
                self._failed.add(name)
        if fail:
            time.sleep(agents.FAILURE_DELAY)
            raise agents.ToolFailed(f"{name} failed")

    def _effect(self, name: str, arg: str) -> None:
        self._maybe_fail(name)
        with self._lock:
            self.ledger.append((name, arg))
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(f"{self.tag} {name} {arg}\n")
                    f.flush()
                    os.fsync(f.fileno())
        if self.after_effect is not None:
            self.after_effect(name)

    def count(self, name: str) -> int:
        return sum(1 for n, _ in self.ledger if n == name)

    def lookup(self) -> BaseTool:
        @tool
        def lookup(order: str) -> str:
            """Look up an order (read-only)."""
            self._maybe_fail("lookup")
            return f"order {order}: paid 42 EUR"

        return lookup

    def issue_refund(self) -> BaseTool:
        def issue_refund(order: str) -> str:
            """Refund an order (a side effect: pays the money back)."""
            if self.approval and interrupt({"approve": f"refund {order}"}) != "yes":
                return f"refund of {order} declined"
            self._effect("issue_refund", order)
            return f"refunded {order}"

        return tool(self.decorate(issue_refund) if self.decorate else issue_refund)

    def notify(self) -> BaseTool:
        def notify(to: str) -> str:
            """Email the customer (a side effect)."""
            self._effect("notify", to)
            return f"emailed {to}"

        return tool(self.decorate(notify) if self.decorate else notify)


def _react(model: Any, tools: list[Any], name: str) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent
        return create_react_agent(model, tools, name=name)


# --- deepagents --------------------------------------------------------------------------------

DEEP_NAME = "deep_support"
"""The deep agent's graph name: `create_agent` also names the main model's messages after it."""
REFUND_TASK = {"description": f"Refund order {ORDER}", "subagent_type": "refunds"}


def deep_scripts() -> dict[str, Script]:
    """The main agent looks the order up, delegates the refund to ``refunds`` through `task`,
    emails the customer, answers; the sub-agent refunds, answers."""
    return {
        DEEP_NAME: Script(
            [
                calls(("lookup", {"order": ORDER})),
                calls(("task", dict(REFUND_TASK))),
                calls(("notify", {"to": CUSTOMER})),
                Turn(f"Refunded {ORDER} and emailed the customer."),
            ]
        ),
        "refunds": Script([calls(("issue_refund", {"order": ORDER})), Turn(f"Refunded {ORDER}.")]),
    }


def deep_agent(
    checkpointer: Saver | None,
    scripts: dict[str, Script] | None = None,
    effects: Effects | None = None,
    **kw: Any,
) -> Any:
    """`create_deep_agent` with a ``refunds`` sub-agent reached through `task` (see module
    docstring). The sub-agent graph runs inside the `task` tool call."""
    from deepagents import create_deep_agent

    scripts = scripts or deep_scripts()
    effects = effects or Effects()
    refunds = {
        "name": "refunds",
        "description": "Refunds orders.",
        "system_prompt": "You refund orders.",
        "tools": [effects.issue_refund()],
        "model": agents.ScriptedChatModel(script=scripts["refunds"], agent="refunds"),
    }
    return create_deep_agent(
        model=agents.ScriptedChatModel(script=scripts[DEEP_NAME], agent=DEEP_NAME),
        tools=[effects.lookup(), effects.notify()],
        subagents=[refunds],  # type: ignore[list-item]
        checkpointer=checkpointer,
        name=DEEP_NAME,
        **kw,
    )


# --- langgraph-supervisor ----------------------------------------------------------------------


def supervisor_scripts() -> dict[str, Script]:
    """The supervisor hands off to ``researcher`` (looks the order up), then to ``refunds``
    (refunds it), then answers."""
    return {
        "supervisor": Script(
            [
                calls(("transfer_to_researcher", {})),
                calls(("transfer_to_refunds", {})),
                Turn("All done."),
            ]
        ),
        "researcher": Script([calls(("lookup", {"order": ORDER})), Turn(f"{ORDER} is paid.")]),
        "refunds": Script([calls(("issue_refund", {"order": ORDER})), Turn(f"Refunded {ORDER}.")]),
    }


def supervisor_agent(
    checkpointer: Saver | None,
    scripts: dict[str, Script] | None = None,
    effects: Effects | None = None,
    output_mode: str = "last_message",
    **kw: Any,
) -> Any:
    """`create_supervisor([researcher, refunds], model=...).compile(checkpointer=...)`; with
    ``output_mode="full_history"`` the workers' whole histories (their tool messages too)
    are written back to the supervisor's messages, else only their last answers."""
    from langgraph_supervisor import create_supervisor

    scripts = scripts or supervisor_scripts()
    effects = effects or Effects()
    researcher = _react(
        agents.ScriptedChatModel(script=scripts["researcher"], agent="researcher"),
        [effects.lookup()],
        "researcher",
    )
    refunds = _react(
        agents.ScriptedChatModel(script=scripts["refunds"], agent="refunds"),
        [effects.issue_refund()],
        "refunds",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it builds the supervisor with create_react_agent
        workflow = create_supervisor(
            [researcher, refunds],
            model=agents.ScriptedChatModel(script=scripts["supervisor"], agent="supervisor"),
            prompt="Route refund requests.",
            output_mode=output_mode,  # type: ignore[arg-type]
        )
    return workflow.compile(checkpointer=checkpointer, **{"name": "support", **kw})


# --- langgraph-swarm ---------------------------------------------------------------------------


def swarm_scripts() -> dict[str, Script]:
    """alice looks the order up and hands off to bob; bob refunds and hands back; alice
    answers."""
    return {
        "alice": Script(
            [
                calls(("lookup", {"order": ORDER})),
                calls(("transfer_to_bob", {})),
                Turn(f"Bob refunded {ORDER}."),
            ]
        ),
        "bob": Script(
            [calls(("issue_refund", {"order": ORDER})), calls(("transfer_to_alice", {}))]
        ),
    }


def swarm_agent(
    checkpointer: Saver | None,
    scripts: dict[str, Script] | None = None,
    effects: Effects | None = None,
    **kw: Any,
) -> Any:
    """`create_swarm([alice, bob], default_active_agent="alice")` with `create_handoff_tool`
    handoffs."""
    from langgraph_swarm import create_handoff_tool, create_swarm

    scripts = scripts or swarm_scripts()
    effects = effects or Effects()
    alice = _react(
        agents.ScriptedChatModel(script=scripts["alice"], agent="alice"),
        [effects.lookup(), create_handoff_tool(agent_name="bob")],
        "alice",
    )
    bob = _react(
        agents.ScriptedChatModel(script=scripts["bob"], agent="bob"),
        [effects.issue_refund(), create_handoff_tool(agent_name="alice")],
        "bob",
    )
    workflow = create_swarm([alice, bob], default_active_agent="alice")
    return workflow.compile(checkpointer=checkpointer, **{"name": "swarm_support", **kw})


def supervisor_full_history(
    checkpointer: Saver | None,
    scripts: dict[str, Script] | None = None,
    effects: Effects | None = None,
    **kw: Any,
) -> Any:
    """`supervisor_agent` with ``output_mode="full_history"``."""
    return supervisor_agent(checkpointer, scripts, effects, output_mode="full_history", **kw)


BUILDERS: dict[str, Callable[..., Any]] = {
    "deep": deep_agent,
    "supervisor": supervisor_agent,
    "supervisor_full": supervisor_full_history,
    "swarm": swarm_agent,
}
SCRIPTS: dict[str, Callable[[], dict[str, Script]]] = {
    "deep": deep_scripts,
    "supervisor": supervisor_scripts,
    "supervisor_full": supervisor_scripts,
    "swarm": swarm_scripts,
}
QUESTION = f"Please refund order {ORDER}."
