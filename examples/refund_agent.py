"""The demo's refund agent: a scripted model, four tools with real side effects, an approval.

Used by ``refund_demo.py`` (``make demo``); nothing here knows OpenTelemetry. A customer asks for a
refund; the agent looks the order up, checks whether a replacement is in stock, issues the
refund (after a human approves it when it is large) and emails the customer:

    START -> agent -> [approve ->] tools -> agent -> ... -> END

The model is scripted (no network, no LLM) and deterministic: it decides from the messages
so far, with explicit message and tool-call ids, so a replay from the same state gives equal
state. The tools are not all that tame, as in real life:

- ``lookup_order`` and ``check_stock`` only read; ``check_stock`` reads a live warehouse whose
  level other shoppers drain between two calls (a later call returns another value);
- ``issue_refund`` and ``send_email`` write to the shop database (``Shop``), which is not the
  checkpoint database: running them twice pays the refund twice, visibly in the ledger.
"""

from __future__ import annotations

import operator
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

GRAPH_NAME = "refund-agent"
APPROVAL_LIMIT_CENTS = 100_00
"""Refunds above this wait for a human (``interrupt()``) before ``issue_refund`` runs."""
READ_ONLY_TOOLS = frozenset({"lookup_order", "check_stock"})
"""Safe to run again: declared to the divergence detectors as repeatable."""
INITIAL_STOCK = 3
SOLD_BETWEEN_CHECKS = 3
"""Units other shoppers buy after each stock check: the next check sees fewer."""


@dataclass(frozen=True)
class Order:
    order_id: str
    customer: str
    email: str
    item: str
    sku: str
    amount_cents: int


ORDERS = {
    o.order_id: o
    for o in (
        Order("A-1001", "Ada", "ada@example.com", "espresso grinder", "GRD-7", 89_00),
        Order("A-1002", "Grace", "grace@example.com", "standing desk", "DSK-2", 249_00),
        Order("A-1003", "Linus", "linus@example.com", "kettle", "KTL-1", 60_00),
    )
}
ORDER_ID = re.compile(r"\bA-\d{4}\b")


def money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def ask(order_id: str) -> AgentState:
    """The customer's first message for `order_id`."""
    order = ORDERS[order_id]
    text = f"Hi, my {order.item} from order {order_id} arrived broken. I'd like a refund."
    return {"messages": [HumanMessage(text, id="human-0")]}


# ----------------------------------------------------------------------------------------------
# The shop: where side effects land (a SQLite file of its own, safe across processes)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refund:
    refund_id: int
    order_id: str
    amount_cents: int
    thread_id: str
    pid: int


class Shop:
    """Refund ledger, email outbox and warehouse stock in one SQLite file. Every call opens
    its own connection, so a process killed mid-run leaves the file consistent."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        with closing(sqlite3.connect(self.path, timeout=10)) as conn, conn:
            yield conn

    def reset(self) -> None:
        self.path.unlink(missing_ok=True)
        with self._db() as db:
            db.executescript(
                """
                CREATE TABLE refunds (
                    refund_id INTEGER PRIMARY KEY, order_id TEXT, amount_cents INTEGER,
                    thread_id TEXT, pid INTEGER, at REAL);
                CREATE TABLE outbox (
                    email_id INTEGER PRIMARY KEY, recipient TEXT, subject TEXT,
                    thread_id TEXT, pid INTEGER, at REAL);
                CREATE TABLE stock (sku TEXT PRIMARY KEY, level INTEGER);
                """
            )
            db.executemany(
                "INSERT INTO stock VALUES (?, ?)",
                [(o.sku, INITIAL_STOCK) for o in ORDERS.values()],
            )

    def refund(self, order_id: str, amount_cents: int, thread_id: str) -> int:
        with self._db() as db:
            cursor = db.execute(
                "INSERT INTO refunds (order_id, amount_cents, thread_id, pid, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (order_id, amount_cents, thread_id, os.getpid(), time.time()),
            )
            return int(cursor.lastrowid or 0)

    def email(self, recipient: str, subject: str, thread_id: str) -> int:
        with self._db() as db:
            cursor = db.execute(
                "INSERT INTO outbox (recipient, subject, thread_id, pid, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (recipient, subject, thread_id, os.getpid(), time.time()),
            )
            return int(cursor.lastrowid or 0)

    def check_stock(self, sku: str) -> int:
        """The level now; then other shoppers buy some, so the next check sees fewer."""
        with self._db() as db:
            row = db.execute("SELECT level FROM stock WHERE sku = ?", (sku,)).fetchone()
            level = int(row[0]) if row else 0
            db.execute(
                "UPDATE stock SET level = max(0, level - ?) WHERE sku = ?",
                (SOLD_BETWEEN_CHECKS, sku),
            )
            return level

    def refunds(self) -> list[Refund]:
        with self._db() as db:
            rows = db.execute(
                "SELECT refund_id, order_id, amount_cents, thread_id, pid FROM refunds "
                "ORDER BY refund_id"
            ).fetchall()
        return [Refund(int(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[4])) for r in rows]

    def emails(self) -> list[tuple[str, str, str]]:
        """(recipient, subject, thread id) of every email sent, oldest first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT recipient, subject, thread_id FROM outbox ORDER BY email_id"
            ).fetchall()
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


