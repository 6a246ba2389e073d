"""A customer-support app written the way a team outside this project writes one: the trial app
of issue 29, kept as the regression app of the verdicts (replay, compat, the detectors).

`create_supervisor` "support_desk" over two `create_react_agent` workers:

- ``billing_agent``: `lookup_order` (read only: the order's amount, from `World`) and
  `issue_refund`, which asks for approval with `interrupt()` and, on "yes", writes a ledger row;
- ``shipping_agent``: `track_package` (read only).

`DeskModel` is a scripted chat model that answers from the messages (the same answer in every
process): the supervisor hands a refund request to billing and a tracking request to shipping,
billing looks the order up and refunds the amount it read with whichever bound tool refunds,
then answers. Its tool-call ids are deterministic (role, turn and position), as with several
test doubles in the wild: a fork's calls reuse the ids of the branch it left.
"""

from __future__ import annotations

import hashlib
import re
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.types import interrupt

ORDER_PATTERN = re.compile(r"\b([A-Z]\d+)\b")
AMOUNT_PATTERN = re.compile(r"amount (\d+)")


@dataclass
class World:
    """Orders (amounts in cents) and the ledger of refunds paid."""

    amounts: dict[str, int] = field(default_factory=lambda: {"A17": 8900, "B22": 1500})
    ledger: list[tuple[str, str, int]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def pay(self, order: str, amount: int) -> None:
        with self._lock:
            self.ledger.append(("refund", order, amount))


def desk_tools(world: World, refund_name: str = "issue_refund") -> dict[str, BaseTool]:
    """The app's tools over `world`; `refund_name` renames the refund tool (a release change)."""

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order: its status and amount in cents."""
        return f"order {order_id}: paid, amount {world.amounts.get(order_id, 0)}"

    def refund(order_id: str, amount_cents: int) -> str:
        """Refund an order (needs a human's approval)."""
        answer = interrupt({"approve": f"refund {amount_cents} on {order_id}"})
        if answer != "yes":
            return f"refund of {order_id} declined"
        world.pay(order_id, amount_cents)
        return f"refunded {amount_cents} on {order_id}"

    refund.__name__ = refund_name

    @tool
    def track_package(order_id: str) -> str:
        """Where an order's package is."""
        return f"package of {order_id}: in transit"

    return {"lookup_order": lookup_order, "refund": tool(refund), "track_package": track_package}


class DeskModel(BaseChatModel):
    """A scripted model that answers from the messages (see the module docstring)."""

    role: str
    tool_names: tuple[str, ...] = ()

    @property
    def _llm_type(self) -> str:
        return "desk-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> DeskModel:  # type: ignore[override]
        names = tuple(getattr(t, "name", None) or t.__name__ for t in tools)
        return self.model_copy(update={"tool_names": names})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        turn_start = max(
            (i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0
        )
        request = str(messages[turn_start].content) if messages else ""
        done = {
            m.name: str(m.content)
            for m in messages[turn_start:]
            if isinstance(m, ToolMessage) and m.name
        }
        asked = sum(1 for m in messages if isinstance(m, AIMessage) and m.name == self.role)
        call = self._next_call(request, done)
        if call is None:
            return _answer(AIMessage(self._final(request, done), name=self.role))
        name, args = call
        call_id = "call_" + hashlib.sha1(f"{self.role}/{asked}/0".encode()).hexdigest()[:10]
        message = AIMessage(
            "", name=self.role, tool_calls=[{"name": name, "args": args, "id": call_id}]
        )
        return _answer(message)

    def _next_call(self, request: str, done: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
        order = (ORDER_PATTERN.findall(request) or ["?"])[0]
        if self.role == "supervisor":
            worker = "billing_agent" if "refund" in request.lower() else "shipping_agent"
            handoff = f"transfer_to_{worker}"
            if handoff in self.tool_names and handoff not in done:
                return handoff, {}
            return None
        if self.role == "billing_agent":
            if "lookup_order" not in done:
                return "lookup_order", {"order_id": order}
            refund = next((n for n in self.tool_names if "refund" in n), None)
            if refund is not None and not any("refund" in n for n in done):
                amount = int((AMOUNT_PATTERN.findall(done["lookup_order"]) or ["0"])[0])
                return refund, {"order_id": order, "amount_cents": amount}
            return None
        if self.role == "shipping_agent" and "track_package" not in done:
            return "track_package", {"order_id": order}
        return None

    def _final(self, request: str, done: dict[str, str]) -> str:
        if self.role == "supervisor":
            return "All done."
        refunded = [text for name, text in done.items() if "refund" in name]
        return refunded[0] if refunded else next(iter(done.values()), "Nothing to do.")


def _answer(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


def build(
    checkpointer: Any = None, world: World | None = None, refund_name: str = "issue_refund"
) -> Any:
    """The support desk, compiled (``name="support_desk"``)."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    world = world or World()
    tools = desk_tools(world, refund_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent
        billing = create_react_agent(
            DeskModel(role="billing_agent"),
            [tools["lookup_order"], tools["refund"]],
            name="billing_agent",
            prompt="You handle refunds. Look the order up first.",
        )
        shipping = create_react_agent(
            DeskModel(role="shipping_agent"),
            [tools["track_package"]],
            name="shipping_agent",
            prompt="You track packages.",
        )
        workflow = create_supervisor(
            [billing, shipping],
            model=DeskModel(role="supervisor"),
            prompt="You run a support desk: billing for refunds, shipping for packages.",
        )
    return workflow.compile(checkpointer=checkpointer, name="support_desk")


WORLD = World()


def release1() -> Any:
    """`langgraph.json`-style factory of the running release (module-level world)."""
    return build(world=WORLD)


def rename_tool() -> Any:
    """Release 2: the billing worker's `issue_refund` is now `refund_order`."""
    return build(world=WORLD, refund_name="refund_order")
