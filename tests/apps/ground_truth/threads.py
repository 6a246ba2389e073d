"""Thread scenarios and the driver that runs them.

A scenario is a list of acts a user does on one thread: `Turn` (new input; `settle` answers
every approval the run then asks for, else the thread stays parked at the first), `Fork` (time
travel: run again from a checkpoint of the thread's root line), `Reprice` (the world changes
between two acts: a tool's answer changes), `Resume` (continue a run that was killed), `Answer`
(approve what the thread is parked at). `drive` runs acts on a graph and logs every task
LangGraph starts (stream mode ``debug``, subgraphs included) into the world's log.

Kinds (`KINDS`): ``finished`` (one or two turns, all approved), ``parked`` (the last turn waits
for an approval), ``killed`` (the last turn's process is SIGKILLed at a `KillPoint`: recorded in
a subprocess), ``forked`` (a finished turn, a price change, a fork back into that turn, approved
again), ``turns`` (three turns, a later one repeating an earlier one's calls), and ``bare``
(a finished or parked thread recorded through the bare saver, before the library was
installed).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.types import Command

from ground_truth.apps import AppSpec
from ground_truth.desk import KillPoint, Stopped, World

KINDS = ("finished", "parked", "killed", "forked", "turns", "bare")
MAX_ANSWERS = 12


@dataclass(frozen=True)
class Act:
    """One act on a thread (see the module docstring): ``turn``, ``fork``, ``reprice``,
    ``resume`` or ``answer``."""

    kind: str
    text: str = ""
    settle: bool = True
    position: int = -1
    """``fork``: the index in the root line (oldest first) of the checkpoint forked from."""
    turn: int = 0
    """The turn (0-based) the act runs: a fork re-runs an earlier one."""


@dataclass(frozen=True)
class Scenario:
    """A thread's acts, how it ends, and what a user does next with it."""

    kind: str
    acts: tuple[Act, ...]
    kill: KillPoint | None = None
    """``killed``: where the last act's process dies."""
    bare: bool = False
    next_acts: tuple[Act, ...] = ()
    """The continuation: what happens to the thread next (compat's and the online
    detectors' ground truth)."""
    fork_back: int | None = None
    """A time-travel continuation: the root-line position a fork under the new code starts
    from (None: no fork continuation)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Scenario:
        data = json.loads(text)
        data["acts"] = tuple(Act(**a) for a in data["acts"])
        data["next_acts"] = tuple(Act(**a) for a in data["next_acts"])
        if data["kill"] is not None:
            data["kill"] = KillPoint(**data["kill"])
        return cls(**data)


# --- generating scenarios -----------------------------------------------------------------------


def requests(spec: AppSpec, rng: random.Random) -> list[str]:
    """Requests an app can serve, refunds first."""
    orders = ["A17", "B22", "C31"]
    rng.shuffle(orders)
    if spec.shape == "map_reduce":
        return [f"refund {orders[0]} {orders[1]}", f"refund {orders[2]}"]
    return [
        f"refund {orders[0]}",
        f"check {orders[0]}",
        f"track {orders[1]}",
        f"refund {orders[1]}",
    ]


def scenario(spec: AppSpec, kind: str, rng: random.Random) -> Scenario | None:
    """A scenario of `kind` on `spec` (None: the kind does not apply to the app)."""
    asks = requests(spec, rng)
    refund = asks[0]
    follow = asks[1]
    approves = spec.approval != "none"
    if kind == "finished":
        acts = [Act("turn", refund)]
        if rng.random() < 0.5:
            acts.append(Act("turn", asks[2] if spec.shape != "map_reduce" else asks[1], turn=1))
        return Scenario(
            kind, tuple(acts), next_acts=(Act("turn", follow, turn=len(acts)),), fork_back=0
        )
    if kind == "parked":
        if not approves:
            return None
        return Scenario(kind, (Act("turn", refund, settle=False),), next_acts=(Act("answer"),))
    if kind == "killed":
        point = rng.choice(
            (
                KillPoint("tool", "refund"),
                KillPoint("effect", "refund"),
                KillPoint("model", _second_model(spec)),
            )
        )
        if spec.shape == "map_reduce":
            point = KillPoint("tool", "refund")
        return Scenario(kind, (Act("turn", refund),), kill=point, next_acts=(Act("resume"),))
    if kind == "forked":
        return Scenario(
            kind,
            (Act("turn", refund), Act("reprice"), Act("fork", position=-2, turn=0)),
            next_acts=(Act("turn", follow, turn=1),),
            fork_back=0,
        )
    if kind == "turns":
        last_settles = not approves or rng.random() < 0.5
        acts = (
            Act("turn", refund),
            Act("turn", follow, turn=1),
            Act("turn", refund, settle=last_settles, turn=2),
        )
        nxt = (Act("answer", turn=2),) if not last_settles else (Act("turn", follow, turn=3),)
        return Scenario(kind, acts, next_acts=nxt)
    if kind == "bare":
        parked = approves and rng.random() < 0.5
        if parked:
            return Scenario(
                kind, (Act("turn", refund, settle=False),), bare=True, next_acts=(Act("answer"),)
            )
        return Scenario(
            kind,
            (Act("turn", refund),),
            bare=True,
            next_acts=(Act("turn", follow, turn=1),),
            fork_back=0,
        )
    raise ValueError(kind)


def _second_model(spec: AppSpec) -> str:
    """The agent whose model a ``model`` kill point stops: the one that refunds."""
    for agent in spec.agents:
        if any(t.capability == "refund" for t in agent.tools):
            return agent.role
    return spec.agents[0].role if spec.agents else "plan"


# --- driving ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """How a drive ended."""

    raised: str | None = None
    """The class of an exception a run raised (not `Stopped`)."""
    stopped: bool = False
    """A run reached the kill point (in-process: `Stopped`)."""
    forks: list[int] = field(default_factory=list)
    """Index in the world's log where each fork act started."""
    impossible: str | None = None
    """An act that could not be done (the root line too short to fork at the position)."""


