"""The HTML report, opened in a real headless Chromium (the ``chromium`` CLI, no Python deps).

The data is real: a graph with a non-deterministic node and an interrupt runs on an instrumented
SqliteSaver, is resumed, then forked from before the noisy node (time travel), so the fork
branch diverges (a `state` finding). The report is built from the SQLite file and the exported
spans, exactly as ``langgraph-otel`` would, rendered, and loaded by Chromium: the screenshot must
show something, the DOM (after the scripts ran) must hold one ``checkpoint`` element per stored
checkpoint and the diverged ones, and the console must stay silent.

Without Chromium the tests skip; under ``CI=true`` they fail. With
``LANGGRAPH_OTEL_WRITE_DOCS_IMAGES=1`` the screenshot of the demo's report is copied to
``docs/images/report.png`` (the README's picture).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

import crash_app
from helpers import OTel, in_ci
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.analysis.checkpoint_diff import ChannelChange, CheckpointDiff
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter
from langgraph.checkpoint.otel.inspector.model import (
    ChannelGrowth,
    CheckpointRow,
    Divergences,
    Growth,
    GrowthPoint,
    Report,
    Resumes,
    SourceInfo,
    Timeline,
)
from langgraph.checkpoint.otel.inspector.report import render_report, write_report
from langgraph.checkpoint.otel.inspector.sources import open_sources
from langgraph.checkpoint.otel.inspector.views import build_report
from suite_paths import APPS, REPO

DOCS_IMAGE = REPO / "docs" / "images" / "report.png"
WINDOW = (1280, 2000)
DIVERGED_RED = (0xDC, 0x26, 0x26)  # --diverged in the template
CRASH_BROWN = (0x9A, 0x34, 0x12)  # --crash in the template
CRASH_APP = APPS / "crash_app.py"


# --------------------------------------------------------------------------------------------
# Chromium
# --------------------------------------------------------------------------------------------


def chromium_binary() -> str:
    """The Chromium binary ($CHROMIUM, else `chromium` on PATH); skip, or fail under CI=true."""
    for candidate in (os.environ.get("CHROMIUM"), shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    missing = "chromium not found (install it with scripts/tools/chromium.sh)"
    if in_ci():
        pytest.fail(f"CI=true, so this is a failure, not a skip: {missing}", pytrace=False)
    pytest.skip(missing)


@pytest.fixture
def browser() -> str:
    """The Chromium binary; resolved first, so a missing browser skips before any work."""
    return chromium_binary()


@dataclass
class Page:
    stdout: str
    console: list[str]
    """Every console message the page produced (Chromium logs them all at INFO)."""


_CONSOLE = re.compile(r":CONSOLE[(:]")


def chromium(browser: str, url: str, *args: str) -> Page:
    """Load `url` headless with `args` (``--dump-dom``, ``--screenshot=...``); a fresh profile."""
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
                f"--user-data-dir={profile}",
                f"--window-size={WINDOW[0]},{WINDOW[1]}",
                "--enable-logging=stderr",
                "--v=0",
                *args,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, f"chromium exited {done.returncode}:\n{done.stderr[-4000:]}"
    console = [line for line in done.stderr.splitlines() if _CONSOLE.search(line)]
    return Page(stdout=done.stdout, console=console)


# --------------------------------------------------------------------------------------------
# The DOM and the screenshot, with the standard library only
# --------------------------------------------------------------------------------------------


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class Dom(HTMLParser):
    """Every element of a page, in document order, with its attributes and inner text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[Element] = []
        self._open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(element)
        self._open.append(element)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self._open.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for element in self._open:
            element.text += data

    def by_class(self, name: str, tag: str | None = None) -> list[Element]:
        return [e for e in self.elements if name in e.classes and tag in (None, e.tag)]


def parse(html: str) -> Dom:
    dom = Dom()
    dom.feed(html)
    dom.close()
    return dom


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (2, 6), header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind_byte, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind_byte == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind_byte == 2:  # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind_byte == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind_byte == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        previous = line
        rows.append(b"".join(bytes(line[i : i + 3]) for i in range(0, stride, bpp)))
    return width, height, rows


