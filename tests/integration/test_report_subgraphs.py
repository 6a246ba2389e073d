"""Subgraphs in the inspector, on a real multi-agent thread (`multi_agent_thread.py`:
`create_supervisor` with two `create_react_agent` workers, forked once): a subgraph is drawn
under the root checkpoint that ran it and is never counted as a branch, in the timeline view
(from the saver, the span files, or both), the terminal table and the HTML report; and the
report fits a 1,280 px wide window in headless Chromium (no sideways scrolling of the page, of
the checkpoint table or of the diff box).

With ``LANGGRAPH_OTEL_WRITE_DOCS_IMAGES=1`` the screenshot is copied to
``docs/images/report-subgraphs.png`` (docs/inspector.md's picture).
"""

from __future__ import annotations

import operator
import os
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

import multi_agent_thread
from langgraph.checkpoint.otel.inspector.cli import main
from langgraph.checkpoint.otel.inspector.model import Report, Timeline
from langgraph.checkpoint.otel.inspector.report import write_report
from langgraph.checkpoint.otel.inspector.sources import open_sources
from langgraph.checkpoint.otel.inspector.views import (
    build_report,
    subgraph_title,
    timeline,
)
from suite_paths import REPO
from test_report_browser import WINDOW, browser, chromium, colours, parse, png_pixels

__all__ = ["browser"]  # the fixture, shared with test_report_browser

DOCS_IMAGE = REPO / "docs" / "images" / "report-subgraphs.png"
AGENTS = {"supervisor", *multi_agent_thread.AGENTS}


class LogState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


@pytest.fixture(scope="module")
def thread(tmp_path_factory: pytest.TempPathFactory) -> multi_agent_thread.MultiAgentThread:
    return multi_agent_thread.write(tmp_path_factory.mktemp("multi-agent"))


def _sources(t: multi_agent_thread.MultiAgentThread, which: str) -> list[str]:
    saver, spans = f"sqlite:///{t.db}", str(t.spans)
    return {"saver": [saver], "spans": [spans], "both": [saver, spans]}[which]


def _timeline(t: multi_agent_thread.MultiAgentThread, which: str) -> Timeline:
    with open_sources(_sources(t, which)) as sources:
        return timeline(sources, t.thread_id)


def _stored_parents(t: multi_agent_thread.MultiAgentThread) -> dict[str, str]:
    """Per subgraph checkpoint, LangGraph's own `parents[""]` (the ground truth)."""
    import sqlite3

    conn = sqlite3.connect(t.db)
    try:
        saver = SqliteSaver(conn)
        return {
            str(c.checkpoint["id"]): c.metadata["parents"][""]
            for c in saver.list({"configurable": {"thread_id": t.thread_id}})
            if c.config["configurable"]["checkpoint_ns"]
        }
    finally:
        conn.close()


@pytest.mark.parametrize("which", ["saver", "spans", "both"])
def test_the_forked_supervisor_thread_has_two_branches_whatever_its_subgraphs(
    thread: multi_agent_thread.MultiAgentThread, which: str
) -> None:
    rows = _timeline(thread, which).checkpoints
    assert {r.branch for r in rows if not r.namespace} == {0, 1}
    assert {r.branch for r in rows} == {0, 1}  # nine subgraph runs, still two branches
    assert len({r.namespace for r in rows if r.namespace}) == 9


@pytest.mark.parametrize("which", ["saver", "spans", "both"])
def test_a_subgraph_checkpoint_names_the_root_checkpoint_it_ran_from(
    thread: multi_agent_thread.MultiAgentThread, which: str
) -> None:
    rows = _timeline(thread, which).checkpoints
    assert {r.checkpoint_id: r.graph_parent_id for r in rows if r.namespace} == _stored_parents(
        thread
    )
    assert all(r.graph_parent_id is None for r in rows if not r.namespace)


@pytest.mark.parametrize("which", ["saver", "spans"])
def test_each_branch_runs_the_supervisor_and_both_agents_as_subgraphs(
    thread: multi_agent_thread.MultiAgentThread, which: str
) -> None:
    rows = _timeline(thread, which).checkpoints
    branch_of = {r.checkpoint_id: r.branch for r in rows}
    agents: dict[int, set[str]] = defaultdict(set)
    for r in rows:
        if r.namespace:
            assert r.branch == branch_of[r.graph_parent_id or ""]  # on its parent's branch
            agents[r.branch].add(r.namespace.partition(":")[0])
    assert dict(agents) == {0: AGENTS, 1: AGENTS}


def test_the_graph_name_comes_from_the_run_spans(
    thread: multi_agent_thread.MultiAgentThread,
) -> None:
    assert _timeline(thread, "spans").graph_name == multi_agent_thread.GRAPH_NAME
    assert _timeline(thread, "saver").graph_name is None


