"""pytest plugin that runs LangGraph's own test suite through `instrument()`.

Loaded by ``scripts/langgraph_suite/run.py`` as ``-p langgraph_suite.plugin`` into a pytest
session over the tests of the ``langgraph`` sdist (the downloaded files are not edited).

When the suite's ``tests/conftest.py`` is registered, every checkpointer factory of
``tests/conftest_checkpointer.py`` (the names in its ``__all__``: ``_checkpointer_memory``,
``_checkpointer_sqlite``, ``_checkpointer_postgres_aio_pool``, ...) is replaced, in that module
and in the conftest that imported it, by one that yields ``instrument(saver, tracer_provider=...,
meter_provider=...)`` with real SDK providers. The fixtures ``sync_checkpointer`` and
``async_checkpointer`` build their savers only through those factories, and
``tests/test_prune_postgres.py`` imports them after the patch, so every checkpointer the suite's
fixtures hand to a test is instrumented. A fixture that still yields a bare saver is an error
of the test that asked for it.

Environment:
    LANGGRAPH_SUITE_WRAP     "1" (default) wraps; "0" is the bare run (same factories, no wrap).
    LANGGRAPH_SUITE_RESULTS  path of a JSON file written at the end of the session: per test id
                             its outcome, backends, wrapped savers, spans, duration and failure.

In the wrapped mode the session fails when no checkpointer was wrapped at all.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langgraph.checkpoint.otel import instrument, is_instrumented

WRAP = os.environ.get("LANGGRAPH_SUITE_WRAP", "1") != "0"
RESULTS = os.environ.get("LANGGRAPH_SUITE_RESULTS")

CONFTEST = "tests.conftest"
FACTORY_MODULE = "tests.conftest_checkpointer"
FACTORY_PREFIX = "_checkpointer_"
# Fixtures parametrized by backend (their param is the backend of the test), besides `cache`.
CHECKPOINTER_FIXTURES = ("sync_checkpointer", "async_checkpointer")

# user_properties keys (they travel with the reports, also from xdist workers)
P_BACKENDS = "lgsuite.backends"
P_MADE = "lgsuite.made"
P_WRAPPED = "lgsuite.wrapped"
P_SPANS = "lgsuite.spans"


class _Telemetry:
    """One real SDK tracer and meter provider per process; spans are dropped after each test."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])

    def take_span_count(self) -> int:
        count = len(self.exporter.get_finished_spans())
        self.exporter.clear()
        return count


_telemetry: _Telemetry | None = None
_current: pytest.Item | None = None
_patched: dict[str, Callable[..., Any]] = {}


def _telemetry_instance() -> _Telemetry:
    global _telemetry
    if _telemetry is None:
        _telemetry = _Telemetry()
    return _telemetry


