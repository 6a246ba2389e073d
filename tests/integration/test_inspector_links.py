"""Links from the inspector into the user's trace backend (`--trace-url` / LANGGRAPH_OTEL_TRACE_URL).

The template module alone is tests/unit/test_trace_links.py; here the documented templates,
then every command that shows checkpoints, resumes or writers runs on a real thread: a `create_react_agent` with `interrupt_before=tools`
on an instrumented `SqliteSaver` file, resumed twice after its interrupts, then forked (time
travel) with a model that answers otherwise, so the fork diverges. Its spans went through the
real SDK to an in-memory exporter (what the links are checked against) and to an OTLP JSON
file (a source). The report is also opened in headless Chromium.
"""

from __future__ import annotations

import json
import re
import sqlite3
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agents
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter
from langgraph.checkpoint.otel.inspector.cli import main
from langgraph.checkpoint.otel.inspector.trace_links import (
    ENV,
    PLACEHOLDERS,
    TraceUrlTemplate,
)
from langgraph.checkpoint.otel.inspector.views import short_ids
from suite_paths import REPO
from test_report_browser import chromium, chromium_binary, parse

THREAD = "linked-thread"
TEMPLATE = "https://traces.example.com/trace/{trace_id}?span={span_id}&at={time_ms}"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
AT = datetime(2026, 12, 2, 3, 0, 0, 250000, tzinfo=UTC)


# --------------------------------------------------------------------------------------------
# the documented templates
# --------------------------------------------------------------------------------------------

DOCUMENTED = re.compile(r"^export LANGGRAPH_OTEL_TRACE_URL='([^']+)'$", re.MULTILINE)


def documented_templates() -> dict[str, str]:
    """The example template under each backend's heading of docs/inspector.md's links section."""
    text = (REPO / "docs" / "inspector.md").read_text()
    section = text.split("## Links into your trace backend", 1)[1].split("\n## ", 1)[0]
    found = {}
    for part in section.split("\n### ")[1:]:
        heading, _, body = part.partition("\n")
        templates = DOCUMENTED.findall(body)
        assert len(templates) == 1, f"{heading}: {templates}"
        found[heading.strip()] = templates[0]
    return found


def test_the_docs_give_a_valid_template_for_each_backend() -> None:
    documented = documented_templates()
    assert set(documented) == {"Jaeger", "Grafana Tempo", "Honeycomb", "Datadog", "Phoenix"}
    for text in documented.values():
        url = TraceUrlTemplate.parse(text, "docs").url(TRACE, SPAN, AT)
        assert url is not None and TRACE in url


def test_the_grafana_template_opens_explore_on_a_traceql_query_of_the_trace_id() -> None:
    url = TraceUrlTemplate.parse(documented_templates()["Grafana Tempo"]).url(TRACE, SPAN, AT)
    assert url is not None
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    [pane] = json.loads(query["panes"]).values()
    [tempo] = pane["queries"]
    assert tempo["queryType"] == "traceql" and tempo["query"] == TRACE
    assert pane["range"] == {
        "from": str(int((AT - timedelta(hours=1)).timestamp() * 1000)),
        "to": str(int((AT + timedelta(hours=1)).timestamp() * 1000)),
    }


# --------------------------------------------------------------------------------------------
# a real thread
# --------------------------------------------------------------------------------------------


