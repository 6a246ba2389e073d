"""Retention's spans and counters (`retention/telemetry.py`), on the real SDK's in-memory
exporter and metric reader: an apply with applied, skipped and failing threads, a restore, a
telemetry fault that never reaches the apply, and what the command line's telemetry writes."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.trace import StatusCode

from helpers import OTel
from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.export.otlp_json import read_metrics, read_spans
from langgraph.checkpoint.otel.retention.telemetry import RetentionTelemetry, cli_telemetry

POLICY = "keep_last=20 older_than=30d"


def telemetry(otel: OTel) -> RetentionTelemetry:
    return RetentionTelemetry(otel.tracer_provider, otel.meter_provider)


def by_name(otel: OTel, name: str) -> list[ReadableSpan]:
    return [s for s in otel.spans() if s.name == name]


def counters(otel: OTel) -> dict[str, list[tuple[dict[str, Any], int]]]:
    found = otel.metrics()
    return {
        name: [(dict(p.attributes), p.value) for p in found.get(name, [])]
        for name in (
            names.METRIC_RETENTION_CHECKPOINTS_REMOVED,
            names.METRIC_RETENTION_BYTES_RECLAIMED,
        )
    }


def run_apply(otel: OTel) -> None:
    """One apply over three threads: one applied, one skipped, one failing."""
    with telemetry(otel).apply(
        policy=POLICY, threads=3, saver="SqliteSaver", archive=Path("/srv/archives/a.lgarchive")
    ) as report:
        with report.thread("t-1") as thread:
            thread.applied(
                checkpoints_removed=7, writes_removed=12, bytes_reclaimed=4096, checkpoints_kept=3
            )
        with report.thread("t-2") as thread:
            thread.skipped("written to during the apply")
        with pytest.raises(OSError), report.thread("t-3"):
            raise OSError("disk full at /secret/path")


def test_an_apply_span_carries_its_policy_and_totals(otel: OTel) -> None:
    run_apply(otel)
    (apply,) = by_name(otel, names.SPAN_RETENTION_APPLY)
    assert dict(apply.attributes or {}) == {
        names.RETENTION_POLICY: POLICY,
        names.RETENTION_THREADS: 3,
        names.SAVER: "SqliteSaver",
        names.OPERATION: "apply",
        names.RETENTION_ARCHIVE: "a.lgarchive",  # the name, never the path
        names.RETENTION_THREADS_SKIPPED: 1,
        names.RETENTION_CHECKPOINTS_REMOVED: 7,
        names.RETENTION_WRITES_REMOVED: 12,
        names.RETENTION_BYTES_RECLAIMED: 4096,
    }
    assert apply.status.status_code is StatusCode.UNSET


def test_a_streaming_apply_sets_its_thread_count_as_it_ends(otel: OTel) -> None:
    """Without `threads=` (an apply streaming its plans) the span starts without a count and
    ends with the number of threads traced, the failed one included."""
    with telemetry(otel).apply(policy=POLICY, saver="SqliteSaver", archive=None) as report:
        for thread_id in ("t-1", "t-2"):
            with report.thread(thread_id) as thread:
                thread.applied(
                    checkpoints_removed=2, writes_removed=1, bytes_reclaimed=10, checkpoints_kept=5
                )
        with pytest.raises(OSError), report.thread("t-3"):
            raise OSError("disk full")
        assert report.total_attributes()[names.RETENTION_THREADS] == 3
    (apply,) = by_name(otel, names.SPAN_RETENTION_APPLY)
    attributes = dict(apply.attributes or {})
    assert attributes[names.RETENTION_THREADS] == 3
    assert attributes[names.RETENTION_CHECKPOINTS_REMOVED] == 4


def test_a_thread_count_given_up_front_is_kept(otel: OTel) -> None:
    """`threads=` as before: recorded as given, not replaced by the threads traced."""
    with (
        telemetry(otel).apply(
            policy=POLICY, threads=5, saver="SqliteSaver", archive=None
        ) as report,
        report.thread("t-1") as thread,
    ):
        thread.skipped("written")
    (apply,) = by_name(otel, names.SPAN_RETENTION_APPLY)
    assert dict(apply.attributes or {})[names.RETENTION_THREADS] == 5


def test_each_thread_is_a_child_span_with_its_outcome(otel: OTel) -> None:
    run_apply(otel)
    (apply,) = by_name(otel, names.SPAN_RETENTION_APPLY)
    threads = by_name(otel, names.SPAN_RETENTION_THREAD)
    assert [s.parent.span_id if s.parent else None for s in threads] == [apply.context.span_id] * 3
    assert [dict(s.attributes or {}) for s in threads[:2]] == [
        {
            names.THREAD_ID: "t-1",
            names.RETENTION_OUTCOME: "applied",
            names.RETENTION_CHECKPOINTS_REMOVED: 7,
            names.RETENTION_WRITES_REMOVED: 12,
            names.RETENTION_BYTES_RECLAIMED: 4096,
            names.RETENTION_CHECKPOINTS_KEPT: 3,
        },
        {names.THREAD_ID: "t-2", names.RETENTION_OUTCOME: "skipped_written"},
    ]


def test_a_failing_thread_is_marked_failed_without_its_message(otel: OTel) -> None:
    run_apply(otel)
    failed = by_name(otel, names.SPAN_RETENTION_THREAD)[2]
    assert dict(failed.attributes or {}) == {
        names.THREAD_ID: "t-3",
        names.RETENTION_OUTCOME: "failed",
        names.ERROR_TYPE: "OSError",
    }
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description is None and not failed.events  # no message, no stack


def test_a_thread_reported_failed_goes_on_with_its_error_type(otel: OTel) -> None:
    with (
        telemetry(otel).apply(
            policy=POLICY, threads=1, saver="SqliteSaver", archive=None
        ) as report,
        report.thread("t-1") as thread,
    ):
        thread.failed("OperationalError")
    (span,) = by_name(otel, names.SPAN_RETENTION_THREAD)
    assert dict(span.attributes or {}) == {
        names.THREAD_ID: "t-1",
        names.RETENTION_OUTCOME: "failed",
        names.ERROR_TYPE: "OperationalError",
    }
    assert span.status.status_code is StatusCode.ERROR
    assert by_name(otel, names.SPAN_RETENTION_APPLY)[0].status.status_code is StatusCode.UNSET


def test_the_counters_count_applied_threads_by_apply_and_saver(otel: OTel) -> None:
    run_apply(otel)
    attributes = {names.RETENTION_BY: "apply", names.SAVER: "SqliteSaver"}
    assert counters(otel) == {
        names.METRIC_RETENTION_CHECKPOINTS_REMOVED: [(attributes, 7)],
        names.METRIC_RETENTION_BYTES_RECLAIMED: [(attributes, 4096)],
    }


def test_an_apply_that_raises_is_failed_and_the_error_propagates(otel: OTel) -> None:
    with (
        pytest.raises(KeyboardInterrupt),
        telemetry(otel).apply(policy=POLICY, threads=1, saver="PostgresSaver", archive=None),
    ):
        raise KeyboardInterrupt
    (apply,) = by_name(otel, names.SPAN_RETENTION_APPLY)
    assert apply.status.status_code is StatusCode.ERROR
    assert apply.attributes is not None
    assert apply.attributes[names.ERROR_TYPE] == "KeyboardInterrupt"
    assert names.RETENTION_ARCHIVE not in apply.attributes


def test_a_restore_reports_what_it_put_back_and_counts_nothing_removed(otel: OTel) -> None:
    with (
        telemetry(otel).apply(
            policy=POLICY, threads=1, saver="RedisSaver", archive="a.lgarchive", operation="restore"
        ) as report,
        report.thread("t-1") as thread,
    ):
        thread.restored(checkpoints=7, writes=12)
    (apply,) = by_name(otel, names.SPAN_RETENTION_APPLY)
    (thread_span,) = by_name(otel, names.SPAN_RETENTION_THREAD)
    assert apply.attributes is not None and thread_span.attributes is not None
    assert apply.attributes[names.OPERATION] == "restore"
    assert apply.attributes[names.RETENTION_CHECKPOINTS_RESTORED] == 7
    assert apply.attributes[names.RETENTION_WRITES_RESTORED] == 12
    assert thread_span.attributes[names.RETENTION_OUTCOME] == "restored"
    assert counters(otel) == {
        names.METRIC_RETENTION_CHECKPOINTS_REMOVED: [],
        names.METRIC_RETENTION_BYTES_RECLAIMED: [],
    }


class Raising(SpanProcessor):
    """A span processor that fails on every span end."""

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("exporter down")


def test_a_telemetry_fault_never_reaches_the_apply(
    otel: OTel, caplog: pytest.LogCaptureFixture
) -> None:
    otel.tracer_provider.add_span_processor(Raising())
    done = []
    with caplog.at_level(logging.WARNING, logger="langgraph.checkpoint.otel"):
        for _ in range(2):
            with telemetry(otel).apply(
                policy=POLICY, threads=1, saver="SqliteSaver", archive=None
            ) as report:
                with report.thread("t-1") as thread:
                    thread.applied(
                        checkpoints_removed=1,
                        writes_removed=0,
                        bytes_reclaimed=10,
                        checkpoints_kept=1,
                    )
                done.append(True)
    assert done == [True, True]
    faults = [r for r in caplog.records if "telemetry fault" in r.getMessage()]
    assert len(faults) == 1  # logged once, whatever the number of faults
    assert "exporter down" not in caplog.text


def test_no_providers_and_no_sdk_records_nothing_and_works() -> None:
    with (
        RetentionTelemetry().apply(
            policy=POLICY, threads=1, saver="SqliteSaver", archive=None
        ) as report,
        report.thread("t-1") as thread,
    ):
        thread.skipped("written")
    assert report.total_attributes()[names.RETENTION_THREADS_SKIPPED] == 1


def test_the_command_line_writes_span_and_metric_files(tmp_path: Path) -> None:
    with (
        cli_telemetry(tmp_path / "telemetry") as cli,
        cli.apply(policy=POLICY, threads=1, saver="SqliteSaver", archive=None) as report,
        report.thread("t-1") as thread,
    ):
        thread.applied(
            checkpoints_removed=2, writes_removed=1, bytes_reclaimed=300, checkpoints_kept=1
        )
    (spans_file,) = (tmp_path / "telemetry").glob("spans-*.jsonl")
    (metrics_file,) = (tmp_path / "telemetry").glob("metrics-*.jsonl")
    spans = read_spans(spans_file)
    assert sorted(s.name for s in spans) == [
        names.SPAN_RETENTION_APPLY,
        names.SPAN_RETENTION_THREAD,
    ]
    assert {s.resource.get("service.name") for s in spans} == {"langgraph-otel"}
    (reclaimed,) = read_metrics(metrics_file)[names.METRIC_RETENTION_BYTES_RECLAIMED]
    assert reclaimed.value == 300  # type: ignore[union-attr]
