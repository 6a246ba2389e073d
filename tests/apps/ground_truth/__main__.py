"""``python -m ground_truth [--seed N] [--cases N] [--only TEXT] [-v]``: generate the cases, judge
every verdict against the oracle, print the matrix and every unexplained miss and false alarm;
exit 1 when there is one (`make ground-truth`)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings

from ground_truth.cases import Matrix, generate, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ground_truth")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--only", default="", help="only cases whose label contains this")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.getLogger("langgraph").setLevel(logging.ERROR)  # a renamed node's pending sends
    started = time.perf_counter()
    cases = [c for c in generate(args.seed, args.cases) if args.only in c.label]
    matrix = Matrix()
    bad = 0

    def show(result):  # type: ignore[no-untyped-def]
        nonlocal bad
        unexplained = result.unexplained()
        bad += bool(unexplained)
        mark = "FAIL" if unexplained else "ok  "
        if unexplained or args.verbose:
            print(f"{mark} {result.case.label} ({result.seconds:.2f} s)", flush=True)
            for j in result.judgements if args.verbose else unexplained:
                shown = j.missed or j.false if not args.verbose else j.truth + j.said
                print(
                    f"     {j.verdict:8} {j.outcome:11} {shown[:3]}"
                    + (f" abstained={j.abstained}" if j.abstained else ""),
                    flush=True,
                )

    for result in run(cases, show):
        matrix.results.append(result)
    print(matrix.render())
    print(
        f"\n{len(cases)} cases in {time.perf_counter() - started:.0f} s; {bad} with an unexplained miss or false alarm"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
