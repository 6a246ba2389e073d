"""Small LangGraph graphs shared by tests: deterministic except for what LangGraph makes random.

Every node returns messages with explicit ids (``add_messages`` would otherwise assign random
ids), so two runs of the same graph produce equal state. Builders return *uncompiled*
``StateGraph``s; failures are driven by a `Flaky` counter created per run, so a bare and a
wrapped run of the same scenario fail at the same point.
"""

from __future__ import annotations

import operator
import threading
import time
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send, interrupt


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]
    last: str


def user_input(text: str = "hello", msg_id: str = "h-1") -> dict[str, Any]:
    """Graph input with a message that carries an explicit id."""
    return {"messages": [HumanMessage(text, id=msg_id)], "log": ["input"]}


@dataclass
class Flaky:
    """Fails the named nodes for their first `failures` executions (per instance = per run).

    `delay` (seconds) is waited before failing. Parallel graphs need it: when one task of a
    superstep fails, LangGraph keeps the writes of sibling tasks only if they were committed
    before the loop exits, so without the delay *bare* runs already differ from each other
    (measured on langgraph 1.2: ~12% of runs of `map_reduce` lose a sibling's writes).
    """

    failures: int = 1
    delay: float = 0.0
    calls: dict[str, int] = field(default_factory=dict)

    def hit(self, node: str) -> None:
        n = self.calls[node] = self.calls.get(node, 0) + 1
        if n <= self.failures:
            if self.delay:
                time.sleep(self.delay)
            raise RuntimeError(f"{node} failed (attempt {n})")


PARALLEL_FAILURE_DELAY = 0.05
"""Seconds a failing parallel task waits, so its siblings' writes are committed first."""


class NodeFailed(RuntimeError):
    """Raised by the failing branch of the parallel graph."""


def _reply(node: str, state: State) -> dict[str, Any]:
    turn = len(state.get("messages", []))
    return {
        "messages": [AIMessage(f"{node} saw {turn} messages", id=f"{node}-{turn}")],
        "log": [node],
        "last": node,
    }


class Count(TypedDict):
    n: int


def counter() -> StateGraph:
    """START -> inc -> inc2 -> END, each adding 1 to `n`."""

    def inc(state: Count) -> dict[str, int]:
        return {"n": state["n"] + 1}

    builder = StateGraph(Count)
    builder.add_node("inc", inc)
    builder.add_node("inc2", inc)
    builder.add_edge(START, "inc")
    builder.add_edge("inc", "inc2")
    return builder


