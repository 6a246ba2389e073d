"""Generated apps: `AppSpec`, a JSON-serialisable description of one app, and `build`, which
makes the compiled graph (or entrypoint) of it over a `desk.World`.

Shapes (`SHAPES`):

- ``react``: `langgraph.prebuilt.create_react_agent` (static approval: ``interrupt_before=
  ["tools"]``; an extra node: a ``pre_model_hook``);
- ``agent``: `langchain.agents.create_agent` with middleware (a turn counter in the state; an
  extra node: a ``before_model`` middleware);
- ``supervisor``: `langgraph_supervisor.create_supervisor` over `create_react_agent` workers;
- ``swarm``: `langgraph_swarm.create_swarm` with handoff tools;
- ``deep``: `deepagents.create_deep_agent` with a sub-agent reached through `task`;
- ``functional``: an `@entrypoint` running `@task` model and tool calls;
- ``subgraph``: a `StateGraph` (triage, a ReAct agent as a subgraph node per desk, wrap-up)
  with a `notes` list, conditional routing and optional state keys;
- ``map_reduce``: a `StateGraph` that `Send`s one check per order, merges them (fan-in, with
  an approval `interrupt()`) and settles (a side effect in a node, not a tool).

Every app's side effects go to the world it is built over, so the oracle can run the same app
twice side by side.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import warnings
from dataclasses import dataclass, field
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Send, interrupt

from ground_truth.desk import DEFAULT_PARAMS, DeskModel, ToolSpec, World, current_graph, make_tool

SHAPES = ("react", "agent", "supervisor", "swarm", "deep", "functional", "subgraph", "map_reduce")


@dataclass(frozen=True)
class AgentSpec:
    """One agent: its name (role), tools, prompt, and an extra no-op node before its model."""

    role: str
    tools: tuple[ToolSpec, ...] = ()
    prompt: str = ""
    extra_node: bool = False


@dataclass(frozen=True)
class StateKey:
    """An extra state key: required (no default) or not, read by a node or not."""

    name: str
    required: bool
    read: bool


@dataclass(frozen=True)
class AppSpec:
    """One generated app (see the module docstring)."""

    shape: str
    agents: tuple[AgentSpec, ...]
    ids: str = "random"
    approval: str = "dynamic"
    """``dynamic`` (`interrupt()` in the side-effecting tool or the merge node), ``static``
    (``interrupt_before=["tools"]``) or ``none``."""
    durability: str = "async"
    nodes: dict[str, str] = field(default_factory=dict)
    """StateGraph shapes: the node names, by their part (``billing`` -> ``billing``)."""
    removed: tuple[str, ...] = ()
    """StateGraph shapes: parts left out (a removed node)."""
    extra_node: bool = False
    """StateGraph shapes: an ``audit`` node in the middle."""
    reroute: bool = False
    """StateGraph shapes: a different edge (see each shape)."""
    state_key: StateKey | None = None
    replace_reducer: bool = False
    """The `notes` (``subgraph``) or `checks` (``map_reduce``) list is replaced, not appended."""
    defer: bool = False
    """The fan-in node (``wrap_up`` / ``merge``) is deferred."""

    @property
    def name(self) -> str:
        return f"desk_{self.shape}"

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AppSpec:
        data = json.loads(text)
        data["agents"] = tuple(
            AgentSpec(
                a["role"],
                tuple(
                    ToolSpec(
                        t["capability"], t["name"], tuple(t["params"]), t["approval"], t["variant"]
                    )
                    for t in a["tools"]
                ),
                a["prompt"],
                a["extra_node"],
            )
            for a in data["agents"]
        )
        data["removed"] = tuple(data["removed"])
        if data["state_key"] is not None:
            data["state_key"] = StateKey(**data["state_key"])
        return cls(**data)

    def node(self, part: str) -> str:
        return self.nodes.get(part, part)

    @property
    def control_tools(self) -> tuple[str, ...]:
        """The handoff and delegation tools the app's agents route with."""
        if self.shape == "supervisor":
            return (
                *(f"transfer_to_{a.role}" for a in self.agents[1:]),
                "transfer_back_to_supervisor",
            )
        if self.shape == "swarm":
            return tuple(f"transfer_to_{a.role}" for a in self.agents)
        if self.shape == "deep":
            return ("task",)
        return ()

    @property
    def read_only_tools(self) -> tuple[str, ...]:
        return tuple(
            t.name for a in self.agents for t in a.tools if t.capability in ("lookup", "track")
        )