# ----------------------------------------------------------------------------------------------
# Tools
# ----------------------------------------------------------------------------------------------


def _tools(shop: Shop) -> dict[str, Callable[..., str]]:
    def lookup_order(thread_id: str, order_id: str) -> str:
        o = ORDERS[order_id]
        return f"{order_id}: {o.item} ({o.sku}), paid {money(o.amount_cents)}, {o.email}"

    def check_stock(thread_id: str, sku: str) -> str:
        level = shop.check_stock(sku)
        return f"{sku}: {level} in stock" if level else f"{sku}: out of stock"

    def issue_refund(thread_id: str, order_id: str, amount_cents: int) -> str:
        refund_id = shop.refund(order_id, amount_cents, thread_id)
        return f"refund R-{refund_id} of {money(amount_cents)} paid for {order_id}"

    def send_email(thread_id: str, to: str, subject: str) -> str:
        email_id = shop.email(to, subject, thread_id)
        return f"email #{email_id} sent to {to}"

    return {
        "lookup_order": lookup_order,
        "check_stock": check_stock,
        "issue_refund": issue_refund,
        "send_email": send_email,
    }


def describe_call(call: Any) -> str:
    """``name(arg=value, ...)`` of a tool call, for progress lines."""
    args = ", ".join(
        f"{k}={money(v) if k == 'amount_cents' else repr(v)}" for k, v in call["args"].items()
    )
    return f"{call['name']}({args})"


# ----------------------------------------------------------------------------------------------
# The scripted model
# ----------------------------------------------------------------------------------------------


def _last_tool_result(messages: Sequence[AnyMessage], tool: str) -> str:
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.name == tool:
            return str(message.content)
    return ""


def scripted_model(messages: Sequence[AnyMessage]) -> AIMessage:
    """What a chat model would answer, decided by the conversation so far."""
    turn = len(messages)
    first = str(messages[0].content) if messages else ""
    match = ORDER_ID.search(first)
    if match is None or match.group(0) not in ORDERS:
        return AIMessage("Which order is it about?", id=f"ai-{turn}")
    order = ORDERS[match.group(0)]

    def call(name: str, **args: Any) -> AIMessage:
        return AIMessage(
            "", id=f"ai-{turn}", tool_calls=[{"name": name, "args": args, "id": f"call-{turn}"}]
        )

    last = messages[-1]
    if not isinstance(last, ToolMessage):
        return call("lookup_order", order_id=order.order_id)
    if last.name == "lookup_order":
        return call("check_stock", sku=order.sku)
    if last.name == "check_stock":
        return call("issue_refund", order_id=order.order_id, amount_cents=order.amount_cents)
    if last.name == "issue_refund":
        if str(last.content).startswith("rejected"):
            return AIMessage(
                f"Sorry {order.customer}, the refund was not approved.", id=f"ai-{turn}"
            )
        in_stock = "out of stock" not in _last_tool_result(messages, "check_stock")
        news = "a replacement ships today" if in_stock else "the item is back-ordered"
        return call(
            "send_email",
            to=order.email,
            subject=f"Refund for {order.order_id}: {money(order.amount_cents)}; {news}",
        )
    return AIMessage(
        f"Done, {order.customer}: refunded {money(order.amount_cents)} and emailed you.",
        id=f"ai-{turn}",
    )