def colours(rows: list[bytes]) -> dict[tuple[int, int, int], int]:
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows:
        for i in range(0, len(row), 3):
            pixel = (row[i], row[i + 1], row[i + 2])
            counts[pixel] = counts.get(pixel, 0) + 1
    return counts


# --------------------------------------------------------------------------------------------
# A real thread: run, resume, fork, diverge
# --------------------------------------------------------------------------------------------


class State(TypedDict, total=False):
    start: int
    value: float
    answer: str
    done: bool


def approval_graph(rng: random.Random) -> StateGraph[State]:
    """a -> noisy (a random number) -> ask (`interrupt()`) -> c."""

    def a(state: State) -> dict[str, Any]:
        return {"start": state.get("start", 0) + 1}

    def noisy(state: State) -> dict[str, Any]:
        return {"value": rng.random()}  # a different value on every run: a fork diverges

    def ask(state: State) -> dict[str, Any]:
        return {"answer": interrupt("approve?")}

    def c(state: State) -> dict[str, Any]:
        return {"done": True}

    builder = StateGraph(State)
    builder.add_node("a", a)
    builder.add_node("noisy", noisy)
    builder.add_node("ask", ask)
    builder.add_node("c", c)
    builder.add_edge(START, "a")
    builder.add_edge("a", "noisy")
    builder.add_edge("noisy", "ask")
    builder.add_edge("ask", "c")
    return builder


THREAD = "support-ticket-42"


@dataclass
class RealThread:
    report: Report
    stored_ids: list[str]
    """Checkpoint ids of the thread as the SQLite file holds them."""


