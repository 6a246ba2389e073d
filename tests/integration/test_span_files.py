"""The span files the inspector reads, written the documented way: the Python snippets of the
README's "Span files for the inspector" section and of docs/inspector.md's "Span files" run as
they are, each in a fresh interpreter (so the global provider and the SDK's exit flush are the
real ones), after a prelude defining what they leave to the app (`builder`, `inputs`,
`inner_saver`: a two-node graph on a real SQLite file). The inspector then reads the thread
from the directory alone."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from langgraph.checkpoint.otel.export.otlp_json import read_spans, span_file_name, write_span_files
from langgraph.checkpoint.otel.inspector.cli import main
from suite_paths import REPO

PRELUDE = """
import operator, sqlite3
from typing import Annotated, TypedDict
from langgraph.graph import START, StateGraph
from langgraph.checkpoint.sqlite import SqliteSaver

class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]

builder = StateGraph(State)
builder.add_node("plan", lambda state: {"log": ["plan"]})
builder.add_node("act", lambda state: {"log": ["act"]})
builder.add_edge(START, "plan")
builder.add_edge("plan", "act")
inputs = {"log": ["input"]}
inner_saver = SqliteSaver(sqlite3.connect("inner.sqlite", check_same_thread=False))
"""


def snippets(doc: Path, heading: str) -> list[str]:
    """The ```python blocks of the section of `doc` under `heading` (up to the next `## `)."""
    text = doc.read_text()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], re.S)


README = snippets(REPO / "README.md", "## Span files for the inspector")
DOCS = snippets(REPO / "docs" / "inspector.md", "## Span files")


def run_snippet(code: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def inspect(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    """`langgraph-otel ARGS --json`, in this process."""
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_readme_has_a_sync_and_an_async_span_file_snippet() -> None:
    assert len(README) == 2
    assert "graph.invoke(" in README[0] and "await graph.ainvoke(" in README[1]


@pytest.mark.parametrize(("index", "thread"), [(0, "t1"), (1, "t2")], ids=["sync", "async"])
def test_a_readme_snippet_writes_span_files_the_inspector_reads_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int, thread: str
) -> None:
    run_snippet(README[index], tmp_path)
    [written] = list((tmp_path / "spans").glob("spans-*.jsonl"))  # flushed at exit
    assert written.name.endswith(".jsonl") and read_spans(written)
    line = inspect(capsys, "timeline", thread, "-s", str(tmp_path / "spans"))
    assert [c["nodes"] for c in line["checkpoints"]][-2:] == [["plan"], ["act"]]


def test_the_docs_snippet_writes_through_its_own_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [code] = DOCS
    run_snippet(
        code
        + "\ngraph = builder.compile(checkpointer=saver)\n"
        + "graph.invoke(inputs, {'configurable': {'thread_id': 'doc'}})\n",
        tmp_path,
    )
    threads = inspect(capsys, "threads", "-s", str(tmp_path / "spans"))
    assert [t["thread_id"] for t in threads["threads"]] == ["doc"]


def test_write_span_files_without_batching_has_each_span_on_disk_when_it_ends(
    tmp_path: Path,
) -> None:
    provider = TracerProvider()
    write_span_files(tmp_path, provider, batch=False)
    with provider.get_tracer("t").start_as_current_span("one"):
        pass
    [span] = read_spans(tmp_path / span_file_name())  # before any flush or shutdown
    assert span.name == "one"
    provider.shutdown()


def test_write_span_files_refuses_a_provider_that_is_not_the_sdks(tmp_path: Path) -> None:
    from opentelemetry.trace import NoOpTracerProvider

    with pytest.raises(TypeError, match="SDK TracerProvider, not NoOpTracerProvider"):
        write_span_files(tmp_path, NoOpTracerProvider())  # type: ignore[arg-type]
