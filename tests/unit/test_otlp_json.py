"""OTLP/JSON lines exporters and readers: real SDK spans and metrics through a real file."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    NumberDataPoint,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel.export.otlp_json import (
    HistogramPoint,
    NumberPoint,
    OtlpJsonError,
    OtlpJsonMetricExporter,
    OtlpJsonSpanExporter,
    merge_histograms,
    read_metrics,
    read_spans,
)

ATTRIBUTES: dict[str, AttributeValue] = {
    "s": "text é",
    "b": True,
    "i": 2**40,
    "neg": -3,
    "f": 1.5,
    "strs": ["a", "b"],
    "ints": [1, 2, 3],
    "floats": [0.5, 2.0],
    "bools": [True, False],
    "empty": (),
}


def _traced(path: Path) -> tuple[list[ReadableSpan], TracerProvider]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "round-trip"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(path)))
    tracer = provider.get_tracer("test.scope", "1.2.3")
    with tracer.start_as_current_span("earlier") as earlier:
        pass
    link = Link(earlier.get_span_context(), {"link.type": "writer", "n": 7})
    with (
        tracer.start_as_current_span("root", kind=SpanKind.SERVER, attributes=ATTRIBUTES),
        tracer.start_as_current_span("child", links=[link]) as child,
    ):
        child.add_event("evt", {"k": "v", "xs": [1, 2]})
        child.add_event("bare")
        child.set_status(Status(StatusCode.ERROR, "boom"))
    provider.shutdown()
    return list(memory.get_finished_spans()), provider


def test_span_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "spans.jsonl"
    originals, _ = _traced(path)
    records = read_spans(path)
    assert [r.name for r in records] == [s.name for s in originals] == ["earlier", "child", "root"]
    for original, record in zip(originals, records, strict=True):
        ctx = original.get_span_context()
        assert ctx is not None
        assert record.trace_id == format(ctx.trace_id, "032x")
        assert record.span_id == format(ctx.span_id, "016x")
        parent = original.parent
        assert record.parent_span_id == (format(parent.span_id, "016x") if parent else None)
        assert record.start_time_unix_nano == original.start_time
        assert record.end_time_unix_nano == original.end_time
        assert record.resource["service.name"] == "round-trip"
        assert (record.scope_name, record.scope_version) == ("test.scope", "1.2.3")

    earlier, child, root = records
    assert root.attributes == {
        "s": "text é",
        "b": True,
        "i": 2**40,
        "neg": -3,
        "f": 1.5,
        "strs": ("a", "b"),
        "ints": (1, 2, 3),
        "floats": (0.5, 2.0),
        "bools": (True, False),
        "empty": (),
    }
    assert root.kind == SpanKind.SERVER.value + 1  # OTLP enum: INTERNAL=1, SERVER=2
    assert root.parent_span_id is None and root.status_code == "UNSET"
    assert child.parent_span_id == root.span_id and child.trace_id == root.trace_id
    assert (child.status_code, child.status_message) == ("ERROR", "boom")
    assert [(e.name, e.attributes) for e in child.events] == [
        ("evt", {"k": "v", "xs": (1, 2)}),
        ("bare", {}),
    ]
    assert len(child.links) == 1
    link = child.links[0]
    assert (link.trace_id, link.span_id) == (earlier.trace_id, earlier.span_id)
    assert link.attributes == {"link.type": "writer", "n": 7}


def test_file_is_otlp_json(tmp_path: Path) -> None:
    """Ids are hex (not protobuf JSON's base64) and enums are integers, per OTLP/JSON."""
    path = tmp_path / "spans.jsonl"
    originals, _ = _traced(path)
    lines = path.read_text().splitlines()
    assert len(lines) == 3  # SimpleSpanProcessor: one batch per span
    documents = [json.loads(line) for line in lines]
    raw = [
        span
        for doc in documents
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    child = raw[1]
    ctx = originals[1].get_span_context()
    assert ctx is not None
    assert child["traceId"] == format(ctx.trace_id, "032x")
    assert child["spanId"] == format(ctx.span_id, "016x")
    assert len(child["parentSpanId"]) == 16
    assert len(child["links"][0]["traceId"]) == 32
    assert child["kind"] == 1 and child["status"]["code"] == 2
    assert "parentSpanId" not in raw[0]


def test_reader_accepts_base64_ids(tmp_path: Path) -> None:
    """Plain protobuf JSON (base64 ids) is read too."""
    line = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "AAECAwQFBgcICQoLDA0ODw==",
                                "spanId": "AAECAwQFBgc=",
                                "name": "x",
                                "startTimeUnixNano": 5,
                                "endTimeUnixNano": "6",
                                "status": {"code": "STATUS_CODE_ERROR"},
                            }
                        ]
                    }
                ]
            }
        ]
    }
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(line) + "\n\n")
    [record] = read_spans(path)
    assert record.trace_id == "000102030405060708090a0b0c0d0e0f"
    assert record.span_id == "0001020304050607"
    assert (record.start_time_unix_nano, record.end_time_unix_nano) == (5, 6)
    assert record.status_code == "ERROR"


def test_bad_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text('{"resourceSpans": []}\nnot json\n')
    with pytest.raises(OtlpJsonError, match=r"spans\.jsonl:2"):
        read_spans(path)
    path.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}\n')
    with pytest.raises(OtlpJsonError, match=r"spans\.jsonl:1"):
        read_spans(path)


