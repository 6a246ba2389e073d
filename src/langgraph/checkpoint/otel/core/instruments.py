"""The library's metric instruments, created from one `Meter` in one place (as the OpenTelemetry
GenAI instrumentations do in their `instruments.py`): each one's name (`names`), unit,
description and bucket boundaries. `telemetry.Telemetry` records through them.
"""

from __future__ import annotations

from opentelemetry.metrics import Counter, Histogram, Meter

from langgraph.checkpoint.otel import names

DURATION_BUCKETS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
)  # fmt: skip
"""Seconds: checkpointer calls take from tens of microseconds (in memory) to seconds."""
RUN_DURATION_BUCKETS: tuple[float, ...] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    163.84, 327.68, 655.36,
)  # fmt: skip
"""Seconds: a graph run takes from milliseconds (no model) to minutes (many model calls)."""
SIZE_BUCKETS: tuple[float, ...] = tuple(float(4**k) for k in range(4, 16))
"""Bytes: 256 B to 1 GiB in powers of 4."""
CHECKPOINT_COUNT_BUCKETS: tuple[float, ...] = (
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000,
)  # fmt: skip
"""Checkpoints per thread."""
MESSAGE_COUNT_BUCKETS: tuple[float, ...] = (
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000,
)  # fmt: skip
"""Messages in a thread's history."""
TOKEN_BUCKETS: tuple[float, ...] = tuple(float(1000 * 2**k) for k in range(12))
"""Tokens in a thread's history: 1,000 to 2,048,000 in powers of 2 (model windows)."""
WINDOW_SHARE_BUCKETS: tuple[float, ...] = (
    0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.25, 1.5, 2.0,
)  # fmt: skip
"""A history's share of the model's context window: fine near the cliff (0.75 to 1.0), where
the alert's thresholds sit."""


class RetentionCounters:
    """What retention removed: `langgraph-otel retention --apply` and LangGraph's own `prune`
    (attributes `langgraph.retention.by` and `langgraph.saver`)."""

    __slots__ = ("bytes_reclaimed", "checkpoints_removed")

    def __init__(self, meter: Meter) -> None:
        self.checkpoints_removed: Counter = meter.create_counter(
            names.METRIC_RETENTION_CHECKPOINTS_REMOVED,
            unit="{checkpoint}",
            description="Checkpoints removed by retention (an apply or a saver's prune).",
        )
        self.bytes_reclaimed: Counter = meter.create_counter(
            names.METRIC_RETENTION_BYTES_RECLAIMED,
            unit="By",
            description="Stored bytes reclaimed by retention (an apply or a saver's prune).",
        )


class Instruments:
    """Every metric instrument of one instrumented saver, created from `meter`."""

    def __init__(self, meter: Meter) -> None:
        self.duration: Histogram = meter.create_histogram(
            names.METRIC_OPERATION_DURATION,
            unit="s",
            description="Duration of checkpointer operations.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.run_duration: Histogram = meter.create_histogram(
            names.METRIC_RUN_DURATION,
            unit="s",
            description="Duration of graph runs (GenAI conventions: agent invocations).",
            explicit_bucket_boundaries_advisory=RUN_DURATION_BUCKETS,
        )
        self.checkpoint_size: Histogram = meter.create_histogram(
            names.METRIC_CHECKPOINT_SIZE,
            unit="By",
            description="Serialized size of the whole state at each checkpoint write.",
            explicit_bucket_boundaries_advisory=SIZE_BUCKETS,
        )
        self.channel_size: Histogram = meter.create_histogram(
            names.METRIC_CHANNEL_SIZE,
            unit="By",
            description="Serialized size of each channel changed by a checkpoint write.",
            explicit_bucket_boundaries_advisory=SIZE_BUCKETS,
        )
        self.resumes: Counter = meter.create_counter(
            names.METRIC_RESUMES, unit="{resume}", description="Runs resumed from a checkpoint."
        )
        self.divergences: Counter = meter.create_counter(
            names.METRIC_DIVERGENCES,
            unit="{divergence}",
            description="Divergences found after a resume or replay.",
        )
        self.task_outcomes: Counter = meter.create_counter(
            names.METRIC_TASK_OUTCOMES,
            unit="{task}",
            description="Pending-write calls by node and outcome.",
        )
        self.thread_checkpoints: Histogram = meter.create_histogram(
            names.METRIC_THREAD_CHECKPOINTS,
            unit="{checkpoint}",
            description="Checkpoints in a thread's line at the last write of each run.",
            explicit_bucket_boundaries_advisory=CHECKPOINT_COUNT_BUCKETS,
        )
        self.thread_written: Histogram = meter.create_histogram(
            names.METRIC_THREAD_WRITTEN,
            unit="By",
            description="Bytes written along a thread's line at the last write of each run.",
            explicit_bucket_boundaries_advisory=SIZE_BUCKETS,
        )
        self.schema_mismatches: Counter = meter.create_counter(
            names.METRIC_SCHEMA_MISMATCHES,
            unit="{resume}",
            description="Resumes of a checkpoint written under another schema version.",
        )
        self.graph_changes: Counter = meter.create_counter(
            names.METRIC_GRAPH_CHANGES,
            unit="{resume}",
            description="Resumes of a checkpoint written under another graph structure.",
        )
        self.messages: Histogram = meter.create_histogram(
            names.METRIC_MESSAGES,
            unit="{message}",
            description="Messages in a thread's history at each put that changed it.",
            explicit_bucket_boundaries_advisory=MESSAGE_COUNT_BUCKETS,
        )
        self.message_tokens: Histogram = meter.create_histogram(
            names.METRIC_MESSAGE_TOKENS,
            unit="{token}",
            description="Estimated tokens of a thread's history at each put that changed it.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.window_share: Histogram = meter.create_histogram(
            names.METRIC_WINDOW_SHARE,
            unit="1",
            description="A thread's history tokens over the model's context window.",
            explicit_bucket_boundaries_advisory=WINDOW_SHARE_BUCKETS,
        )
        self.concurrent_writes: Counter = meter.create_counter(
            names.METRIC_CONCURRENT_WRITES,
            unit="{checkpoint}",
            description="Checkpoints whose parent already has a child written by another run.",
        )
        self.retention = RetentionCounters(meter)
