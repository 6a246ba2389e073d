"""OTLP/JSON lines files: SDK exporters that append to them, and typed readers over them.

Each line of a file is one export batch in the OTLP/JSON encoding: an
``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``) or an
``ExportMetricsServiceRequest`` (``{"resourceMetrics": [...]}``). That is also what the
OpenTelemetry Collector's ``file`` exporter writes, so the readers accept its output too.

The encoding is the protobuf JSON mapping of the OTLP messages (lowerCamelCase field names,
64-bit integers as decimal strings) with the two OTLP/JSON exceptions: enums are integers and
trace / span ids are lowercase hex strings, not base64.

    write_span_files(".spans/", tracer_provider)  # what `langgraph-otel -s .spans/` reads
    # or one file of your choice, with any processor:
    tracer_provider.add_span_processor(BatchSpanProcessor(OtlpJsonSpanExporter(".demo/spans.jsonl")))
    reader = PeriodicExportingMetricReader(OtlpJsonMetricExporter(".demo/metrics.jsonl"))
    ...
    spans = read_spans(".demo/spans.jsonl")
    metrics = read_metrics(".demo/metrics.jsonl")

This module needs the ``otlp`` extra (opentelemetry-sdk, opentelemetry-exporter-otlp); the
instrumentation itself never imports it.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
import socket
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias

from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped, unused-ignore]
from google.protobuf.message import Message  # type: ignore[import-untyped, unused-ignore]
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.metrics.view import Aggregation
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

__all__ = [
    "SPAN_FILE_GLOB",
    "AttributeValue",
    "Attributes",
    "HistogramPoint",
    "MetricPoint",
    "NumberPoint",
    "OtlpJsonError",
    "OtlpJsonMetricExporter",
    "OtlpJsonSpanExporter",
    "SpanEventRecord",
    "SpanLinkRecord",
    "SpanRecord",
    "encode_metrics_json",
    "encode_spans_json",
    "merge_histograms",
    "read_metrics",
    "read_spans",
    "span_file_name",
    "write_span_files",
]

_Scalar: TypeAlias = str | bool | int | float | bytes
AttributeValue: TypeAlias = (
    "_Scalar | tuple[AttributeValue, ...] | dict[str, AttributeValue] | None"
)
"""An OTLP ``AnyValue`` as plain Python: arrays are tuples, key-value lists are dicts."""
Attributes: TypeAlias = dict[str, AttributeValue]

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})
_STATUS_CODES: dict[int, Literal["UNSET", "OK", "ERROR"]] = {0: "UNSET", 1: "OK", 2: "ERROR"}
_TEMPORALITY_DELTA = 1
_TEMPORALITY_CUMULATIVE = 2


class OtlpJsonError(ValueError):
    """A line of an OTLP/JSON lines file that is not valid OTLP/JSON."""


# ----------------------------------------------------------------------------------------------
# Encoding
# ----------------------------------------------------------------------------------------------


def _hex_ids(node: Any) -> Any:
    """Rewrite the base64 bytes of trace / span id fields as hex, in place; returns `node`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)
    return node


def _to_otlp_json(message: Message) -> dict[str, Any]:
    encoded: dict[str, Any] = MessageToDict(message, use_integers_for_enums=True)
    return _hex_ids(encoded)  # type: ignore[no-any-return]


