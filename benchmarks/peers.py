"""Overhead of langgraph-checkpoint-otel next to the peer LangChain/LangGraph instrumentations.

    .venv/bin/python benchmarks/peers.py            # full run (~3 min on 2 cores)
    .venv/bin/python benchmarks/peers.py --quick    # ~30 s, noisier

Method. Every cell (an agent or graph on one saver) runs each *variant* once per round, in the
same process: ``bare`` (no instrumentation), ``ours`` (the saver wrapped by `instrument()`),
and one variant per peer instrumentation (the official OpenTelemetry GenAI LangChain
instrumentation, OpenInference, Traceloop/OpenLLMetry). Each variant has its own saver (its
own SQLite file, its own PostgreSQL connection) and its own telemetry: an SDK
`TracerProvider` with a `BatchSpanProcessor` into an exporter that only counts spans, and an
SDK `MeterProvider` with an `InMemoryMetricReader` whose data is collected and dropped
between rounds. Every instrumented variant gets the same kind of providers; ``bare`` gets
one too, unused, so that every slot pays the same (empty) flush.

The peers patch LangChain (and LangGraph) globally, so in every round, for every variant:
the peer is instrumented (outside timing), one ``invoke`` on a fresh thread is timed, then
the peer is uninstrumented (outside timing). The CPU time of the whole process
(`time.process_time_ns`, since LangGraph runs nodes and checkpoint writes on executor
threads) covers the invoke *and* a `force_flush` of the variant's span processor right
after it, so the deferred export work of the invoke's spans is charged to it; wall time
(`time.perf_counter_ns`) covers the invoke alone, as a caller sees it. The variant order
rotates every round, after warm-up rounds. Reported per cell and variant: median CPU and wall
ms per invoke, the ratio of medians against ``bare`` (CPU is the headline figure) with a 95%
bootstrap CI resampling rounds, and spans per invoke.

Patches. Before instrumenting a peer, the attributes it wraps (read from its source: the
`PEERS` table below) are snapshotted from their owners' ``__dict__``. After its
``uninstrument()`` any of them still not the original is put back, and a sweep over every
loaded ``langchain*`` / ``langgraph*`` module and class also peels off any other `wrapt`
proxy that was not there before; the result records how many attributes had to be restored
per uninstrument. Spans a peer's exporter receives while it is not instrumented are counted
as ``leaked_spans`` (0 when the restoration works). A peer that cannot be imported or
instrumented is reported as ``unavailable``, one that produces no span as not working.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "apps"))

import _harness as h
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

import agents
import helpers
from langgraph.checkpoint.otel import instrument

Saver = BaseCheckpointSaver[Any]

# --- the peers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One attribute a peer patches: `attr` in the ``__dict__`` of `owner` (a class of
    `module`, or the module itself when `owner` is None)."""

    module: str
    owner: str | None
    attr: str

    @property
    def name(self) -> str:
        return ".".join(p for p in (self.module, self.owner, self.attr) if p)


def _targets(module: str, owner: str | None, *attrs: str) -> tuple[Target, ...]:
    return tuple(Target(module, owner, a) for a in attrs)


@dataclass(frozen=True)
class Peer:
    """A peer instrumentation: where its instrumentor lives, what it takes, what it patches."""

    variant: str
    title: str
    distributions: tuple[str, ...]
    module: str
    instrumentor: str
    takes_meter_provider: bool
    targets: tuple[Target, ...]
    note: str = ""


CALLBACK_MANAGER_INIT = _targets("langchain_core.callbacks.base", "BaseCallbackManager", "__init__")
PREGEL_STREAM = _targets("langgraph.pregel", "Pregel", "stream", "astream")

