"""The world of the generated apps: orders, a ledger of side effects, the oracle's event log, the
tools, and `DeskModel`, a scripted chat model that answers from the messages.

Everything an app does that the oracle compares is logged by the code that does it, never read
back from checkpoints: a model logs each answer it gives and each tool error it is shown; a tool
body logs its call and result; a side effect writes a ledger row (the turn it belongs to comes
from the driver). So the oracle is independent of the library under test.

`DeskModel` reads the last human message (the request: ``refund A17``, ``check A17``, ``track
B22``), its system prompt (flags a prompt change toggles), the tool messages of the current turn
and its bound tools, and asks for the next tool call of its plan, hands off to the agent that
owns the next capability, or answers. A real model picks tools by their descriptions: so does
this one (`capability_of`), so a renamed tool is called by its new name and a removed one not
at all; arguments are filled by the bound tool's parameter names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import interrupt
from pydantic import Field

ORDER = re.compile(r"\b([A-Z]\d+)\b")
AMOUNT = re.compile(r"amount (\d+)")
CUSTOMER = "ana@example.com"

DESCRIPTIONS = {
    "lookup": "Look up an order: its status and amount in cents.",
    "refund": "Refund an order (pays the money back).",
    "track": "Track the package of an order.",
    "email": "Email the customer.",
}
"""Capability -> the description of the tool that provides it (what a model chooses by)."""
SIDE_EFFECTS = frozenset({"refund", "email"})
READ_ONLY = frozenset({"lookup", "track"})

EMAIL_FLAG = "Email the customer after each refund."
SHIPPING_FLAG = "Add 500 cents of shipping to every refund."
PROMPT_FLAGS = (EMAIL_FLAG, SHIPPING_FLAG)


class Stopped(BaseException):
    """Raised in-process where a recording's process was killed (`World.kill_at`)."""


@dataclass(frozen=True)
class KillPoint:
    """Where a run is killed: before the `nth` (1-based) start of `capability`'s tool (``tool``),
    right after its side effect, before the tool returns (``effect``), or before a model answer
    of `role` (``model``)."""

    kind: str
    name: str
    nth: int = 1


@dataclass
class World:
    """One app instance's world: amounts, the ledger, the oracle's log and the kill switch.

    `log` holds ``(kind, graph, name, detail)`` events: ``answer`` (a model's answer: text and
    calls), ``tool`` (a tool body ran: arguments and result), ``effect`` (a side effect: its
    subject, amount and turn), ``error`` (a tool error a model was shown), ``node`` (a task
    LangGraph started, recorded by the driver)."""

    amounts: dict[str, int] = field(default_factory=lambda: {"A17": 8900, "B22": 1500, "C31": 4200})
    turn: int = 0
    """The turn the driver is running (a fork re-runs an earlier turn)."""
    log: list[tuple[str, str, str, str]] = field(default_factory=list)
    kill_at: KillPoint | None = None
    really_kill: bool = False
    """SIGKILL this process at `kill_at` (a recording subprocess); else raise `Stopped`."""
    _counts: dict[tuple[str, str], int] = field(default_factory=dict)
    _errors_seen: set[str] = field(default_factory=set)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def new_segment(self) -> None:
        """Start a new log (the oracle compares one segment of runs at a time)."""
        with self._lock:
            self.log = []
            self._counts = {}
            self._errors_seen = set()

    def record(self, kind: str, graph: str, name: str, detail: Any = "") -> None:
        with self._lock:
            text = detail if isinstance(detail, str) else json.dumps(detail, sort_keys=True)
            self.log.append((kind, graph, name, text))

    def checkpoint(self, kind: str, name: str) -> None:
        """Count a start of `kind` (``tool``: a capability, ``model``: a role) and stop here
        when it is the kill point."""
        with self._lock:
            key = (kind, name)
            self._counts[key] = self._counts.get(key, 0) + 1
            point = self.kill_at
            hit = (
                point is not None
                and (point.kind, point.name) == key
                and self._counts[key] == point.nth
            )
        if hit:
            if self.really_kill:
                os.kill(os.getpid(), signal.SIGKILL)
            raise Stopped()

    def error_seen(self, graph: str, call_id: str, tool: str) -> None:
        with self._lock:
            if (graph, call_id) in self._errors_seen:
                return
            self._errors_seen.add((graph, call_id))  # type: ignore[arg-type]
        self.record("error", graph, tool)


# --- where a call runs -----------------------------------------------------------------------


def current_graph() -> str:
    """The graph the current task runs in, without task ids (``""``: the root graph,
    ``billing_agent``, ``tools|...`` for a sub-agent a tool runs)."""
    try:
        from langgraph.config import get_config

        config = get_config()
    except RuntimeError:
        return ""
    namespace = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
    parts = [p.partition(":")[0] for p in namespace.split("|") if p]
    return "|".join(parts[:-1])


# --- tools --------------------------------------------------------------------------------------

CAPABILITY_OF: dict[str, str] = {}
"""Tool name -> capability, for every tool any app has made (a renamed tool's old name too)."""