def encode_spans_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON ``ExportTraceServiceRequest`` for `spans`, as a JSON-ready dict."""
    return _to_otlp_json(encode_spans(spans))


def encode_metrics_json(data: MetricsData) -> dict[str, Any]:
    """The OTLP/JSON ``ExportMetricsServiceRequest`` for `data`, as a JSON-ready dict."""
    return _to_otlp_json(encode_metrics(data))


class _LineWriter:
    """Appends whole lines to a file from any thread; each line is flushed as it is written."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

    def write(self, document: Mapping[str, Any]) -> bool:
        line = json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            if self._file is None:
                return False
            self._file.write(line)
            self._file.flush()
            return True

    def flush(self) -> bool:
        with self._lock:
            if self._file is not None:
                self._file.flush()
            return True

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class OtlpJsonSpanExporter(SpanExporter):
    """Appends one OTLP/JSON ``ExportTraceServiceRequest`` line per export batch to `path`.

    Thread-safe; each line is flushed when written. Empty batches write nothing. After
    `shutdown()` exports fail.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._writer = _LineWriter(path)

    @property
    def path(self) -> Path:
        """The file this exporter appends to."""
        return self._writer.path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            written = self._writer.write(encode_spans_json(spans))
        except Exception:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if written else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._writer.flush()

    def shutdown(self) -> None:
        self._writer.close()


SPAN_FILE_GLOB = "spans*.jsonl"
"""The files of a directory the inspector reads as span files."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def span_file_name(prefix: str = "spans") -> str:
    """``spans-<host>-<pid>.jsonl``: one file per process, so processes never share a file."""
    host = _UNSAFE.sub("_", socket.gethostname()) or "host"
    return f"{prefix}-{host}-{os.getpid()}.jsonl"


