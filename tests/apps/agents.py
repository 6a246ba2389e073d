"""Real agent shapes with a scripted, offline chat model, shared by `test_agents.py`.

Each builder returns a compiled graph (or a functional-API entrypoint) with the given
checkpointer. The graphs are the real thing: `langgraph.prebuilt.create_react_agent`,
`langchain.agents.create_agent`, compiled sub-agents as nodes of a supervisor, `Send` fan-out,
`@entrypoint` / `@task`, and `interrupt()` inside a tool.

`ScriptedChatModel` is a `BaseChatModel` (so `bind_tools`, callbacks and message ids behave as
with a hosted model) that answers from a `Script`: the n-th answer is picked by how many answers
of this model the conversation already holds, so a replay from any checkpoint asks the model the
same question and gets the same answer. Like a hosted model it issues a new random id for every
tool call and every message. `Script.change` makes it answer differently from then on (a model
that is not deterministic across a fork); `Script.fail_once` makes one turn raise once.

`crash_at_step(k)` arms a real process kill (SIGKILL) in whichever model or tool runs at
superstep `k`; only the subprocess app (`agent_crash_app.py`) arms it.
"""

from __future__ import annotations

import operator
import os
import signal
import threading
import time
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send, interrupt

Saver = BaseCheckpointSaver[Any]

# --------------------------------------------------------------------------------------------
# crash injection (armed only in the subprocess app)
# --------------------------------------------------------------------------------------------

_CRASH_STEP: int | None = None


def crash_at_step(step: int | None) -> None:
    """Arm (or, with None, disarm) a SIGKILL of this process by the model or tool running at
    superstep `step`: no exception, no cleanup, like a killed container."""
    global _CRASH_STEP
    _CRASH_STEP = step


def maybe_crash() -> None:
    """Kill this process when the current task runs at the armed superstep."""
    if _CRASH_STEP is None:
        return
    step = (get_config().get("metadata") or {}).get("langgraph_step")
    if step == _CRASH_STEP:
        os.kill(os.getpid(), signal.SIGKILL)


# --------------------------------------------------------------------------------------------
# the scripted model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A tool call a turn asks for."""

    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One answer of the model: text, and the tool calls it asks for (several at once)."""

    text: str = ""
    calls: tuple[Call, ...] = ()


def calls(*pairs: tuple[str, dict[str, Any]]) -> Turn:
    """A turn asking for the tool calls `(name, args)`, all at once."""
    return Turn(calls=tuple(Call(name, args) for name, args in pairs))


class ModelUnavailable(RuntimeError):
    """What a scripted turn raises while it is set to fail (a provider outage)."""


@dataclass
class Script:
    """The answers of a scripted model, turn by turn; may be changed between runs."""

    turns: list[Turn]
    failing: dict[int, int] = field(default_factory=dict)
    """turn -> how many more times it raises `ModelUnavailable` before answering."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def change(self, turn: int, answer: Turn) -> None:
        """From now on, answer `answer` at `turn` (a model that answers differently on a fork)."""
        self.turns[turn] = answer

    def fail_once(self, turn: int) -> None:
        """The next call at `turn` raises `ModelUnavailable`."""
        self.failing[turn] = self.failing.get(turn, 0) + 1

    def answer(self, turn: int, name: str | None) -> AIMessage:
        """The scripted answer at `turn`, as a hosted model would return it."""
        with self._lock:
            if self.failing.get(turn, 0) > 0:
                self.failing[turn] -= 1
                raise ModelUnavailable(f"model unavailable at turn {turn}")
        scripted = self.turns[min(turn, len(self.turns) - 1)]
        tool_calls = [
            {
                "name": call.name,
                "args": dict(call.args),
                "id": f"call_{uuid.uuid4().hex[:12]}",  # a new id on every call, as hosted models do
                "type": "tool_call",
            }
            for call in scripted.calls
        ]
        return AIMessage(scripted.text, tool_calls=tool_calls, name=name)


