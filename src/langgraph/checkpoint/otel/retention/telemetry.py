"""Spans and counters for `langgraph-otel retention --apply` and `restore` (content-free).

One `langgraph.retention.apply` span per apply or restore (its policy and, as it ends, its
totals and, unless given up front, the number of threads it traced) with one
`langgraph.retention.thread` child per thread (its outcome and what was removed, reclaimed and
kept, or restored). The counters
`langgraph.checkpoint.retention.checkpoints_removed` and `langgraph.checkpoint.retention.reclaimed`
(the same ones LangGraph's own `prune` adds to through the wrapper) grow as each thread is
applied, with `langgraph.retention.by` = `apply`.

No thread state, value or exception message is recorded. The module imports only the
OpenTelemetry API; the global providers are used unless others are given; every
OpenTelemetry call is guarded (a fault is logged once per place and kind, never raised), and
an exception of the apply itself propagates unchanged. `cli_telemetry` sets up an SDK for the
command line, where the user's OpenTelemetry is configured.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.core.instruments import RetentionCounters
from langgraph.checkpoint.otel.core.telemetry import PACKAGE_VERSION, log_fault

T = TypeVar("T")
P = ParamSpec("P")

OUTCOME_APPLIED = "applied"
OUTCOME_SKIPPED = "skipped_written"
OUTCOME_RESTORED = "restored"
OUTCOME_FAILED = "failed"
BY_APPLY = "apply"


def _guard(where: str, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """Call `fn`; on any exception log it once per (where, type) and return None."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        log_fault(f"retention telemetry: {where}", exc)
        return None