def drive(
    graph: Any,
    thread_id: str,
    acts: Sequence[Act],
    world: World,
    spec: AppSpec,
    *,
    fork_position: int | None = None,
) -> Outcome:
    """Run `acts` on the thread; the world logs what happens."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    outcome = Outcome()
    for act in acts:
        try:
            if act.kind == "reprice":
                world.amounts = {k: v + 1000 for k, v in world.amounts.items()}
                continue
            world.turn = act.turn
            if act.kind == "turn":
                _run(graph, {"messages": [("user", act.text)]}, config, world, spec)
            elif act.kind == "resume":
                _run(graph, None, config, world, spec)
            elif act.kind == "answer":
                _answer(graph, config, world, spec)
            elif act.kind == "fork":
                line = root_line(graph, config)
                position = fork_position if fork_position is not None else act.position
                target = fork_target(line, position)
                if target is None:
                    outcome.impossible = f"no checkpoint at {position} to fork from"
                    return outcome
                outcome.forks.append(len(world.log))
                _run(graph, None, target, world, spec)
            if act.settle:
                for _ in range(MAX_ANSWERS):
                    if not parked(graph, config):
                        break
                    _answer(graph, config, world, spec)
        except Stopped:
            outcome.stopped = True
            return outcome
        except Exception as exc:  # the app's own failure: part of what the oracle compares
            outcome.raised = type(exc).__name__
            return outcome
    return outcome


def _run(graph: Any, given: Any, config: Any, world: World, spec: AppSpec) -> None:
    for namespace, event in graph.stream(
        given, config, stream_mode="debug", subgraphs=True, durability=spec.durability
    ):
        if isinstance(event, dict) and event.get("type") == "task":
            payload = event.get("payload") or {}
            graph_key = "|".join(part.partition(":")[0] for part in namespace)
            world.record("node", graph_key, str(payload.get("name")), str(event.get("step")))


def _answer(graph: Any, config: Any, world: World, spec: AppSpec) -> None:
    state = graph.get_state(config)
    if state.interrupts:
        _run(graph, Command(resume="yes"), config, world, spec)
    elif state.next:
        _run(graph, None, config, world, spec)


def parked(graph: Any, config: Any) -> bool:
    state = graph.get_state(config)
    return bool(state.interrupts or state.next)


def root_line(graph: Any, config: Any) -> list[Any]:
    """The root checkpoints of the thread's current line, oldest first (StateSnapshots)."""
    history = list(graph.get_state_history(config))
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
    if not history:
        return []
    line = [history[0]]
    while line[-1].parent_config is not None:
        parent = by_id.get(line[-1].parent_config["configurable"]["checkpoint_id"])
        if parent is None:
            break
        line.append(parent)
    return line[::-1]


def fork_target(line: Sequence[Any], position: int) -> Any:
    """The config of the checkpoint to fork from: `position` indexes the root line; -2 is the
    first checkpoint after the last turn's input (the turn runs again from its start)."""
    if position == -2:  # the step after the last input, else the input itself (an entrypoint)
        inputs = [i for i, s in enumerate(line) if (s.metadata or {}).get("source") == "input"]
        position = inputs[-1] + 1 if inputs else -1
        if inputs and (position >= len(line) or not line[position].next):
            position = inputs[-1]
    if position < 0 or position >= len(line) or not line[position].next:
        return None
    return line[position].config
