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
    """A verdict's documented blind spot: which cases it covers and why (the LangGraph or
    library behaviour behind it). `outcome`: ``miss`` or ``false_alarm``."""

    verdict: str
    outcome: str
    change: str
    """A change kind, or ``*``."""
    reason: str
    shape: str = "*"
    kind: str = "*"
    """A thread kind, or ``*``."""

    def covers(self, case: Case, judgement: Judgement) -> bool:
        return (
            judgement.verdict == self.verdict
            and judgement.outcome == self.outcome
            and self.change in ("*", case.change.kind)
            and self.shape in ("*", case.spec.shape)
            and self.kind in ("*", case.scenario.kind)
        )


KNOWN_LIMITS: tuple[KnownLimit, ...] = ()
"""Filled as the harness finds each limit and its reason is checked (docs/verdicts.md)."""


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
            if j.outcome in ("miss", "false_alarm") and explain(self.case, j) is None
        ]


def explain(case: Case, judgement: Judgement) -> KnownLimit | None:
    return next((limit for limit in KNOWN_LIMITS if limit.covers(case, judgement)), None)


def generate(seed: int, count: int) -> list[Case]:
    """At least `count` cases (more when coverage needs them: see the module docstring)."""
    rng = random.Random(seed)
    recordings: dict[tuple[int, str], Recording] = {}
    cases: list[Case] = []
    pools: list[tuple[AppSpec, Scenario, Change, Callable[[], Recording]]] = []
    for app_index in range(2):
        for shape in SHAPES:
            spec = app_spec(shape, rng)
            kinds = [k for k in KINDS if (app_index == 0 or k != "killed")]
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
        if (
            change.kind == "none"
            or (spec.shape, change.name, drawn.kind) not in seen
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
                if (
                    outcome in ("miss", "false_alarm")
                    and explain(result.case, judgement) is not None
                ):
                    outcome = f"known_{outcome}"
                table[(judgement.verdict, by(result))][outcome] += 1
        return table

    def render(self) -> str:
        lines = []
        for title, by in (
            ("by change", lambda r: r.case.change.kind),
            ("by app shape", lambda r: r.case.spec.shape),
            ("by thread kind", lambda r: r.case.scenario.kind),
        ):
            table = self.counts(by)
            lines.append(f"\n{title}:")
            header = f"{'verdict':8} {'':16} {'hit':>5} {'pass':>5} {'miss':>5} {'false':>5} {'known':>5} {'abst':>5}"
            lines.append(header)
            for (verdict, group), counter in sorted(table.items()):
                known = counter["known_miss"] + counter["known_false_alarm"]
                lines.append(
                    f"{verdict:8} {group:16} {counter['hit']:5} {counter['pass']:5} {counter['miss']:5} "
                    f"{counter['false_alarm']:5} {known:5} {counter['abstain']:5}"
                )
        totals = Counter()
        for result in self.results:
            for j in result.judgements:
                totals[
                    (
                        j.verdict,
                        j.outcome if explain(result.case, j) is None else f"known_{j.outcome}",
                    )
                ] += 1
        lines.append("\ntotals:")
        for verdict in VERDICTS:
            row = {k[1]: v for k, v in totals.items() if k[0] == verdict}
            lines.append(f"{verdict:8} " + ", ".join(f"{k} {v}" for k, v in sorted(row.items())))
        wrong_place = [
            (r.case.label, j.where) for r in self.results for j in r.judgements if j.where
        ]
        lines.append(
            f"\nverdicts naming another place than the first difference: {len(wrong_place)}"
        )
        lines += [f"  {label}: {where}" for label, where in wrong_place[:20]]
        return "\n".join(lines)
