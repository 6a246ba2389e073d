"""The ground-truth harness in the suite (issue 29): at least 300 generated cases, a fixed seed,
every verdict (replay, compat, the online detectors, offline diverge) judged against what
really happens when each recorded thread runs on under the old and the new code
(`ground_truth`). A case fails on a miss or a false alarm that no known limit explains; the
matrix is printed at the end of the run and written to ``.ground-truth/matrix.txt``.

``GROUND_TRUTH_CASES`` and ``GROUND_TRUTH_SEED`` draw more or other cases (``make ground-truth``
runs the harness alone, with its progress).
"""

from __future__ import annotations

import os

import pytest

from ground_truth.apps import SHAPES
from ground_truth.cases import KNOWN_LIMITS, Case, Matrix, explain, generate, judge
from ground_truth.changes import KINDS as CHANGES
from ground_truth.threads import KINDS as THREADS
from suite_paths import REPO

SEED = int(os.environ.get("GROUND_TRUTH_SEED", "29"))
COUNT = int(os.environ.get("GROUND_TRUTH_CASES", "300"))
CASES = generate(SEED, COUNT)
MATRIX = Matrix()
REPORT = REPO / ".ground-truth" / "matrix.txt"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_every_verdict_agrees_with_what_really_happens(case: Case) -> None:
    result = judge(case)
    MATRIX.results.append(result)
    wrong = result.unexplained()
    assert not wrong, "\n".join(
        f"{j.verdict} {j.outcome}: missed {j.missed} false {j.false} (truth {j.truth}, "
        f"said {j.said})"
        for j in wrong
    )


def test_the_matrix_covers_every_shape_change_and_thread_kind() -> None:
    """Runs after the cases: the matrix is over all of them, and the generator drew every app
    shape, release change and thread kind."""
    assert len(MATRIX.results) == len(CASES) >= min(COUNT, 300)
    assert {r.case.spec.shape for r in MATRIX.results} == set(SHAPES)
    assert {r.case.change.kind for r in MATRIX.results} == set(CHANGES)
    assert {r.case.scenario.kind for r in MATRIX.results} == set(THREADS)
    text = MATRIX.render()
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(text + "\n")
    used = {
        limit.name for r in MATRIX.results for j in r.judgements for limit in explain(r.case, j)
    }
    assert used <= {limit.name for limit in KNOWN_LIMITS}
    print(text)


def matrix_text() -> str | None:
    """The rendered matrix, once every case ran (for the terminal summary)."""
    return MATRIX.render() if MATRIX.results else None


def test_the_documented_known_limits_are_the_ones_the_harness_applies() -> None:
    from ground_truth.cases import known_limits_markdown

    docs = (REPO / "docs" / "verdicts.md").read_text()
    assert known_limits_markdown() in docs