@dataclass
class Written:
    saver_url: str
    span_file: Path
    spans: list[ReadableSpan]
    """Every span the real SDK exported while the thread ran."""
    root: Path

    def puts(self) -> dict[str, tuple[str, str]]:
        """Checkpoint id -> (trace id, span id) of the put span that wrote it."""
        return {
            str(s.attributes[names.CHECKPOINT_ID]): _ids(s)
            for s in self.spans
            if s.name == names.SPAN_PUT and s.attributes
        }

    def resumes(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(checkpoint resumed from, kind) -> (trace id, span id) of its resume span."""
        return {
            (
                str(s.attributes[names.RESUME_FROM_CHECKPOINT_ID]),
                str(s.attributes[names.RESUME_KIND]),
            ): _ids(s)
            for s in self.spans
            if s.name == names.SPAN_RESUME and s.attributes
        }

    def sources(self, which: str) -> list[str]:
        return {
            "saver": [self.saver_url],
            "spans": [str(self.span_file)],
            "both": [self.saver_url, str(self.span_file)],
        }[which]


def _ids(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    root = tmp_path_factory.mktemp("links")
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(
        SimpleSpanProcessor(OtlpJsonSpanExporter(str(root / "spans.jsonl")))
    )
    conn = sqlite3.connect(root / "db.sqlite", check_same_thread=False)
    script = agents.travel_script()
    graph = agents.react_agent(
        instrument(SqliteSaver(conn), tracer_provider=provider), script, interrupt_before=["tools"]
    )
    config = {"configurable": {"thread_id": THREAD}}
    graph.invoke(agents.question(), config)  # stops before the tools (an interrupt)
    graph.invoke(None, config)  # resume (interrupt): tools, agent, stops before the tools again
    graph.invoke(None, config)  # resume (interrupt): tools, agent answers
    history = list(graph.get_state_history(config))
    before_agent = next(s for s in history if s.metadata["step"] == 2)  # the tools ran
    script.change(1, agents.Turn("I would rather not book anything."))
    graph.invoke(None, before_agent.config)  # time travel: a fork that answers otherwise
    provider.shutdown()
    conn.close()
    yield Written(
        f"sqlite:///{root / 'db.sqlite'}",
        root / "spans.jsonl",
        list(memory.get_finished_spans()),
        root,
    )


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = run(capsys, *args, "--json")
    assert code in (0, 1) and err == "", err  # diverge exits 1: the fork diverged
    return json.loads(out)


def linked_ids(url: str) -> tuple[str, str]:
    """(trace id, span id) a TEMPLATE link points at."""
    parts = urllib.parse.urlsplit(url)
    assert parts.scheme == "https" and parts.netloc == "traces.example.com"
    span = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))["span"]
    return parts.path.removeprefix("/trace/"), span


SOURCES = ["saver", "spans", "both"]


@pytest.mark.parametrize("which", SOURCES)
def test_timeline_links_each_checkpoint_to_the_put_span_that_wrote_it(
    written: Written, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    line = run_json(capsys, "timeline", THREAD, *written.sources(which), "--trace-url", TEMPLATE)
    puts = written.puts()
    rows = line["checkpoints"]
    assert {r["checkpoint_id"] for r in rows} == set(puts)
    for row in rows:
        link = row["trace_link"]
        assert (link["trace_id"], link["span_id"]) == puts[row["checkpoint_id"]]
        assert linked_ids(link["url"]) == puts[row["checkpoint_id"]]


@pytest.mark.parametrize("which", SOURCES)
def test_resumes_link_each_resume_to_the_trace_of_the_resumed_run(
    written: Written, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    view = run_json(capsys, "resumes", THREAD, *written.sources(which), "--trace-url", TEMPLATE)
    spans = written.resumes()
    assert sorted((r["from_checkpoint_id"], r["kind"]) for r in view["resumes"]) == sorted(spans)
    assert sorted(r["kind"] for r in view["resumes"]) == ["fork", "interrupt", "interrupt"]
    for row in view["resumes"]:
        trace_id, span_id = spans[(row["from_checkpoint_id"], row["kind"])]
        linked_trace, linked_span = linked_ids(row["trace_link"]["url"])
        assert linked_trace == trace_id  # the resumed run's own trace, not the writer's
        if which != "saver":  # spans name the resume span; a saver, its run's first put
            assert linked_span == span_id
        else:
            assert linked_span == written.puts()[row["first_checkpoint_id"]][1]


@pytest.mark.parametrize("which", SOURCES)
def test_resumes_link_each_writer_to_the_put_span_that_wrote_the_checkpoint_resumed_from(
    written: Written, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    view = run_json(capsys, "resumes", THREAD, *written.sources(which), "--trace-url", TEMPLATE)
    puts = written.puts()
    for row in view["resumes"]:
        writer = puts[row["from_checkpoint_id"]]
        assert linked_ids(row["writer_trace_link"]["url"]) == writer
        assert row["writer_trace_id"] == writer[0]
        assert writer[0] != linked_ids(row["trace_link"]["url"])[0]  # another run's trace


def test_diverge_links_the_checkpoint_and_the_reference_of_each_finding(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    view = run_json(capsys, "diverge", THREAD, *written.sources("both"), "--trace-url", TEMPLATE)
    assert view["diverged"] and view["findings"]
    puts = written.puts()
    for finding in view["findings"]:
        for cid in (finding["checkpoint_id"], finding["reference_checkpoint_id"]):
            assert linked_ids(view["checkpoint_links"][cid]["url"]) == puts[cid]


def test_diff_links_both_checkpoints_of_each_diff(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    view = run_json(capsys, "diff", THREAD, written.saver_url, "--trace-url", TEMPLATE)
    puts = written.puts()
    compared = {d["to_checkpoint_id"] for d in view["diffs"]} | {
        d["from_checkpoint_id"] for d in view["diffs"] if d["from_checkpoint_id"]
    }
    assert compared == set(puts) == set(view["checkpoint_links"])
    for cid, link in view["checkpoint_links"].items():
        assert linked_ids(link["url"]) == puts[cid]


def test_the_variable_gives_the_template_to_every_command(
    written: Written, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, TEMPLATE)
    src = written.sources("both")
    assert all(r["trace_link"] for r in run_json(capsys, "timeline", THREAD, *src)["checkpoints"])
    assert all(r["trace_link"] for r in run_json(capsys, "resumes", THREAD, *src)["resumes"])
    assert run_json(capsys, "diverge", THREAD, *src)["checkpoint_links"]
    assert run_json(capsys, "diff", THREAD, written.saver_url)["checkpoint_links"]
    html = written.root / "env.html"
    report = run_json(capsys, "report", THREAD, "--html", str(html), *src)
    assert all(r["trace_link"] for r in report["timeline"]["checkpoints"])
    assert "https://traces.example.com/trace/" in html.read_text()


COMMANDS = [
    ["timeline", THREAD],
    ["resumes", THREAD],
    ["diverge", THREAD],
    ["diff", THREAD],
    ["report", THREAD, "--html", "REPORT"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_without_a_template_a_command_prints_no_link(
    written: Written, capsys: pytest.CaptureFixture[str], command: list[str], tmp_path: Path
) -> None:
    args = [str(tmp_path / "r.html") if a == "REPORT" else a for a in command]
    src = [written.saver_url] if command[0] == "diff" else written.sources("both")
    code, text, err = run(capsys, *args, *src)
    assert code in (0, 1) and err == ""
    assert "traces.example.com" not in text and "trace links:" not in text and " [1]" not in text
    as_json = run(capsys, *args, *src, "--json")[1]
    assert "trace_link" not in as_json and "checkpoint_links" not in as_json
    if command[0] == "report":
        assert "trace-link" not in (tmp_path / "r.html").read_text()


def test_a_bad_template_exits_2_with_one_line_before_any_source_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = f"sqlite:///{tmp_path / 'absent.sqlite'}"  # reading it would be another error
    code, out, err = run(capsys, "timeline", THREAD, missing, "--trace-url", "https://x/{trace}")
    assert code == 2 and out == ""
    assert err == (
        "langgraph-otel: error: --trace-url 'https://x/{trace}': unknown placeholder {trace}; "
        f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}\n"
    )


def test_a_bad_template_in_the_variable_is_an_error_naming_the_variable(
    written: Written, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "jaeger.example.com/trace/{trace_id}")
    code, _, err = run(capsys, "resumes", THREAD, written.saver_url)
    assert code == 2
    assert err.startswith(f"langgraph-otel: error: {ENV} 'jaeger.example.com/trace/{{trace_id}}'")


def test_a_command_that_shows_no_checkpoint_ignores_the_variable(
    written: Written, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "not a template {at all")
    code, out, _ = run(capsys, "threads", written.saver_url)
    assert code == 0 and THREAD in out


OSC8 = re.compile(r"\x1b\]8;id=[^;]*;([^\x1b]*)\x1b\\(.*?)\x1b\]8;;\x1b\\")


def test_on_a_terminal_each_checkpoint_id_is_a_hyperlink_to_its_writers_trace(
    written: Written, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    src = written.sources("saver")
    rows = run_json(capsys, "timeline", THREAD, *src, "--trace-url", TEMPLATE)["checkpoints"]
    code, out, _ = run(capsys, "timeline", THREAD, *src, "--trace-url", TEMPLATE)
    assert code == 0
    linked = {re.sub(r"\x1b\[[0-9;]*m", "", text): url for url, text in OSC8.findall(out)}
    assert linked == {r["short_id"]: r["trace_link"]["url"] for r in rows}
    assert "trace links:" not in out  # hyperlinks instead of footnotes


def test_piped_output_marks_each_linked_id_and_lists_its_url_under_the_table(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    src = written.sources("saver")
    rows = run_json(capsys, "timeline", THREAD, *src, "--trace-url", TEMPLATE)["checkpoints"]
    code, out, _ = run(capsys, "timeline", THREAD, *src, "--trace-url", TEMPLATE)
    assert code == 0 and "\x1b]8;" not in out
    notes = dict(re.findall(r"^\[(\d+)\] (\S+)$", out.split("trace links:\n", 1)[1], re.MULTILINE))
    for row in rows:
        [number] = re.findall(rf"│ {row['short_id']} \[(\d+)\]", out)
        assert notes[number] == row["trace_link"]["url"]  # whole: never wrapped or cut


def test_a_url_that_several_cells_share_has_one_footnote(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    per_trace = "https://jaeger.example.com/trace/{trace_id}"  # no span: one URL per run
    code, out, _ = run(capsys, "timeline", THREAD, written.saver_url, "--trace-url", per_trace)
    assert code == 0
    notes = re.findall(r"^\[\d+\] (\S+)$", out, re.MULTILINE)
    runs = {trace for trace, _ in written.puts().values()}
    assert sorted(notes) == sorted(f"https://jaeger.example.com/trace/{t}" for t in runs)


def test_piped_resumes_mark_the_kind_the_checkpoints_and_the_writer_trace(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    src = written.sources("both")
    view = run_json(capsys, "resumes", THREAD, *src, "--trace-url", TEMPLATE)
    _, out, _ = run(capsys, "resumes", THREAD, *src, "--trace-url", TEMPLATE)
    notes = {url: n for n, url in re.findall(r"^\[(\d+)\] (\S+)$", out, re.MULTILINE)}
    for row in view["resumes"]:
        run_mark = notes[row["trace_link"]["url"]]
        writer_mark = notes[row["writer_trace_link"]["url"]]
        assert f"{row['kind']} [{run_mark}]" in out
        assert f"{row['writer_trace_id']} [{writer_mark}]" in out


def _footnotes(out: str) -> dict[str, str]:
    """URL -> its footnote number, from piped output."""
    return {url: n for n, url in re.findall(r"^\[(\d+)\] (\S+)$", out, re.MULTILINE)}


def test_piped_diff_titles_mark_both_checkpoints(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    view = run_json(capsys, "diff", THREAD, written.saver_url, "--trace-url", TEMPLATE)
    _, out, _ = run(capsys, "diff", THREAD, written.saver_url, "--trace-url", TEMPLATE)
    notes = _footnotes(out)
    links = view["checkpoint_links"]
    line = run_json(capsys, "timeline", THREAD, written.saver_url)["checkpoints"]
    short = {r["checkpoint_id"]: r["short_id"] for r in line}
    for d in view["diffs"]:
        if d["from_checkpoint_id"] is None:
            continue
        before, after = d["from_checkpoint_id"], d["to_checkpoint_id"]
        title = (
            f"{short[before]} [{notes[links[before]['url']]}] -> "
            f"{short[after]} [{notes[links[after]['url']]}]"
        )
        assert title in out


def test_piped_diverge_marks_the_checkpoint_and_reference_of_each_finding(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    src = written.sources("both")
    view = run_json(capsys, "diverge", THREAD, *src, "--trace-url", TEMPLATE)
    code, out, _ = run(capsys, "diverge", THREAD, *src, "--trace-url", TEMPLATE)
    assert code == 1
    notes = _footnotes(out)
    findings = view["findings"]
    shown = short_ids(
        [f["checkpoint_id"] for f in findings] + [f["reference_checkpoint_id"] for f in findings]
    )  # as the table shortens them
    for f in findings:
        for cid in (f["checkpoint_id"], f["reference_checkpoint_id"]):
            assert f"{shown[cid]} [{notes[view['checkpoint_links'][cid]['url']]}]" in out


# --------------------------------------------------------------------------------------------
# the HTML report
# --------------------------------------------------------------------------------------------

ESCAPED = TEMPLATE + "&q=<b>\"'"


def _anchors(html: str) -> list[Any]:
    return [e for e in parse(html).elements if e.tag == "a" and "trace-link" in e.classes]


def test_the_report_links_every_checkpoint_resume_and_writer_in_a_new_tab(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    html = written.root / "linked.html"
    src = written.sources("both")
    report = run_json(capsys, "report", THREAD, "--html", str(html), *src, "--trace-url", TEMPLATE)
    anchors = _anchors(html.read_text())
    assert all(a.attrs["target"] == "_blank" and a.attrs["rel"] == "noopener" for a in anchors)
    hrefs = {a.attrs["href"] for a in anchors}
    expected = {r["trace_link"]["url"] for r in report["timeline"]["checkpoints"]}
    for row in report["resumes"]["resumes"]:
        expected |= {row["trace_link"]["url"], row["writer_trace_link"]["url"]}
    expected |= {link["url"] for link in report["divergences"]["checkpoint_links"].values()}
    assert hrefs == expected
    ids = {a.text.strip() for a in anchors}
    assert {r["short_id"] for r in report["timeline"]["checkpoints"]} <= ids


def test_the_report_escapes_what_the_template_puts_in_an_href(
    written: Written, capsys: pytest.CaptureFixture[str]
) -> None:
    html = written.root / "escaped.html"
    code, _, _ = run(
        capsys, "report", THREAD, "--html", str(html), written.saver_url, "--trace-url", ESCAPED
    )
    text = html.read_text()
    assert code == 0 and "<b>\"'" not in text and "&amp;q=&lt;b&gt;&#34;&#39;" in text
    assert all(a.attrs["href"].endswith("&q=<b>\"'") for a in _anchors(text))  # as parsed


@pytest.fixture
def browser() -> str:
    return chromium_binary()


def test_in_chromium_the_reports_anchors_point_at_the_traces(
    written: Written, capsys: pytest.CaptureFixture[str], browser: str
) -> None:
    html = written.root / "browser.html"
    src = written.sources("both")
    report = run_json(capsys, "report", THREAD, "--html", str(html), *src, "--trace-url", TEMPLATE)
    page = chromium(browser, html.as_uri(), "--dump-dom")
    assert page.console == []
    dom = parse(page.stdout)
    rows = [e for e in dom.elements if e.tag == "tr" and "checkpoint-row" in e.classes]
    assert len(rows) == len(report["timeline"]["checkpoints"])
    in_dom = [a.attrs["href"] for a in dom.elements if a.tag == "a" and "trace-link" in a.classes]
    urls = [r["trace_link"]["url"] for r in report["timeline"]["checkpoints"]]
    assert in_dom[: len(urls)] == urls  # the checkpoints table, in timeline order
    puts = written.puts()
    for row in report["timeline"]["checkpoints"]:
        assert linked_ids(row["trace_link"]["url"]) == puts[row["checkpoint_id"]]


# --------------------------------------------------------------------------------------------
# a real backend: Phoenix
# --------------------------------------------------------------------------------------------


def test_the_documented_phoenix_template_opens_the_checkpoints_trace_in_a_real_phoenix(
    phoenix_server: Any, browser: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource

    provider = TracerProvider(resource=Resource.create({"service.name": "links"}))
    exporter = OTLPSpanExporter(endpoint=phoenix_server.otlp_traces_endpoint)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    conn = sqlite3.connect(tmp_path / "db.sqlite", check_same_thread=False)
    graph = agents.react_agent(
        instrument(SqliteSaver(conn), tracer_provider=provider), interrupt_before=["tools"]
    )
    config = {"configurable": {"thread_id": "phoenix-linked"}}
    graph.invoke(agents.question(), config)
    graph.invoke(None, config)  # a resume: the last checkpoints are in a second trace
    provider.shutdown()
    conn.close()
    host = phoenix_server.url.removeprefix("http://")
    template = documented_templates()["Phoenix"].replace("PHOENIX_HOST", host)
    saver = f"sqlite:///{tmp_path / 'db.sqlite'}"
    rows = run_json(capsys, "timeline", "phoenix-linked", saver, "--trace-url", template)[
        "checkpoints"
    ]
    link = rows[-1]["trace_link"]
    assert link["url"] == f"{phoenix_server.url}/redirects/traces/{link['trace_id']}"
    page = chromium(browser, link["url"], "--virtual-time-budget=5000", "--dump-dom")
    # the redirect found the trace's project and drew the trace with its checkpoint spans
    assert f"/traces/{link['trace_id']}" in page.stdout
    assert names.SPAN_RESUME in page.stdout and names.SPAN_PUT in page.stdout