def test_a_nested_subgraph_is_titled_by_the_subgraph_that_ran_it() -> None:
    assert subgraph_title("team:1|refund_agent:2", "desk") == "refund_agent (subgraph of team)"
    assert subgraph_title("refund_agent:2", "desk") == "refund_agent (subgraph of desk)"
    assert subgraph_title("refund_agent:2", None) == "refund_agent (subgraph of the root graph)"


def test_the_terminal_timeline_draws_subgraphs_under_their_branch(
    thread: multi_agent_thread.MultiAgentThread,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    assert main(["timeline", thread.thread_id, *_sources(thread, "both")]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("┃"))
    lane_width = header.index("┃", 1)  # the first column: the lane glyphs
    rows = [line for line in out.splitlines() if line.startswith("│ ") and "│" in line[2:]]
    lanes = {line: line[1:lane_width] for line in rows}
    subgraph_rows = [line for line in rows if "(subgraph of support_desk)" in line]
    assert {m for line in subgraph_rows for m in re.findall(r"(\w+) \(subgraph of", line)} == (
        AGENTS
    )
    assert all(lanes[line].strip().endswith("○") for line in subgraph_rows)
    drawn = [lane for lane in lanes.values() if lane.strip()]
    assert max(lane.count("│") for lane in drawn) == 1  # two branches: at most one bar
    assert {lane.strip()[-1] for lane in drawn} == {"●", "◆", "○"}


MEASURE = """<script>
window.addEventListener("load", function () {
  var root = document.documentElement;
  function box(selector) {
    var e = document.querySelector(selector);
    return e ? e.scrollWidth + "/" + e.clientWidth : "none";
  }
  root.setAttribute("data-page", root.scrollWidth + "/" + window.innerWidth);
  root.setAttribute("data-table", box(".table-scroll"));
  root.setAttribute("data-diff", box("#diff"));
});
</script>"""


def _widths(dom_attrs: dict[str, str], key: str) -> tuple[int, int]:
    scroll, client = dom_attrs[key].split("/")
    return int(scroll), int(client)


@pytest.fixture(scope="module")
def report(thread: multi_agent_thread.MultiAgentThread) -> Report:
    with open_sources(_sources(thread, "both")) as sources:
        return build_report(sources, thread.thread_id)


def test_the_report_fits_a_1280_px_window_in_chromium(
    browser: str, report: Report, tmp_path: Path
) -> None:
    page = write_report(report, tmp_path / "report.html")
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dumped = chromium(browser, measured.as_uri(), "--dump-dom")
    assert dumped.console == []
    [html] = [e for e in parse(dumped.stdout).elements if e.tag == "html"]
    assert WINDOW[0] == 1280
    page_scroll, window = _widths(html.attrs, "data-page")
    assert window == 1280 and page_scroll <= window
    table_scroll, table_client = _widths(html.attrs, "data-table")
    assert table_scroll <= table_client  # every column of the checkpoint table is in view
    diff_scroll, diff_client = _widths(html.attrs, "data-diff")
    assert diff_scroll <= diff_client  # the diff summary is not cut


def test_the_report_draws_each_subgraph_run_as_a_labelled_lane_not_a_branch(
    browser: str, report: Report, tmp_path: Path
) -> None:
    page = write_report(report, tmp_path / "report.html")
    screenshot = tmp_path / "report-subgraphs.png"
    loaded = chromium(browser, page.as_uri(), f"--screenshot={screenshot}")
    dumped = chromium(browser, page.as_uri(), "--dump-dom")
    assert loaded.console == [] and dumped.console == []
    dom = parse(dumped.stdout)
    namespaces = {r.namespace for r in report.timeline.checkpoints if r.namespace}
    runs = dom.by_class("subgraph-lane", "g")
    assert {e.attrs["data-namespace"] for e in runs} == namespaces
    assert {e.attrs["data-node"] for e in runs} == AGENTS
    for run in runs:  # the full label and the namespace in the tooltip, whatever is cut
        node = run.attrs["data-node"]
        assert f"{node} (subgraph of support_desk) · namespace {run.attrs['data-namespace']}" in (
            run.text
        )
    lane_labels = [e.text for e in dom.elements if "lane-label" in e.classes]
    assert [t for t in lane_labels if t != "subgraphs"] == ["main", "branch 1"]
    counts = dict(
        reversed(re.match(r"(\d+)\s*(.+)", e.text.strip()).groups())  # type: ignore[union-attr]
        for e in dom.by_class("count", "div")
    )
    assert counts["branches"] == "2" and counts["subgraph runs"] == "9"
    assert len(dom.by_class("subgraph-link")) >= len(namespaces)  # each run linked to its origin
    circles = dom.by_class("checkpoint", "circle")
    assert len(circles) == len(report.timeline.checkpoints)
    assert len([c for c in circles if "sub" in c.classes]) == len(
        [r for r in report.timeline.checkpoints if r.namespace]
    )
    width, height, rows = png_pixels(screenshot.read_bytes())
    assert (width, height) == WINDOW
    assert colours(rows).get((0xF5, 0xF3, 0xFF), 0) > 2000  # the subgraph boxes' fill
    if os.environ.get("LANGGRAPH_OTEL_WRITE_DOCS_IMAGES") == "1":
        DOCS_IMAGE.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(screenshot, DOCS_IMAGE)


def test_a_nested_subgraph_is_drawn_a_row_below_the_subgraph_that_ran_it(tmp_path: Path) -> None:
    import sqlite3

    from langgraph.graph import START, StateGraph

    from langgraph.checkpoint.otel import instrument
    from langgraph.checkpoint.otel.inspector.report import layout_timeline

    def graph(name: str, node: object) -> StateGraph[LogState]:
        builder = StateGraph(LogState)
        builder.add_node(name, node)  # type: ignore[call-overload]
        builder.add_edge(START, name)
        return builder

    leaf = graph("leaf", lambda state: {"log": ["leaf"]}).compile()
    inner = graph("inner", leaf).compile()
    conn = sqlite3.connect(tmp_path / "nested.sqlite", check_same_thread=False)
    outer = graph("middle", inner).compile(checkpointer=instrument(SqliteSaver(conn)))
    outer.invoke({"log": []}, {"configurable": {"thread_id": "nested"}})
    conn.close()
    with open_sources([f"sqlite:///{tmp_path / 'nested.sqlite'}"]) as sources:
        report = build_report(sources, "nested")
    layout = layout_timeline(report)
    [outer_run, inner_run] = sorted(layout.subgraphs, key=lambda r: r.namespace)
    assert (outer_run.node, inner_run.node) == ("middle", "inner")
    assert inner_run.namespace.startswith(outer_run.namespace + "|")
    assert inner_run.title == "inner (subgraph of middle)"
    assert inner_run.y > outer_run.y  # a row deeper
    assert [lane.label for lane in layout.lanes] == ["main", "subgraphs", "nested"]
    assert layout.branches == 1


def test_a_deep_agents_sub_agent_is_named_by_its_agent_not_by_the_tools_node(
    tmp_path: Path,
) -> None:
    from langgraph.checkpoint.otel.inspector.report import layout_timeline

    deep = multi_agent_thread.write_deep(tmp_path)
    with open_sources([f"sqlite:///{deep.db}"]) as sources:
        report = build_report(sources, deep.thread_id)
    [run] = layout_timeline(report).subgraphs
    assert (run.node, run.agent) == ("tools", "refunds")
    assert run.title == "refunds (subgraph of deep_support, run by tools)"
    assert report.timeline.graph_name == multi_agent_thread.DEEP_NAME  # from its root checkpoints


LONG = "x" * 40


def _extreme_report(real: Report) -> Report:
    """`real` with every name, id and summary made as long as hostile input can make it: long
    unbroken node and channel names, a long namespace, a 3,000-character diff summary, side
    effects started in several traces, a resume in a subgraph."""
    from langgraph.checkpoint.otel.analysis.detectors import Finding

    rows = [
        r.model_copy(
            update={
                "nodes": [f"{n}_{LONG}" for n in r.nodes],
                "changed_channels": [f"{c}:{LONG}" for c in r.changed_channels],
                "namespace": f"{r.namespace}|{LONG}:{LONG}" if r.namespace else "",
            }
        )
        for r in real.timeline.checkpoints
    ]
    diffs = [
        d.model_copy(
            update={
                "changes": [
                    c.model_copy(update={"name": f"{c.name}_{LONG}", "summary": "y" * 3000})
                    for c in d.changes
                ]
            }
        )
        for d in real.diffs
    ]
    finding = Finding(
        kind="duplicate_tool_call",
        step=3,
        checkpoint_id=rows[-1].checkpoint_id,
        reference_checkpoint_id=rows[0].checkpoint_id,
        node=f"node_{LONG}",
        channel=f"channel_{LONG}",
        expected="e" * 200,
        actual="a" * 200,
        traces=("0" * 32, "f" * 32, "1" * 32),
    )
    resumes = [
        r.model_copy(update={"namespace": f"refund_agent:{LONG}|inner:{LONG}"})
        for r in real.resumes.resumes
    ]
    return real.model_copy(
        update={
            "timeline": real.timeline.model_copy(update={"checkpoints": rows}),
            "diffs": diffs,
            "divergences": real.divergences.model_copy(
                update={"findings": [*real.divergences.findings, finding]}
            ),
            "resumes": real.resumes.model_copy(update={"resumes": resumes}),
        }
    )


def test_even_extreme_names_and_summaries_fit_a_1280_px_window(
    browser: str, report: Report, tmp_path: Path
) -> None:
    page = write_report(_extreme_report(report), tmp_path / "extreme.html")
    measured = tmp_path / "measured.html"
    measured.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dumped = chromium(browser, measured.as_uri(), "--dump-dom")
    assert dumped.console == []
    [html] = [e for e in parse(dumped.stdout).elements if e.tag == "html"]
    for key in ("data-page", "data-table", "data-diff"):
        scroll, client = _widths(html.attrs, key)
        assert scroll <= client, (key, scroll, client)
