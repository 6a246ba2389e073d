"""An in-process OTLP/HTTP receiver (protobuf, the binary encoding of the OTLP spec), stdlib
only, for tests where telemetry must cross a real wire: a subprocess (the Agent Server, a
collector) exports to ``OTLPReceiver().endpoint`` and the test reads what arrived.

``Received.spans()`` gives ``(resource attributes, scope name, span)`` with the span as the
``opentelemetry.proto`` message (ids are bytes, attributes a list of ``KeyValue``: read them
with `attrs`). The same receiver as in tests/integration/test_otlp_wire.py, shared from here.
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = ["OTLPReceiver", "Received", "attrs", "wait_until"]


@dataclass
class Received:
    traces: list[ExportTraceServiceRequest] = field(default_factory=list)
    metrics: list[ExportMetricsServiceRequest] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> list[tuple[dict[str, Any], str, Any]]:
        """(resource attributes, scope name, span) for every span received."""
        with self.lock:
            out: list[tuple[dict[str, Any], str, Any]] = []
            for req in self.traces:
                for rs in req.resource_spans:
                    res = attrs(rs.resource.attributes)
                    for ss in rs.scope_spans:
                        out.extend((res, ss.scope.name, span) for span in ss.spans)
            return out

    def span_count(self) -> int:
        return len(self.spans())

    def metric_points(self) -> dict[str, list[tuple[dict[str, Any], str, Any, Any]]]:
        """metric name -> (resource attributes, scope name, metric, data point), one entry per
        time series: the latest point (the temporality is cumulative, and a flush followed by
        shutdown exports the same series twice)."""
        latest: dict[tuple[str, str], tuple[dict[str, Any], str, Any, Any]] = {}
        with self.lock:
            for req in self.metrics:
                for rm in req.resource_metrics:
                    res = attrs(rm.resource.attributes)
                    for sm in rm.scope_metrics:
                        for m in sm.metrics:
                            kind = m.WhichOneof("data")
                            for point in getattr(m, kind).data_points:
                                series = (m.name, repr(sorted(attrs(point.attributes).items())))
                                seen = latest.get(series)
                                if seen is None or point.time_unix_nano >= seen[3].time_unix_nano:
                                    latest[series] = (res, sm.scope.name, m, point)
        out: dict[str, list[tuple[dict[str, Any], str, Any, Any]]] = {}
        for (name, _), entry in latest.items():
            out.setdefault(name, []).append(entry)
        return out


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    """A protobuf ``KeyValue`` list as a dict (arrays as lists)."""
    result: dict[str, Any] = {}
    kv: KeyValue
    for kv in kvs:
        result[kv.key] = _value(kv.value)
    return result


def _decode_body(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    assert encoding in ("", "identity"), f"unexpected Content-Encoding {encoding!r}"
    return raw


class OTLPReceiver:
    """``POST /v1/traces`` and ``POST /v1/metrics`` on 127.0.0.1 (an ephemeral port)."""

    def __init__(self) -> None:
        self.received = Received()
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = _decode_body(raw, self.headers.get("Content-Encoding", "").lower())
                response: Any
                if self.path == "/v1/traces":
                    trace_req = ExportTraceServiceRequest.FromString(body)
                    response = ExportTraceServiceResponse()
                    with received.lock:
                        received.traces.append(trace_req)
                elif self.path == "/v1/metrics":
                    metrics_req = ExportMetricsServiceRequest.FromString(body)
                    response = ExportMetricsServiceResponse()
                    with received.lock:
                        received.metrics.append(metrics_req)
                else:
                    self.send_error(404)
                    return
                with received.lock:
                    received.requests.append(
                        (self.path, {k.lower(): v for k, v in self.headers.items()})
                    )
                payload = response.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> OTLPReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0) -> bool:
    """Poll `predicate` every 50 ms until it is true or `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())