def capability_of(name: str) -> str | None:
    return CAPABILITY_OF.get(name)


@dataclass(frozen=True)
class ToolSpec:
    """A tool of an app: its capability, name and parameter names."""

    capability: str
    name: str
    params: tuple[str, ...]
    approval: bool = False
    """The tool asks a human with `interrupt()` before its side effect."""
    variant: str = ""
    """``tax``: `lookup` reports amounts with 10 % added (the ``tool_result`` change)."""


DEFAULT_PARAMS = {
    "lookup": ("order_id",),
    "refund": ("order_id", "amount_cents"),
    "track": ("order_id",),
    "email": ("to", "subject"),
}


def make_tool(spec: ToolSpec, world: World) -> BaseTool:
    """A `StructuredTool` doing `spec.capability` in `world`, named and shaped as `spec`."""
    register(spec)
    params = spec.params

    def run(**kwargs: Any) -> str:
        values = _semantic(kwargs)
        world.checkpoint("tool", spec.capability)
        graph = current_graph()
        order = str(values.get("order", ""))
        if spec.capability == "lookup":
            amount = world.amounts.get(order, 0)
            if spec.variant == "tax":
                amount += amount // 10
            result = f"order {order}: paid, amount {amount}"
        elif spec.capability == "track":
            result = f"package of {order}: in transit"
        else:
            if spec.approval:
                answer = interrupt({"approve": spec.name, "order": order})
                if answer not in ("yes", None):
                    result = f"{spec.name} declined"
                    world.record("tool", graph, spec.name, {"args": kwargs, "result": result})
                    return result
            subject = order if spec.capability == "refund" else str(values.get("to", ""))
            world.record(
                "effect",
                graph,
                spec.capability,
                {"subject": subject, "amount": values.get("amount"), "turn": world.turn},
            )
            world.checkpoint("effect", spec.capability)  # a kill here: paid, not recorded
            result = f"{spec.capability} done for {subject}"
        world.record("tool", graph, spec.name, {"args": kwargs, "result": result})
        return result

    annotations = {p: (int if "amount" in p else str) for p in params}
    run.__annotations__ = {**annotations, "return": str}
    import inspect

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, annotation=annotations[p])
            for p in params
        ],
        return_annotation=str,
    )
    return StructuredTool.from_function(
        run, name=spec.name, description=DESCRIPTIONS[spec.capability]
    )


