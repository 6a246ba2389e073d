"""Seeded threads for the retention apply tests, and how a thread's stored history reads.

Shapes (`SHAPES`), each a real `StateGraph` whose answers are deterministic (ids included):

* `chat`: a `model` node answering from the messages, then a `tally` subgraph called as a node
  (its checkpoints live in a call namespace `tally:<task id>`, one per call);
* `interrupt`: the same, with an `approve` node that asks with `interrupt()` (the last one
  left pending);
* `fork`: `chat`, then a time-travel run from a middle checkpoint;
* `delta`: `chat` whose messages are a `DeltaChannel` (snapshot every 3 updates).

`seed_threads` writes `count` threads of seeded shapes and lengths, the same for a given seed
whatever the saver, so a pruned store and an unpruned copy can be compared run for run;
`resume` continues a thread the way its shape does. Runs use durability `sync` (see `SYNC`).

`history(saver, thread_id)` is everything `list()` returns of a thread (ids, parents, metadata,
values by hash, pending writes by hash per task), comparable across an apply and a restore.
"""

from __future__ import annotations

import json
import operator
import random
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt

from langgraph.checkpoint.otel.analysis.hashing import hash_value
from langgraph.checkpoint.otel.analysis.text_bounds import repr_bytes


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    total: Annotated[int, operator.add]


def _delta_messages(current: list[AnyMessage], writes: list[Any]) -> list[AnyMessage]:
    merged = current
    for write in writes:
        merged = add_messages(merged, write)
    return merged


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_delta_messages, snapshot_frequency=3)]
    total: Annotated[int, operator.add]


SHAPES = ("chat", "interrupt", "fork", "delta")
SYNC = "sync"
"""Runs save each step before the next: RedisSaver 0.5.2's `put` resets `has_writes` when a
step's writes (saved in the background under the default durability) land before its
checkpoint, which hides those writes from `get_tuple`; the tests compare stores, not that."""


def _model(state: dict[str, Any]) -> dict[str, Any]:
    turn = len(state["messages"])
    asked = str(state["messages"][-1].content)
    answer = AIMessage(f"answer {turn} to {asked} (total {state.get('total', 0)})", id=f"a{turn}")
    return {"messages": [answer]}


def _count(state: dict[str, Any]) -> dict[str, Any]:
    return {"total": len(state["messages"])}


def _approve(state: dict[str, Any]) -> dict[str, Any]:
    answer = interrupt({"approve": len(state["messages"])})
    return {"messages": [AIMessage(f"approved: {answer}", id=f"ok{len(state['messages'])}")]}


def graph(saver: Any, shape: str = "chat") -> Any:
    """The graph of `shape`, checkpointed by `saver`."""
    state: type = DeltaState if shape == "delta" else State
    tally = StateGraph(state)
    tally.add_node("count", _count)
    tally.add_edge(START, "count")
    tally.add_edge("count", END)
    builder = StateGraph(state)
    builder.add_node("model", _model)
    builder.add_node("tally", tally.compile())
    builder.add_edge(START, "model")
    builder.add_edge("model", "tally")
    if shape == "interrupt":
        builder.add_node("approve", _approve)
        builder.add_edge("tally", "approve")
        builder.add_edge("approve", END)
    else:
        builder.add_edge("tally", END)
    return builder.compile(checkpointer=saver)


def config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def shape_of(thread_id: str) -> str:
    return thread_id.rsplit("-", 1)[-1]


def ask(app: Any, thread_id: str, turn: int, checkpoint_id: str | None = None) -> Any:
    """One user turn on the thread (from `checkpoint_id`: time travel)."""
    message = HumanMessage(f"question {turn}", id=f"h{thread_id}-{turn}")
    return app.invoke({"messages": [message]}, config(thread_id, checkpoint_id), durability=SYNC)


def seed_threads(saver: Any, count: int, seed: int = 33) -> list[str]:
    """`count` threads of seeded shapes (every shape first) and 2..5 turns each; their ids."""
    rng = random.Random(seed)
    ids = []
    for n in range(count):
        shape = SHAPES[n % len(SHAPES)] if n < len(SHAPES) else rng.choice(SHAPES)
        thread_id = f"t{seed}-{n}-{shape}"
        app = graph(saver, shape)
        turns = rng.randint(2, 5)
        for turn in range(turns):
            ask(app, thread_id, turn)
            if shape == "interrupt" and turn < turns - 1:
                app.invoke(Command(resume=f"yes {turn}"), config(thread_id), durability=SYNC)
        if shape == "fork":
            root = [
                t
                for t in app.get_state_history(config(thread_id))
                if not t.config["configurable"].get("checkpoint_ns")
            ]
            app.invoke(None, root[len(root) // 2].config, durability=SYNC)
        ids.append(thread_id)
    return ids


def resume(saver: Any, thread_id: str) -> Any:
    """Continue the thread as its shape does: answer the pending interrupt, or ask again."""
    shape = shape_of(thread_id)
    app = graph(saver, shape)
    if shape == "interrupt":
        return app.invoke(Command(resume="resumed"), config(thread_id), durability=SYNC)
    return ask(app, thread_id, 100)


def history(saver: Any, thread_id: str) -> list[tuple[Any, ...]]:
    """Every stored checkpoint of the thread as `list()` reads it, by id: namespace, id, parent,
    metadata, channel versions, values (hashed) and pending writes (hashed, by task in order)."""
    rows = []
    for tup in saver.list(config(thread_id)):
        conf = tup.config["configurable"]
        parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        values = tup.checkpoint.get("channel_values") or {}
        by_task: dict[str, list[tuple[str, str]]] = {}
        for task_id, channel, value in tup.pending_writes or []:
            by_task.setdefault(task_id, []).append(
                (channel, hash_value(value, fallback=repr_bytes))
            )
        rows.append(
            (
                conf["checkpoint_ns"],
                conf["checkpoint_id"],
                parent,
                json.dumps(tup.metadata, sort_keys=True, default=str),
                json.dumps(tup.checkpoint.get("channel_versions"), sort_keys=True),
                tuple(sorted((k, hash_value(v, fallback=repr_bytes)) for k, v in values.items())),
                tuple(sorted((task, tuple(writes)) for task, writes in by_task.items())),
            )
        )
    return sorted(rows, key=lambda r: (r[0], r[1]))


def state_hash(saver: Any, thread_id: str, checkpoint_id: str | None = None) -> str:
    """The hash of the thread's state as `get_state` materialises it (values and next)."""
    state = graph(saver, shape_of(thread_id)).get_state(config(thread_id, checkpoint_id))
    return hash_value({"values": state.values, "next": list(state.next)}, fallback=repr_bytes)
