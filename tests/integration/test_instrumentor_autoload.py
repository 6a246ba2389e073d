"""LangGraphCheckpointInstrumentor loaded the way users load it: ``opentelemetry-instrument``
finds its entry point and instruments an app that never calls the library, in a subprocess
(the patching itself: tests/wrapper/test_instrumentor.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

PUT = "langgraph.checkpoint.put"

APP = textwrap.dedent(
    """
    import json
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from opentelemetry import trace

    from langgraph.checkpoint.otel import is_instrumented

    memory = None
    provider = trace.get_tracer_provider()
    if hasattr(provider, "add_span_processor"):  # an SDK provider configured by the distro
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        memory = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(memory))


    class State(TypedDict):
        n: int


    def inc(state: State) -> State:
        return {"n": state["n"] + 1}


    builder = StateGraph(State)
    builder.add_node("inc", inc)
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    result = graph.invoke({"n": 1}, {"configurable": {"thread_id": "app"}})
    spans = list(memory.get_finished_spans()) if memory is not None else []
    report = {
        "result": result,
        "instrumented": is_instrumented(graph.checkpointer),
        "provider": type(provider).__name__,
        "finished_spans": len(spans),
        "put_spans": sum(s.name == "langgraph.checkpoint.put" for s in spans),
    }
    print(json.dumps({"app_report": report}), flush=True)
    """
)


def _json_objects(text: str) -> list[Any]:
    """Every top-level JSON value in `text` (the console exporter prints indented objects)."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    i = 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return out
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        out.append(value)
        i = end


def other_instrumentations() -> list[str]:
    """Names of the installed `opentelemetry-instrument` entry points other than this one."""
    from importlib.metadata import entry_points

    return sorted(
        ep.name
        for ep in entry_points(group="opentelemetry_instrumentor")
        if not ep.value.startswith("langgraph.checkpoint.otel")
    )


@pytest.fixture(scope="module")
def auto_instrumented_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, Any], list[Any]]:
    """Run the app under ``opentelemetry-instrument``: (the app's report, console spans)."""
    tmp = tmp_path_factory.mktemp("auto")
    script = tmp / "app.py"
    script.write_text(APP)
    cli = Path(sys.executable).parent / "opentelemetry-instrument"
    assert cli.exists(), f"{cli} missing: is opentelemetry-instrumentation installed?"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "LANGGRAPH_OTEL_")) and k != "PYTHONPATH"
    }
    env.update(
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        OTEL_SERVICE_NAME="test",
        # other instrumentations installed here (`make bench` adds the LangChain peers) would
        # add spans of their own: this run is about this library's alone
        OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=",".join(other_instrumentations()),
        PYTHONUNBUFFERED="1",
    )
    proc = subprocess.run(
        [str(cli), sys.executable, str(script)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    objects = _json_objects(proc.stdout)
    reports = [o["app_report"] for o in objects if isinstance(o, dict) and "app_report" in o]
    assert len(reports) == 1, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    spans = [o for o in objects if isinstance(o, dict) and "name" in o and "context" in o]
    return reports[0], spans


def test_opentelemetry_instrument_loads_the_entry_point(
    auto_instrumented_run: tuple[dict[str, Any], list[Any]],
) -> None:
    report, _ = auto_instrumented_run
    assert report["result"] == {"n": 2}
    assert report["instrumented"] is True


def test_opentelemetry_instrument_exports_spans(
    auto_instrumented_run: tuple[dict[str, Any], list[Any]],
) -> None:
    if importlib.util.find_spec("opentelemetry.distro") is None:
        pytest.skip(
            "opentelemetry-distro is not installed: without it opentelemetry-instrument "
            "configures no SDK, so OTEL_TRACES_EXPORTER=console exports nothing"
        )
    report, spans = auto_instrumented_run
    assert report["provider"] == "TracerProvider"
    console_puts = [s for s in spans if s["name"] == PUT]
    assert console_puts, f"no {PUT} span printed; spans: {[s['name'] for s in spans]}"
    assert report["put_spans"] == len(console_puts)
    assert report["finished_spans"] >= report["put_spans"]
    assert all(s["resource"]["attributes"]["service.name"] == "test" for s in spans)
    scopes = {s["instrumentation_scope"]["name"] for s in spans if "instrumentation_scope" in s}
    assert scopes <= {"langgraph.checkpoint.otel"}
    # the app has no span of its own: its one run is one trace, under the library's run span
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    roots = [s["name"] for s in spans if not s.get("parent_id")]
    assert roots == ["invoke_workflow LangGraph"]