def _semantic(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A tool's arguments by meaning (``order``, ``amount``, ``to``, ``subject``)."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if "order" in key:
            out["order"] = value
        elif "amount" in key:
            out["amount"] = value
        else:
            out[key] = value
    return out


# --- the model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of a plan: a capability and its arguments by meaning."""

    capability: str
    args: tuple[tuple[str, Any], ...]


def plan(request: str, prompt: str, seen: Sequence[BaseMessage]) -> list[Step]:
    """What a request needs, in order (amounts read from the messages seen)."""
    text = request.lower()
    orders = ORDER.findall(request)
    steps: list[Step] = []
    for order in orders:
        if text.startswith("refund"):
            stated = AMOUNT.findall(request)
            amount = int(stated[0]) if stated else _looked_up_amount(order, seen)
            if not stated:
                steps.append(Step("lookup", (("order", order),)))
            if SHIPPING_FLAG in prompt and amount is not None:
                amount += 500
            steps.append(Step("refund", (("order", order), ("amount", amount))))
            if EMAIL_FLAG in prompt:
                steps.append(Step("email", (("to", CUSTOMER), ("subject", f"refund {order}"))))
        elif text.startswith("check"):
            steps.append(Step("lookup", (("order", order),)))
        elif text.startswith("track"):
            steps.append(Step("track", (("order", order),)))
    return steps


def _looked_up_amount(order: str, seen: Sequence[BaseMessage]) -> int | None:
    for message in reversed(seen):
        if isinstance(message, ToolMessage) and f"order {order}:" in str(message.content):
            found = AMOUNT.findall(str(message.content))
            if found:
                return int(found[0])
    return None


class DeskModel(BaseChatModel):
    """A chat model that answers from the messages (see the module docstring).

    `team` maps each other agent to the capabilities it owns (a handoff or `task` target);
    `ids` is ``random`` (a new id per call, as hosted models) or ``fixed`` (role, answer count
    and position: a fork's calls reuse the ids of the branch it left)."""

    role: str
    world: Any
    team: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    ids: str = "random"
    bound: tuple[tuple[str, str | None], ...] = ()
    """(tool name, capability) of the bound tools."""
    params: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Tool name -> its parameter names, read from the bound tools (as a model reads the
    schemas it is given)."""

    @property
    def _llm_type(self) -> str:
        return "desk"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> DeskModel:  # type: ignore[override]
        bound, params = [], {}
        for t in tools:
            name = str(t.get("name") if isinstance(t, dict) else getattr(t, "name", None))
            bound.append((name, capability_of(name)))
            args = getattr(t, "args", None)
            params[name] = tuple(args) if isinstance(args, dict) else ()
        return self.model_copy(update={"bound": tuple(bound), "params": params})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        world: World = self.world
        world.checkpoint("model", self.role)
        graph = current_graph()
        prompt = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
        request = str(messages[start].content) if messages else ""
        turn = messages[start:]
        for m in turn:
            if isinstance(m, ToolMessage) and m.status == "error":
                world.error_seen(graph, str(m.tool_call_id), str(m.name))
        call = self._next_call(request, prompt, messages, turn)
        asked = sum(1 for m in messages if isinstance(m, AIMessage))
        if call is None:
            message = AIMessage(_summary(turn), name=self.role)
        else:
            name, args = call
            if self.ids == "fixed":
                call_id = "call_" + hashlib.sha1(f"{self.role}/{asked}".encode()).hexdigest()[:10]
            else:
                call_id = f"call_{uuid.uuid4().hex[:12]}"
            message = AIMessage(
                "",
                name=self.role,
                tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}],
            )
        world.record(
            "answer",
            graph,
            self.role,
            {
                "text": message.content,
                "calls": [[c["name"], c["args"]] for c in message.tool_calls],
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _next_call(
        self,
        request: str,
        prompt: str,
        messages: Sequence[BaseMessage],
        turn: Sequence[BaseMessage],
    ) -> tuple[str, dict[str, Any]] | None:
        owned = {cap: name for name, cap in self.bound if cap is not None}
        done = _done(turn)
        delegated = _delegated(turn)
        for step in plan(request, prompt, messages):
            if (step.capability, _order(step)) in done:
                continue
            if any(
                step.capability in caps for agent, caps in self.team.items() if agent in delegated
            ):
                continue  # another agent was given it this turn
            if step.capability in owned:
                if any(value is None for _, value in step.args):
                    return None  # an argument it cannot know: it answers instead
                return owned[step.capability], _arguments(
                    self.tool_params(owned[step.capability]), step
                )
            handoff = self._handoff(step.capability, request, step)
            if handoff is not None:
                return handoff
        return None

    def tool_params(self, name: str) -> tuple[str, ...]:
        return self.params.get(name, ())

    def _handoff(
        self, capability: str, request: str, step: Step
    ) -> tuple[str, dict[str, Any]] | None:
        bound = {name for name, _ in self.bound}
        for agent, caps in self.team.items():
            if capability not in caps:
                continue
            if f"transfer_to_{agent}" in bound:
                return f"transfer_to_{agent}", {}
            if "task" in bound:
                amount = dict(step.args).get("amount")
                order = _order(step)
                description = (
                    f"refund {order} amount {amount}" if capability == "refund" else request
                )
                return "task", {"description": description, "subagent_type": agent}
        return None


def register(spec: ToolSpec) -> None:
    CAPABILITY_OF[spec.name] = spec.capability


def _arguments(params: Sequence[str], step: Step) -> dict[str, Any]:
    values = dict(step.args)
    out: dict[str, Any] = {}
    for param in params:
        if "order" in param:
            out[param] = values.get("order")
        elif "amount" in param:
            out[param] = values.get("amount")
        else:
            out[param] = values.get(param)
    return out


def _order(step: Step) -> str:
    values = dict(step.args)
    return str(values.get("order") or values.get("subject") or "")


def _done(turn: Sequence[BaseMessage]) -> set[tuple[str, str]]:
    """(capability, subject) of the tool calls answered in the turn."""
    requests: dict[str, tuple[str, dict[str, Any]]] = {}
    for m in turn:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                requests[str(call.get("id"))] = (call["name"], call.get("args") or {})
    done: set[tuple[str, str]] = set()
    for m in turn:
        if not isinstance(m, ToolMessage):
            continue
        name, args = requests.get(str(m.tool_call_id), (str(m.name), {}))
        capability = capability_of(name)
        if capability is None:
            continue
        values = _semantic(args)
        subject = values.get("order") or values.get("subject") or ""
        if capability == "email":
            subject = str(values.get("subject", ""))
        done.add((capability, str(subject)))
    return done


def _delegated(turn: Sequence[BaseMessage]) -> set[str]:
    """Agents handed the turn (a `transfer_to_<agent>` or `task` call answered in it)."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for m in turn:
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                calls[str(call.get("id"))] = (call["name"], call.get("args") or {})
    out: set[str] = set()
    for m in turn:
        if isinstance(m, ToolMessage) and str(m.tool_call_id) in calls:
            name, args = calls[str(m.tool_call_id)]
            if name.startswith("transfer_to_"):
                out.add(name.removeprefix("transfer_to_"))
            elif name == "task":
                out.add(str(args.get("subagent_type")))
    return out


def _summary(turn: Sequence[BaseMessage]) -> str:
    answered = [str(m.name) for m in turn if isinstance(m, ToolMessage)]
    failed = [str(m.name) for m in turn if isinstance(m, ToolMessage) and m.status == "error"]
    if failed:
        return f"could not finish: {', '.join(failed)} failed"
    return "done: " + (", ".join(answered) if answered else "nothing to do")


Factory = Callable[[World], BaseTool]
