"""Session fixtures: real PostgreSQL and Redis servers, real OpenTelemetry SDK providers.

The suite mirrors the source tree (docs/development.md, "Tests"): ``unit/`` (pure: no servers,
no subprocesses, no network, no browser), ``wrapper/`` (the wrapper through real savers and
graphs in process) and ``integration/`` (servers, subprocesses, browsers, peers, installs); each
collected test is marked by its folder (``-m unit`` ...). ``apps/`` (the apps tests run as
processes or import as graphs and agents) and ``support/`` (helpers, servers, span trees) are
put on ``sys.path`` here, so ``import helpers`` and ``import agents`` work from any folder.

Under ``CI=true`` a skipped test is a failure: a missing PostgreSQL or Redis fails the fixture
loudly, and any skip at all makes the session exit non-zero.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

_TESTS = Path(__file__).resolve().parent
for _folder in ("support", "apps"):
    if str(_TESTS / _folder) not in sys.path:
        sys.path.insert(0, str(_TESTS / _folder))

from helpers import (  # noqa: E402
    OTel,
    PostgresServer,
    PostgresUnavailable,
    RedisServer,
    RedisUnavailable,
    fresh_database,
    in_ci,
)
from phoenix_server import PhoenixServer, PhoenixUnavailable  # noqa: E402


class _Server(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


S = TypeVar("S", bound=_Server)

# --------------------------------------------------------------------------------------------
# OpenTelemetry
# --------------------------------------------------------------------------------------------


@pytest.fixture
def otel() -> Iterator[OTel]:
    """SDK TracerProvider (SimpleSpanProcessor -> InMemorySpanExporter) + SDK MeterProvider
    (InMemoryMetricReader). Pass ``otel.tracer_provider`` / ``otel.meter_provider`` explicitly;
    the global providers are never touched."""
    o = OTel()
    try:
        yield o
    finally:
        o.shutdown()


# --------------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------------


def _session_server(make: Callable[[], S], unavailable: type[Exception]) -> Iterator[S]:
    """A server made by `make`, started for the session and stopped after it; when it cannot
    be had, a skip, or under CI a failure."""
    try:
        server = make()
    except unavailable as exc:
        missing = str(exc)
    else:
        missing = ""
    if missing:
        if in_ci():
            pytest.fail(f"CI=true, so this is a failure, not a skip: {missing}", pytrace=False)
        pytest.skip(missing)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session (initdb + pg_ctl in a temp dir)."""
    yield from _session_server(PostgresServer, PostgresUnavailable)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """``postgresql://postgres@127.0.0.1:PORT/postgres?sslmode=disable`` (the admin database)."""
    return postgres_server.url


@pytest.fixture
def postgres_db(postgres_url: str) -> Iterator[str]:
    """URL of a fresh, empty database (``test_<uuid>``) for this test only; dropped afterwards."""
    with fresh_database(postgres_url) as url:
        yield url


# --------------------------------------------------------------------------------------------
# Redis (with the RediSearch and RedisJSON modules langgraph-checkpoint-redis needs)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server for the whole session (temp dir, free port, nothing persisted)."""
    yield from _session_server(RedisServer, RedisUnavailable)


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """``redis://127.0.0.1:PORT`` of a server emptied (FLUSHALL: keys and search indexes) for
    this test; a saver's ``setup()`` creates its indexes again."""
    redis_server.flushall()
    return redis_server.url


# --------------------------------------------------------------------------------------------
# Arize Phoenix (a real trace backend: OTLP in, UI and REST API out; from .venv-phoenix)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def phoenix_server() -> Iterator[PhoenixServer]:
    """``phoenix serve`` for the whole session (free ports, temp working dir, no telemetry)."""
    yield from _session_server(PhoenixServer, PhoenixUnavailable)


# --------------------------------------------------------------------------------------------
# The folders: a marker each; unit tests stay pure
# --------------------------------------------------------------------------------------------

FOLDERS = ("unit", "wrapper", "integration")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test under tests/ by its folder; a test file anywhere else in tests/ is an
    error naming the folders."""
    misplaced = set()
    for item in items:
        try:
            parts = item.path.resolve().relative_to(_TESTS).parts
        except ValueError:
            continue  # not under tests/ (examples/)
        if len(parts) > 1 and parts[0] in FOLDERS:
            item.add_marker(parts[0])
        else:
            misplaced.add(str(item.path))
    if misplaced:
        raise pytest.UsageError(
            f"test files belong in tests/{{{','.join(FOLDERS)}}}/ "
            f"(docs/development.md, Tests): {', '.join(sorted(misplaced))}"
        )


def _not_in_a_unit_test(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            f"a unit test may not use {what} (tests/unit is pure): move it to tests/integration"
        )

    return refuse


@pytest.fixture(autouse=True)
def _unit_tests_stay_pure(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In tests/unit, starting a process or opening a network connection fails the test."""
    if request.node.get_closest_marker("unit") is None:
        return
    monkeypatch.setattr(subprocess.Popen, "__init__", _not_in_a_unit_test("a subprocess"))
    monkeypatch.setattr(socket.socket, "connect", _not_in_a_unit_test("the network"))
    monkeypatch.setattr(socket.socket, "connect_ex", _not_in_a_unit_test("the network"))


# --------------------------------------------------------------------------------------------
# CI: a skip is a failure
# --------------------------------------------------------------------------------------------

_skipped: list[str] = []


def _record_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = ""
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2])
        _skipped.append(f"{report.nodeid}: {reason}".rstrip(": "))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record_skip(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _record_skip(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if in_ci() and _skipped and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Skips under CI, the ground-truth matrix (tests/integration/test_ground_truth.py) and
    the service load figures (tests/integration/test_service_load.py) when they ran."""
    if in_ci() and _skipped:
        terminalreporter.section(
            "CI=true: skipped tests are failures", sep="=", red=True, bold=True
        )
        for line in _skipped:
            terminalreporter.write_line(f"SKIPPED (counts as failure in CI): {line}", red=True)
    module = sys.modules.get("test_ground_truth")
    text = module.matrix_text() if module is not None else None
    if text:
        terminalreporter.section("ground truth: verdicts against what really happens")
        terminalreporter.write_line(text)
    service = sys.modules.get("test_service_load")
    figures = service.FIGURES if service is not None else None
    if figures:
        terminalreporter.section("service under load: instrumented beside bare")
        terminalreporter.write_line(figures)