def write_span_files(
    directory: str | os.PathLike[str],
    tracer_provider: TracerProvider | None = None,
    *,
    batch: bool = True,
) -> SpanProcessor:
    """Export every span of `tracer_provider` to this process's span file in `directory`.

    The file is `span_file_name()` (``spans-<host>-<pid>.jsonl``, OTLP/JSON lines, appended
    to), which the inspector reads with ``langgraph-otel ... -s DIRECTORY``.

    Args:
        directory: Where the file goes (created if missing).
        tracer_provider: The SDK provider to add the processor to; None: the global one, set
            to a new SDK `TracerProvider` first if none is set yet.
        batch: A `BatchSpanProcessor` (the default: spans leave the app's threads at once and
            are written in the background; the SDK flushes it at a normal exit). False: a
            `SimpleSpanProcessor`, each span written as it ends, so a killed process loses
            nothing (slower: every span end writes to the file).

    Returns:
        The processor added: call its ``force_flush()`` where the app must have its spans on
        disk (a server's shutdown hook, before ``os._exit``).
    """
    provider = tracer_provider if tracer_provider is not None else _global_sdk_provider()
    if not isinstance(provider, TracerProvider):
        raise TypeError(
            f"tracer_provider must be an OpenTelemetry SDK TracerProvider, not "
            f"{type(provider).__name__}"
        )
    exporter = OtlpJsonSpanExporter(Path(directory) / span_file_name())
    processor: SpanProcessor = (
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    provider.add_span_processor(processor)
    return processor


def _global_sdk_provider() -> object:
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        trace.set_tracer_provider(TracerProvider())
        provider = trace.get_tracer_provider()
    return provider


class OtlpJsonMetricExporter(MetricExporter):
    """Appends one OTLP/JSON ``ExportMetricsServiceRequest`` line per export to `path`.

    Thread-safe; each line is flushed when written. Exports without any resource metrics
    write nothing. Temporality and aggregation preferences are passed to the SDK as for any
    `MetricExporter` (the SDK default is cumulative).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        preferred_temporality: dict[type, AggregationTemporality] | None = None,
        preferred_aggregation: dict[type, Aggregation] | None = None,
    ) -> None:
        super().__init__(
            preferred_temporality=preferred_temporality,
            preferred_aggregation=preferred_aggregation,
        )
        self._writer = _LineWriter(path)

    @property
    def path(self) -> Path:
        """The file this exporter appends to."""
        return self._writer.path

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        if not metrics_data.resource_metrics:
            return MetricExportResult.SUCCESS
        try:
            written = self._writer.write(encode_metrics_json(metrics_data))
        except Exception:
            return MetricExportResult.FAILURE
        return MetricExportResult.SUCCESS if written else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._writer.flush()

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._writer.close()


# ----------------------------------------------------------------------------------------------
# Reading: plain values
# ----------------------------------------------------------------------------------------------


def _int(value: Any, default: int = 0) -> int:
    """An OTLP/JSON 64-bit integer (a decimal string or a number)."""
    if value is None:
        return default
    return int(value)


def _float(value: Any) -> float:
    """An OTLP/JSON double (a number, or "NaN" / "Infinity" / "-Infinity")."""
    return float(value)


def _id(value: Any, size: int) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex, from hex or base64."""
    if not isinstance(value, str) or not value:
        return ""
    if len(value) == 2 * size:
        try:
            bytes.fromhex(value)
        except ValueError:
            pass
        else:
            return value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise OtlpJsonError(f"not a {size}-byte id in hex or base64: {value!r}") from None
    if len(raw) != size:
        raise OtlpJsonError(f"not a {size}-byte id in hex or base64: {value!r}")
    return raw.hex()


def _any_value(value: Mapping[str, Any] | None) -> AttributeValue:
    """An OTLP/JSON ``AnyValue`` as a plain Python value."""
    if not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return _int(value["intValue"])
    if "doubleValue" in value:
        return _float(value["doubleValue"])
    if "arrayValue" in value:
        return tuple(_any_value(v) for v in (value["arrayValue"] or {}).get("values", ()))
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


def _attributes(key_values: Sequence[Mapping[str, Any]] | None) -> Attributes:
    """A list of OTLP/JSON ``KeyValue`` as a dict of plain values."""
    return {str(kv["key"]): _any_value(kv.get("value")) for kv in key_values or ()}


# ----------------------------------------------------------------------------------------------
# Reading: spans
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpanEventRecord:
    """A span event as read back from OTLP/JSON."""

    name: str
    time_unix_nano: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanLinkRecord:
    """A span link as read back from OTLP/JSON: the linked span's ids, in hex."""

    trace_id: str
    span_id: str
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span as read back from OTLP/JSON, with plain Python attribute values.

    Ids are lowercase hex (32 chars for traces, 16 for spans); `parent_span_id` is None for a
    root span. Array attributes are tuples. `status_code` is UNSET, OK or ERROR.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: Attributes
    events: tuple[SpanEventRecord, ...]
    links: tuple[SpanLinkRecord, ...]
    status_code: Literal["UNSET", "OK", "ERROR"]
    status_message: str
    resource: Attributes
    scope_name: str
    scope_version: str

    @property
    def duration_s(self) -> float:
        """End minus start, in seconds."""
        return (self.end_time_unix_nano - self.start_time_unix_nano) / 1e9


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    with Path(path).open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except json.JSONDecodeError as exc:
                raise OtlpJsonError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(document, dict):
                raise OtlpJsonError(f"{path}:{number}: not a JSON object")
            yield number, document


def _span(raw: Mapping[str, Any], resource: Attributes, scope: Mapping[str, Any]) -> SpanRecord:
    status = raw.get("status") or {}
    code = status.get("code", 0)
    if isinstance(code, str):  # tolerate enum names from non-conforming writers
        code = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code, 0)
    kind = raw.get("kind", 0)
    return SpanRecord(
        trace_id=_id(raw.get("traceId"), 16),
        span_id=_id(raw.get("spanId"), 8),
        parent_span_id=_id(raw.get("parentSpanId"), 8) or None,
        name=str(raw.get("name", "")),
        kind=kind if isinstance(kind, int) else 0,
        start_time_unix_nano=_int(raw.get("startTimeUnixNano")),
        end_time_unix_nano=_int(raw.get("endTimeUnixNano")),
        attributes=_attributes(raw.get("attributes")),
        events=tuple(
            SpanEventRecord(
                name=str(e.get("name", "")),
                time_unix_nano=_int(e.get("timeUnixNano")),
                attributes=_attributes(e.get("attributes")),
            )
            for e in raw.get("events") or ()
        ),
        links=tuple(
            SpanLinkRecord(
                trace_id=_id(link.get("traceId"), 16),
                span_id=_id(link.get("spanId"), 8),
                attributes=_attributes(link.get("attributes")),
            )
            for link in raw.get("links") or ()
        ),
        status_code=_STATUS_CODES.get(int(code), "UNSET"),
        status_message=str(status.get("message", "")),
        resource=resource,
        scope_name=str(scope.get("name", "")),
        scope_version=str(scope.get("version", "")),
    )


