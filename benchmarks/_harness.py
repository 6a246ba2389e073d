"""Shared pieces of the benchmarks: graphs, savers, telemetry providers, timing shims, stats.

Nothing here asserts on speed; `run.py` turns the measurements into a report.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langgraph.checkpoint.otel import instrument

# ~200 characters of deterministic text per message.
_SENTENCE = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. "
TEXT = (_SENTENCE * 3)[:200]


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int


def _append_node(name: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"messages": [AIMessage(TEXT, name=name)], "count": state.get("count", 0) + 1}

    node.__name__ = name
    return node


def linear_graph(n_nodes: int = 10) -> StateGraph:
    """START -> n0 -> ... -> n{n-1} -> END; every node appends one AIMessage, bumps `count`."""
    builder = StateGraph(State)
    prev = START
    for i in range(n_nodes):
        name = f"n{i}"
        builder.add_node(name, _append_node(name))
        builder.add_edge(prev, name)
        prev = name
    builder.add_edge(prev, END)
    return builder


def history_messages(n: int, tag: str) -> list[AIMessage]:
    """`n` ~200-char AIMessages with explicit ids (add_messages would otherwise mutate them)."""
    return [AIMessage(TEXT, id=f"{tag}-{i}") for i in range(n)]


# --- telemetry ----------------------------------------------------------------------------


class NoopSpanExporter(SpanExporter):
    """Accepts every batch and drops it: the cost of the SDK pipeline without any storage."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class Telemetry:
    """An SDK TracerProvider (BatchSpanProcessor -> exporter) and MeterProvider (in-memory)."""

    def __init__(self, exporter_kind: str) -> None:
        self.kind = exporter_kind
        self.exporter: SpanExporter = (
            InMemorySpanExporter() if exporter_kind == "memory" else NoopSpanExporter()
        )
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def drop_exported(self) -> None:
        """Forget exported spans (a real exporter ships them away; keeps memory flat)."""
        if isinstance(self.exporter, InMemorySpanExporter):
            self.exporter.clear()

    def finished_spans(self) -> int:
        self.tracer_provider.force_flush()
        if isinstance(self.exporter, InMemorySpanExporter):
            return len(self.exporter.get_finished_spans())
        return -1

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def make_saver(kind: str, path: str | None = None) -> BaseCheckpointSaver[Any]:
    if kind == "memory":
        return InMemorySaver()
    if kind == "sqlite":
        assert path is not None
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        return saver
    raise ValueError(kind)


def instrumented(saver: BaseCheckpointSaver[Any], tel: Telemetry) -> BaseCheckpointSaver[Any]:
    return instrument(saver, tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider)


def fresh_config() -> dict[str, Any]:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


# --- per-put timing shims -----------------------------------------------------------------