@pytest.fixture
def real_thread(tmp_path: Path, otel: OTel) -> Iterator[RealThread]:
    db = tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        inner = SqliteSaver(conn)
        inner.setup()
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = approval_graph(random.Random(7)).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": THREAD}}
        graph.invoke({"start": 0}, config)  # stops at the interrupt
        graph.invoke(Command(resume="approved"), config)
        # time travel: re-run from before the noisy node, on a new branch
        before_noisy = next(s for s in graph.get_state_history(config) if s.next == ("noisy",))
        graph.invoke(None, before_noisy.config)
        graph.invoke(Command(resume="approved again"), config)
        stored_ids = [t.config["configurable"]["checkpoint_id"] for t in inner.list(config)]
    finally:
        conn.close()
    spans = tmp_path / "spans.jsonl"
    exporter = OtlpJsonSpanExporter(spans)
    exporter.export(otel.spans())
    exporter.shutdown()
    with open_sources([f"sqlite:///{db}", str(spans)]) as sources:
        report = build_report(sources, THREAD)
    yield RealThread(report, stored_ids)


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_console_errors_are_detected(browser: str, tmp_path: Path) -> None:
    """The harness itself: a page that throws is caught, so a silent console means something."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><p>x</p><script>missingFunction();</script>")
    console = chromium(browser, page.as_uri(), "--dump-dom").console
    assert any("missingFunction is not defined" in line for line in console), console


def test_report_of_a_real_forked_thread_renders_in_chromium(
    browser: str, real_thread: RealThread, tmp_path: Path
) -> None:
    report = real_thread.report
    # the data: two branches, the fork diverges on `value` where `noisy` ran again
    assert {row.branch for row in report.timeline.checkpoints} == {0, 1}
    assert any(row.fork_point for row in report.timeline.checkpoints)
    state = [f for f in report.divergences.findings if f.kind == "state"]
    assert state and state[0].channel == "value" and state[0].node == "noisy"
    assert report.resumes.resumes
    assert sorted(row.checkpoint_id for row in report.timeline.checkpoints) == sorted(
        real_thread.stored_ids
    )

    path = write_report(report, tmp_path / "out" / "report.html")
    screenshot = tmp_path / "report.png"
    loaded = chromium(browser, path.as_uri(), f"--screenshot={screenshot}")
    dumped = chromium(browser, path.as_uri(), "--dump-dom")
    assert loaded.console == [] and dumped.console == [], loaded.console + dumped.console

    # the DOM after the scripts ran
    dom = parse(dumped.stdout)
    assert [e.attrs.get("data-ready") for e in dom.elements if e.tag == "html"] == ["true"]
    circles = dom.by_class("checkpoint")
    assert len(circles) == len(real_thread.stored_ids) == len(report.timeline.checkpoints)
    assert {e.tag for e in circles} == {"circle"}
    assert {e.attrs["data-checkpoint-id"] for e in circles} == set(real_thread.stored_ids)
    diverged = {e.attrs["data-checkpoint-id"] for e in dom.by_class("diverged", "circle")}
    assert state[0].checkpoint_id in diverged
    assert dom.by_class("diverged")
    assert dom.by_class("fork-point")
    assert {e.attrs.get("data-resume-kind") for e in dom.by_class("resume", "g")} >= {"interrupt"}
    assert len(dom.by_class("growth-series")) == len(report.growth.channels) > 0
    # the timeline draws an edge to each parent that is on the thread, one of them a fork edge
    with_parent = [r for r in report.timeline.checkpoints if r.parent_id in real_thread.stored_ids]
    assert len(dom.by_class("edge")) == len(with_parent)
    assert dom.by_class("fork-edge")
    # the diverged checkpoint is selected first: its diff against its parent is shown
    shown = [e for e in dom.by_class("diff-panel") if "hidden" not in e.attrs]
    assert [e.attrs["data-for"] for e in shown] == [state[0].checkpoint_id]
    assert "value" in shown[0].text
    # self-contained: nothing to fetch
    assert not [e for e in dom.elements if e.tag in ("link", "img", "iframe")]
    assert not [e for e in dom.elements if e.tag == "script" and "src" in e.attrs]
    assert "http://" not in dumped.stdout.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in dumped.stdout

    # the screenshot: the full window, not blank, with the diverged red in it
    width, height, rows = png_pixels(screenshot.read_bytes())
    assert (width, height) == WINDOW
    counts = colours(rows)
    assert len(counts) > 100, f"only {len(counts)} colours: a blank page?"
    background = max(counts.values())
    assert background < 0.97 * width * height
    assert counts.get(DIVERGED_RED, 0) > 50


@pytest.fixture
def crashed_thread(tmp_path: Path, otel: OTel) -> Report:
    """`crash_app.py` killed by SIGKILL in `step2` (its spans in a file, as it exported them),
    resumed here (a `crash` resume, stopping at `ask`), then its interrupt answered (an
    `interrupt` resume); the report of the SQLite file and both processes' spans."""
    db = tmp_path / "crash.sqlite"
    killed_spans = tmp_path / "killed.jsonl"
    command = [sys.executable, str(CRASH_APP), f"sqlite:{db}", THREAD, str(killed_spans)]
    killed = subprocess.run(
        [*command, "killed", "run", "--crash-at", "step2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -9, killed.stderr
    conn = sqlite3.connect(db, check_same_thread=False)
    try:
        saver = instrument(
            SqliteSaver(conn),
            tracer_provider=otel.tracer_provider,
            meter_provider=otel.meter_provider,
        )
        graph = crash_app.build_graph(None).compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": THREAD}}
        graph.invoke(None, config, durability="sync")
        graph.invoke(Command(resume=crash_app.ANSWER), config, durability="sync")
    finally:
        conn.close()
    resumed_spans = tmp_path / "resumed.jsonl"
    exporter = OtlpJsonSpanExporter(resumed_spans)
    exporter.export(otel.spans())
    exporter.shutdown()
    with open_sources([f"sqlite:///{db}", str(killed_spans), str(resumed_spans)]) as sources:
        return build_report(sources, THREAD)


def test_a_crash_resume_is_marked_apart_from_other_resumes(
    browser: str, crashed_thread: Report, tmp_path: Path
) -> None:
    """The checkpoint a crash resume starts from is ringed, badged and counted in the crash
    colour, with its legend entry; the interrupt answered afterwards stays an ordinary resume."""
    resumes = {r.kind: r for r in crashed_thread.resumes.resumes}
    assert set(resumes) == {"crash", "interrupt"}
    crash_first = resumes["crash"].first_checkpoint_id
    assert crash_first is not None

    path = write_report(crashed_thread, tmp_path / "out" / "report.html")
    screenshot = tmp_path / "crash-report.png"
    loaded = chromium(browser, path.as_uri(), f"--screenshot={screenshot}")
    dumped = chromium(browser, path.as_uri(), "--dump-dom")
    assert loaded.console == [] and dumped.console == [], loaded.console + dumped.console
    dom = parse(dumped.stdout)
    ringed = {e.attrs["data-checkpoint-id"] for e in dom.by_class("crashed", "circle")}
    rows = {e.attrs["data-checkpoint-id"] for e in dom.by_class("crashed", "tr")}
    assert ringed == rows == {crash_first}
    assert [e.attrs["data-resume-kind"] for e in dom.by_class("crash", "g")] == ["crash"]
    badges = sorted(e.text.strip() for e in dom.by_class("badge") if "crash" in e.classes)
    assert badges == ["crash", "resume: crash"]  # the resumes table and the checkpoint's row
    ordinary = [e.text.strip() for e in dom.by_class("resume", "span")]
    assert ordinary == ["resume: interrupt", "interrupt"]
    assert dom.by_class("l-crash")
    (count,) = dom.by_class("crash", "div")
    assert count.text.strip().startswith("1")
    assert colours(png_pixels(screenshot.read_bytes())[2]).get(CRASH_BROWN, 0) > 50


def test_the_demo_report_renders_and_is_the_readme_picture(browser: str, tmp_path: Path) -> None:
    """`make demo`'s own report (its fork thread), as the README shows it."""
    import refund_demo as demo

    out = tmp_path / ".demo"  # run as `make demo` runs it: the page names `.demo/...`
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "refund_demo.py"), "--out", ".demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    page = out / demo.REPORT_FILE
    with sqlite3.connect(out / demo.DB_FILE) as conn:
        stored = {
            row[0]
            for row in conn.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?", (demo.FORK_THREAD,)
            )
        }
    screenshot = tmp_path / "demo-report.png"
    loaded = chromium(browser, page.as_uri(), f"--screenshot={screenshot}")
    dumped = chromium(browser, page.as_uri(), "--dump-dom")
    assert loaded.console == [] and dumped.console == [], loaded.console + dumped.console
    dom = parse(dumped.stdout)
    assert {e.attrs["data-checkpoint-id"] for e in dom.by_class("checkpoint")} == stored
    assert dom.by_class("diverged", "circle") and dom.by_class("fork-point")
    assert {e.attrs.get("data-resume-kind") for e in dom.by_class("resume", "g")} == {"fork"}
    assert png_pixels(screenshot.read_bytes())[:2] == WINDOW
    assert colours(png_pixels(screenshot.read_bytes())[2]).get(DIVERGED_RED, 0) > 50
    if os.environ.get("LANGGRAPH_OTEL_WRITE_DOCS_IMAGES") == "1":
        DOCS_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(screenshot, DOCS_IMAGE)


