"""Recording threads and judging one case: a recorded thread, a release change, the oracle's
ground truth for each verdict and what each verdict said.

A recording is made once per (app, scenario) on an in-memory SQLite database (a killed one in a
subprocess that really dies, on a file); every run of a case works on a copy of it (SQLite's
backup API), so the recording is never touched.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from ground_truth import verdicts
from ground_truth.apps import AppSpec, build
from ground_truth.desk import World, capability_of
from ground_truth.oracle import (
    Difference,
    Event,
    Observation,
    breaks,
    differences,
    ledger,
    normalize_state,
    repeated_effects,
)
from ground_truth.threads import Act, Outcome, Scenario, drive
from langgraph.checkpoint.otel.analysis.detectors import Finding

APPS = Path(__file__).resolve().parent.parent  # tests/apps: ground_truth's parent


def copy_db(conn: sqlite3.Connection) -> sqlite3.Connection:
    """A copy of a SQLite database, in memory."""
    copy = sqlite3.connect(":memory:", check_same_thread=False)
    conn.backup(copy)
    return copy


def observe(
    graph: Any, thread_id: str, acts: tuple[Act, ...], world: World, spec: AppSpec, **kw: Any
) -> tuple[Observation, Outcome]:
    """Drive `acts` and observe (see `oracle.Observation`)."""
    world.new_segment()
    outcome = drive(graph, thread_id, acts, world, spec, **kw)
    final, pending = final_state(graph, thread_id)
    return Observation(
        list(world.log), outcome.raised, outcome.stopped, final, pending, outcome.impossible
    ), outcome


def final_state(graph: Any, thread_id: str) -> tuple[dict[str, str], bool]:
    """The thread's root state (normalized) and whether it waits; a state LangGraph cannot
    rebuild (it raises) is the exception's class."""
    try:
        state = graph.get_state({"configurable": {"thread_id": thread_id}})
    except Exception as exc:
        return {"(unreadable)": type(exc).__name__}, False
    values = state.values if isinstance(state.values, dict) else {"value": state.values}
    return normalize_state(values), bool(state.interrupts or state.next)


@dataclass
class Recording:
    """A thread recorded by the old code (see the module docstring)."""

    spec: AppSpec
    scenario: Scenario
    thread_id: str
    db: sqlite3.Connection
    events: list[Event]
    amounts: dict[str, int]
    online: list[Finding] = field(default_factory=list)
    fork_ref: Observation | None = None
    """The recorded fork's left branch, as the same fork re-run on the world it ran in."""
    fork_obs: Observation | None = None
    """The recorded fork itself."""
    stored_keys: tuple[str, ...] = ()
    """Root state keys holding a value at the thread's latest checkpoint."""

    def saver(self) -> SqliteSaver:
        return SqliteSaver(copy_db(self.db))

    @cached_property
    def rerun_old(self) -> Observation:
        return rerun(self.spec, self.scenario, self.thread_id)

    @cached_property
    def continuation_old(self) -> Observation:
        return continue_thread(self, self.spec)[0]

    @cached_property
    def fork_old(self) -> Observation | None:
        return fork_thread(self, self.spec)[0] if self.scenario.fork_back is not None else None


def record(spec: AppSpec, scenario: Scenario, thread_id: str) -> Recording:
    """Record `scenario` on `spec` (see the module docstring)."""
    if scenario.kill is not None:
        return _record_killed(spec, scenario, thread_id)
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    online = verdicts.Online()
    inner = SqliteSaver(conn)
    saver = inner if scenario.bare else verdicts.instrumented(inner, spec, online)
    world = World()
    graph = build(spec, world, saver)
    world.new_segment()
    events: list[Event] = []
    fork_ref = fork_obs = None
    for act in scenario.acts:
        if act.kind == "fork":
            before = copy_db(conn)
            ref_world = World()
            ref_graph = build(spec, ref_world, verdicts.instrumented(SqliteSaver(before), spec))
            fork_ref, _ = observe(ref_graph, thread_id, (act,), ref_world, spec)
            world.new_segment()
            drive(graph, thread_id, (act,), world, spec)
            fork_obs = _observation_now(graph, thread_id, world)
            events += world.log
            world.new_segment()
            continue
        drive(graph, thread_id, (act,), world, spec)
        events += world.log
        world.new_segment()
    state = graph.get_state({"configurable": {"thread_id": thread_id}})
    keys = (
        tuple(k for k, v in (state.values or {}).items() if v is not None)
        if isinstance(state.values, dict)
        else ()
    )
    return Recording(
        spec,
        scenario,
        thread_id,
        conn,
        events,
        dict(world.amounts),
        online.findings,
        fork_ref,
        fork_obs,
        keys,
    )


def _observation_now(graph: Any, thread_id: str, world: World) -> Observation:
    final, pending = final_state(graph, thread_id)
    return Observation(list(world.log), final=final, pending=pending)