@dataclass
class _Totals:
    """What the threads of one apply reported, summed for the apply span."""

    threads: int = 0
    skipped: int = 0
    failed: int = 0
    checkpoints_removed: int = 0
    writes_removed: int = 0
    bytes_reclaimed: int = 0
    checkpoints_restored: int = 0
    writes_restored: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class RetentionTelemetry:
    """Spans and counters of retention applies and restores.

    Args:
        tracer_provider: Where the spans go; None: the global provider.
        meter_provider: Where the counters go; None: the global provider.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self._tracer = _guard(
            "get tracer",
            trace.get_tracer,
            names.SCOPE,
            PACKAGE_VERSION,
            tracer_provider=tracer_provider,
        )
        meter = _guard("get meter", metrics.get_meter, names.SCOPE, PACKAGE_VERSION, meter_provider)
        self._counters = _guard("create counters", RetentionCounters, meter) if meter else None

    @contextmanager
    def apply(
        self,
        *,
        policy: str,
        threads: int | None = None,
        saver: str,
        archive: str | os.PathLike[str] | None,
        operation: str = "apply",
    ) -> Iterator[ApplyReport]:
        """Trace one apply (or, with `operation="restore"`, one restore) as the `with` block.

        Args:
            policy: The policy as text (`policy_text`).
            threads: Threads the apply plans to change (or the restore to put back), when
                known up front; None (an apply streaming its plans): the number of threads
                traced (`ApplyReport.thread`), set as the span ends.
            saver: The saver's class name.
            archive: The archive file; only its name is recorded.
            operation: `apply` or `restore` (`langgraph.operation`).

        Yields:
            The report the apply gives each thread to (`ApplyReport.thread`). Its totals are
            set on the span as the block ends; an exception of the block marks the span
            failed (`error.type`) and propagates.
        """
        attributes: dict[str, AttributeValue] = {
            names.RETENTION_POLICY: bounded_text(policy),
            names.SAVER: bounded_text(saver),
            names.OPERATION: operation,
        }
        if threads is not None:
            attributes[names.RETENTION_THREADS] = threads
        if archive is not None:
            attributes[names.RETENTION_ARCHIVE] = bounded_text(Path(archive).name)
        span = self._start(names.SPAN_RETENTION_APPLY, attributes, None)
        token = None
        if span is not None:
            token = _guard("attach context", otel_context.attach, trace.set_span_in_context(span))
        by = BY_APPLY if operation == BY_APPLY else None
        report = ApplyReport(self, span, saver, by, count_threads=threads is None)
        try:
            yield report
        except BaseException as exc:
            _end(span, report.total_attributes(), exc)
            raise
        else:
            _end(span, report.total_attributes(), None)
        finally:
            if token is not None:
                _guard("detach context", otel_context.detach, token)

    def _start(
        self, name: str, attributes: Mapping[str, AttributeValue], parent: Span | None
    ) -> Span | None:
        if self._tracer is None:
            return None
        context = trace.set_span_in_context(parent) if parent is not None else None
        return _guard(
            "start span",
            self._tracer.start_span,
            name,
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )

    def _count(self, saver: str, by: str, checkpoints: int, reclaimed: int) -> None:
        counters = self._counters
        if counters is None:
            return
        attributes = {names.RETENTION_BY: by, names.SAVER: bounded_text(saver)}
        _guard("add counter", counters.checkpoints_removed.add, checkpoints, attributes)
        _guard("add counter", counters.bytes_reclaimed.add, reclaimed, attributes)


class ApplyReport:
    """One apply in progress: a thread span per thread (`thread`), totals for the apply."""

    def __init__(
        self,
        telemetry: RetentionTelemetry,
        span: Span | None,
        saver: str,
        by: str | None,
        *,
        count_threads: bool = False,
    ) -> None:
        self._telemetry = telemetry
        self._span = span
        self._saver = saver
        self._by = by
        self._count_threads = count_threads
        self.totals = _Totals()

    @contextmanager
    def thread(self, thread_id: str) -> Iterator[ThreadReport]:
        """Trace one thread of the apply as the `with` block (a child span of the apply's).

        Yields:
            The thread's report: call `applied`, `skipped`, `failed` or `restored` once. An
            exception of the block marks the thread `failed` (`error.type`) and propagates.
        """
        with self.totals.lock:
            self.totals.threads += 1
        span = self._telemetry._start(
            names.SPAN_RETENTION_THREAD, {names.THREAD_ID: bounded_text(thread_id)}, self._span
        )
        report = ThreadReport(self, span)
        try:
            yield report
        except BaseException as exc:
            with self.totals.lock:
                self.totals.failed += 1
            report.attributes[names.RETENTION_OUTCOME] = OUTCOME_FAILED
            _end(span, report.attributes, exc)
            raise
        else:
            _end(span, report.attributes, None, report.error_type)

    def total_attributes(self) -> dict[str, AttributeValue]:
        """The apply span's totals so far (with the threads traced when their number was not
        given up front)."""
        totals = self.totals
        with totals.lock:
            found: dict[str, AttributeValue] = (
                {names.RETENTION_THREADS: totals.threads} if self._count_threads else {}
            )
            if self._by is None:  # a restore
                return {
                    **found,
                    names.RETENTION_CHECKPOINTS_RESTORED: totals.checkpoints_restored,
                    names.RETENTION_WRITES_RESTORED: totals.writes_restored,
                }
            return {
                **found,
                names.RETENTION_THREADS_SKIPPED: totals.skipped,
                names.RETENTION_CHECKPOINTS_REMOVED: totals.checkpoints_removed,
                names.RETENTION_WRITES_REMOVED: totals.writes_removed,
                names.RETENTION_BYTES_RECLAIMED: totals.bytes_reclaimed,
            }

    def _applied(self, checkpoints: int, writes: int, reclaimed: int) -> None:
        totals = self.totals
        with totals.lock:
            totals.checkpoints_removed += checkpoints
            totals.writes_removed += writes
            totals.bytes_reclaimed += reclaimed
        if self._by is not None:
            self._telemetry._count(self._saver, self._by, checkpoints, reclaimed)


class ThreadReport:
    """One thread of an apply or restore: report its outcome once."""

    def __init__(self, apply: ApplyReport, span: Span | None) -> None:
        self._apply = apply
        self._span = span
        self.attributes: dict[str, AttributeValue] = {}
        """What the thread span gets as it ends."""
        self.error_type: str | None = None
        """Set by `failed`: the span ends with status ERROR and this `error.type`."""

    def applied(
        self,
        *,
        checkpoints_removed: int,
        writes_removed: int,
        bytes_reclaimed: int,
        checkpoints_kept: int,
    ) -> None:
        """The thread's checkpoints were removed (after archiving): outcome `applied`; the
        counters grow by what was removed and reclaimed."""
        self.attributes.update(
            {
                names.RETENTION_OUTCOME: OUTCOME_APPLIED,
                names.RETENTION_CHECKPOINTS_REMOVED: checkpoints_removed,
                names.RETENTION_WRITES_REMOVED: writes_removed,
                names.RETENTION_BYTES_RECLAIMED: bytes_reclaimed,
                names.RETENTION_CHECKPOINTS_KEPT: checkpoints_kept,
            }
        )
        self._apply._applied(checkpoints_removed, writes_removed, bytes_reclaimed)

    def skipped(self, reason: str) -> None:
        """The thread was left untouched (written to during the apply, or its latest state
        changed): outcome `skipped_written`. `reason` is for logs; it is not recorded."""
        del reason  # free text: never an attribute
        self.attributes[names.RETENTION_OUTCOME] = OUTCOME_SKIPPED
        totals = self._apply.totals
        with totals.lock:
            totals.skipped += 1

    def failed(self, error_type: str) -> None:
        """The thread failed and the caller goes on (no exception through `thread`): outcome
        `failed`, status ERROR, `error.type` the failure's class name (never its message)."""
        self.attributes[names.RETENTION_OUTCOME] = OUTCOME_FAILED
        self.error_type = bounded_text(error_type)
        totals = self._apply.totals
        with totals.lock:
            totals.failed += 1

    def restored(self, *, checkpoints: int, writes: int) -> None:
        """The thread's archived checkpoints and writes were put back: outcome `restored`."""
        self.attributes.update(
            {
                names.RETENTION_OUTCOME: OUTCOME_RESTORED,
                names.RETENTION_CHECKPOINTS_RESTORED: checkpoints,
                names.RETENTION_WRITES_RESTORED: writes,
            }
        )
        totals = self._apply.totals
        with totals.lock:
            totals.checkpoints_restored += checkpoints
            totals.writes_restored += writes