def test_clicking_is_replaced_by_a_deep_link_that_selects_a_checkpoint(
    browser: str, real_thread: RealThread, tmp_path: Path
) -> None:
    """``#checkpoint=<id>`` goes through the same `select()` a click does."""
    report = real_thread.report
    path = write_report(report, tmp_path / "report.html")
    first = report.timeline.checkpoints[0].checkpoint_id
    target = next(
        d.to_checkpoint_id for d in report.diffs if d.changes and d.to_checkpoint_id != first
    )
    assert target is not None
    dumped = chromium(browser, f"{path.as_uri()}#checkpoint={target}", "--dump-dom")
    assert dumped.console == []
    dom = parse(dumped.stdout)
    shown = [e.attrs["data-for"] for e in dom.by_class("diff-panel") if "hidden" not in e.attrs]
    assert shown == [target]
    selected = {e.attrs["data-checkpoint-id"] for e in dom.by_class("selected")}
    assert selected == {target}
    assert [e.attrs.get("data-selected") for e in dom.elements if e.tag == "body"] == [target]


HOSTILE = '"><b id="injected">x</b><script>console.error("injected")</script>'


def tiny_report(thread_id: str, *, sizes: bool) -> Report:
    """One checkpoint, no resume, no divergence; every name hostile text."""
    source = SourceInfo(
        saver=None, spans="spans.jsonl", cannot_show=[f"no saver {HOSTILE}", "no values"]
    )
    row = CheckpointRow(
        checkpoint_id=f"cp{HOSTILE}",
        short_id=f"s{HOSTILE}",
        parent_id=None,
        namespace="",
        time=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        step=-1,
        source="input",
        nodes=[f"node{HOSTILE}"],
        changed_channels=[f"ch{HOSTILE}"],
        size_bytes=2048 if sizes else None,
        growth_bytes=None,
        state_hash="ab" * 16,
        branch=0,
        fork_point=False,
        resume_kind=None,
        resumed_from=None,
        divergences=[],
        duration_ms=0.5,
    )
    points = [GrowthPoint(checkpoint_id=row.checkpoint_id, step=-1, size_bytes=2048)]
    channels = [
        ChannelGrowth(
            channel=f"ch{HOSTILE}", points=points, first_bytes=2048, last_bytes=2048, max_bytes=2048
        )
    ]
    change = ChannelChange(
        name=f"ch{HOSTILE}", status="added", size_after=2048, size_delta=2048, summary=HOSTILE
    )
    return Report(
        timeline=Timeline(source=source, thread_id=thread_id, checkpoints=[row]),
        resumes=Resumes(source=source, thread_id=thread_id, resumes=[]),
        divergences=Divergences(source=source, thread_id=thread_id, diverged=False, findings=[]),
        growth=Growth(source=source, thread_id=thread_id, channels=channels if sizes else []),
        diffs=[
            CheckpointDiff(
                from_checkpoint_id=None,
                to_checkpoint_id=row.checkpoint_id,
                state_hash_before=None,
                state_hash_after=row.state_hash,
                changes=[change],
            )
        ],
    )