# opentelemetry.instrumentation.genai.langchain: __init__.py (callback manager, agent entry
# points) and _execution_context.py (context propagation across every execution boundary).
GENAI_TARGETS = (
    CALLBACK_MANAGER_INIT
    + PREGEL_STREAM
    + _targets(
        "langchain_core.language_models.chat_models",
        "BaseChatModel",
        "_generate_with_cache",
        "_agenerate_with_cache",
        "stream",
        "astream",
    )
    + _targets("langchain_core.tools.base", "BaseTool", "run", "arun")
    + _targets("langchain_core.retrievers", "BaseRetriever", "invoke", "ainvoke")
    + _targets(
        "langchain_core.runnables.base",
        "Runnable",
        "_call_with_config",
        "_acall_with_config",
        "batch",
        "abatch",
        "_transform_stream_with_config",
        "_atransform_stream_with_config",
    )
    + _targets("langchain_core.runnables.base", "RunnableLambda", "stream", "astream")
    + _targets(
        "langchain_core.runnables.branch",
        "RunnableBranch",
        "invoke",
        "ainvoke",
        "stream",
        "astream",
    )
    + _targets("langchain.chains.base", "Chain", "invoke")
    + _targets("langchain_classic.chains.base", "Chain", "invoke")
    + tuple(
        t
        for cls in ("CallbackManager", "AsyncCallbackManager")
        for t in _targets(
            "langchain_core.callbacks.manager",
            cls,
            "on_chat_model_start",
            "on_chain_start",
            "on_tool_start",
            "on_retriever_start",
        )
    )
    + _targets("langchain_core.runnables.base", None, "set_config_context")
    + _targets("langchain_core.runnables.fallbacks", None, "set_config_context")
    + _targets("langgraph._internal._runnable", None, "set_config_context")
    + _targets("langgraph.utils.runnable", None, "set_config_context")
)

# opentelemetry.instrumentation.langchain (Traceloop): __init__.py. Its uninstrument passes
# "Class.method" names to `unwrap`, which only takes attribute names, so every one of those
# stays wrapped; the module-level factories are unwrapped properly.
TRACELOOP_TARGETS = (
    CALLBACK_MANAGER_INIT
    + PREGEL_STREAM
    + _targets("langgraph.types", "Command", "__init__")
    + _targets("langgraph.prebuilt.chat_agent_executor", None, "create_react_agent")
    + _targets("langgraph.prebuilt", None, "create_react_agent")
    + _targets("langchain.agents.factory", None, "create_agent")
    + _targets("langchain.agents", None, "create_agent")
    + _targets(
        "langchain.agents.middleware.types",
        "AgentMiddleware",
        *(
            f"{a}{hook}"
            for a in ("", "a")
            for hook in ("before_model", "after_model", "before_agent", "after_agent")
        ),
    )
    + _targets(
        "langchain_community.llms.openai",
        "BaseOpenAI",
        "_generate",
        "_agenerate",
        "_stream",
        "_astream",
    )
    + _targets(
        "langchain_openai.llms.base", "BaseOpenAI", "_generate", "_agenerate", "_stream", "_astream"
    )
    + _targets("langchain_openai.chat_models.base", "BaseChatOpenAI", "_generate", "_agenerate")
)

# Installed with the `bench` extra, e.g.
#   opentelemetry-instrumentation-genai-langchain==1.3b0, opentelemetry-util-genai==1.3b0,
#   openinference-instrumentation-langchain==0.1.80, opentelemetry-instrumentation-langchain==0.62.4
PEERS: tuple[Peer, ...] = (
    Peer(
        variant="otel_genai",
        title="OpenTelemetry GenAI LangChain instrumentation",
        distributions=("opentelemetry-instrumentation-genai-langchain", "opentelemetry-util-genai"),
        module="opentelemetry.instrumentation.genai.langchain",
        instrumentor="LangChainInstrumentor",
        takes_meter_provider=True,
        targets=GENAI_TARGETS,
        note="message content not captured (util-genai default); LLM spans only for "
        "providers it knows, so none for the scripted model",
    ),
    Peer(
        variant="openinference",
        title="OpenInference LangChain instrumentation",
        distributions=("openinference-instrumentation-langchain", "openinference-instrumentation"),
        module="openinference.instrumentation.langchain",
        instrumentor="LangChainInstrumentor",
        takes_meter_provider=False,  # no metrics (`_supports_metrics = False`)
        targets=CALLBACK_MANAGER_INIT,
        note="default TraceConfig: inputs and outputs of every run recorded as JSON",
    ),
    Peer(
        variant="traceloop",
        title="Traceloop / OpenLLMetry LangChain instrumentation",
        distributions=("opentelemetry-instrumentation-langchain",),
        module="opentelemetry.instrumentation.langchain",
        instrumentor="LangchainInstrumentor",
        takes_meter_provider=True,
        targets=TRACELOOP_TARGETS,
        note="defaults: prompts and completions as span attributes",
    ),
)
VARIANTS: tuple[str, ...] = ("bare", "ours", *(p.variant for p in PEERS))

