"""The generated cases, the known-limits table and the confusion matrix.

`generate(seed, count)` draws apps of every shape, records threads of every kind that applies
on them, and pairs recordings with release changes: every recording with the control (the code
unchanged), every change that applies to an app with its recordings, the rest drawn at random
up to `count` cases. `run(cases)` judges each case with every verdict (`harness`), and
`Matrix` counts the outcomes per verdict, app shape and change, and says which misses and false
alarms are explained by `KNOWN_LIMITS`.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from ground_truth import harness
from ground_truth.apps import SHAPES, AppSpec
from ground_truth.changes import Change, app_spec, apply, changes_for
from ground_truth.harness import Judgement, Recording
from ground_truth.threads import KINDS, Scenario, scenario

VERDICTS = ("replay", "compat", "online", "diverge")


@dataclass(frozen=True)
class KnownLimit:
    """A verdict's documented blind spot: the misses (or false alarms) it explains, where, why
    (`reason`), and the LangGraph or library behaviour behind it (`behind`). A case's
    judgement is explained only when every item it missed (or reported falsely) matches one."""

    name: str
    verdicts: tuple[str, ...]
    outcome: str
    """``miss`` or ``false_alarm``."""
    item: str
    """A regular expression the missed (or false) item matches."""
    reason: str
    behind: str
    changes: tuple[str, ...] = ("*",)
    shapes: tuple[str, ...] = ("*",)
    kinds: tuple[str, ...] = ("*",)

    def covers(self, case: Case, verdict: str, outcome: str, item: str) -> bool:
        return (
            verdict in self.verdicts
            and outcome == self.outcome
            and _among(case.change.kind, self.changes)
            and _among(case.spec.shape, self.shapes)
            and _among(case.scenario.kind, self.kinds)
            and re.search(self.item, item) is not None
        )


def _among(value: str, allowed: tuple[str, ...]) -> bool:
    return "*" in allowed or value in allowed


DETECTORS = ("online", "diverge")
KNOWN_LIMITS: tuple[KnownLimit, ...] = (
    KnownLimit(
        "tool bodies are answered from the recording",
        ("replay",),
        "miss",
        r".",
        "replay answers every tool call with its recorded result and never runs a tool's "
        "body, so a release that changes what a tool returns replays as recorded",
        "Temporal's replayer does the same with activity results: replay checks the graph's "
        "code (routing, nodes, the tools offered and the arguments built), not the tools",
        changes=("tool_result",),
    ),
    KnownLimit(
        "model answers are answered from the recording",
        ("replay",),
        "miss",
        r".",
        "replay answers every model call with its recorded answer, so a prompt change, which "
        "acts only through what the model answers, replays as recorded",
        "a model's input is not stored in the checkpoints (only its answer): there is nothing "
        "recorded to compare a new prompt with",
        changes=("change_prompt",),
    ),
    KnownLimit(
        "a node that reads the world itself",
        ("replay",),
        "false_alarm",
        r"channel checks",
        "the map-reduce `check` node reads prices from the world directly, not through a tool "
        "call: replayed, it reads today's prices, not the ones the recorded fork read after "
        "they changed",
        "replay can answer only model and tool calls; node code runs for real and must be "
        "deterministic (as a Temporal workflow's code)",
        shapes=("map_reduce",),
        kinds=("forked",),
    ),
    KnownLimit(
        "a side effect in a node's own code",
        DETECTORS,
        "miss",
        r"^repeated refund",
        "the map-reduce `settle` node pays in its own code: no tool call, no tool message, so "
        "no record the detectors read says it ran",
        "the detectors read side effects from tool calls answered by tool messages in the "
        "messages channel (docs/divergence.md, 'Which duplicates the checkpoint data can "
        "reveal')",
        shapes=("map_reduce",),
    ),
    KnownLimit(
        "a side effect repeated under a renamed tool",
        DETECTORS,
        "miss",
        r"^repeated ",
        "a fork under a release that renamed the tool pays again through the new name: the "
        "detectors know a side effect by its tool's name and arguments, so the new name is "
        "another call (the rename itself is reported: a `trajectory` finding)",
        "nothing in a checkpoint ties two tool names to one side effect",
        changes=("rename_tool",),
    ),
    KnownLimit(
        "a fork that fails",
        DETECTORS,
        "miss",
        r"^departed raised",
        "a fork whose node raises (a required key read, a reducer that refuses two writes) or "
        "whose checkpoint cannot be loaded (a deferred trigger of another shape) writes no "
        "checkpoint for the failing step: there is nothing to compare",
        "LangGraph stores a failing task's error as an `__error__` write, not a checkpoint; "
        "the failure is the run's error (its span's status) and, before a deploy, compat's "
        "`new_required_channel` and `channel_restore_failed`",
    ),
    KnownLimit(
        "a sub-agent that gains a node",
        DETECTORS,
        "miss",
        r"^departed node (?!root )\w+ ",
        "the detectors compare a sub-agent run on a fork by the tool calls it made (stored "
        "with the parent's step), not node by node: a sub-agent graph that gains a node but "
        "makes the same calls is no departure for them (replay compares sub-agents node by "
        "node)",
        "a fork runs subgraphs again under new task ids, so their checkpoints have no earlier "
        "run in the same namespace to compare with (docs/divergence.md, Subgraphs)",
        changes=("change_subagent",),
    ),
    KnownLimit(
        "the Functional API keeps no messages channel",
        DETECTORS,
        "miss",
        r".",
        "an `@entrypoint` keeps its messages in its saved value and its `@task` results in "
        "writes, not in a `messages` channel: the detectors see no tool call",
        "the detectors read tool calls from the `messages_channel` of each checkpoint",
        shapes=("functional",),
    ),
    KnownLimit(
        "a fork of a branch written without the library, online",
        ("online",),
        "miss",
        r"^repeated ",
        "a branch written before the library was installed stored no record of its "
        "sub-agents' tool calls with its steps, so online a fork of it is compared by the "
        "root's own messages, where a sub-agent's calls do not appear (offline `diverge` "
        "reads the sub-agents' checkpoints and finds it)",
        "the online watch reads the reference branch's root checkpoints only (one read per "
        "checkpoint, bounded by the window), never their subgraphs'",
        shapes=("deep", "supervisor", "swarm", "subgraph"),
        kinds=("bare",),
    ),
    KnownLimit(
        "a side effect the kill hid",
        DETECTORS,
        "miss",
        r"^repeated refund",
        "a process killed right after a tool's side effect, before the tool returned, stores no "
        "trace of the call; the resume runs the tool again, and no checkpoint tells the two "
        "runs apart (`record_tool_start` spans do: `diverge` over the span files reports it, "
        "tests/integration/test_tool_keys_across_processes.py)",
        "LangGraph stores a task's writes when it finishes; a killed task leaves nothing",
        kinds=("killed",),
    ),
    KnownLimit(
        "a sub-agent run inside a tool, replayed",
        ("replay",),
        "miss",
        r"^answer tools ",
        "a deepagents sub-agent runs inside the `task` tool: replay cannot see its tools, so a "
        "recorded call of a renamed or changed sub-agent tool that the recording never ran "
        "(parked or killed before it) is not checked before the recording ends",
        "LangGraph lists a graph's subgraphs (`get_subgraphs`) from its nodes; a graph a tool "
        "invokes is not among them",
        shapes=("deep",),
        kinds=("parked", "killed"),
    ),
    KnownLimit(
        "the Functional API's tools are plain Python",
        ("compat", "replay"),
        "miss",
        r"^raises |^answer ",
        "an `@entrypoint` calls its tools from its own code (here by name from a dict): compat "
        "cannot know which tools it has, so a pending call of a renamed tool is not checked "
        "(the report says so: `not checked: pending tool calls in a graph whose tools compat "
        "cannot see`)",
        "no `ToolNode` in the graph: the tools are not part of what LangGraph describes "
        "(replay too cannot check a recorded call against the new tools before a recording "
        "that ends mid-run or parked ran it)",
        shapes=("functional",),
        kinds=("parked", "killed", "bare", "turns"),
    ),
    KnownLimit(
        "a failure in the node a killed recording died in",
        ("replay",),
        "miss",
        r"^raised ",
        "a recording killed inside a node does not say how that node ends; under the new code "
        "it fails at its start (a required key read), after the recording's last checkpoint, "
        "where nothing recorded is there to compare with",
        "LangGraph stores a node's outcome (writes, or `__error__`) only when it ends",
        kinds=("killed",),
    ),
    KnownLimit(
        "a delta channel written without the library",
        DETECTORS,
        "miss",
        r"^departed |^repeated ",
        "deepagents keeps `messages` as a delta channel; a branch written before the library "
        "was installed stores no value of it between snapshots, so its tool calls cannot be "
        "read or compared (replay reports such a thread unreplayable)",
        "a `DeltaChannel` keeps its updates as writes and stores its value only every "
        "`snapshot_frequency` checkpoints; the wrapper stores a hash of it in each checkpoint",
        shapes=("deep",),
        kinds=("bare",),
    ),
    KnownLimit(
        "a sub-agent run inside a tool",
        ("compat",),
        "miss",
        r"^tool error",
        "a deepagents sub-agent runs inside the `task` tool, not as a subgraph node: its "
        "tools are not known to compat, so a pending call of a renamed or changed sub-agent "
        "tool is not checked",
        "LangGraph lists a graph's subgraphs (`get_subgraphs`) from its nodes; a graph a tool "
        "invokes is not among them",
        shapes=("deep",),
    ),
)
"""Every verdict's known blind spots in the generated cases (docs/verdicts.md lists them)."""