@pytest.mark.parametrize("sizes", [True, False])
def test_a_single_checkpoint_with_hostile_names_and_empty_sections(
    browser: str, sizes: bool, tmp_path: Path
) -> None:
    report = tiny_report(f"thread{HOSTILE}", sizes=sizes)
    path = write_report(report, tmp_path / "tiny.html")
    dumped = chromium(browser, path.as_uri(), "--dump-dom")
    assert dumped.console == []  # the injected console.error never ran
    dom = parse(dumped.stdout)
    assert not [e for e in dom.elements if e.attrs.get("id") == "injected"]
    assert len([e for e in dom.elements if e.tag == "script"]) == 1
    assert len(dom.by_class("checkpoint")) == 1
    assert dom.by_class("diverged") == []
    assert len(dom.by_class("growth-series")) == (1 if sizes else 0)
    cannot_show = next(e for e in dom.elements if "cannot-show" in e.classes)
    assert f"no saver {HOSTILE}" in cannot_show.text and "no values" in cannot_show.text
    text = " ".join(e.text for e in dom.elements if e.tag == "body")
    assert "No resume on this thread." in text
    assert "No divergence" in text
    assert ("No channel sizes recorded." in text) is not sizes
    assert f"thread{HOSTILE}" in next(e.text for e in dom.elements if e.tag == "h1")


def test_an_empty_thread_renders_without_a_browser() -> None:
    source = SourceInfo()
    report = Report(
        timeline=Timeline(source=source, thread_id="t", checkpoints=[]),
        resumes=Resumes(source=source, thread_id="t", resumes=[]),
        divergences=Divergences(source=source, thread_id="t", diverged=False, findings=[]),
        growth=Growth(source=source, thread_id="t", channels=[]),
        diffs=[],
    )
    html = render_report(report)
    assert "No checkpoint on this thread." in html
    assert 'class="checkpoint' not in html