def _record_killed(spec: AppSpec, scenario: Scenario, thread_id: str) -> Recording:
    """Record in a subprocess that SIGKILLs itself at the kill point (`record_main`)."""
    with tempfile.TemporaryDirectory() as tmp:
        db, log = Path(tmp, "threads.db"), Path(tmp, "log.jsonl")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(APPS), os.environ.get("PYTHONPATH", "")]),
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ground_truth.record",
                spec.to_json(),
                scenario.to_json(),
                thread_id,
                str(db),
                str(log),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != -9:
            raise RuntimeError(
                f"the recording was not killed (exit {done.returncode}): {done.stderr[-2000:]}"
            )
        file_conn = sqlite3.connect(db)
        conn = copy_db(file_conn)
        file_conn.close()
        events: list[Event] = [
            tuple(json.loads(line)) for line in log.read_text().splitlines() if line
        ]  # type: ignore[misc]
    world = World()
    graph = build(spec, world, SqliteSaver(conn))
    state = graph.get_state({"configurable": {"thread_id": thread_id}})
    keys = (
        tuple(k for k, v in (state.values or {}).items() if v is not None)
        if isinstance(state.values, dict)
        else ()
    )
    return Recording(spec, scenario, thread_id, conn, events, dict(world.amounts), stored_keys=keys)


def rerun(spec: AppSpec, scenario: Scenario, thread_id: str) -> Observation:
    """The scenario's acts from scratch (a killed one stops at its kill point)."""
    world = World(kill_at=scenario.kill)
    graph = build(spec, world, InMemorySaver())
    return observe(graph, thread_id, scenario.acts, world, spec)[0]


def continue_thread(
    rec: Recording, spec: AppSpec
) -> tuple[Observation, SqliteSaver, verdicts.Online]:
    """The stored thread's continuation (`Scenario.next_acts`) under `spec`, on a copy."""
    online = verdicts.Online()
    inner = rec.saver()
    world = World(amounts=dict(rec.amounts))
    graph = build(spec, world, verdicts.instrumented(inner, spec, online))
    observation, _ = observe(graph, rec.thread_id, rec.scenario.next_acts, world, spec)
    return observation, inner, online


def fork_thread(rec: Recording, spec: AppSpec) -> tuple[Observation, SqliteSaver, verdicts.Online]:
    """Time travel under `spec`: a fork back to the start of the thread's last turn, approved."""
    online = verdicts.Online()
    inner = rec.saver()
    world = World(amounts=dict(rec.amounts))
    graph = build(spec, world, verdicts.instrumented(inner, spec, online))
    turns = [a.turn for a in rec.scenario.acts if a.kind in ("turn", "fork")]
    act = Act("fork", position=-2, turn=turns[-1] if turns else 0)
    observation, _ = observe(graph, rec.thread_id, (act,), world, spec)
    return observation, inner, online


# --- judging -----------------------------------------------------------------------------------


@dataclass
class Judgement:
    """One verdict on one case against the ground truth.

    `truth`: what the oracle found that the verdict must report (content-free lines; [] when
    nothing); `said`: what the verdict reported ([] when it passed the thread); `missed` and
    `false`: truth not reported, reports with no truth behind them; `abstained`: the verdict
    declined to judge (replay: "cannot be replayed"); `where`: a report names another place
    than the first difference."""

    verdict: str
    truth: list[str]
    said: list[str]
    missed: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)
    abstained: str | None = None
    where: str | None = None

    @property
    def outcome(self) -> str:
        if self.abstained is not None:
            return "abstain"
        if self.missed:
            return "miss"
        if self.false:
            return "false_alarm"
        return "hit" if self.truth else "pass"


def judge_replay(rec: Recording, spec_new: AppSpec) -> Judgement:
    new = rerun(spec_new, rec.scenario, rec.thread_id)
    diffs = differences(rec.rerun_old, new, final_keys=rec.rerun_old.final)
    truth = [f"{d.category} {d.graph or 'root'} {d.detail}" for d in diffs]
    result = verdicts.replay(build(spec_new, World()), rec.saver(), rec.thread_id)
    from langgraph.checkpoint.otel.testing.replay import describe

    said = [] if result.ok else [describe(result)]
    judgement = Judgement("replay", truth, said)
    if result.unreplayable is not None:
        judgement.abstained = result.unreplayable
    elif truth and not said:
        judgement.missed = truth[:1]
    elif said and not truth:
        judgement.false = said
    elif said and truth:
        judgement.where = _replay_place(result, diffs, spec_new)
    return judgement


def _replay_place(result: Any, diffs: list[Difference], spec: AppSpec) -> str | None:
    """None when the replay's divergence names the graph where the runs first differ (the
    subgraph it names, or for the root the node that runs that subgraph), else what it
    named."""
    finding = result.divergence
    graphs = {d.graph.split("|")[0] for d in diffs}
    if spec.shape == "functional":  # the entrypoint's tasks run in the root graph's loop
        graphs = {"" if g == "desk_flow" else g for g in graphs}
    named = {(finding.graph or "").split("|")[0], *(finding.node or "").split(",")}
    if "" in graphs or graphs & named:
        return None
    return (
        f"named {finding.graph or 'the root'} {finding.node}, the runs differ in {sorted(graphs)}"
    )


