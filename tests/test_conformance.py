"""The official ``langgraph-checkpoint-conformance`` suite, against real savers, bare and wrapped.

Savers: InMemorySaver, AsyncSqliteSaver (file), SqliteSaver (sync, via ``sync_adapter``),
PostgresSaver (sync, via ``sync_adapter``) and AsyncPostgresSaver (real server, ``postgres_url``).

Wrappings:
  * ``bare``                   the saver itself (proves the harness; the reference results)
  * ``instrumented``           ``instrument(saver, tracer_provider=..., meter_provider=...)`` with
                               the real SDK and in-memory exporters
  * ``instrumented-disabled``  ``instrument(saver, enabled=False)``

Sync savers are instrumented *before* the to-thread adapter (``adapter(instrument(saver))``), so
the wrapper's sync code path is what runs, as it does in a sync graph.

Asserted for every (saver, wrapping):
  * every capability the bare saver type has is detected through the wrapper and passes;
  * every capability the bare saver type lacks is *not* detected through the wrapper
    (capability mirroring), both via the report and directly on the wrapper instance;
  * the conformance level is FULL (all detected capabilities pass).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    Capability,
    DetectedCapabilities,
)
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver

from helpers import OTel
from sync_adapter import to_thread_adapter

Saver = BaseCheckpointSaver[Any]
InnerFactory = Callable[[], AbstractAsyncContextManager[Saver]]

WRAPPINGS = ["bare", "instrumented", "instrumented-disabled"]
SYNC_SAVERS = {"SqliteSaver", "PostgresSaver"}
POSTGRES_SAVERS = {"PostgresSaver", "AsyncPostgresSaver"}
SAVERS = ["InMemorySaver", "AsyncSqliteSaver", "SqliteSaver", "PostgresSaver", "AsyncPostgresSaver"]


# -- inner saver factories: each call yields a fresh, empty saver -----------------------------


def inner_factory(name: str, tmp_path: Path, pg_db: str | None) -> InnerFactory:
    counter = iter(range(1_000_000))

    @asynccontextmanager
    async def memory() -> AsyncIterator[Saver]:
        yield InMemorySaver()

    @asynccontextmanager
    async def async_sqlite() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = tmp_path / f"async-{next(counter)}.sqlite"
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            await saver.setup()
            yield saver

    @asynccontextmanager
    async def sqlite() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        path = tmp_path / f"sync-{next(counter)}.sqlite"
        with SqliteSaver.from_conn_string(str(path)) as saver:
            saver.setup()
            yield saver

    @asynccontextmanager
    async def postgres() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.postgres import PostgresSaver

        assert pg_db is not None
        with PostgresSaver.from_conn_string(pg_db) as saver:
            saver.setup()
            yield saver

    @asynccontextmanager
    async def async_postgres() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        assert pg_db is not None
        async with AsyncPostgresSaver.from_conn_string(pg_db) as saver:
            await saver.setup()
            yield saver

    return {
        "InMemorySaver": memory,
        "AsyncSqliteSaver": async_sqlite,
        "SqliteSaver": sqlite,
        "PostgresSaver": postgres,
        "AsyncPostgresSaver": async_postgres,
    }[name]


# -- wrapping ----------------------------------------------------------------------------------


def make_wrap(wrapping: str, otel: OTel) -> Callable[[Saver], Saver]:
    if wrapping == "bare":
        return lambda saver: saver

    # Imported lazily so the ``bare`` cases run even before the library exists.
    from langgraph.checkpoint.otel import instrument

    if wrapping == "instrumented":
        return lambda saver: instrument(
            saver, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
    if wrapping == "instrumented-disabled":
        return lambda saver: instrument(saver, enabled=False)
    raise AssertionError(wrapping)


def for_conformance(name: str, saver: Saver) -> Saver:
    """The conformance suite is async-only: sync savers go through the to-thread adapter."""
    return to_thread_adapter(saver) if name in SYNC_SAVERS else saver


def format_failures(report: CapabilityReport) -> str:
    lines = [f"{report.checkpointer_name}: level {report.conformance_level()}"]
    for cap, result in sorted(report.results.items()):
        lines.append(
            f"  {cap}: detected={result.detected} passed={result.passed} "
            f"({result.tests_passed} passed, {result.tests_failed} failed)"
        )
        lines.extend(f"    - {failure}" for failure in result.failures)
    return "\n".join(lines)


# -- the test ----------------------------------------------------------------------------------


@pytest.fixture
def pg_db_for(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """Lazily request a fresh database only for the PostgreSQL savers."""

    def get(name: str) -> str | None:
        if name not in POSTGRES_SAVERS:
            return None
        url: str = request.getfixturevalue("postgres_db")
        return url

    return get


@pytest.mark.parametrize("wrapping", WRAPPINGS)
@pytest.mark.parametrize("saver_name", SAVERS)
async def test_conformance(
    saver_name: str,
    wrapping: str,
    tmp_path: Path,
    otel: OTel,
    pg_db_for: Callable[[str], str | None],
) -> None:
    make_inner = inner_factory(saver_name, tmp_path, pg_db_for(saver_name))
    wrap = make_wrap(wrapping, otel)

    # Reference: what the bare saver type can do, and what the conformance suite will see.
    async with make_inner() as bare:
        expected = DetectedCapabilities.from_instance(for_conformance(saver_name, bare))
        wrapped = wrap(bare)
        # Capability mirroring on the wrapper itself: the base capabilities are always
        # delegated (a saver lacking one raises as it does bare); no optional capability
        # appears that the inner saver does not have.
        direct_bare = DetectedCapabilities.from_instance(bare).detected
        if wrapping != "bare":
            direct_bare |= BASE_CAPABILITIES
        direct_wrapped = DetectedCapabilities.from_instance(wrapped).detected
        assert direct_wrapped == direct_bare, (
            f"{wrapping} {saver_name}: wrapper must mirror the inner type's capabilities; "
            f"inner has {sorted(c.value for c in direct_bare)}, "
            f"wrapper has {sorted(c.value for c in direct_wrapped)}"
        )

    @checkpointer_test(name=f"{saver_name}[{wrapping}]")
    async def registered() -> AsyncIterator[Saver]:
        async with make_inner() as inner:
            yield for_conformance(saver_name, wrap(inner))

    started = time.perf_counter()
    report = await validate(registered)
    elapsed = time.perf_counter() - started
    level = report.conformance_level()
    print(f"\nconformance {saver_name}[{wrapping}]: {elapsed:.2f}s level={level}")

    details = format_failures(report)
    for cap in Capability:
        result = report.results.get(cap.value)
        assert result is not None, f"{cap.value} missing from the report\n{details}"
        if cap in expected.detected:
            assert result.detected, f"{cap.value} not detected through {wrapping}\n{details}"
            assert result.passed is True, f"{cap.value} failed through {wrapping}\n{details}"
            assert result.tests_passed > 0, f"{cap.value}: no tests ran\n{details}"
        else:
            assert not result.detected, (
                f"{cap.value} detected through {wrapping} but the bare {saver_name} lacks it "
                f"(capability mirroring)\n{details}"
            )
    assert report.passed_all_base(), details
    assert report.conformance_level() == "FULL", details

    if wrapping == "instrumented":
        assert otel.spans(), f"instrumented {saver_name}: no spans were exported"
