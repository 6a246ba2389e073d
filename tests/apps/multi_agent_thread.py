"""Real multi-agent threads for the inspector's report tests. `write`: `langgraph_supervisor`'s
`create_supervisor` (root graph ``support_desk``) with two `create_react_agent` workers,
``order_agent`` (tool `lookup_order`) and ``refund_agent`` (tool `issue_refund`), each driven by
a `ScriptedChatModel`. Each agent, the supervisor's own included, runs as a subgraph: its
checkpoints are in the thread under ``<node>:<task id>``.

The thread runs on `instrument(SqliteSaver(...))` with its spans in span files
(`write_span_files`), then is forked (time travel) from the checkpoint where the supervisor
has just handed over to ``order_agent``, with the refund agent answering differently on the
fork: two branches of the root graph, each with its own subgraph runs, and long diffs (the
tools return long texts). `write_deep`: `deepagents.create_deep_agent` (``deep_support``)
whose ``refunds`` sub-agent runs through its `task` tool, inside the `tools` node.
"""

from __future__ import annotations

import sqlite3
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider

from agents import Script, ScriptedChatModel, Turn, calls, question
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.export.otlp_json import write_span_files

THREAD = "support-ticket-8841-refund-request-for-order-A-1-from-customer-portal"
GRAPH_NAME = "support_desk"
AGENTS = ("order_agent", "refund_agent")
ORDER_TEXT = (
    "Order A-1 placed 2024-05-01 by customer 8841: 2 items (noise-cancelling headphones, "
    "USB-C charging cable), paid by card ending 4242, shipped 2024-05-02, delivered "
    "2024-05-04; the customer reports the headphones arrived with a cracked left ear cup. "
) * 3


@dataclass(frozen=True)
class MultiAgentThread:
    db: Path
    spans: Path
    """The directory of span files."""
    thread_id: str
    fork_from: str
    """The root checkpoint the fork replayed from."""


def _scripts() -> dict[str, Script]:
    return {
        "supervisor": Script(
            [
                calls(("transfer_to_order_agent", {})),
                calls(("transfer_to_refund_agent", {})),
                Turn("The refund for order A-1 is issued; the customer has been told."),
            ]
        ),
        "order_agent": Script(
            [calls(("lookup_order", {"order_id": "A-1"})), Turn("Order A-1 is paid.")]
        ),
        "refund_agent": Script(
            [
                calls(("issue_refund", {"order_id": "A-1", "amount": "full"})),
                Turn("Refunded A-1 in full."),
            ]
        ),
    }


def build(checkpointer: Any, scripts: dict[str, Script]) -> Any:
    """The compiled supervisor graph over `checkpointer`."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    @tool
    def lookup_order(order_id: str) -> str:
        """Look up an order (read-only)."""
        return f"{order_id}: {ORDER_TEXT}"

    @tool
    def issue_refund(order_id: str, amount: str) -> str:
        """Refund an order (a side effect)."""
        return f"refund of {order_id} ({amount}) issued; reference RF-{order_id}-{amount}"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent
        order_agent = create_react_agent(
            ScriptedChatModel(script=scripts["order_agent"], agent="order_agent"),
            [lookup_order],
            name="order_agent",
        )
        refund_agent = create_react_agent(
            ScriptedChatModel(script=scripts["refund_agent"], agent="refund_agent"),
            [issue_refund],
            name="refund_agent",
        )
        workflow = create_supervisor(  # its own agent is a create_react_agent too
            [order_agent, refund_agent],
            model=ScriptedChatModel(script=scripts["supervisor"], agent="supervisor"),
        )
    return workflow.compile(checkpointer=checkpointer, name=GRAPH_NAME)


def write(root: Path) -> MultiAgentThread:
    """Run, then fork, the thread; the SQLite file and span files go under `root`."""
    db, spans = root / "checkpoints.sqlite", root / "spans"
    provider = TracerProvider()
    write_span_files(spans, provider)
    scripts = _scripts()
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        graph = build(instrument(saver, tracer_provider=provider), scripts)
        config: Any = {"configurable": {"thread_id": THREAD}}
        graph.invoke(question("I want a refund for order A-1: the headphones are broken."), config)
        root_history = sorted(
            (t for t in saver.list(config) if not t.config["configurable"]["checkpoint_ns"]),
            key=lambda t: str(t.checkpoint["id"]),
        )
        # the supervisor has handed over to order_agent, which has not run yet
        handed_over = next(t for t in root_history if t.metadata.get("step") == 1)
        scripts["refund_agent"].change(
            0, calls(("issue_refund", {"order_id": "A-1", "amount": "partial"}))
        )
        graph.invoke(None, handed_over.config)  # time travel: a second branch
    finally:
        provider.shutdown()  # flushes the batch to the span file
        conn.close()
    return MultiAgentThread(db, spans, THREAD, str(handed_over.checkpoint["id"]))


DEEP_NAME = "deep_support"


def write_deep(root: Path) -> MultiAgentThread:
    """One run of a deep agent delegating a refund to its ``refunds`` sub-agent."""
    from deepagents import create_deep_agent

    @tool
    def issue_refund(order_id: str) -> str:
        """Refund an order (a side effect)."""
        return f"refund of {order_id} issued"

    db, spans = root / "deep.sqlite", root / "deep-spans"
    provider = TracerProvider()
    write_span_files(spans, provider)
    main = Script(
        [
            calls(("task", {"description": "Refund order A-1", "subagent_type": "refunds"})),
            Turn("Refunded order A-1."),
        ]
    )
    refunds = {
        "name": "refunds",
        "description": "Refunds orders.",
        "system_prompt": "You refund orders.",
        "tools": [issue_refund],
        "model": ScriptedChatModel(
            script=Script([calls(("issue_refund", {"order_id": "A-1"})), Turn("Refunded.")]),
            agent="refunds",
        ),
    }
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        graph = create_deep_agent(
            model=ScriptedChatModel(script=main, agent=DEEP_NAME),
            subagents=[refunds],  # type: ignore[list-item]
            checkpointer=instrument(SqliteSaver(conn), tracer_provider=provider),
            name=DEEP_NAME,
        )
        graph.invoke(question("Refund order A-1, please."), {"configurable": {"thread_id": "deep"}})
    finally:
        provider.shutdown()
        conn.close()
    return MultiAgentThread(db, spans, "deep", "")