def read_spans(path: str | os.PathLike[str]) -> list[SpanRecord]:
    """Every span in an OTLP/JSON lines file, in file order (the order they were exported).

    Blank lines are skipped; any other line that is not OTLP/JSON raises `OtlpJsonError`
    naming the file and line.
    """
    spans: list[SpanRecord] = []
    for number, document in _lines(path):
        try:
            for resource_spans in document.get("resourceSpans") or ():
                resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
                for scope_spans in resource_spans.get("scopeSpans") or ():
                    scope = scope_spans.get("scope") or {}
                    spans.extend(_span(s, resource, scope) for s in scope_spans.get("spans") or ())
        except OtlpJsonError as exc:
            raise OtlpJsonError(f"{path}:{number}: {exc}") from None
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise OtlpJsonError(f"{path}:{number}: not OTLP/JSON spans ({exc!r})") from None
    return spans


# ----------------------------------------------------------------------------------------------
# Reading: metrics
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NumberPoint:
    """A counter, up-down counter or gauge value for one attribute set."""

    attributes: Attributes
    value: int | float


@dataclass(frozen=True, slots=True)
class HistogramPoint:
    """A histogram for one attribute set: `count`, `sum` and, where known, the buckets.

    `bucket_counts` has one more entry than `explicit_bounds` (the last bucket is unbounded);
    both are empty for exponential histograms and summaries.
    """

    attributes: Attributes
    count: int
    sum: float
    bucket_counts: tuple[int, ...] = ()
    explicit_bounds: tuple[float, ...] = ()
    min: float | None = None
    max: float | None = None

    def quantile(self, q: float) -> float | None:
        """Estimate the `q` quantile (0..1) by linear interpolation within a bucket.

        Uses `min` / `max` to bound the first and last buckets. None when empty or without
        buckets.
        """
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"quantile must be within [0, 1], got {q!r}")
        if self.count <= 0 or len(self.bucket_counts) != len(self.explicit_bounds) + 1:
            return None
        rank = q * self.count
        seen = 0
        for index, in_bucket in enumerate(self.bucket_counts):
            if in_bucket and seen + in_bucket >= rank:
                low = self.explicit_bounds[index - 1] if index > 0 else (self.min or 0.0)
                if index < len(self.explicit_bounds):
                    high = self.explicit_bounds[index]
                else:
                    high = self.max if self.max is not None else low
                if self.min is not None:
                    low = max(low, self.min)
                if self.max is not None:
                    high = min(high, self.max)
                return low + (high - low) * max(0.0, rank - seen) / in_bucket
            seen += in_bucket
        return self.max


MetricPoint: TypeAlias = NumberPoint | HistogramPoint


def merge_histograms(points: Sequence[HistogramPoint], attributes: Attributes) -> HistogramPoint:
    """One histogram holding all of `points` (for example, all attribute sets of a metric).

    Buckets are kept only when every point has the same bounds.
    """
    bounds = {p.explicit_bounds for p in points}
    same_bounds = len(bounds) == 1 and all(
        len(p.bucket_counts) == len(p.explicit_bounds) + 1 for p in points
    )
    mins = [p.min for p in points if p.min is not None]
    maxs = [p.max for p in points if p.max is not None]
    return HistogramPoint(
        attributes=attributes,
        count=sum(p.count for p in points),
        sum=math.fsum(p.sum for p in points),
        bucket_counts=tuple(map(sum, zip(*(p.bucket_counts for p in points), strict=True)))
        if same_bounds
        else (),
        explicit_bounds=next(iter(bounds)) if same_bounds else (),
        min=min(mins) if mins else None,
        max=max(maxs) if maxs else None,
    )


def _number(raw: Mapping[str, Any]) -> int | float:
    if "asInt" in raw:
        return _int(raw["asInt"])
    return _float(raw.get("asDouble", 0.0))