# --- patch snapshots ----------------------------------------------------------------------

_MISSING = object()


def _proxy_types() -> tuple[type, ...]:
    import wrapt

    return (getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy),)


def _resolve(target: Target) -> Any | None:
    """The object whose ``__dict__`` holds `target` (None: its module is not installed)."""
    try:
        owner: Any = importlib.import_module(target.module)
        if target.owner is not None:
            owner = getattr(owner, target.owner)
    except (ImportError, AttributeError):
        return None
    return owner


def _sweep() -> dict[tuple[int, str], tuple[Any, str, Any]]:
    """Every wrapt proxy in the ``__dict__`` of a loaded langchain*/langgraph* module or class."""
    proxy = _proxy_types()
    found: dict[tuple[int, str], tuple[Any, str, Any]] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("langchain", "langgraph")):
            continue
        for key, value in list(vars(module).items()):
            if isinstance(value, proxy):
                found[(id(module), key)] = (module, key, value)
            elif isinstance(value, type) and value.__module__ == name:
                for attr, member in list(vars(value).items()):
                    if isinstance(member, proxy):
                        found[(id(value), attr)] = (value, attr, member)
    return found


@dataclass
class PatchGuard:
    """Snapshot of a peer's targets (and of all wrapt proxies) taken before it instruments."""

    targets: list[tuple[Target, Any]]
    saved: dict[tuple[int, str], Any] = field(default_factory=dict)
    baseline: set[tuple[int, str]] = field(default_factory=set)

    @classmethod
    def of(cls, peer: Peer) -> PatchGuard:
        owners = [(t, _resolve(t)) for t in peer.targets]
        return cls([(t, o) for t, o in owners if o is not None])

    def snapshot(self) -> None:
        self.saved = {(id(o), t.attr): vars(o).get(t.attr, _MISSING) for t, o in self.targets}
        self.baseline = set(_sweep())

    def changed(self) -> dict[tuple[int, str], tuple[str, Any, str, Any]]:
        """What differs from the snapshot: key -> (name, owner, attribute, original value).

        The declared targets, plus any wrapt proxy the sweep finds that was not there before
        (its original is what it wraps, innermost)."""
        out: dict[tuple[int, str], tuple[str, Any, str, Any]] = {}
        for target, owner in self.targets:
            key = (id(owner), target.attr)
            original = self.saved[key]
            if vars(owner).get(target.attr, _MISSING) is not original:
                out[key] = (target.name, owner, target.attr, original)
        proxy = _proxy_types()
        for key, (owner, attr, value) in _sweep().items():
            if key in self.baseline or key in out:
                continue
            while isinstance(value, proxy) and hasattr(value, "__wrapped__"):
                value = value.__wrapped__
            name = f"{getattr(owner, '__module__', None) or ''}.{owner.__name__}.{attr}"
            out[key] = (f"{name.lstrip('.')} (undeclared)", owner, attr, value)
        return out

    def restore(self) -> list[str]:
        """Put back whatever uninstrument left patched; the names of what had to be restored."""
        restored = []
        for name, owner, attr, original in self.changed().values():
            if original is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)
            restored.append(name)
        return restored


# --- telemetry ----------------------------------------------------------------------------


