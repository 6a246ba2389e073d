"""Span and metric files (OTLP/JSON lines), public from this package: SDK exporters that append
to them and typed readers over them (`otlp_json`; needs the ``otlp`` extra).

    from langgraph.checkpoint.otel.export import read_spans, write_span_files

The names are loaded on first use: importing the package loads no SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph.checkpoint.otel.lazy import lazy_names

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.export.otlp_json import (
        HistogramPoint,
        MetricPoint,
        NumberPoint,
        OtlpJsonMetricExporter,
        OtlpJsonSpanExporter,
        SpanRecord,
        merge_histograms,
        read_metrics,
        read_spans,
        write_span_files,
    )

_EXPORTS: dict[str, str] = {
    "HistogramPoint": "otlp_json",
    "MetricPoint": "otlp_json",
    "NumberPoint": "otlp_json",
    "OtlpJsonMetricExporter": "otlp_json",
    "OtlpJsonSpanExporter": "otlp_json",
    "SpanRecord": "otlp_json",
    "merge_histograms": "otlp_json",
    "read_metrics": "otlp_json",
    "read_spans": "otlp_json",
    "write_span_files": "otlp_json",
}
"""Public name -> the module under this package that defines it."""

__all__ = [
    "HistogramPoint",
    "MetricPoint",
    "NumberPoint",
    "OtlpJsonMetricExporter",
    "OtlpJsonSpanExporter",
    "SpanRecord",
    "merge_histograms",
    "read_metrics",
    "read_spans",
    "write_span_files",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)