def _made(backend: str, saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """Record that the current test got a saver of `backend`; wrap it unless bare."""
    if _current is not None:
        _current.user_properties.append((P_MADE, backend))
    if not WRAP:
        return saver
    telemetry = _telemetry_instance()
    wrapped = instrument(
        saver,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    if _current is not None:
        _current.user_properties.append((P_WRAPPED, backend))
    return wrapped


def _wrap_factory(name: str, factory: Callable[..., Any]) -> Callable[..., Any]:
    backend = name.removeprefix(FACTORY_PREFIX)
    if inspect.isasyncgenfunction(inspect.unwrap(factory)):

        @contextlib.asynccontextmanager
        async def async_factory(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            async with factory(*args, **kwargs) as saver:
                yield _made(backend, saver)

        wrapped: Callable[..., Any] = async_factory
    else:

        @contextlib.contextmanager
        def sync_factory(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with factory(*args, **kwargs) as saver:
                yield _made(backend, saver)

        wrapped = sync_factory
    wrapped.__name__ = wrapped.__qualname__ = name
    wrapped.__wrapped__ = factory  # type: ignore[attr-defined]
    return wrapped


def _patch_factories(conftest: Any) -> None:
    module = sys.modules.get(FACTORY_MODULE)
    if module is None:
        raise pytest.UsageError(f"{CONFTEST} did not import {FACTORY_MODULE}")
    names = [n for n in getattr(module, "__all__", dir(module)) if n.startswith(FACTORY_PREFIX)]
    for name in names:
        original = getattr(module, name)
        replacement = _wrap_factory(name, original)
        _patched[name] = replacement
        setattr(module, name, replacement)
        # `from tests.conftest_checkpointer import _checkpointer_x` bound the original here.
        for attr, value in vars(conftest).items():
            if value is original:
                setattr(conftest, attr, replacement)
    if not _patched:
        raise pytest.UsageError(f"no {FACTORY_PREFIX}* factory found in {FACTORY_MODULE}")


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    # Called when pytest registers the suite's conftest, right after importing it and before
    # any test module is imported.
    if getattr(plugin, "__name__", None) == CONFTEST and not _patched:
        _patch_factories(plugin)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(item, "callspec", None)
        params = params.params if params is not None else {}
        backends = [str(params[f]) for f in CHECKPOINTER_FIXTURES if f in params]
        if "cache" in params:  # cache params are named like checkpointers (memory, sqlite)
            backends.append(f"cache-{params['cache']}")
        item.user_properties.append((P_BACKENDS, ",".join(backends)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    global _current
    _current = item
    try:
        return (yield)
    finally:
        _current = None


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: Any) -> Any:
    result = yield
    if WRAP and isinstance(result, BaseCheckpointSaver) and not is_instrumented(result):
        raise RuntimeError(
            f"langgraph-suite: fixture {fixturedef.argname!r} yielded an uninstrumented "
            f"{type(result).__name__}: a checkpointer factory was not patched"
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    try:
        return (yield)
    finally:
        if _telemetry is not None:
            item.user_properties.append((P_SPANS, _telemetry.take_span_count()))


# -- results (on the xdist controller, or in the only process) --------------------------------


class _Results:
    def __init__(self) -> None:
        self.tests: dict[str, dict[str, Any]] = {}
        self.collect_errors: dict[str, str] = {}

    def add(self, report: pytest.TestReport) -> None:
        test = self.tests.setdefault(
            report.nodeid,
            {"outcome": None, "backends": [], "made": [], "wrapped": 0, "spans": 0},
        )
        test["duration"] = test.get("duration", 0.0) + report.duration
        props = report.user_properties
        test["backends"] = [b for k, v in props if k == P_BACKENDS for b in str(v).split(",") if b]
        test["made"] = sorted({v for k, v in props if k == P_MADE})
        test["wrapped"] = sum(1 for k, _ in props if k == P_WRAPPED)
        test["spans"] = sum(v for k, v in props if k == P_SPANS)
        xfail = hasattr(report, "wasxfail")
        outcome = test["outcome"]
        if report.when == "call" or outcome is None:
            if report.passed:
                outcome = "xpassed" if xfail else "passed"
            elif report.skipped:
                outcome = "xfailed" if xfail else "skipped"
            else:
                outcome = "failed" if report.when == "call" else "error"
        elif report.failed:  # teardown (or a setup after a failed call: never)
            outcome = "error"
        test["outcome"] = outcome
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            test.setdefault("failures", []).append(
                {
                    "when": report.when,
                    "message": crash.message if crash is not None else "",
                    "traceback": report.longreprtext[-6000:],
                }
            )


_results = _Results()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _results.add(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _results.collect_errors[report.nodeid] = report.longreprtext[-6000:]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config):
        return
    wrapped = sum(t["wrapped"] for t in _results.tests.values())
    ran = sum(1 for t in _results.tests.values() if t["outcome"] not in ("skipped", None))
    if WRAP and ran and not wrapped:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if RESULTS:
        Path(RESULTS).write_text(
            json.dumps(
                {
                    "wrap": WRAP,
                    "exitstatus": int(session.exitstatus),
                    "tests": _results.tests,
                    "collect_errors": _results.collect_errors,
                },
                indent=1,
            )
        )


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    tests = _results.tests.values()
    made = Counter(b for t in tests for b in t["made"])
    wrapped = sum(t["wrapped"] for t in tests)
    spans = sum(t["spans"] for t in tests)
    mode = "wrapped with instrument()" if WRAP else "bare (not wrapped)"
    tr = terminalreporter
    tr.section("langgraph-suite plugin")
    tr.line(f"mode: {mode}; factories patched: {len(_patched) or 'see workers'}")
    tr.line(f"tests that got a checkpointer, per factory: {dict(sorted(made.items()))}")
    tr.line(f"checkpointers wrapped: {wrapped}; spans exported: {spans}")
    if WRAP and not wrapped and any(t["outcome"] not in ("skipped", None) for t in tests):
        tr.line("ERROR: no checkpointer was wrapped: the factories were not patched", red=True)