def tool(capability: str, approval: bool = False, name: str | None = None) -> ToolSpec:
    default = {
        "lookup": "lookup_order",
        "refund": "issue_refund",
        "track": "track_package",
        "email": "send_email",
    }
    return ToolSpec(capability, name or default[capability], DEFAULT_PARAMS[capability], approval)


def capabilities(agent: AgentSpec) -> tuple[str, ...]:
    return tuple(t.capability for t in agent.tools)


# --- building ----------------------------------------------------------------------------------


def build(spec: AppSpec, world: World, checkpointer: Any = None) -> Any:
    """The compiled graph of `spec` over `world`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent
        return BUILDERS[spec.shape](spec, world, checkpointer)


def _model(
    spec: AppSpec, agent: AgentSpec, world: World, team: dict[str, tuple[str, ...]] | None = None
) -> DeskModel:
    return DeskModel(role=agent.role, world=world, team=team or {}, ids=spec.ids)


def _tools(agent: AgentSpec, world: World) -> list[Any]:
    return [make_tool(t, world) for t in agent.tools]


def _noop_hook(state: Any) -> dict[str, Any]:
    return {}


def _react(
    spec: AppSpec,
    agent: AgentSpec,
    world: World,
    checkpointer: Any = None,
    name: str | None = None,
    extra_tools: list[Any] | None = None,
    team: dict[str, tuple[str, ...]] | None = None,
) -> Any:
    from langgraph.prebuilt import create_react_agent

    kwargs: dict[str, Any] = {}
    if agent.extra_node:
        kwargs["pre_model_hook"] = _noop_hook
    if spec.approval == "static" and spec.shape in ("react", "subgraph"):
        kwargs["interrupt_before"] = ["tools"]
    return create_react_agent(
        _model(spec, agent, world, team),
        [*_tools(agent, world), *(extra_tools or [])],
        prompt=agent.prompt or None,
        name=name or agent.role,
        checkpointer=checkpointer,
        **kwargs,
    )


def _build_react(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    return _react(spec, spec.agents[0], world, checkpointer, name=spec.name)


def _build_agent(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    from langchain.agents import AgentState, create_agent
    from langchain.agents.middleware import AgentMiddleware

    class CountedState(AgentState):  # type: ignore[type-arg]
        turns: NotRequired[int]

    class TurnCounter(AgentMiddleware):  # type: ignore[type-arg]
        state_schema = CountedState

        def after_model(self, state: Any, runtime: Any) -> dict[str, Any]:
            return {"turns": int(state.get("turns", 0)) + 1}

    class Trim(AgentMiddleware):  # type: ignore[type-arg]
        def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            return None

    agent = spec.agents[0]
    middleware: list[Any] = [TurnCounter()]
    if agent.extra_node:
        middleware.insert(0, Trim())
    return create_agent(
        _model(spec, agent, world),
        _tools(agent, world),
        system_prompt=agent.prompt or None,
        middleware=middleware,
        checkpointer=checkpointer,
        interrupt_before=["tools"] if spec.approval == "static" else None,
        name=spec.name,
    )


def _build_supervisor(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    from langgraph_supervisor import create_supervisor

    boss, *workers = spec.agents
    team = {w.role: capabilities(w) for w in workers}
    graphs = [_react(spec, w, world) for w in workers]
    workflow = create_supervisor(
        graphs, model=_model(spec, boss, world, team), prompt=boss.prompt or None
    )
    return workflow.compile(checkpointer=checkpointer, name=spec.name)


def _build_swarm(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    from langgraph_swarm import create_handoff_tool, create_swarm

    graphs = []
    for agent in spec.agents:
        others = [a for a in spec.agents if a.role != agent.role]
        handoffs = [create_handoff_tool(agent_name=a.role) for a in others]
        team = {a.role: capabilities(a) for a in others}
        graphs.append(_react(spec, agent, world, extra_tools=handoffs, team=team))
    workflow = create_swarm(graphs, default_active_agent=spec.agents[0].role)
    return workflow.compile(checkpointer=checkpointer, name=spec.name)


def _build_deep(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    from deepagents import create_deep_agent

    main, *subs = spec.agents
    subagents = [
        {
            "name": s.role,
            "description": f"Does {', '.join(capabilities(s))} for orders.",
            "system_prompt": s.prompt or "You help with orders.",
            "tools": _tools(s, world),
            "model": _model(spec, s, world),
        }
        for s in subs
    ]
    return create_deep_agent(
        model=_model(spec, main, world, {s.role: capabilities(s) for s in subs}),
        tools=_tools(main, world),
        system_prompt=main.prompt or None,
        subagents=subagents,  # type: ignore[arg-type]
        checkpointer=checkpointer,
        name=spec.name,
    )


def _build_functional(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    from langchain_core.messages import SystemMessage
    from langgraph.func import entrypoint, task

    agent = spec.agents[0]
    model = _model(spec, agent, world).bind_tools(tools := _tools(agent, world))
    by_name = {t.name: t for t in tools}

    @task
    def call_model(messages: list[Any]) -> AIMessage:
        prompt = [SystemMessage(agent.prompt)] if agent.prompt else []
        return model.invoke([*prompt, *messages])

    @task
    def call_tool(call: dict[str, Any]) -> ToolMessage:
        return by_name[call["name"]].invoke(call)

    @entrypoint(checkpointer=checkpointer, name=spec.name)
    def desk_flow(request: dict[str, Any], *, previous: Any = None) -> Any:
        messages = add_messages(list(previous or []), request["messages"])
        for _ in range(8):
            answer = call_model(messages).result()
            messages = add_messages(messages, [answer])
            if not answer.tool_calls:
                break
            results = [call_tool(c).result() for c in answer.tool_calls]
            messages = add_messages(messages, results)
        return entrypoint.final(value={"messages": messages}, save=messages)

    return desk_flow


# --- StateGraph shapes -------------------------------------------------------------------------


def _state_type(spec: AppSpec, listed: str) -> type:
    """The state TypedDict: messages, the `listed` list (appended or replaced), `notes`, and the
    optional extra key."""
    fields: dict[str, Any] = {
        "messages": Annotated[list, add_messages],
        "notes": Annotated[list, operator.add],
    }
    fields[listed] = list if spec.replace_reducer else Annotated[list, operator.add]
    if spec.state_key is not None:
        fields[spec.state_key.name] = str if spec.state_key.required else NotRequired[str]
    return TypedDict("DeskState", fields)  # type: ignore[operator]


def _reader(spec: AppSpec) -> Any:
    """What a node that may read the extra key runs first: a read by its name (``region``),
    written as apps write it, or nothing."""
    key = spec.state_key

    def required(state: Any) -> None:
        _ = state["region"]

    def defaulted(state: Any) -> None:
        _ = state.get("region", "eu")

    def nothing(state: Any) -> None:
        return None

    if key is None or not key.read:
        return nothing
    return required if key.required else defaulted


def _request(state: Any) -> str:
    humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    return str(humans[-1].content) if humans else ""


def _build_subgraph(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    """triage -> billing | shipping (ReAct subgraphs) -> wrap_up; `reroute`: shipping goes
    straight to the end; `extra_node`: an ``audit`` node after billing."""
    billing_agent, shipping_agent = spec.agents
    node = spec.node
    builder = StateGraph(_state_type(spec, "notes"))

    def triage(state: Any) -> dict[str, Any]:
        world.checkpoint("model", "triage")
        return {"notes": ["triage"]}

    def route(state: Any) -> str:
        return node("shipping") if _request(state).lower().startswith("track") else node("billing")

    read = _reader(spec)

    def wrap_up(state: Any) -> dict[str, Any]:
        read(state)
        return {"notes": ["wrap_up"]}

    def audit(state: Any) -> dict[str, Any]:
        return {"notes": ["audit"]}

    builder.add_node(node("triage"), triage)
    builder.add_node(node("billing"), _react(spec, billing_agent, world))
    builder.add_node(node("shipping"), _react(spec, shipping_agent, world))
    builder.add_edge(START, node("triage"))
    builder.add_conditional_edges(node("triage"), route, [node("billing"), node("shipping")])
    after_billing = node("billing")
    if spec.extra_node:
        builder.add_node("audit", audit)
        builder.add_edge(node("billing"), "audit")
        after_billing = "audit"
    if "wrap_up" in spec.removed:
        builder.add_edge(after_billing, END)
        builder.add_edge(node("shipping"), END)
    else:
        builder.add_node(node("wrap_up"), wrap_up, defer=spec.defer)
        builder.add_edge(after_billing, node("wrap_up"))
        builder.add_edge(node("shipping"), END if spec.reroute else node("wrap_up"))
        builder.add_edge(node("wrap_up"), END)
    return builder.compile(checkpointer=checkpointer, name=spec.name)


def _build_map_reduce(spec: AppSpec, world: World, checkpointer: Any) -> Any:
    """plan -Send-> check (one per order) -> merge (approval) -> settle (refunds each checked
    order: a side effect in a node)."""
    node = spec.node
    builder = StateGraph(_state_type(spec, "checks"))
    import re

    def plan(state: Any) -> dict[str, Any]:
        world.checkpoint("model", "plan")
        return {"notes": ["plan"]}

    def fan_out(state: Any) -> list[Send]:
        orders = re.findall(r"\b([A-Z]\d+)\b", _request(state))
        return [Send(node("check"), {"order": o}) for o in orders] or [
            Send(node("check"), {"order": "none"})
        ]

    def check(item: dict[str, Any]) -> dict[str, Any]:
        world.checkpoint("tool", "lookup")
        amount = world.amounts.get(item["order"], 0)
        world.record("tool", current_graph(), "check", {"order": item["order"], "amount": amount})
        return {"checks": [f"{item['order']}:{amount}"]}

    def merge(state: Any) -> dict[str, Any]:
        if spec.approval == "dynamic":
            answer = interrupt({"approve": "settle", "orders": len(state["checks"])})
            if answer not in ("yes", None):
                return {"notes": ["declined"]}
        return {"notes": ["merged"]}

    read = _reader(spec)

    def settle(state: Any) -> dict[str, Any]:
        read(state)
        if "declined" in state["notes"][-1:]:
            return {"messages": [AIMessage("declined")]}
        world.checkpoint("tool", "refund")
        for entry in sorted(set(state["checks"])):
            order, _, amount = entry.partition(":")
            world.record(
                "effect",
                current_graph(),
                "refund",
                {"subject": order, "amount": int(amount), "turn": world.turn},
            )
        return {
            "messages": [AIMessage(f"settled {len(set(state['checks']))}")],
            "notes": ["settled"],
        }

    def audit(state: Any) -> dict[str, Any]:
        return {"notes": ["audit"]}

    builder.add_node(node("plan"), plan)
    builder.add_node(node("check"), check)
    builder.add_node(node("settle"), settle)
    builder.add_edge(START, node("plan"))
    builder.add_conditional_edges(node("plan"), fan_out, [node("check")])
    last = node("check")
    if "merge" not in spec.removed:
        builder.add_node(node("merge"), merge, defer=spec.defer)
        builder.add_edge(node("check"), node("merge"))
        last = node("merge")
    if spec.extra_node:
        builder.add_node("audit", audit)
        builder.add_edge(last, "audit")
        last = "audit"
    builder.add_edge(last, node("settle"))
    builder.add_edge(node("settle"), END)
    return builder.compile(checkpointer=checkpointer, name=spec.name)


BUILDERS = {
    "react": _build_react,
    "agent": _build_agent,
    "supervisor": _build_supervisor,
    "swarm": _build_swarm,
    "deep": _build_deep,
    "functional": _build_functional,
    "subgraph": _build_subgraph,
    "map_reduce": _build_map_reduce,
}