def _histogram(raw: Mapping[str, Any], attributes: Attributes) -> HistogramPoint:
    return HistogramPoint(
        attributes=attributes,
        count=_int(raw.get("count")),
        sum=_float(raw.get("sum", 0.0)),
        bucket_counts=tuple(_int(c) for c in raw.get("bucketCounts") or ()),
        explicit_bounds=tuple(_float(b) for b in raw.get("explicitBounds") or ()),
        min=_float(raw["min"]) if "min" in raw else None,
        max=_float(raw["max"]) if "max" in raw else None,
    )


@dataclass(slots=True)
class _Stream:
    """The points of one metric for one attribute set, while reading."""

    attributes: Attributes
    delta: list[MetricPoint] = field(default_factory=list)
    # cumulative: (resource, start time) -> (time, point); the latest point of each stream wins
    cumulative: dict[tuple[str, int], tuple[int, MetricPoint]] = field(default_factory=dict)
    gauge: tuple[int, MetricPoint] | None = None

    def result(self) -> MetricPoint:
        points = [*self.delta, *(point for _, point in self.cumulative.values())]
        if self.gauge is not None and not points:
            return self.gauge[1]
        if all(isinstance(p, HistogramPoint) for p in points):
            return merge_histograms(
                [p for p in points if isinstance(p, HistogramPoint)], self.attributes
            )
        total: int | float = 0
        for p in points:
            if isinstance(p, NumberPoint):
                total += p.value
        return NumberPoint(self.attributes, total)


def _attributes_key(attributes: Attributes) -> str:
    return json.dumps(attributes, sort_keys=True, default=repr)


def read_metrics(path: str | os.PathLike[str]) -> dict[str, list[MetricPoint]]:
    """Metric name -> one point per attribute set, totalled over the whole file.

    Sums and histograms are totals: delta points are added up, and of cumulative points only
    the latest of each stream (resource and start time) counts, then streams are added up, so
    several processes or periodic exports appending to one file are counted once each. Gauges
    keep their latest value. Exponential histograms and summaries give count and sum only.
    Raises `OtlpJsonError` naming the file and line for a line that is not OTLP/JSON.
    """
    streams: dict[str, dict[str, _Stream]] = {}
    for number, document in _lines(path):
        try:
            for resource_metrics in document.get("resourceMetrics") or ():
                resource = _attributes_key(
                    _attributes((resource_metrics.get("resource") or {}).get("attributes"))
                )
                for scope_metrics in resource_metrics.get("scopeMetrics") or ():
                    for metric in scope_metrics.get("metrics") or ():
                        _read_metric(streams.setdefault(str(metric["name"]), {}), metric, resource)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise OtlpJsonError(f"{path}:{number}: not OTLP/JSON metrics ({exc!r})") from None
    return {
        name: [stream.result() for _, stream in sorted(by_attributes.items())]
        for name, by_attributes in streams.items()
    }


def _read_metric(streams: dict[str, _Stream], metric: Mapping[str, Any], resource: str) -> None:
    for kind in ("sum", "gauge", "histogram", "exponentialHistogram", "summary"):
        if kind in metric:
            data = metric[kind] or {}
            break
    else:
        return
    temporality = _int(data.get("aggregationTemporality"), _TEMPORALITY_CUMULATIVE)
    for raw in data.get("dataPoints") or ():
        attributes = _attributes(raw.get("attributes"))
        stream = streams.setdefault(_attributes_key(attributes), _Stream(attributes))
        point: MetricPoint
        if kind in ("sum", "gauge"):
            point = NumberPoint(attributes, _number(raw))
        elif kind == "histogram":
            point = _histogram(raw, attributes)
        else:
            point = HistogramPoint(attributes, _int(raw.get("count")), _float(raw.get("sum", 0.0)))
        time = _int(raw.get("timeUnixNano"))
        if kind == "gauge":
            if stream.gauge is None or time >= stream.gauge[0]:
                stream.gauge = (time, point)
        elif kind != "summary" and temporality == _TEMPORALITY_DELTA:
            stream.delta.append(point)
        else:
            key = (resource, _int(raw.get("startTimeUnixNano")))
            latest = stream.cumulative.get(key)
            if latest is None or time >= latest[0]:
                stream.cumulative[key] = (time, point)