def _end(
    span: Span | None,
    attributes: Mapping[str, AttributeValue],
    error: BaseException | None,
    error_type: str | None = None,
) -> None:
    """Set `attributes` (and on `error`, or with `error_type`, the ERROR status and
    `error.type`) and end the span."""
    if span is None:
        return
    if error is not None:
        error_type = type(error).__qualname__
    if error_type is not None:
        attributes = {**attributes, names.ERROR_TYPE: error_type}
        _guard("set status", span.set_status, Status(StatusCode.ERROR))
    if attributes:
        _guard("set attributes", span.set_attributes, attributes)
    _guard("end span", span.end)


# --- the command line -------------------------------------------------------------------------

TRACES_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
CLI_SERVICE_NAME = "langgraph-otel"


class CliTelemetryError(RuntimeError):
    """The command line's telemetry was asked for but cannot be set up (no SDK installed)."""


@contextmanager
def cli_telemetry(directory: Path | None = None) -> Iterator[RetentionTelemetry]:
    """Telemetry for one `langgraph-otel retention --apply` or `restore` run, exported where the
    user's OpenTelemetry is configured, and flushed as the block ends.

    In order:

    * an SDK is already set up globally (`opentelemetry-instrument langgraph-otel ...`): its
      providers, flushed at the end; with `directory`, its spans are also written there;
    * `directory` is given (`--telemetry DIR`): spans and metrics written there as OTLP/JSON
      lines (`spans-<host>-<pid>.jsonl`, which `langgraph-otel -s DIR` reads, and
      `metrics-<host>-<pid>.jsonl`), as `export.otlp_json` writes them;
    * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER` is set:
      the exporters the standard `OTEL_*` variables name (`OTEL_TRACES_EXPORTER` and
      `OTEL_METRICS_EXPORTER`: `otlp`, the default, `console` or `none`;
      `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf`, the default, or `grpc`), with the service
      name `langgraph-otel` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one;
    * else the global providers as they are (no SDK set up: nothing is recorded).

    Providers set up here are the run's own (the global ones are left as they are) and are shut
    down, which exports what they hold, as the block ends.

    Args:
        directory: Where to write OTLP/JSON span and metric files (created if missing).

    Yields:
        The telemetry to give `apply_plans` or `restore_archive`.

    Raises:
        CliTelemetryError: Telemetry is asked for (`directory`, or the variables) but the
            OpenTelemetry SDK or OTLP exporter (the `otlp` extra) is not installed.
    """
    sdk = _global_sdk()
    if sdk is not None or (directory is None and not _otel_configured()):
        if sdk is not None and directory is not None:
            from langgraph.checkpoint.otel.export.otlp_json import write_span_files

            write_span_files(directory, sdk)  # type: ignore[arg-type]
        try:
            yield RetentionTelemetry()
        finally:
            _flush_globals()
        return
    tracer_provider, meter_provider = _cli_providers(directory)
    try:
        yield RetentionTelemetry(tracer_provider, meter_provider)
    finally:
        _guard("shut down tracer provider", tracer_provider.shutdown)
        _guard("shut down meter provider", meter_provider.shutdown)