# ----------------------------------------------------------------------------------------------
# The graph
# ----------------------------------------------------------------------------------------------


class AgentState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    approvals: Annotated[list[str], operator.add]


def _calls(message: AnyMessage) -> list[Any]:
    return list(getattr(message, "tool_calls", None) or [])


def needs_approval(message: AnyMessage) -> bool:
    return any(
        c["name"] == "issue_refund" and int(c["args"]["amount_cents"]) > APPROVAL_LIMIT_CENTS
        for c in _calls(message)
    )


def build_graph(
    shop: Shop,
    say: Callable[[str], None],
    *,
    before_model: Callable[[Sequence[AnyMessage]], None] | None = None,
) -> StateGraph[AgentState]:
    """The refund agent. `say` prints a progress line per step; `before_model` is called
    with the messages before each model call (the demo's child process blocks there)."""
    tools = _tools(shop)

    def agent(state: AgentState) -> dict[str, Any]:
        messages = state["messages"]
        if before_model is not None:
            before_model(messages)
        reply = scripted_model(messages)
        calls = _calls(reply)
        if calls:
            say("model: call " + ", ".join(describe_call(c) for c in calls))
        else:
            say(f"model: {reply.content}")
        return {"messages": [reply]}

    def approve(state: AgentState) -> dict[str, Any]:
        last = state["messages"][-1]
        (call,) = [c for c in _calls(last) if c["name"] == "issue_refund"]
        decision = interrupt(
            {
                "question": "Approve this refund?",
                "order_id": call["args"]["order_id"],
                "amount": money(int(call["args"]["amount_cents"])),
            }
        )
        approved = isinstance(decision, dict) and bool(decision.get("approved"))
        by = str(decision.get("by", "?")) if isinstance(decision, dict) else "?"
        say(f"approval: {'approved' if approved else 'rejected'} by {by}")
        update: dict[str, Any] = {"approvals": [f"{call['id']}:{approved}:{by}"]}
        if not approved:
            update["messages"] = [
                ToolMessage(
                    f"rejected by {by}",
                    name="issue_refund",
                    tool_call_id=call["id"],
                    id=f"tool-{len(state['messages'])}",
                )
            ]
        return update

    def run_tools(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        thread_id = str(config["configurable"]["thread_id"])
        messages = state["messages"]
        replies: list[AnyMessage] = []
        for call in _calls(messages[-1]):
            result = tools[call["name"]](thread_id, **call["args"])
            say(f"tool {call['name']}: {result}")
            replies.append(
                ToolMessage(
                    result,
                    name=call["name"],
                    tool_call_id=call["id"],
                    id=f"tool-{len(messages)}",
                )
            )
        return {"messages": replies}

    def route(state: AgentState) -> str:
        last = state["messages"][-1]
        if needs_approval(last):
            return "approve"
        return "tools" if _calls(last) else END

    def after_approval(state: AgentState) -> str:
        return "agent" if isinstance(state["messages"][-1], ToolMessage) else "tools"

    builder = StateGraph(AgentState)
    builder.add_node("agent", agent)
    builder.add_node("approve", approve)
    builder.add_node("tools", run_tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["approve", "tools", END])
    builder.add_conditional_edges("approve", after_approval, ["agent", "tools"])
    builder.add_edge("tools", "agent")
    return builder