def linear(flaky: Flaky | None = None, fail_at: str = "b") -> StateGraph:
    """START -> a -> b -> c -> END; `flaky` makes `fail_at` fail its first time(s)."""

    def make(name: str) -> Any:
        def node(state: State) -> dict[str, Any]:
            if flaky is not None and name == fail_at:
                flaky.hit(name)
            return _reply(name, state)

        node.__name__ = name
        return node

    builder = StateGraph(State)
    for name in ("a", "b", "c"):
        builder.add_node(name, make(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    builder.add_edge("c", END)
    return builder


def asking() -> StateGraph:
    """START -> a -> ask (dynamic `interrupt()`) -> c -> END."""

    def a(state: State) -> dict[str, Any]:
        return _reply("a", state)

    def ask(state: State) -> dict[str, Any]:
        answer = interrupt({"question": "continue?", "seen": len(state.get("messages", []))})
        return {
            "messages": [HumanMessage(f"answer: {answer}", id="answer")],
            "log": [f"ask:{answer}"],
        }

    def c(state: State) -> dict[str, Any]:
        return _reply("c", state)

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("ask", ask)
    builder.add_node("c", c)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", "c")
    builder.add_edge("c", END)
    return builder


def fan_out(flaky: Flaky | None = None) -> StateGraph:
    """START -> (left, right) in parallel -> join -> END; `flaky` fails `right` first."""

    def left(state: State) -> dict[str, Any]:
        return {"log": ["left"], "messages": [AIMessage("left", id="left")]}

    def right(state: State) -> dict[str, Any]:
        if flaky is not None:
            try:
                flaky.hit("right")
            except RuntimeError as exc:
                raise NodeFailed(str(exc)) from None
        return {"log": ["right"]}

    def join(state: State) -> dict[str, Any]:
        return _reply("join", state)

    builder = StateGraph(State)
    builder.add_node("left", left)
    builder.add_node("right", right)
    builder.add_node("join", join)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    return builder


def with_subgraph(ask_inside: bool = False) -> StateGraph:
    """START -> a -> sub (compiled StateGraph as a node: inner1 [-> ask] -> inner2) -> c."""

    def inner1(state: State) -> dict[str, Any]:
        return _reply("inner1", state)

    def inner_ask(state: State) -> dict[str, Any]:
        answer = interrupt("inner question")
        return {"log": [f"inner_ask:{answer}"]}

    def inner2(state: State) -> dict[str, Any]:
        return _reply("inner2", state)

    sub = StateGraph(State)
    sub.add_node("inner1", inner1)
    sub.add_node("inner2", inner2)
    sub.add_edge(START, "inner1")
    if ask_inside:
        sub.add_node("inner_ask", inner_ask)
        sub.add_edge("inner1", "inner_ask")
        sub.add_edge("inner_ask", "inner2")
    else:
        sub.add_edge("inner1", "inner2")
    sub.add_edge("inner2", END)

    def a(state: State) -> dict[str, Any]:
        return _reply("a", state)

    def c(state: State) -> dict[str, Any]:
        return _reply("c", state)

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("sub", sub.compile())
    builder.add_node("c", c)
    builder.add_edge(START, "a")
    builder.add_edge("a", "sub")
    builder.add_edge("sub", "c")
    builder.add_edge("c", END)
    return builder


def async_linear(flaky: Flaky | None = None, ask: bool = False) -> StateGraph:
    """Async nodes: START -> a -> b [-> ask] -> END; `flaky` fails `b` first."""

    async def a(state: State) -> dict[str, Any]:
        return _reply("a", state)

    async def b(state: State) -> dict[str, Any]:
        if flaky is not None:
            flaky.hit("b")
        return _reply("b", state)

    async def ask_node(state: State) -> dict[str, Any]:
        answer = interrupt("async question")
        return {"log": [f"ask:{answer}"], "last": str(answer)}

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    if ask:
        builder.add_node("ask", ask_node)
        builder.add_edge("b", "ask")
        builder.add_edge("ask", END)
    else:
        builder.add_edge("b", END)
    return builder


class MapState(TypedDict, total=False):
    items: list[str]
    results: Annotated[list[str], operator.add]


def map_reduce(flaky: Flaky | None = None) -> StateGraph:
    """START -> Send("worker", item) per item -> END; `flaky` fails worker "b" first."""

    def fan(state: MapState) -> list[Send]:
        return [Send("worker", {"items": [item]}) for item in state["items"]]

    def worker(state: MapState) -> dict[str, Any]:
        item = state["items"][0]
        if flaky is not None and item == "b":
            flaky.hit("worker-b")
        return {"results": [item.upper()]}

    builder = StateGraph(MapState)
    builder.add_node("worker", worker)
    builder.add_conditional_edges(START, fan, ["worker"])
    builder.add_edge("worker", END)
    return builder


def parallel_flaky() -> Flaky:
    """A `Flaky` for parallel graphs: fails once, after its siblings have committed."""
    return Flaky(failures=1, delay=PARALLEL_FAILURE_DELAY)


class Noisy(TypedDict, total=False):
    start: int
    value: float
    done: bool


def noisy(deterministic: bool = False) -> StateGraph:
    """a -> noisy -> c; `noisy` writes a random number unless `deterministic`: forking from
    before it diverges (a `state` finding on channel `value`)."""
    import random

    def a(state: Noisy) -> dict[str, Any]:
        return {"start": state.get("start", 0) + 1}

    def roll(state: Noisy) -> dict[str, Any]:
        return {"value": 0.5 if deterministic else random.random()}

    def c(state: Noisy) -> dict[str, Any]:
        return {"done": True}

    builder = StateGraph(Noisy)
    builder.add_node("a", a)
    builder.add_node("noisy", roll)
    builder.add_node("c", c)
    builder.add_edge(START, "a")
    builder.add_edge("a", "noisy")
    builder.add_edge("noisy", "c")
    return builder


class Steps(TypedDict, total=False):
    topic: str
    steps: Annotated[list[str], operator.add]


def steps_then_ask(saver: Any) -> Any:
    """START -> a -> ask (dynamic `interrupt()`), over a plain `steps` list; compiled."""

    def a(state: Steps) -> dict[str, Any]:
        return {"steps": ["a"]}

    def ask(state: Steps) -> dict[str, Any]:
        return {"steps": [f"ask:{interrupt('ok?')}"]}

    builder = StateGraph(Steps)
    builder.add_node("a", a)
    builder.add_node("ask", ask)
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    return builder.compile(checkpointer=saver)


def slow_turns(seconds: float = 0.5) -> StateGraph:
    """START -> slow -> END: each turn appends its input to `log`, the node takes `seconds`
    (two runs of one thread started together overlap)."""

    def slow(state: State) -> dict[str, Any]:
        time.sleep(seconds)
        return {"log": ["slow"]}

    builder = StateGraph(State)
    builder.add_node("slow", slow)
    builder.add_edge(START, "slow")
    return builder


def one_step(extra_node: bool = False) -> StateGraph:
    """START -> a -> END, or with `extra_node` START -> a -> b -> END: another graph structure
    (a node `b` and its `branch:to:b` channel added)."""
    builder = StateGraph(State)
    builder.add_node("a", lambda state: {"log": ["a"]})
    builder.add_edge(START, "a")
    if extra_node:
        builder.add_node("b", lambda state: {"log": ["b"]})
        builder.add_edge("a", "b")
    return builder


class LoadsTogether:
    """Mixed into a real saver class: its loads wait for each other while `barrier` is set, as
    two requests for one thread arriving together do: both runs load its latest checkpoint
    before either writes."""

    barrier: threading.Barrier | None = None

    def get_tuple(self, config: Any) -> Any:
        loaded = super().get_tuple(config)  # type: ignore[misc]
        if self.barrier is not None:
            self.barrier.wait(timeout=30)
        return loaded


class LoadTogether(LoadsTogether, InMemorySaver):
    """An InMemorySaver whose loads wait for each other (see `LoadsTogether`)."""


def change_graph_and_write_twice(saver: Any, inner: LoadTogether, thread_id: str) -> None:
    """Through `saver` (an instrumented `inner`): thread `{thread_id}-graph` written by
    `one_step()` and continued by `one_step(extra_node=True)`, a resume under another graph
    structure (`langgraph.graph.changed`, counted in `langgraph.checkpoint.graph.changes`); and
    thread `{thread_id}-twice` taken by two runs at once, a concurrent write
    (`langgraph.concurrent_write`, counted in `langgraph.checkpoint.concurrent_writes`)."""
    config: Any = {"configurable": {"thread_id": f"{thread_id}-graph"}}
    one_step().compile(checkpointer=saver).invoke({"log": ["first"]}, config)
    one_step(extra_node=True).compile(checkpointer=saver).invoke({"log": ["again"]}, config)

    graph = one_step().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": f"{thread_id}-twice"}}
    graph.invoke({"log": ["opening"]}, config)  # the thread exists: both runs load its latest
    errors: list[BaseException] = []

    def turn(text: str) -> None:
        try:
            graph.invoke({"log": [text]}, config)
        except BaseException as exc:
            errors.append(exc)

    inner.barrier = threading.Barrier(2)
    try:
        runs = [threading.Thread(target=turn, args=(text,)) for text in ("first", "second")]
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=60)
    finally:
        inner.barrier = None
    assert not errors, errors