def judge_compat(rec: Recording, spec_new: AppSpec) -> Judgement:
    new, _, _ = continue_thread(rec, spec_new)
    truth = breaks(rec.continuation_old, new, rec.stored_keys)
    said = verdicts.compat(build(spec_new, World()), rec.saver(), rec.thread_id)
    judgement = Judgement("compat", truth, said)
    if truth and not said:
        judgement.missed = truth[:1]
    elif said and not truth:
        judgement.false = said
    return judgement


@dataclass
class DetectorTruth:
    """What the detectors must report over some runs: side effects done again (tool or
    node, content-free) and forks that departed (with where)."""

    repeated: list[str] = field(default_factory=list)
    departed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [f"repeated {r}" for r in self.repeated] + [f"departed {d}" for d in self.departed]


def _repeated(effects_events: list[Event], since: int) -> list[str]:
    pairs = repeated_effects(ledger(effects_events), since)
    return sorted({f"{a.capability} {a.subject}" for a, _ in pairs})


def _departed(ref: Observation | None, fork: Observation | None) -> list[str]:
    if ref is None or fork is None:
        return []
    diffs = [d for d in differences(ref, fork) if d.category != "pending"]
    return [f"{d.category} {d.graph or 'root'} {d.detail}" for d in diffs[:1]]


def judge_detectors(rec: Recording, spec_new: AppSpec, findings_of: str) -> Judgement:
    """The online detectors (`findings_of` ``online``) or offline `diverge` (``diverge``) on
    the thread's runs under `spec_new`: its continuation, and a fork back into its last turn
    (time travel) where the scenario has one. Online judges the runs of the new code; offline
    reads the whole stored history, the recording's own fork and side effects included."""
    cont, cont_saver, cont_online = continue_thread(rec, spec_new)
    base = list(rec.events)
    truth = DetectorTruth(_repeated(base + cont.events, len(base)))
    findings = list(cont_online.findings)
    runs = [(cont_saver, base + cont.events)]
    if rec.scenario.fork_back is not None:
        fork, fork_saver, fork_online = fork_thread(rec, spec_new)
        truth.repeated = sorted({*truth.repeated, *_repeated(base + fork.events, len(base))})
        truth.departed += _departed(rec.fork_old, fork)
        findings += fork_online.findings
        runs.append((fork_saver, base + fork.events))
    if findings_of == "diverge":
        whole = sorted({r for _, events in runs for r in _repeated(events, 0)})
        truth.repeated = whole
        truth.departed += _departed(rec.fork_ref, rec.fork_obs)
        findings = []
        extra = verdicts.policy(spec_new) if rec.scenario.bare else None
        for saver, _ in runs:
            findings += verdicts.diverge(saver, rec.thread_id, extra)
    return _judge_findings(findings_of, truth, findings, rec)


def judge_recording_online(rec: Recording) -> Judgement:
    """The online detectors while the old code recorded the thread (its own fork included)."""
    truth = DetectorTruth(_repeated(rec.events, 0), _departed(rec.fork_ref, rec.fork_obs))
    return _judge_findings("online", truth, rec.online, rec)


def _judge_findings(
    name: str, truth: DetectorTruth, findings: list[Finding], rec: Recording
) -> Judgement:
    said = sorted({_describe(f) for f in findings})
    judgement = Judgement(name, truth.lines(), said)
    repeat_kinds = {"duplicate_tool_call", "repeated_side_effect"}
    depart_kinds = {"trajectory", "state", "tool_arguments"}
    repeat_findings = [f for f in findings if f.kind in repeat_kinds]
    depart_findings = [f for f in findings if f.kind in depart_kinds]
    repeated_caps = {r.split()[0] for r in truth.repeated}
    for r in truth.repeated:
        capability = r.split()[0]
        if not any(capability_of(f.tool or f.actual or "") == capability for f in repeat_findings):
            judgement.missed.append(f"repeated {r}")
    if truth.departed and not depart_findings:
        judgement.missed.append(f"departed {truth.departed[0]}")
    for f in repeat_findings:
        if capability_of(f.tool or f.actual or "") not in repeated_caps:
            judgement.false.append(_describe(f))
    if depart_findings and not truth.departed:
        judgement.false += sorted({_describe(f) for f in depart_findings})
    judgement.false += sorted(
        {_describe(f) for f in findings if f.kind not in repeat_kinds | depart_kinds}
    )
    return judgement


def _describe(f: Finding) -> str:
    parts = [f.kind, f"step {f.step}", f"node {f.node}"]
    if f.channel:
        parts.append(f"channel {f.channel}")
    parts.append(f"{f.expected} -> {f.actual}")
    return " ".join(str(p) for p in parts)