def test_concurrent_exports_write_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonSpanExporter(path)))
    tracer = provider.get_tracer("t")

    def work(n: int) -> None:
        for i in range(50):
            with tracer.start_as_current_span(f"s{n}", attributes={"i": i, "pad": "x" * 2000}):
                pass

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    provider.shutdown()
    lines = path.read_text().splitlines()
    assert len(lines) == 400
    assert all(json.loads(line)["resourceSpans"] for line in lines)
    assert len(read_spans(path)) == 400


def test_export_after_shutdown_fails(tmp_path: Path) -> None:
    exporter = OtlpJsonSpanExporter(tmp_path / "spans.jsonl")
    exporter.shutdown()
    originals, _ = _traced(tmp_path / "other.jsonl")
    assert exporter.export(originals).name == "FAILURE"


def _meter(path: Path, temporality: AggregationTemporality) -> MeterProvider:
    exporter = OtlpJsonMetricExporter(
        path,
        preferred_temporality={cls: temporality for cls in _instrument_classes()},
    )
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=600_000)
    return MeterProvider(
        metric_readers=[reader],
        resource=Resource.create({"service.name": "metrics-test"}),
    )


def _instrument_classes() -> list[type]:
    from opentelemetry.sdk.metrics import Counter, Histogram, UpDownCounter

    return [Counter, Histogram, UpDownCounter]


@pytest.mark.parametrize(
    "temporality", [AggregationTemporality.CUMULATIVE, AggregationTemporality.DELTA]
)
def test_metrics_round_trip(tmp_path: Path, temporality: AggregationTemporality) -> None:
    """Several exports (periodic, then at shutdown) are totalled once, either temporality."""
    path = tmp_path / "metrics.jsonl"
    provider = _meter(path, temporality)
    meter = provider.get_meter("m")
    counter = meter.create_counter("things")
    histogram = meter.create_histogram("latency", unit="s")
    gauge = meter.create_gauge("level")

    counter.add(2, {"kind": "a"})
    histogram.record(0.5, {"op": "put"})
    gauge.set(3, {})
    provider.force_flush()  # export 1
    counter.add(3, {"kind": "a"})
    counter.add(1, {"kind": "b", "tags": ["x", "y"]})
    histogram.record(1.5, {"op": "put"})
    histogram.record(7.0, {"op": "get"})
    gauge.set(9, {})
    provider.shutdown()  # export 2

    assert len(path.read_text().splitlines()) == 2
    metrics = read_metrics(path)
    things = {p.attributes["kind"]: p for p in metrics["things"]}
    assert things["a"] == NumberPoint({"kind": "a"}, 5)
    assert things["b"] == NumberPoint({"kind": "b", "tags": ("x", "y")}, 1)
    assert metrics["level"] == [NumberPoint({}, 9)]
    latency = {p.attributes["op"]: p for p in metrics["latency"]}
    put = latency["put"]
    assert isinstance(put, HistogramPoint)
    assert (put.count, put.sum, put.min, put.max) == (2, 2.0, 0.5, 1.5)
    assert sum(put.bucket_counts) == 2
    assert len(put.bucket_counts) == len(put.explicit_bounds) + 1
    get = latency["get"]
    assert isinstance(get, HistogramPoint)
    both = merge_histograms([put, get], {})
    assert (both.count, both.sum, both.min, both.max) == (3, 9.0, 0.5, 7.0)


def test_cumulative_streams_from_two_processes_add_up(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    for service in ("one", "two"):
        exporter = OtlpJsonMetricExporter(path)
        provider = MeterProvider(
            metric_readers=[PeriodicExportingMetricReader(exporter, 600_000)],
            resource=Resource.create({"service.instance.id": service}),
        )
        provider.get_meter("m").create_counter("c").add(4)
        provider.shutdown()
    assert read_metrics(path)["c"] == [NumberPoint({}, 8)]


def test_histogram_quantile() -> None:
    point = HistogramPoint(
        {}, count=4, sum=0.0, bucket_counts=(0, 2, 2, 0), explicit_bounds=(1.0, 2.0, 4.0)
    )
    assert point.quantile(0.5) == 2.0
    assert point.quantile(0.25) == 1.5
    assert point.quantile(1.0) == 4.0
    assert HistogramPoint({}, 0, 0.0).quantile(0.5) is None
    with pytest.raises(ValueError):
        point.quantile(2)


def test_in_memory_and_file_metrics_agree(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    memory = InMemoryMetricReader()
    provider = MeterProvider(
        metric_readers=[
            memory,
            PeriodicExportingMetricReader(OtlpJsonMetricExporter(path), 600_000),
        ]
    )
    counter = provider.get_meter("m").create_counter("c")
    for i in range(10):
        counter.add(i, {"even": i % 2 == 0})
    data = memory.get_metrics_data()
    assert data is not None
    expected = {
        dp.attributes["even"]: dp.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        for dp in m.data.data_points
        if isinstance(dp, NumberDataPoint) and dp.attributes
    }
    provider.shutdown()
    got = {
        p.attributes["even"]: p.value for p in read_metrics(path)["c"] if isinstance(p, NumberPoint)
    }
    assert got == expected == {True: 20, False: 25}