@dataclass
class Case:
    """A recorded thread and a release change."""

    number: int
    spec: AppSpec
    scenario: Scenario
    change: Change
    recording: Callable[[], Recording]

    @property
    def label(self) -> str:
        return f"{self.number:03d}-{self.spec.shape}-{self.scenario.kind}-{self.change.name}"


@dataclass
class Result:
    case: Case
    judgements: list[Judgement]
    seconds: float

    def unexplained(self) -> list[Judgement]:
        return [
            j
            for j in self.judgements
            if j.outcome in ("miss", "false_alarm") and not explain(self.case, j)
        ]


def explain(case: Case, judgement: Judgement) -> list[KnownLimit]:
    """The known limits that explain every missed and false item of `judgement` ([] when one
    is not explained)."""
    items = [("miss", i) for i in judgement.missed]
    items += [("false_alarm", i) for i in judgement.false]
    found: list[KnownLimit] = []
    for outcome, item in items:
        limit = next(
            (k for k in KNOWN_LIMITS if k.covers(case, judgement.verdict, outcome, item)), None
        )
        if limit is None:
            return []
        found.append(limit)
    return found


def generate(seed: int, count: int) -> list[Case]:
    """At least `count` cases (more when coverage needs them: see the module docstring)."""
    rng = random.Random(seed)
    recordings: dict[tuple[int, str], Recording] = {}
    cases: list[Case] = []
    pools: list[tuple[AppSpec, Scenario, Change, Callable[[], Recording]]] = []
    for app_index in range(2):
        for shape in SHAPES:
            spec = app_spec(shape, rng)
            kinds = list(KINDS)
            for kind in kinds:
                drawn = scenario(spec, kind, rng)
                if drawn is None:
                    continue
                key = (len(recordings), f"{shape}-{kind}-{app_index}")
                thread = f"{shape}-{kind}-{app_index}-{seed}"
                recorder = _lazy(recordings, key, spec, drawn, thread)
                for change in changes_for(spec):
                    pools.append((spec, drawn, change, recorder))
                recordings.setdefault(key, None)  # type: ignore[arg-type]
    must: list[int] = []
    seen: set[tuple[str, str, str]] = set()
    for index, (spec, drawn, change, _) in enumerate(pools):
        if change.kind == "none" or (
            (spec.shape, change.name, drawn.kind) not in seen
            and (spec.shape, change.name) not in {(s, c) for s, c, _ in seen}
        ):
            must.append(index)
            seen.add((spec.shape, change.name, drawn.kind))
    rest = [i for i in range(len(pools)) if i not in set(must)]
    rng.shuffle(rest)
    chosen = sorted(must + rest[: max(0, count - len(must))])
    for number, index in enumerate(chosen):
        spec, drawn, change, recorder = pools[index]
        cases.append(Case(number, spec, drawn, change, recorder))
    return cases


