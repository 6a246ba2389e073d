"""Screenshots of Arize Phoenix's UI showing one crash-resume-fork thread of a real agent.

    .venv/bin/python scripts/phoenix_screenshots.py OUT.png [--src DIR] [--title TEXT] [--keep DIR]

Starts ``phoenix serve`` (from .venv-phoenix, like tests/integration/test_phoenix.py), runs the
thread's three processes (`tests/apps/phoenix_app.py`: a run SIGKILLed mid-run, its resume in a
new process, a fork from an earlier checkpoint), each exporting OTLP/HTTP to Phoenix, then
photographs with headless Chromium the project's page (its Spans tab of root spans), its Traces
tab, the thread's session, the resume's trace (the resume span selected, its attributes shown),
the Spans tab filtered by ``langgraph.flagged == True`` (the spans carrying findings) and the
fork's trace with its diverged put selected, and stacks the six into OUT.png.

``--src DIR`` runs the app processes on the library's sources in DIR (put first on their
PYTHONPATH): ``git worktree add --detach /tmp/before 29a6eae`` then ``--src /tmp/before/src``
photographs the library as it was before the run span became ``invoke_workflow``.
Nothing is kept but OUT.png (and, with ``--keep DIR``, the single shots in DIR). Used for
docs/images/phoenix-before.png and phoenix-after.png.
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
sys.path.insert(0, str(TESTS / "support"))
sys.path.insert(0, str(TESTS / "apps"))

import phoenix_app  # noqa: E402
from phoenix_server import PhoenixServer  # noqa: E402

THREAD = "refund-thread-42"
FLAGGED_FILTER = "langgraph.flagged == True"
"""Phoenix's span filter for every span carrying a finding (docs/phoenix.md)."""
WINDOW = (1600, 1000)
TALL_WINDOW = (1600, 1500)
"""The last shot's: every attribute of the diverged put in view, `langgraph.findings` too."""
RENDER_BUDGET_MS = 30_000
"""Virtual time Chromium gives Phoenix's single-page app to fetch and draw before the shot."""