class TimedInMemorySaver(InMemorySaver):
    """InMemorySaver recording the duration of each `put` (ns) and whether it wrote `channel`."""

    def __init__(self, channel: str = "messages") -> None:
        super().__init__()
        self.channel = channel
        self.put_times: list[tuple[bool, int]] = []
        self.put_cpu: list[tuple[bool, int]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        result = super().put(config, checkpoint, metadata, new_versions)
        wrote = self.channel in new_versions
        self.put_cpu.append((wrote, time.thread_time_ns() - c0))
        self.put_times.append((wrote, time.perf_counter_ns() - t0))
        return result


class OuterPutTimer:
    """Times `put` on an (instrumented) saver object from the outside, as LangGraph calls it.

    Installed as an instance attribute, which shadows the class method for LangGraph's lookup.
    """

    def __init__(self, saver: Any, channel: str = "messages") -> None:
        self.channel = channel
        self.put_times: list[tuple[bool, int]] = []
        self.put_cpu: list[tuple[bool, int]] = []
        bound = saver.put

        def put(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            result = bound(config, checkpoint, metadata, new_versions)
            wrote = channel in new_versions
            self.put_cpu.append((wrote, time.thread_time_ns() - c0))
            self.put_times.append((wrote, time.perf_counter_ns() - t0))
            return result

        saver.put = put


# --- statistics ---------------------------------------------------------------------------


def summary(xs: Sequence[float]) -> dict[str, float]:
    """Median, quartiles and IQR (inclusive method), plus n."""
    xs = sorted(xs)
    if len(xs) >= 2:
        q1, q2, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    else:
        q1 = q2 = q3 = xs[0]
    return {"n": len(xs), "median": q2, "q1": q1, "q3": q3, "iqr": q3 - q1}


def bootstrap_ratio_ci(
    num: Sequence[float], den: Sequence[float], n_boot: int = 1000, seed: int = 1
) -> tuple[float, float]:
    """95% bootstrap CI of median(num)/median(den), resampling rounds (paired indices)."""
    rng = random.Random(seed)
    n = len(num)
    ratios = []
    for _ in range(n_boot):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(
            statistics.median([num[i] for i in idx]) / statistics.median([den[i] for i in idx])
        )
    ratios.sort()
    return ratios[int(0.025 * n_boot)], ratios[int(0.975 * n_boot) - 1]


def bootstrap_diff_ci(
    a: Sequence[float], b: Sequence[float], n_boot: int = 1000, seed: int = 2
) -> tuple[float, float]:
    """95% bootstrap CI of median(a) - median(b), resampling each sample independently."""
    rng = random.Random(seed)
    diffs = []
    for _ in range(n_boot):
        ra = [a[rng.randrange(len(a))] for _ in a]
        rb = [b[rng.randrange(len(b))] for _ in b]
        diffs.append(statistics.median(ra) - statistics.median(rb))
    diffs.sort()
    return diffs[int(0.025 * n_boot)], diffs[int(0.975 * n_boot) - 1]


class SpanOnlySaver(BaseCheckpointSaver[Any]):
    """Reference floor: the least any contract-following wrapper does per call.

    One span with the contract's common attributes and one duration measurement per load,
    put and put_writes; no hashing, no per-channel events or metrics, no lineage. Not a
    shipping configuration: it shows how much of the overhead is the OpenTelemetry SDK itself.
    """

    def __init__(
        self, inner: BaseCheckpointSaver[Any], tel: Telemetry, write_spans: bool = True
    ) -> None:
        self.inner = inner
        self.write_spans = write_spans
        """False: pending writes are timed, with no span (the library's default for writes
        whose task succeeded)."""
        self.tracer = tel.tracer_provider.get_tracer("floor")
        self.duration = tel.meter_provider.get_meter("floor").create_histogram("floor", unit="s")
        self.serde = inner.serde

    def _call(self, operation: str, config: Any, fn: Any, *args: Any) -> Any:
        conf = (config or {}).get("configurable", {})
        attributes = {
            "langgraph.thread_id": str(conf.get("thread_id", "")),
            "gen_ai.conversation.id": str(conf.get("thread_id", "")),
            "langgraph.checkpoint.ns": str(conf.get("checkpoint_ns", "")),
            "langgraph.checkpoint.id": str(conf.get("checkpoint_id", "")),
            "langgraph.saver": type(self.inner).__name__,
            "langgraph.operation": operation,
        }
        started = time.perf_counter()
        name = f"langgraph.checkpoint.{operation}"
        if operation == "put_writes" and not self.write_spans:
            result = fn(*args)
        else:
            with self.tracer.start_as_current_span(name, attributes=attributes):
                result = fn(*args)
        self.duration.record(
            time.perf_counter() - started,
            {"langgraph.operation": operation, "langgraph.saver": type(self.inner).__name__},
        )
        return result

    def get_tuple(self, config: Any) -> Any:
        return self._call("get", config, self.inner.get_tuple, config)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self._call("put", config, self.inner.put, config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self._call("put_writes", config, self.inner.put_writes, config, writes, task_id, task_path)

    def list(self, config: Any, **kwargs: Any) -> Any:
        return self.inner.list(config, **kwargs)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)