def _lazy(
    cache: dict, key: tuple[int, str], spec: AppSpec, drawn: Scenario, thread: str
) -> Callable[[], Recording]:
    def get() -> Recording:
        if cache.get(key) is None:
            cache[key] = harness.record(spec, drawn, thread)
        return cache[key]

    return get


def judge(case: Case) -> Result:
    started = time.perf_counter()
    recording = case.recording()
    new = apply(case.spec, case.change)
    judgements = [
        harness.judge_replay(recording, new),
        harness.judge_compat(recording, new),
        harness.judge_detectors(recording, new, "online"),
        harness.judge_detectors(recording, new, "diverge"),
    ]
    if case.change.kind == "none":
        recorded = harness.judge_recording_online(recording)
        recorded.verdict = "online"
        judgements.append(recorded)
    return Result(case, judgements, time.perf_counter() - started)


def run(
    cases: Iterable[Case], progress: Callable[[Result], None] | None = None
) -> Iterator[Result]:
    for case in cases:
        result = judge(case)
        if progress is not None:
            progress(result)
        yield result


@dataclass
class Matrix:
    """Outcomes per verdict, shape and change: ``hit`` (reported what happened), ``pass``
    (nothing happened, nothing reported), ``miss``, ``false_alarm``, ``abstain``; misses and
    false alarms explained by a known limit counted apart (``known``)."""

    results: list[Result] = field(default_factory=list)

    def counts(self, by: Callable[[Result], str]) -> dict[tuple[str, str], Counter[str]]:
        table: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        for result in self.results:
            for judgement in result.judgements:
                outcome = judgement.outcome
                if outcome in ("miss", "false_alarm") and explain(result.case, judgement):
                    outcome = f"known_{outcome}"
                table[(judgement.verdict, by(result))][outcome] += 1
        return table

    def headline(self) -> list[str]:
        """Per verdict: judgements, those where something happened (the oracle's truth), caught,
        missed (known / unexplained), false alarms on the control (unchanged code) and on
        changes, abstentions."""
        columns = (
            ("judged", "judged"),
            ("truth", "truth"),
            ("caught", "caught"),
            ("miss", "missed"),
            ("known_miss", "known miss"),
            ("false_control", "false alarm, control"),
            ("known_false_control", "known, control"),
            ("false_changes", "false alarm, change"),
            ("known_false_changes", "known, change"),
            ("abstain", "abstained"),
        )
        rows = [f"{'verdict':8} " + " ".join(f"{title:>{len(title)}}" for _, title in columns)]
        for verdict in VERDICTS:
            c: Counter[str] = Counter()
            for result in self.results:
                control = result.case.change.kind == "none"
                for j in result.judgements:
                    if j.verdict != verdict:
                        continue
                    known = bool(explain(result.case, j))
                    c["judged"] += 1
                    c["truth"] += bool(j.truth) and j.abstained is None
                    c["caught"] += j.outcome == "hit"
                    if j.outcome == "miss":
                        c["known_miss" if known else "miss"] += 1
                    if j.outcome == "false_alarm":
                        where = "control" if control else "changes"
                        c[f"known_false_{where}" if known else f"false_{where}"] += 1
                    c["abstain"] += j.outcome == "abstain"
            rows.append(
                f"{verdict:8} " + " ".join(f"{c[key]:>{len(title)}}" for key, title in columns)
            )
        return rows

    def render(self) -> str:
        lines = [f"{len(self.results)} cases", *self.headline()]
        for title, by in (
            ("by change", lambda r: r.case.change.kind),
            ("by app shape", lambda r: r.case.spec.shape),
            ("by thread kind", lambda r: r.case.scenario.kind),
        ):
            table = self.counts(by)
            lines.append(f"\n{title}:")
            lines.append(
                f"{'verdict':8} {'':16} {'hit':>5} {'pass':>5} {'miss':>5} {'false':>5} "
                f"{'known miss':>10} {'known false':>11} {'abst':>5}"
            )
            for (verdict, group), counter in sorted(table.items()):
                lines.append(
                    f"{verdict:8} {group:16} {counter['hit']:5} {counter['pass']:5} "
                    f"{counter['miss']:5} {counter['false_alarm']:5} {counter['known_miss']:10} "
                    f"{counter['known_false_alarm']:11} {counter['abstain']:5}"
                )
        limits: Counter[str] = Counter(
            limit.name for r in self.results for j in r.judgements for limit in explain(r.case, j)
        )
        lines.append("\nknown limits used (items explained):")
        lines += [f"  {count:4}  {name}" for name, count in limits.most_common()]
        wrong_place = [
            (r.case.label, j.where) for r in self.results for j in r.judgements if j.where
        ]
        lines.append(
            f"\nverdicts naming another place than the first difference: {len(wrong_place)}"
        )
        lines += [f"  {label}: {where}" for label, where in wrong_place[:20]]
        return "\n".join(lines)


def known_limits_markdown() -> str:
    """The known-limits table of docs/verdicts.md, one row per entry of `KNOWN_LIMITS`."""
    rows = []
    for limit in KNOWN_LIMITS:
        where = ", ".join(
            f"{label} {', '.join(values)}"
            for label, values in (
                ("changes:", limit.changes),
                ("apps:", limit.shapes),
                ("threads:", limit.kinds),
            )
            if values != ("*",)
        )
        kind = "misses" if limit.outcome == "miss" else "false alarms"
        rows.append(
            f"| {limit.name} | {', '.join(limit.verdicts)} ({kind}) | {where or 'all cases'} "
            f"| {limit.reason} | {limit.behind} |"
        )
    return "\n".join(rows)