class CountingSpanExporter(h.NoopSpanExporter):
    """Drops every batch, counting its spans."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


class Telemetry:
    """SDK TracerProvider (BatchSpanProcessor -> counting exporter) and MeterProvider (in-memory
    reader), as in `_harness.Telemetry`."""

    def __init__(self) -> None:
        self.exporter = CountingSpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def flush(self) -> int:
        """Export every ended span now; the number of spans exported so far."""
        self.tracer_provider.force_flush()
        return self.exporter.count

    def drop_metrics(self) -> None:
        self.reader.get_metrics_data()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


# --- variants -----------------------------------------------------------------------------


class Unavailable(RuntimeError):
    """A peer that cannot be imported or instrumented here."""


class PeerRunner:
    """Instruments one peer around each timed invoke and restores what it leaves patched."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        try:
            module = importlib.import_module(peer.module)
            self.instrumentor = getattr(module, peer.instrumentor)()
        except Exception as exc:  # ImportError, or an incompatible dependency at import
            raise Unavailable(f"cannot import {peer.module}.{peer.instrumentor}: {exc!r}") from exc
        self.guard = PatchGuard.of(peer)
        self.patched: list[str] | None = None
        """What its first instrument() patched (declared targets and undeclared proxies)."""

    def instrument(self, tel: Telemetry) -> None:
        self.guard.snapshot()
        kwargs: dict[str, Any] = {"tracer_provider": tel.tracer_provider}
        if self.peer.takes_meter_provider:
            kwargs["meter_provider"] = tel.meter_provider
        try:
            self.instrumentor.instrument(raise_exception_on_conflict=True, **kwargs)
        except Exception as exc:
            self.guard.restore()
            raise Unavailable(f"instrument() failed: {exc!r}") from exc
        if not self.instrumentor.is_instrumented_by_opentelemetry:
            self.guard.restore()
            raise Unavailable("instrument() did not instrument (dependency conflict?)")
        if self.patched is None:
            self.patched = sorted(name for name, *_ in self.guard.changed().values())

    def uninstrument(self) -> list[str]:
        """Uninstrument, then restore what it left patched; the names of what was restored."""
        try:
            self.instrumentor.uninstrument()
        except Exception as exc:
            self.guard.restore()
            raise Unavailable(f"uninstrument() failed: {exc!r}") from exc
        return self.guard.restore()


def peer_versions(peer: Peer) -> dict[str, str]:
    out = {}
    for dist in peer.distributions:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


# --- cells --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    key: str
    title: str
    saver: str  # "memory" | "sqlite" | "postgres"
    graph: str  # "agent" | "linear10"


CELLS: tuple[Cell, ...] = (
    Cell("agent_memory", "create_react_agent, InMemorySaver", "memory", "agent"),
    Cell("agent_sqlite", "create_react_agent, SqliteSaver (file)", "sqlite", "agent"),
    Cell("agent_postgres", "create_react_agent, PostgresSaver", "postgres", "agent"),
    Cell("linear10_memory", "10-node linear graph, InMemorySaver", "memory", "linear10"),
)


@dataclass(frozen=True)
class Plan:
    label: str
    warmup: int
    rounds: dict[str, int]  # cell key -> measured rounds


FULL = Plan(
    "full",
    15,
    {"agent_memory": 450, "agent_sqlite": 350, "agent_postgres": 350, "linear10_memory": 500},
)
QUICK = Plan(
    "quick",
    5,
    {"agent_memory": 70, "agent_sqlite": 60, "agent_postgres": 50, "linear10_memory": 80},
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextlib.contextmanager
def saver_factory(kind: str, tmp: str) -> Iterator[Callable[[str], Saver]]:
    """A function making one fresh saver of `kind` per variant; closes them all on exit."""
    with contextlib.ExitStack() as stack:
        if kind == "postgres":
            from langgraph.checkpoint.postgres import PostgresSaver

            server = stack.enter_context(helpers.running_postgres())
            url = stack.enter_context(helpers.fresh_database(server.url))

            def make(variant: str) -> Saver:
                saver = stack.enter_context(PostgresSaver.from_conn_string(url))
                saver.setup()
                return saver

        else:

            def make(variant: str) -> Saver:
                path = os.path.join(tmp, f"peers-{variant}-{uuid.uuid4().hex[:8]}.sqlite")
                return h.make_saver(kind, path)

        yield make


def build(cell: Cell, saver: Saver) -> tuple[Any, Callable[[], dict[str, Any]]]:
    """The compiled graph of `cell` on `saver`, and a function making a fresh input."""
    if cell.graph == "agent":
        return agents.react_agent(saver), agents.question
    graph = h.linear_graph(10).compile(checkpointer=saver)
    return graph, lambda: {"messages": [HumanMessage("hello")], "count": 0}


@dataclass
class Samples:
    """What one variant measured in one cell (per recorded invoke) and what went wrong."""

    cpu_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)
    spans: list[int] = field(default_factory=list)
    restored: list[int] = field(default_factory=list)
    restored_names: set[str] = field(default_factory=set)
    leaked_spans: int = 0
    error: str | None = None
    unavailable: str | None = None


