"""Generated apps and release changes: `app_spec(shape, rng)` draws an app of a shape,
`changes_for(spec)` lists the release changes that apply to it, `apply(spec, change)` makes
the release."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from ground_truth.apps import AgentSpec, AppSpec, StateKey, tool
from ground_truth.desk import EMAIL_FLAG, PROMPT_FLAGS, ToolSpec

KINDS = (
    "none",
    "rename_tool",
    "remove_tool",
    "tool_args",
    "tool_result",
    "add_node",
    "remove_node",
    "rename_node",
    "reroute_edge",
    "add_state_key",
    "change_reducer",
    "change_prompt",
    "toggle_defer",
    "change_subagent",
)
"""Every kind of release change (`none`: the control, the code unchanged)."""


@dataclass(frozen=True)
class Change:
    """A release change: its kind, where (``root``, an agent's role, a node) and a variant."""

    kind: str
    where: str = ""
    variant: str = ""

    @property
    def name(self) -> str:
        return ":".join(p for p in (self.kind, self.where, self.variant) if p)


def app_spec(shape: str, rng: random.Random) -> AppSpec:
    """An app of `shape`, its knobs drawn from `rng`."""
    ids = rng.choice(("random", "fixed"))
    durability = rng.choice(("async", "sync"))
    approval = rng.choice(("dynamic", "dynamic", "static", "none"))
    if shape not in ("react", "agent"):
        approval = "dynamic" if approval == "static" else approval
    flags = [f for f in PROMPT_FLAGS if rng.random() < 0.3]
    prompt = " ".join(["You help customers with their orders.", *flags])
    dynamic = approval == "dynamic"
    email = rng.random() < 0.5 or EMAIL_FLAG in flags
    if shape in ("react", "agent", "functional"):
        tools = [tool("lookup"), tool("refund", approval=dynamic), tool("track")]
        if email:
            tools.append(tool("email"))
        agents = (AgentSpec("desk", tuple(tools), prompt),)
    elif shape == "supervisor":
        billing = [tool("lookup"), tool("refund", approval=dynamic)] + (
            [tool("email")] if email else []
        )
        agents = (
            AgentSpec(
                "supervisor",
                (),
                "You route: billing for refunds and checks, shipping for packages.",
            ),
            AgentSpec("billing_agent", tuple(billing), prompt),
            AgentSpec("shipping_agent", (tool("track"),), "You track packages."),
        )
    elif shape == "swarm":
        agents = (
            AgentSpec("alice", (tool("lookup"), tool("track")), "You look orders up."),
            AgentSpec(
                "bob",
                (tool("refund", approval=dynamic), *([tool("email")] if email else [])),
                prompt,
            ),
        )
    elif shape == "deep":
        agents = (
            AgentSpec("desk", (tool("lookup"), tool("track")), "You help customers."),
            AgentSpec(
                "refunds",
                (tool("refund", approval=dynamic), *([tool("email")] if email else [])),
                prompt,
            ),
        )
    elif shape == "subgraph":
        agents = (
            AgentSpec("billing", (tool("lookup"), tool("refund", approval=dynamic)), prompt),
            AgentSpec("shipping", (tool("track"),), "You track packages."),
        )
    elif shape == "map_reduce":
        agents = ()
    else:
        raise ValueError(shape)
    return AppSpec(shape, agents, ids=ids, approval=approval, durability=durability)


def changes_for(spec: AppSpec) -> list[Change]:
    """The changes that apply to `spec` (the control first)."""
    found = [Change("none")]
    refunder = _owner(spec, "refund")
    multi = spec.shape in ("supervisor", "swarm", "deep", "subgraph")
    if refunder is not None:
        where = "sub" if multi else "root"
        found += [
            Change("rename_tool", where, "refund"),
            Change("tool_args", where, "refund"),
            Change(
                "change_prompt",
                refunder.role,
                "email" if EMAIL_FLAG not in refunder.prompt else "no_email",
            ),
        ]
        found.append(
            Change("rename_tool", "root" if spec.shape != "supervisor" else "sub", "lookup")
        )
        found.append(Change("tool_result", "", "lookup"))
        removable = [t for t in _all_tools(spec) if t.capability in ("track", "email")]
        if removable:
            found.append(Change("remove_tool", "", removable[0].capability))
    if spec.shape in ("react", "agent"):
        found.append(Change("add_node", "root"))
    if spec.shape in ("supervisor", "swarm", "subgraph"):
        found.append(Change("change_subagent", refunder.role if refunder else ""))
    if spec.shape in ("subgraph", "map_reduce"):
        part = "billing" if spec.shape == "subgraph" else "check"
        fan_in = "wrap_up" if spec.shape == "subgraph" else "merge"
        found += [
            Change("add_node", "middle"),
            Change("remove_node", fan_in),
            Change("rename_node", part),
            Change("change_reducer"),
            Change("toggle_defer", fan_in),
        ]
        found += [
            Change(
                "add_state_key",
                "",
                f"{'required' if required else 'defaulted'}_{'read' if read else 'unread'}",
            )
            for required in (True, False)
            for read in (True, False)
        ]
        if spec.shape == "subgraph":
            found.append(Change("reroute_edge", "shipping"))
    return found


def apply(spec: AppSpec, change: Change) -> AppSpec:
    """The release `change` makes of `spec`."""
    kind, variant = change.kind, change.variant
    if kind == "none":
        return spec
    if kind == "rename_tool":
        new = {"refund": "refund_order", "lookup": "find_order"}[variant]
        return _tools(
            spec, lambda t: dataclasses.replace(t, name=new) if t.capability == variant else t
        )
    if kind == "tool_args":
        return _tools(
            spec,
            lambda t: (
                dataclasses.replace(t, params=("order_id", "amount"))
                if t.capability == variant
                else t
            ),
        )
    if kind == "tool_result":
        return _tools(
            spec, lambda t: dataclasses.replace(t, variant="tax") if t.capability == variant else t
        )
    if kind == "remove_tool":
        return dataclasses.replace(
            spec,
            agents=tuple(
                dataclasses.replace(a, tools=tuple(t for t in a.tools if t.capability != variant))
                for a in spec.agents
            ),
        )
    if kind == "change_prompt":

        def prompt(agent: AgentSpec) -> AgentSpec:
            if agent.role != change.where:
                return agent
            text = (
                agent.prompt.replace(EMAIL_FLAG, "").strip()
                if variant == "no_email"
                else f"{agent.prompt} {EMAIL_FLAG}"
            )
            return dataclasses.replace(agent, prompt=text)

        spec = dataclasses.replace(spec, agents=tuple(prompt(a) for a in spec.agents))
        if variant == "email" and not any(t.capability == "email" for t in _all_tools(spec)):
            owner = _owner(spec, "refund")
            return _tools(spec, lambda t: t, add_to=owner.role if owner else None)
        return spec
    if kind == "add_node" and change.where == "root":
        return dataclasses.replace(
            spec, agents=(dataclasses.replace(spec.agents[0], extra_node=True), *spec.agents[1:])
        )
    if kind == "add_node":
        return dataclasses.replace(spec, extra_node=True)
    if kind == "change_subagent":
        return dataclasses.replace(
            spec,
            agents=tuple(
                dataclasses.replace(a, extra_node=True) if a.role == change.where else a
                for a in spec.agents
            ),
        )
    if kind == "remove_node":
        return dataclasses.replace(spec, removed=(change.where,))
    if kind == "rename_node":
        return dataclasses.replace(
            spec, nodes={change.where: {"billing": "refunds", "check": "verify"}[change.where]}
        )
    if kind == "reroute_edge":
        return dataclasses.replace(spec, reroute=True)
    if kind == "add_state_key":
        required, read = variant.split("_")
        return dataclasses.replace(
            spec, state_key=StateKey("region", required == "required", read == "read")
        )
    if kind == "change_reducer":
        return dataclasses.replace(spec, replace_reducer=True)
    if kind == "toggle_defer":
        return dataclasses.replace(spec, defer=not spec.defer)
    raise ValueError(change)


def _all_tools(spec: AppSpec) -> list[ToolSpec]:
    return [t for a in spec.agents for t in a.tools]


def _owner(spec: AppSpec, capability: str) -> AgentSpec | None:
    return next((a for a in spec.agents if any(t.capability == capability for t in a.tools)), None)


def _tools(spec: AppSpec, edit: object, add_to: str | None = None) -> AppSpec:
    def agent(a: AgentSpec) -> AgentSpec:
        tools = tuple(edit(t) for t in a.tools)  # type: ignore[operator]
        if add_to == a.role:
            tools += (tool("email"),)
        return dataclasses.replace(a, tools=tools)

    return dataclasses.replace(spec, agents=tuple(agent(a) for a in spec.agents))