class ScriptedChatModel(BaseChatModel):
    """An offline chat model that replays a `Script` (see module docstring)."""

    script: Any
    """The `Script` (shared, so a test can change the answers between runs)."""
    agent: str | None = None
    """Name put on the model's messages; turns count only this model's earlier answers."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        maybe_crash()
        turn = sum(
            1
            for m in messages
            if isinstance(m, AIMessage) and (self.agent is None or m.name == self.agent)
        )
        message = self.script.answer(turn, self.agent)
        return ChatResult(generations=[ChatGeneration(message=message)])


# --------------------------------------------------------------------------------------------
# tools
# --------------------------------------------------------------------------------------------

FAILURE_DELAY = 0.05
"""Seconds a failing tool waits before raising, so its parallel siblings' writes are committed
first (LangGraph drops the writes of siblings still running when a task fails)."""


class ToolFailed(RuntimeError):
    """What a tool set to fail raises."""


@dataclass
class Tools:
    """The tools of one agent: read-only ones (`lookup`, `search`), side-effecting ones (`book`,
    `send_email`), and `approve`, which asks a human through `interrupt()`.

    `failing` names tools that raise `ToolFailed` on their first call. `ledger` records every
    side effect (tool name, arguments) in the order they happened.
    """

    failing: Collection[str] = ()
    ledger: list[tuple[str, str]] = field(default_factory=list)
    _failed: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _enter(self, name: str, arg: str) -> None:
        maybe_crash()
        with self._lock:
            fail = name in self.failing and name not in self._failed
            if fail:
                self._failed.add(name)
            else:
                self.ledger.append((name, arg))
        if fail:
            time.sleep(FAILURE_DELAY)
            raise ToolFailed(f"{name} failed")

    def all(self) -> list[BaseTool]:
        """Every tool of this agent."""

        @tool
        def lookup(city: str) -> str:
            """Look up facts about a city (read-only)."""
            self._enter("lookup", city)
            return f"{city}: sunny, 21C"

        @tool
        def search(query: str) -> str:
            """Search flights (read-only)."""
            self._enter("search", query)
            return f"flights for {query}: TP1353, FR7290"

        @tool
        def book(flight: str) -> str:
            """Book a flight (a side effect: charges the card)."""
            self._enter("book", flight)
            return f"booked {flight}"

        @tool
        def send_email(to: str) -> str:
            """Send an email (a side effect)."""
            self._enter("send_email", to)
            return f"sent to {to}"

        @tool
        def approve(action: str) -> str:
            """Ask a human to approve an action (interrupts the run)."""
            maybe_crash()
            answer = interrupt({"approve": action})
            return f"{action}: {answer}"

        return [lookup, search, book, send_email, approve]

    def named(self, *names: str) -> list[BaseTool]:
        """The tools called `names`."""
        by_name = {t.name: t for t in self.all()}
        return [by_name[n] for n in names]


# --------------------------------------------------------------------------------------------
# scripts
# --------------------------------------------------------------------------------------------

QUESTION = "Find me a flight to Lisbon and book it."


def question(text: str = QUESTION) -> dict[str, Any]:
    """The input of the message-based agents."""
    return {"messages": [HumanMessage(text)]}


def travel_script() -> Script:
    """Two rounds of parallel tool calls, then an answer."""
    return Script(
        [
            calls(("lookup", {"city": "Lisbon"}), ("search", {"query": "LIS May 3"})),
            calls(("book", {"flight": "TP1353"}), ("send_email", {"to": "me@example.com"})),
            Turn("Booked TP1353 and emailed you the ticket."),
        ]
    )


def approval_script() -> Script:
    """Parallel calls of which one asks for approval (interrupt), then an answer."""
    return Script(
        [
            calls(("lookup", {"city": "Lisbon"}), ("approve", {"action": "book TP1353"})),
            Turn("Approved and booked."),
        ]
    )


# --------------------------------------------------------------------------------------------
# shapes
# --------------------------------------------------------------------------------------------


def react_agent(
    checkpointer: Saver | None, script: Script | None = None, tools: Tools | None = None, **kw: Any
) -> Any:
    """`langgraph.prebuilt.create_react_agent`: nodes `agent` and `tools`; the parallel tool
    calls of a turn run as `Send` tasks to `tools`."""
    import warnings

    from langgraph.prebuilt import create_react_agent

    tools = tools or Tools()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent
        return create_react_agent(
            ScriptedChatModel(script=script or travel_script()),
            tools.all(),
            checkpointer=checkpointer,
            **kw,
        )


def langchain_agent(
    checkpointer: Saver | None, script: Script | None = None, tools: Tools | None = None, **kw: Any
) -> Any:
    """`langchain.agents.create_agent` (langchain 1.x): nodes `model` and `tools`; the parallel
    tool calls run as `Send` tasks to `tools`."""
    from langchain.agents import create_agent

    tools = tools or Tools()
    return create_agent(
        ScriptedChatModel(script=script or travel_script()),
        tools.all(),
        checkpointer=checkpointer,
        **kw,
    )


def supervisor_scripts() -> dict[str, Script]:
    """Scripts of the supervisor and its two sub-agents (each counts only its own answers)."""
    return {
        "supervisor": Script([Turn("researcher"), Turn("booker"), Turn("FINISH")]),
        "researcher": Script(
            [
                calls(("lookup", {"city": "Lisbon"}), ("search", {"query": "LIS May 3"})),
                Turn("TP1353 is the best flight."),
            ]
        ),
        "booker": Script(
            [
                calls(("book", {"flight": "TP1353"}), ("send_email", {"to": "me@example.com"})),
                Turn("Booked."),
            ]
        ),
    }


def supervisor(
    checkpointer: Saver | None,
    scripts: dict[str, Script] | None = None,
    tools: Tools | None = None,
    **kw: Any,
) -> Any:
    """A supervisor (graph name ``travel_supervisor``) routing between two `create_react_agent`
    sub-agents (`researcher`, `booker`) added as nodes: they run as subgraphs, checkpointed
    under their own namespace."""
    import warnings

    from langgraph.prebuilt import create_react_agent

    scripts = scripts or supervisor_scripts()
    tools = tools or Tools()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        researcher = create_react_agent(
            ScriptedChatModel(script=scripts["researcher"], agent="researcher"),
            tools.named("lookup", "search"),
            name="researcher",
        )
        booker = create_react_agent(
            ScriptedChatModel(script=scripts["booker"], agent="booker"),
            tools.named("book", "send_email"),
            name="booker",
        )
    boss = ScriptedChatModel(script=scripts["supervisor"], agent="supervisor")

    def route(state: MessagesState) -> Command[Literal["researcher", "booker", "__end__"]]:
        decision = boss.invoke(state["messages"])
        goto = END if decision.content == "FINISH" else str(decision.content)
        return Command(goto=goto, update={"messages": [decision]})

    builder = StateGraph(MessagesState)
    builder.add_node("supervisor", route)
    builder.add_node("researcher", researcher)
    builder.add_node("booker", booker)
    builder.add_edge(START, "supervisor")
    builder.add_edge("researcher", "supervisor")
    builder.add_edge("booker", "supervisor")
    return builder.compile(checkpointer=checkpointer, **{"name": "travel_supervisor", **kw})


class MapState(TypedDict, total=False):
    topic: str
    sections: list[str]
    drafts: Annotated[list[str], operator.add]
    report: str


@dataclass
class Workers:
    """Per-run behaviour of the map-reduce workers: `failing` sections raise once;
    `suffix` changes what a worker writes (a non-deterministic worker across a fork)."""

    failing: Collection[str] = ()
    suffix: str = ""
    _failed: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hit(self, section: str) -> None:
        maybe_crash()
        with self._lock:
            fail = section in self.failing and section not in self._failed
            if fail:
                self._failed.add(section)
        if fail:
            time.sleep(FAILURE_DELAY)
            raise ToolFailed(f"worker for {section!r} failed")


MAP_INPUT: dict[str, Any] = {"topic": "Lisbon"}


def map_reduce(checkpointer: Saver | None, workers: Workers | None = None, **kw: Any) -> Any:
    """`plan` -> one `Send("write", section)` per section (parallel workers) -> `reduce`."""
    workers = workers or Workers()

    def plan(state: MapState) -> dict[str, Any]:
        maybe_crash()
        return {"sections": ["history", "food", "transport"]}

    def fan_out(state: MapState) -> list[Send]:
        return [
            Send("write", {"topic": state["topic"], "sections": [s]}) for s in state["sections"]
        ]

    def write(state: MapState) -> dict[str, Any]:
        section = state["sections"][0]
        workers.hit(section)
        return {"drafts": [f"{state['topic']} {section}{workers.suffix}"]}

    def reduce(state: MapState) -> dict[str, Any]:
        maybe_crash()
        return {"report": " | ".join(sorted(state["drafts"]))}

    builder = StateGraph(MapState)
    builder.add_node("plan", plan)
    builder.add_node("write", write)
    builder.add_node("reduce", reduce)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["write"])
    builder.add_edge("write", "reduce")
    builder.add_edge("reduce", END)
    return builder.compile(checkpointer=checkpointer, **kw)


FUNCTIONAL_INPUT: dict[str, Any] = {"topic": "Lisbon", "sections": ["history", "food"]}


def functional(checkpointer: Saver | None, workers: Workers | None = None) -> Any:
    """The functional API: `@entrypoint` `trip_report` calling `@task`s `outline` and
    `draft` (twice, in parallel) and `summarize`."""
    workers = workers or Workers()

    @task
    def outline(topic: str) -> list[str]:
        maybe_crash()
        return [f"{topic} intro"]

    @task
    def draft(topic: str, section: str) -> str:
        workers.hit(section)
        return f"{topic} {section}{workers.suffix}"

    @task
    def summarize(parts: list[str]) -> str:
        maybe_crash()
        return " | ".join(parts)

    @entrypoint(checkpointer=checkpointer)
    def trip_report(inputs: dict[str, Any]) -> dict[str, Any]:
        intro = outline(inputs["topic"]).result()
        futures = [draft(inputs["topic"], s) for s in inputs["sections"]]
        parts = intro + [f.result() for f in futures]
        return {"report": summarize(parts).result()}

    return trip_report


def approval_agent(
    checkpointer: Saver | None, script: Script | None = None, tools: Tools | None = None, **kw: Any
) -> Any:
    """`create_react_agent` whose `approve` tool calls `interrupt()`: the run stops inside the
    tools step (its sibling `lookup` completes) until resumed with `Command(resume=...)`."""
    return react_agent(checkpointer, script or approval_script(), tools, **kw)


def refund_desk(saver: Saver | None, result_size: int = 100_000) -> Any:
    """`create_react_agent` on a refund desk: each turn fetches an order record of
    `result_size` characters and asks a human to approve the refund (`interrupt()`), then
    answers."""

    @tool
    def fetch_order(order: str) -> str:
        """Fetch an order's full record."""
        return order.ljust(result_size, ".")

    @tool
    def approve(action: str) -> str:
        """Ask a human to approve an action."""
        return f"{action}: {interrupt({'approve': action})}"

    script = Script(
        [
            calls(("fetch_order", {"order": "A-1"}), ("approve", {"action": "refund"})),
            Turn("Refunded."),
        ]
        * 2
    )
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            ScriptedChatModel(script=script), [fetch_order, approve], checkpointer=saver
        )