def bench_cell(cell: Cell, plan: Plan, tmp: str, runners: dict[str, PeerRunner]) -> dict[str, Any]:
    """Interleaved rounds of every variant on `cell`; per-variant summaries and ratios."""
    tels = {v: Telemetry() for v in VARIANTS}
    try:
        samples = measure(cell, plan, tmp, runners, tels)
    finally:
        for tel in tels.values():
            tel.shutdown()
    return summarize(cell, plan.rounds[cell.key], samples)


def measure(
    cell: Cell, plan: Plan, tmp: str, runners: dict[str, PeerRunner], tels: dict[str, Telemetry]
) -> dict[str, Samples]:
    """Warm-up, then the measured rounds; each round runs every variant once, rotating."""
    samples = {v: Samples() for v in VARIANTS}
    for v in VARIANTS:
        if v not in ("bare", "ours") and v not in runners:
            samples[v].unavailable = "peer unavailable (see peers)"
    with saver_factory(cell.saver, tmp) as make:
        graphs: dict[str, tuple[Any, Callable[[], dict[str, Any]]]] = {}
        for v in VARIANTS:
            saver = make(v)
            if v == "ours":
                tel = tels[v]
                saver = instrument(
                    saver, tracer_provider=tel.tracer_provider, meter_provider=tel.meter_provider
                )
            graphs[v] = build(cell, saver)
        exported = {v: 0 for v in VARIANTS}

        def slot(v: str, record: bool) -> None:
            """One timed invoke of `v`, its peer instrumented around it (outside timing)."""
            s, tel, runner = samples[v], tels[v], runners.get(v)
            graph, make_input = graphs[v]
            before = tel.flush()
            s.leaked_spans += before - exported[v]  # spans made while this variant was off
            inp, cfg = make_input(), {"configurable": {"thread_id": uuid.uuid4().hex}}
            if runner is not None:
                try:
                    runner.instrument(tel)
                except Unavailable as exc:
                    s.unavailable = str(exc)
                    return
            error = None
            try:
                c0, t0 = time.process_time_ns(), time.perf_counter_ns()
                graph.invoke(inp, cfg)
                t1 = time.perf_counter_ns()
                after = tel.flush()
                c1 = time.process_time_ns()
            except Exception as exc:
                error = f"invoke failed: {exc!r}"
            if runner is not None:
                try:
                    restored = runner.uninstrument()
                except Unavailable as exc:
                    error, restored = error or str(exc), []
                if record:
                    s.restored.append(len(restored))
                    s.restored_names.update(restored)
            if error is not None:
                s.error = error
                return
            exported[v] = after
            if record:
                s.cpu_ms.append((c1 - c0) / 1e6)
                s.wall_ms.append((t1 - t0) / 1e6)
                s.spans.append(after - before)

        order = list(VARIANTS)
        for r in range(plan.warmup + plan.rounds[cell.key]):
            if r == plan.warmup:
                gc.collect()
            k = r % len(order)
            for v in order[k:] + order[:k]:
                if samples[v].error is None and samples[v].unavailable is None:
                    slot(v, record=r >= plan.warmup)
            for tel in tels.values():
                tel.drop_metrics()
        for v in VARIANTS:
            samples[v].leaked_spans += tels[v].flush() - exported[v]
    return samples


def summarize(cell: Cell, rounds: int, samples: dict[str, Samples]) -> dict[str, Any]:
    variants: dict[str, Any] = {}
    bare = samples["bare"]
    for v, s in samples.items():
        if s.unavailable or s.error:
            variants[v] = {"unavailable": s.unavailable or s.error}
            continue
        entry: dict[str, Any] = {
            "cpu_ms": h.summary(s.cpu_ms),
            "wall_ms": h.summary(s.wall_ms),
            "spans_per_invoke": statistics.fmean(s.spans),
        }
        if v != "bare" and len(s.cpu_ms) == len(bare.cpu_ms) and bare.cpu_ms:
            lo, hi = h.bootstrap_ratio_ci(s.cpu_ms, bare.cpu_ms)
            wlo, whi = h.bootstrap_ratio_ci(s.wall_ms, bare.wall_ms)
            entry["ratio_cpu"] = statistics.median(s.cpu_ms) / statistics.median(bare.cpu_ms)
            entry["ratio_cpu_ci95"] = [lo, hi]
            entry["ratio_wall"] = statistics.median(s.wall_ms) / statistics.median(bare.wall_ms)
            entry["ratio_wall_ci95"] = [wlo, whi]
            entry["working"] = min(s.spans) > 0
            if not entry["working"]:
                entry["problem"] = f"no spans in {s.spans.count(0)} of {len(s.spans)} invokes"
        if s.restored:
            entry["restored_per_uninstrument"] = max(s.restored)
            entry["restored_total"] = sum(s.restored)
            entry["restored_attributes"] = sorted(s.restored_names)
            entry["leaked_spans"] = s.leaked_spans
        variants[v] = entry
    return {"title": cell.title, "saver": cell.saver, "rounds": rounds, "variants": variants}