def chromium(url: str, screenshot: Path, window: tuple[int, int] = WINDOW) -> None:
    browser = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not browser:
        raise SystemExit("chromium not found (install it with scripts/tools/chromium.sh)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-extensions",
                "--no-first-run",
                "--hide-scrollbars",
                "--run-all-compositor-stages-before-draw",
                f"--virtual-time-budget={RENDER_BUDGET_MS}",
                f"--user-data-dir={profile}",
                f"--window-size={window[0]},{window[1]}",
                f"--screenshot={screenshot}",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    if done.returncode != 0 or not screenshot.is_file():
        raise SystemExit(f"chromium exited {done.returncode}:\n{done.stderr[-4000:]}")


def wait_for(phoenix: PhoenixServer, path: str, count: int, **query: Any) -> list[dict[str, Any]]:
    """The listing at `path` once it has at least `count` items (Phoenix ingests in batches)."""
    deadline = time.monotonic() + 30
    while True:
        items = phoenix.paged(path, **query)
        if len(items) >= count or time.monotonic() > deadline:
            return items
        time.sleep(0.2)


def stack(panels: list[tuple[str, Path, int]], title: str, out: Path, work: Path) -> None:
    """`panels` (caption, png, its height) one under another with `title` on top, rendered
    to `out`."""
    body = "".join(
        f"<h2>{html.escape(caption)}</h2><img src='{png.as_uri()}'>" for caption, png, _ in panels
    )
    page = work / "stack.html"
    page.write_text(
        "<!doctype html><meta charset='utf-8'><style>"
        "body{margin:0;background:#fff;font:20px sans-serif;color:#111}"
        "h1{margin:12px 16px;font-size:26px}h2{margin:14px 16px 6px;font-size:20px}"
        "img{display:block;width:1600px;border-top:1px solid #ccc;border-bottom:1px solid #ccc}"
        f"</style><h1>{html.escape(title)}</h1>{body}",
        encoding="utf-8",
    )
    height = 60 + sum(panel_height + 50 for _, _, panel_height in panels)
    chromium(page.as_uri(), out, (WINDOW[0], height))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--src", default=None, help="library sources for the app processes")
    parser.add_argument("--title", default="")
    parser.add_argument("--keep", type=Path, default=None, help="also keep the single shots here")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(Path(args.src).resolve()), str(TESTS / "apps"), str(TESTS / "support")]
        )
    phoenix = PhoenixServer()
    work = Path(tempfile.mkdtemp(prefix="phoenix-shots-"))
    try:
        phoenix.start()
        processes = phoenix_app.crash_resume_fork(
            phoenix.otlp_traces_endpoint, work / "agent.sqlite", THREAD, work, env=env
        )
        project = "default"
        (project_info,) = [p for p in phoenix.get("/v1/projects")["data"] if p["name"] == project]
        traces = wait_for(phoenix, f"/v1/projects/{project}/traces", len(processes))
        sessions = wait_for(phoenix, f"/v1/projects/{project}/sessions", 1)
        spans = wait_for(phoenix, f"/v1/projects/{project}/spans", 1)
        base = f"{phoenix.url}/projects/{project_info['id']}"
        resume_trace = next(
            s["context"]["trace_id"]
            for s in spans
            if s["name"] == "langgraph.checkpoint.resume"
            and s["attributes"].get("langgraph.resume.kind") == "crash"
        )
        resume_span = next(
            s
            for s in spans
            if s["name"] == "langgraph.checkpoint.resume"
            and s["context"]["trace_id"] == resume_trace
        )
        roots = [s for s in spans if s.get("parent_id") is None]
        flagged = [s for s in spans if s["attributes"].get("langgraph.flagged") is True]
        diverged = next(
            s
            for s in flagged
            if s["name"] == "langgraph.checkpoint.put"
            and any(e["name"] == "langgraph.divergence" for e in s.get("events") or ())
        )
        kinds = sorted({k for s in flagged for k in s["attributes"]["langgraph.findings"]})
        shots = [
            (
                f"The project's page (Spans tab, filter parent_id is None): {len(roots)} root"
                " spans",
                base,
            ),
            (
                f"Traces tab: {len(traces)} traces stored for the {len(processes)} runs (killed,"
                f" resume, fork), {len(roots)} with a root span ({len(spans)} spans)",
                f"{base}/traces",
            ),
            (
                f"Session {sessions[0]['session_id']}: {len(sessions[0]['traces'])} traces"
                f" ({len(sessions)} session in the project)",
                f"{base}/sessions/{sessions[0]['id']}",
            ),
            (
                "The resume's trace, its langgraph.checkpoint.resume span selected",
                f"{base}/traces/{resume_trace}?selectedSpanNodeId={resume_span['id']}",
            ),
            (
                f"Spans tab filtered by {FLAGGED_FILTER}: {len(flagged)} spans carry findings"
                f" ({', '.join(kinds)})",
                f"{base}/spans?" + urllib.parse.urlencode({"spanFilterCondition": FLAGGED_FILTER}),
            ),
            (
                "The fork's trace, its diverged langgraph.checkpoint.put selected (step"
                f" {diverged['attributes']['langgraph.checkpoint.step']}): langgraph.findings and"
                " langgraph.flagged among its attributes",
                f"{base}/traces/{diverged['context']['trace_id']}"
                f"?selectedSpanNodeId={diverged['id']}",
            ),
        ]
        panels = []
        for number, (caption, url) in enumerate(shots):
            png = work / f"shot-{number}.png"
            window = TALL_WINDOW if number == len(shots) - 1 else WINDOW
            chromium(url, png, window)
            panels.append((caption, png, window[1]))
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(png, args.keep / png.name)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        stack(panels, args.title or f"Phoenix: thread {THREAD}", args.out, work)
        print(f"{args.out}: {len(traces)} traces, {len(spans)} spans, {len(sessions)} session(s)")
    finally:
        phoenix.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
