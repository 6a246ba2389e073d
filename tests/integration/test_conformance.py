"""The official ``langgraph-checkpoint-conformance`` suite, against real savers, bare and wrapped.

Savers: InMemorySaver, AsyncSqliteSaver (file), SqliteSaver (sync, via ``sync_adapter``),
PostgresSaver (sync, via ``sync_adapter``) and AsyncPostgresSaver (real server, ``postgres_url``),
RedisSaver (sync, via ``sync_adapter``) and AsyncRedisSaver (real server with the RediSearch and
RedisJSON modules, ``redis_url``).

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

Except where the bare saver itself fails conformance tests (``KNOWN_BARE_FAILURES``, checked in
the ``bare`` cases too): there the wrapped saver must fail exactly the same tests, no more (the
wrapper adds no failure) and no fewer (a fixed saver shows up here, to drop the entry), and reach
the level the bare saver reaches.
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
SYNC_SAVERS = {"SqliteSaver", "PostgresSaver", "RedisSaver"}
POSTGRES_SAVERS = {"PostgresSaver", "AsyncPostgresSaver"}
REDIS_SAVERS = {"RedisSaver", "AsyncRedisSaver"}
# Conformance tests the bare saver fails (a limitation of the saver, not of the wrapper), per
# capability; measured with langgraph-checkpoint-redis 0.5.2 and langgraph-checkpoint-conformance
# 0.0.2, identical for the sync and the async Redis saver and on every run:
#   list   `list(config)` of a thread ignores `checkpoint_ns` (lists every namespace), `before`
#          is not honoured, and a metadata filter on a key it does not index raises
#          ("Unsupported filter key: score");
#   prune  `prune(..., keep_latest)` keeps one checkpoint per thread, not per namespace, and
#          `prune([])` raises instead of doing nothing.
_REDIS_BARE_FAILURES: dict[str, frozenset[str]] = {
    "list": frozenset(
        {
            "test_list_by_namespace",
            "test_list_metadata_custom_keys",
            "test_list_before",
            "test_list_limit_plus_before",
            "test_list_multiple_namespaces",
        }
    ),
    "prune": frozenset({"test_prune_keep_latest_across_namespaces", "test_prune_empty_list_noop"}),
}
KNOWN_BARE_FAILURES: dict[str, dict[str, frozenset[str]]] = {
    "RedisSaver": _REDIS_BARE_FAILURES,
    "AsyncRedisSaver": _REDIS_BARE_FAILURES,
}
KNOWN_BARE_LEVEL = {"RedisSaver": "BASE", "AsyncRedisSaver": "BASE"}
"""The level a saver with known bare failures reaches (FULL for every other saver)."""
SAVERS = [
    "InMemorySaver",
    "AsyncSqliteSaver",
    "SqliteSaver",
    "PostgresSaver",
    "AsyncPostgresSaver",
    "RedisSaver",
    "AsyncRedisSaver",
]


# -- inner saver factories: each call yields a fresh, empty saver -----------------------------


def inner_factory(name: str, tmp_path: Path, db_url: str | None) -> InnerFactory:
    """``db_url``: a fresh PostgreSQL database, or a flushed Redis server (None otherwise)."""
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

        assert db_url is not None
        with PostgresSaver.from_conn_string(db_url) as saver:
            saver.setup()
            yield saver

    @asynccontextmanager
    async def async_postgres() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        assert db_url is not None
        async with AsyncPostgresSaver.from_conn_string(db_url) as saver:
            await saver.setup()
            yield saver

    @asynccontextmanager
    async def redis() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.redis import RedisSaver

        assert db_url is not None
        with RedisSaver.from_conn_string(db_url) as saver:
            saver.setup()
            yield saver

    @asynccontextmanager
    async def async_redis() -> AsyncIterator[Saver]:
        from langgraph.checkpoint.redis.aio import AsyncRedisSaver

        assert db_url is not None
        async with AsyncRedisSaver.from_conn_string(db_url) as saver:  # enter runs asetup()
            yield saver

    return {
        "InMemorySaver": memory,
        "AsyncSqliteSaver": async_sqlite,
        "SqliteSaver": sqlite,
        "PostgresSaver": postgres,
        "AsyncPostgresSaver": async_postgres,
        "RedisSaver": redis,
        "AsyncRedisSaver": async_redis,
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
def db_url_for(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """Lazily request a fresh database (PostgreSQL) or a flushed server (Redis) only for the
    savers that need one."""

    def get(name: str) -> str | None:
        if name in POSTGRES_SAVERS:
            pg_url: str = request.getfixturevalue("postgres_db")
            return pg_url
        if name in REDIS_SAVERS:
            redis_url: str = request.getfixturevalue("redis_url")
            return redis_url
        return None

    return get


@pytest.mark.parametrize("wrapping", WRAPPINGS)
@pytest.mark.parametrize("saver_name", SAVERS)
async def test_conformance(
    saver_name: str,
    wrapping: str,
    tmp_path: Path,
    otel: OTel,
    db_url_for: Callable[[str], str | None],
) -> None:
    make_inner = inner_factory(saver_name, tmp_path, db_url_for(saver_name))
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
    known = KNOWN_BARE_FAILURES.get(saver_name, {})
    for cap in Capability:
        result = report.results.get(cap.value)
        assert result is not None, f"{cap.value} missing from the report\n{details}"
        if cap in expected.detected:
            assert result.detected, f"{cap.value} not detected through {wrapping}\n{details}"
            assert result.tests_passed > 0, f"{cap.value}: no tests ran\n{details}"
            if cap.value in known:
                failed = {failure.split(":", 1)[0] for failure in result.failures}
                assert failed == known[cap.value], (
                    f"{cap.value} through {wrapping}: expected exactly the bare {saver_name}'s "
                    f"known failures {sorted(known[cap.value])}, got {sorted(failed)}\n{details}"
                )
                continue
            assert result.passed is True, f"{cap.value} failed through {wrapping}\n{details}"
        else:
            assert not result.detected, (
                f"{cap.value} detected through {wrapping} but the bare {saver_name} lacks it "
                f"(capability mirroring)\n{details}"
            )
    if not any(cap.value in known for cap in BASE_CAPABILITIES):
        assert report.passed_all_base(), details
    assert report.conformance_level() == KNOWN_BARE_LEVEL.get(saver_name, "FULL"), details

    if wrapping == "instrumented":
        assert otel.spans(), f"instrumented {saver_name}: no spans were exported"