# --- entry points -------------------------------------------------------------------------


def bench_peers(label: str) -> dict[str, Any]:
    """Run every cell with every variant; `label` is "full" or "quick". JSON-serializable."""
    plan = {"full": FULL, "quick": QUICK}[label]
    started = time.perf_counter()
    peers: dict[str, Any] = {}
    runners: dict[str, PeerRunner] = {}
    for peer in PEERS:
        info: dict[str, Any] = {
            "title": peer.title,
            "versions": peer_versions(peer),
            "instrumentor": f"{peer.module}.{peer.instrumentor}",
            "providers": "tracer_provider, meter_provider"
            if peer.takes_meter_provider
            else "tracer_provider",
            "note": peer.note,
        }
        try:
            runner = PeerRunner(peer)
        except Unavailable as exc:
            info["unavailable"] = str(exc)
        else:
            runners[peer.variant] = runner
        peers[peer.variant] = info
    cells: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="lgotel-peers-") as tmp:
        for cell in CELLS:
            log(f"[peers] {cell.title}: {plan.rounds[cell.key]} rounds ...")
            t0 = time.perf_counter()
            try:
                cells[cell.key] = bench_cell(cell, plan, tmp, runners)
            except (helpers.PostgresUnavailable, RuntimeError, ImportError) as exc:
                if cell.saver != "postgres":
                    raise
                cells[cell.key] = {
                    "title": cell.title,
                    "saver": cell.saver,
                    "unavailable": f"PostgreSQL: {exc}",
                }
            cells[cell.key]["elapsed_s"] = time.perf_counter() - t0
            gc.collect()
    for variant, info in peers.items():
        if "unavailable" in info:
            continue
        info["patched_attributes"] = runners[variant].patched
        measured = [
            v for c in cells.values() if (v := c.get("variants", {}).get(variant)) and "cpu_ms" in v
        ]
        info["restored_per_uninstrument"] = max(
            (v.get("restored_per_uninstrument", 0) for v in measured), default=0
        )
        info["restored_attributes"] = sorted(
            {n for v in measured for n in v.get("restored_attributes", [])}
        )
        info["leaked_spans"] = sum(v.get("leaked_spans", 0) for v in measured)
        problems = [
            f"{key}: {v.get('unavailable') or v.get('problem')}"
            for key, c in cells.items()
            if (v := c.get("variants", {}).get(variant))
            and (v.get("unavailable") or not v.get("working", True))
        ]
        if problems:
            info["problems"] = problems
    return {
        "mode": plan.label,
        "environment": environment(),
        "method": "CPU: process_time of invoke + force_flush; wall: invoke; ratio of medians "
        "vs bare with 95% bootstrap CI over rounds; peers instrumented and uninstrumented "
        "around each timed invoke, order rotating every round",
        "peers": peers,
        "cells": cells,
        "elapsed_s": time.perf_counter() - started,
    }


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    for dist in (
        "langgraph",
        "langgraph-prebuilt",
        "langchain-core",
        "langchain",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
        "opentelemetry-sdk",
        "wrapt",
        "langgraph-checkpoint-otel",
    ):
        try:
            env[dist] = version(dist)
        except PackageNotFoundError:
            env[dist] = None
    return env