def _otel_configured() -> bool:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter and exporter != "none":
        return True
    return any(os.environ.get(variable, "").strip() for variable in TRACES_ENDPOINT_VARIABLES)


def _global_sdk() -> object | None:
    """The global tracer provider where it is an SDK's (not the API's proxy or no-op)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    return provider


def _flush_globals() -> None:
    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        flush = getattr(provider, "force_flush", None)
        if callable(flush):
            _guard("flush global provider", flush)


def _cli_providers(directory: Path | None) -> tuple[Any, Any]:
    """SDK providers exporting to `directory` (OTLP/JSON lines) or by the `OTEL_*` variables."""
    try:
        from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise CliTelemetryError(
            "telemetry for the command line needs the OpenTelemetry SDK: "
            "pip install 'langgraph-checkpoint-otel[otlp]'"
        ) from exc
    attributes: dict[str, AttributeValue] = {}
    if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    ):
        attributes["service.name"] = CLI_SERVICE_NAME
    resource = Resource.create(attributes)
    tracer_provider = SdkTracerProvider(resource=resource, shutdown_on_exit=False)
    readers: list[Any] = []
    if directory is not None:
        from langgraph.checkpoint.otel.export.otlp_json import (
            OtlpJsonMetricExporter,
            span_file_name,
            write_span_files,
        )

        write_span_files(directory, tracer_provider)
        metrics_file = directory / span_file_name("metrics")
        readers.append(_reader(PeriodicExportingMetricReader, OtlpJsonMetricExporter(metrics_file)))
    else:
        span_exporter, metric_exporter = _env_exporters()
        if span_exporter is not None:
            tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
        if metric_exporter is not None:
            readers.append(_reader(PeriodicExportingMetricReader, metric_exporter))
    meter_provider = SdkMeterProvider(
        resource=resource, metric_readers=readers, shutdown_on_exit=False
    )
    return tracer_provider, meter_provider


def _reader(reader_type: Any, exporter: Any) -> Any:
    """A periodic reader that exports once, at shutdown (a command's run is short)."""
    return reader_type(exporter, export_interval_millis=3_600_000)


def _env_exporters() -> tuple[Any, Any]:
    """The span and metric exporters the `OTEL_*` variables name (None for `none`)."""
    traces = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    metrics_kind = os.environ.get("OTEL_METRICS_EXPORTER", "otlp").strip().lower() or "otlp"
    span_exporter: Any = None
    metric_exporter: Any = None
    if "console" in (traces, metrics_kind):
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        span_exporter = ConsoleSpanExporter() if traces == "console" else None
        metric_exporter = ConsoleMetricExporter() if metrics_kind == "console" else None
    if "otlp" in (traces, metrics_kind):
        protocol = os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip().lower()
        try:
            if protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                    OTLPMetricExporter,
                )
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                    OTLPSpanExporter,
                )
            else:
                from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
                    OTLPMetricExporter,
                )
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
                    OTLPSpanExporter,
                )
        except ImportError as exc:
            raise CliTelemetryError(
                "OTLP export needs the OpenTelemetry OTLP exporter: "
                "pip install 'langgraph-checkpoint-otel[otlp]'"
            ) from exc
        if traces == "otlp":
            span_exporter = OTLPSpanExporter()
        if metrics_kind == "otlp":
            metric_exporter = OTLPMetricExporter()
    return span_exporter, metric_exporter


__all__ = [
    "ApplyReport",
    "CliTelemetryError",
    "RetentionTelemetry",
    "ThreadReport",
    "cli_telemetry",
]
