"""The oracle: what really happens when a thread runs on, and what that says about each
verdict's claim.

An `Observation` is one drive of real runs (scripted models, real tools, a real saver): the
world's log (nodes LangGraph started per graph, model answers, tool bodies with their
arguments and results, side effects with their turn, tool errors a model was shown), how the
drive ended, and the final root state (messages without their ids).

- **replay's claim**, "the new code does what the recorded thread did": the thread's acts run
  from scratch under the old and the new code (`Observation` each, a killed recording stopped
  at the same kill point) must not differ (`differences`).
- **compat's claim**, "the new graph can resume the stored thread": the stored thread continued
  (approved, resumed, or given its next turn) under the old and the new code; the new code
  `breaks` it when the continuation raises, shows a model a tool error, drops the work pending
  at the stored checkpoint (no progress where the old code made some), or loses a state value.
- **the detectors' claim** (online and offline `diverge`), "this run departs from the branch it
  left, or runs a side effect again": a fork departs when it does otherwise than the same fork
  under the old code (`differences`); a side effect runs again when the ledger holds it twice
  for one turn (`repeated_effects`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

Event = tuple[str, str, str, str]
COMPARED = ("node", "answer", "tool", "effect", "error")


@dataclass
class Observation:
    """One drive (see the module docstring)."""

    events: list[Event]
    raised: str | None = None
    stopped: bool = False
    final: dict[str, str] = field(default_factory=dict)
    pending: bool = False
    """The thread waits (an interrupt, or nodes still scheduled) at the end."""
    impossible: str | None = None

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e[0] == kind]

    def progress(self) -> int:
        """Model answers, tool bodies and side effects: the work done."""
        return sum(1 for e in self.events if e[0] in ("answer", "tool", "effect"))


def normalize_state(values: dict[str, Any]) -> dict[str, str]:
    """Each root state key as canonical text, messages without ids."""
    out = {}
    for key, value in (values or {}).items():
        out[key] = json.dumps(_plain(value), sort_keys=True, default=repr)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        calls = [[c["name"], c.get("args")] for c in getattr(value, "tool_calls", None) or ()]
        return [
            value.type,
            getattr(value, "name", None),
            str(value.content),
            calls,
            getattr(value, "status", None),
        ]
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Difference:
    """Where two observations first differ: the category, the graph (namespace without task
    ids) and a content-free hint."""

    category: str
    graph: str
    detail: str


def _by_graph(events: Iterable[Event]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for kind, graph, name, detail in events:
        if kind == "node":
            detail = ""  # steps shift when a node is added elsewhere: compare the sequence
        if kind == "effect":
            detail = json.dumps(
                {k: v for k, v in json.loads(detail).items() if k != "turn"}, sort_keys=True
            )
        out.setdefault((kind, graph), []).append((name, detail))
    return out


def differences(
    old: Observation, new: Observation, *, final_keys: Iterable[str] | None = None
) -> list[Difference]:
    """How `new` departs from `old`: events per category and graph (nodes as a multiset per
    graph, the rest in order), the failure, the stop, and the final values of `old`'s keys."""
    found: list[Difference] = []
    if old.impossible != new.impossible:
        found.append(Difference("impossible", "", str(new.impossible or old.impossible)))
    if old.raised != new.raised:
        found.append(Difference("raised", "", f"{old.raised} -> {new.raised}"))
    if old.stopped != new.stopped:
        found.append(Difference("stopped", "", f"{old.stopped} -> {new.stopped}"))
    a, b = _by_graph(old.events), _by_graph(new.events)
    for key in sorted(set(a) | set(b)):
        kind, graph = key
        left, right = a.get(key, []), b.get(key, [])
        if kind == "node":
            left, right = sorted(left), sorted(right)
        if left != right:
            at = next(
                (i for i, (x, y) in enumerate(zip(left, right, strict=False)) if x != y),
                min(len(left), len(right)),
            )
            name = (left[at] if at < len(left) else right[at])[0]
            found.append(Difference(kind, graph, name))
    keys = list(final_keys) if final_keys is not None else list(old.final)
    for key in keys:
        if old.final.get(key) != new.final.get(key):
            found.append(Difference("state", "", key))
    if old.pending != new.pending:
        found.append(Difference("pending", "", f"{old.pending} -> {new.pending}"))
    return sorted(found, key=_order)


def _order(d: Difference) -> tuple[int, str]:
    ranks = {
        "raised": 0,
        "impossible": 0,
        "error": 1,
        "tool": 2,
        "answer": 3,
        "effect": 4,
        "node": 5,
        "stopped": 6,
        "pending": 7,
        "state": 8,
    }
    return ranks.get(d.category, 9), d.graph


def breaks(old: Observation, new: Observation, stored_keys: Iterable[str]) -> list[str]:
    """Why the new code breaks the stored thread's continuation (compat's claim), content-free;
    [] when it continues it."""
    why: list[str] = []
    if new.raised and new.raised != old.raised:
        why.append(f"raises {new.raised}")
    errors = Counter((g, n) for _, g, n, _ in new.of("error")) - Counter(
        (g, n) for _, g, n, _ in old.of("error")
    )
    why += [f"tool error {n} in {g or 'root'}" for g, n in sorted(errors)]
    if old.progress() and not new.progress() and not new.raised:
        why.append("pending work dropped")
    for key in stored_keys:
        if key == "messages":
            continue
        was, now = old.final.get(key), new.final.get(key)
        if was is not None and (now is None or _type(was) != _type(now)):
            why.append(f"state {key} lost")
    return why


def _type(text: str) -> str:
    try:
        return type(json.loads(text)).__name__
    except ValueError:
        return "text"


@dataclass(frozen=True)
class Effect:
    """A side effect of the ledger: capability, subject and the turn it served."""

    capability: str
    subject: str
    turn: int
    amount: Any
    index: int
    """Its position in the thread's whole ledger."""


def ledger(events: Sequence[Event], start: int = 0) -> list[Effect]:
    out = []
    for i, (kind, _, name, detail) in enumerate(events):
        if kind == "effect":
            data = json.loads(detail)
            out.append(
                Effect(name, str(data["subject"]), int(data["turn"]), data.get("amount"), start + i)
            )
    return out


def repeated_effects(effects: Sequence[Effect], since: int = 0) -> list[tuple[Effect, Effect]]:
    """(first, again) for each side effect done again for the same turn, the second time at or
    after position `since` of the ledger."""
    first: dict[tuple[str, str, int], Effect] = {}
    found = []
    for effect in effects:
        key = (effect.capability, effect.subject, effect.turn)
        if key in first and effect.index >= since:
            found.append((first[key], effect))
        first.setdefault(key, effect)
    return found