def two_approved_turns(graph: Any, thread_id: str) -> None:
    """Two refund turns on `refund_desk`, each stopped for approval and resumed: four runs."""
    config = thread(thread_id)
    for turn in range(2):
        graph.invoke({"messages": [HumanMessage(f"refund order {turn}")]}, config)
        graph.invoke(Command(resume="approved"), config)


# --------------------------------------------------------------------------------------------
# driving a run
# --------------------------------------------------------------------------------------------

STREAM_MODES = ["tasks", "checkpoints"]
"""Stream modes whose chunks `stream_event` reads (with ``subgraphs=True``)."""


def stream_event(chunk: tuple[tuple[str, ...], str, Any]) -> dict[str, Any]:
    """A JSON-able record of one ``stream(..., stream_mode=STREAM_MODES, subgraphs=True)``
    chunk: what LangGraph itself says ran (tests derive their expectations from these).

    ``{"type": "checkpoint", "ns", "id", "next", "source", "step"}`` for every checkpoint the
    loop created (stored or not, by durability), ``{"type": "start" | "result", "ns", "id",
    "name"}`` for tasks; a result has ``ok`` (no error, no interrupt). LangGraph's hidden input
    task ``__start__`` emits no task events.
    """
    namespace, mode, data = chunk
    if mode == "checkpoints":
        configurable = data["config"]["configurable"]
        metadata = data.get("metadata") or {}
        return {
            "type": "checkpoint",
            "ns": configurable.get("checkpoint_ns", ""),
            "id": configurable["checkpoint_id"],
            "next": list(data.get("next") or ()),
            "source": metadata.get("source"),
            "step": metadata.get("step"),
        }
    event = {"ns": "|".join(namespace), "id": data["id"], "name": data["name"]}
    if "result" in data or "error" in data:
        ok = data.get("error") is None and not data.get("interrupts")
        return {"type": "result", **event, "ok": ok}
    return {"type": "start", **event}


def thread(thread_id: str, **configurable: Any) -> dict[str, Any]:
    """A run config for `thread_id`."""
    return {"configurable": {"thread_id": thread_id, **configurable}}


def tool_messages(values: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool name, content) of the tool messages in a state, in order."""
    return [
        (str(m.name), str(m.content))
        for m in values.get("messages", [])
        if getattr(m, "type", None) == "tool"
    ]