def ratio(result: dict[str, Any], cell: str, variant: str) -> float | None:
    """The CPU ratio of medians of `variant` against bare in `cell` (None if not measured)."""
    value = result.get("cells", {}).get(cell, {}).get("variants", {}).get(variant, {})
    r = value.get("ratio_cpu")
    return float(r) if r is not None else None


def _short(name: str) -> str:
    """``pkg.module.Class.attr`` -> ``Class.attr`` (a module-level name keeps its module)."""
    tail = ".".join(name.split(" ")[0].split(".")[-2:])
    return tail + (" (undeclared)" if name.endswith("(undeclared)") else "")


def report_lines(result: dict[str, Any]) -> list[str]:
    """A readable table: cells x variants, CPU ratio [95% CI] and spans per invoke."""
    env = result["environment"]
    shown = [v for v in VARIANTS if v != "bare"]
    width = 24
    lines = [
        f"Peer instrumentations, {result['mode']} run ({result.get('elapsed_s', 0):.0f} s; "
        f"python {env['python']}, langgraph {env['langgraph']}, langchain-core "
        f"{env['langchain-core']}, otel-sdk {env['opentelemetry-sdk']}, {env['cpus']} CPUs)",
        "CPU time per invoke (whole process, invoke + span flush), ratio of medians vs bare "
        "[95% CI]; spans per invoke",
        "",
        f"{'cell':38} {'bare CPU ms':>11}  " + " ".join(f"{v:>{width}}" for v in shown),
    ]
    for c in result["cells"].values():
        if "unavailable" in c:
            lines.append(f"{c['title']:38} unavailable: {c['unavailable']}")
            continue
        vs = c["variants"]
        bare = vs["bare"]
        bare_ms = f"{bare['cpu_ms']['median']:11.2f}" if "cpu_ms" in bare else f"{'n/a':>11}"
        cols = []
        for v in shown:
            x = vs.get(v, {})
            if "ratio_cpu" not in x:
                cols.append(f"{'unavailable':>{width}}")
                continue
            lo, hi = x["ratio_cpu_ci95"]
            flag = "" if x.get("working", True) else "!"
            cell_text = (
                f"{x['ratio_cpu']:.2f} [{lo:.2f},{hi:.2f}] {x['spans_per_invoke']:.0f}sp{flag}"
            )
            cols.append(f"{cell_text:>{width}}")
        lines.append(f"{c['title'][:38]:38} {bare_ms}  " + " ".join(cols))
    lines += ["", "median CPU ms / wall ms per invoke, and wall-time ratio vs bare:"]
    for c in result["cells"].values():
        if "unavailable" in c:
            continue
        parts = []
        for v in VARIANTS:
            x = c["variants"].get(v, {})
            if "cpu_ms" not in x:
                parts.append(f"{v} n/a")
                continue
            wall = f" (x{x['ratio_wall']:.2f})" if "ratio_wall" in x else ""
            parts.append(f"{v} {x['cpu_ms']['median']:.2f}/{x['wall_ms']['median']:.2f}{wall}")
        lines.append(f"  {c['title']} ({c['rounds']} rounds): " + "; ".join(parts))
    lines += ["", "peers:"]
    for variant, p in result["peers"].items():
        versions = ", ".join(f"{d} {v}" for d, v in p["versions"].items())
        lines.append(
            f"  {variant}: {p['title']} ({versions}); {p['instrumentor']}({p['providers']})"
        )
        if "unavailable" in p:
            lines.append(f"    UNAVAILABLE: {p['unavailable']}")
            continue
        left = p.get("restored_attributes", [])
        if p.get("patched_attributes") is None:
            lines.append("    never instrumented")
        else:
            lines.append(
                f"    patches {len(p['patched_attributes'])} attribute(s); uninstrument() "
                f"left {p.get('restored_per_uninstrument', 0)} patched (restored by the bench)"
                + (": " + ", ".join(_short(n) for n in left) if left else "")
                + f"; spans while off: {p.get('leaked_spans', 0)}"
            )
        for problem in p.get("problems", []):
            lines.append(f"    PROBLEM {problem}")
    lines.append("  (sp = spans per invoke; ! = some invokes produced no span)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~30 s run with fewer rounds")
    parser.add_argument("--json", help="also write the result as JSON to this file")
    args = parser.parse_args()
    result = bench_peers("quick" if args.quick else "full")
    print("\n".join(report_lines(result)))
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
