"""The verdicts under test, run as a user runs them (the library's public entry points, the
inspector's own views), over copies of the recorded saver."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from opentelemetry.sdk.trace import TracerProvider

from ground_truth.apps import AppSpec
from langgraph.checkpoint.otel import DivergencePolicy, instrument
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.inspector.compat import CompatCheck, thread_verdict
from langgraph.checkpoint.otel.inspector.sources import Sources
from langgraph.checkpoint.otel.inspector.views import ThreadData
from langgraph.checkpoint.otel.testing.replay import ReplayResult, replay_thread

TRACER_PROVIDER = TracerProvider()


def policy(spec: AppSpec) -> DivergencePolicy:
    """The policy the app runs with, as its team declares it: its read-only tools repeatable
    (handoff and delegation tools are repeatable by default)."""
    return DivergencePolicy(repeatable_tools=frozenset(spec.read_only_tools))


@dataclass
class Online:
    """Findings the wrapper reported online (`on_divergence`), in order."""

    findings: list[Finding] = field(default_factory=list)

    def __call__(self, finding: Finding) -> None:
        self.findings.append(finding)


def instrumented(inner: Any, spec: AppSpec, online: Online | None = None) -> Any:
    """`instrument(inner, divergence=policy, on_divergence=...)` as the app runs it."""
    return instrument(
        inner,
        divergence=policy(spec),
        on_divergence=online,
        tracer_provider=TRACER_PROVIDER,
    )


def replay(graph: Any, saver: SqliteSaver, thread_id: str) -> ReplayResult:
    """`langgraph-otel replay` (its Python twin), with no `--run-tool`: handoff and delegation
    tools run by default."""
    return replay_thread(graph, saver, thread_id)


def compat(graph: Any, saver: SqliteSaver, thread_id: str) -> list[str]:
    """`langgraph-otel compat`'s risks for the thread, as ``reason subject``."""
    verdict = thread_verdict(CompatCheck(graph), saver, thread_id)
    return [] if verdict is None else [f"{r.reason} {r.subject}" for r in verdict.risks]


def diverge(
    saver: SqliteSaver, thread_id: str, extra: DivergencePolicy | None = None
) -> list[Finding]:
    """`langgraph-otel diverge THREAD -s SAVER` (the stored policy, `extra` as flags)."""
    sources = Sources(saver=saver)
    data = ThreadData(sources, thread_id, extra or DivergencePolicy())
    return list(data.findings)
