"""The inspector marks a checkpoint diverged from its put span's `langgraph.findings` alone:
spans exported with no events (an SDK whose span event limit is 0, a backend or pipeline that
drops events) still show the divergence in the timeline and the HTML report."""

from __future__ import annotations

import re
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agents
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonSpanExporter
from langgraph.checkpoint.otel.inspector.report import render_report
from langgraph.checkpoint.otel.inspector.sources import open_sources
from langgraph.checkpoint.otel.inspector.views import build_report


def diverged_fork_without_events(spans_file: Path) -> str:
    """A thread forked from step 2 whose model then asks for another tool (a `trajectory`
    finding), its spans written to `spans_file` with every event dropped; the diverged put's
    checkpoint id."""
    exported = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_events=0))
    provider.add_span_processor(SimpleSpanProcessor(exported))
    script = agents.travel_script()
    graph = agents.react_agent(instrument(InMemorySaver(), tracer_provider=provider), script)
    graph.invoke(agents.question(), agents.thread("t"), durability="sync")
    (point,) = [s for s in graph.get_state_history(agents.thread("t")) if s.metadata["step"] == 2]
    script.change(1, agents.calls(("lookup", {"city": "Porto"})))
    checkpoint_id = point.config["configurable"]["checkpoint_id"]
    graph.invoke(None, agents.thread("t", checkpoint_id=checkpoint_id), durability="sync")
    spans = exported.get_finished_spans()
    file_exporter = OtlpJsonSpanExporter(spans_file)
    file_exporter.export(spans)
    file_exporter.shutdown()
    provider.shutdown()
    assert not [s for s in spans if s.events], "the event limit should have dropped every event"
    (flagged,) = [s for s in spans if (s.attributes or {}).get(names.FLAGGED)]
    return str((flagged.attributes or {})[names.CHECKPOINT_ID])


def test_a_put_s_findings_attribute_marks_its_checkpoint_diverged(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    diverged = diverged_fork_without_events(spans_file)
    with open_sources([str(spans_file)]) as sources:
        report = build_report(sources, "t")
    marked = {row.checkpoint_id: row.divergences for row in report.timeline.checkpoints}
    assert {cid: kinds for cid, kinds in marked.items() if kinds} == {diverged: ["trajectory"]}
    html = render_report(report)
    circles = re.findall(r'<circle class="checkpoint([^"]*)" data-checkpoint-id="([^"]+)"', html)
    assert {cid for classes, cid in circles if "diverged" in classes.split()} == {diverged}
