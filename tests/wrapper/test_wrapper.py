"""The wrapper's contract with its caller: delegation, errors, faults, options, suppression."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import graphs
from helpers import OTel, RaisingProcessor, is_run_span
from langgraph.checkpoint.otel import (
    InstrumentedSaver,
    instrument,
    is_instrumented,
    names,
    uninstrument,
)
from langgraph.checkpoint.otel.core import telemetry
from langgraph.checkpoint.otel.core.saver import (
    CORE_METHODS,
    MIRRORED_METHODS,
    overrides,
    wrapper_type,
)


def counter_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    return graphs.counter().compile(checkpointer=saver)


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def history(saver: BaseCheckpointSaver[Any], thread: str = "t") -> list[tuple[Any, ...]]:
    return [
        (t.checkpoint["channel_values"], t.metadata.get("step"), len(t.pending_writes or []))
        for t in saver.list(config(thread))
    ]


# --- delegation -------------------------------------------------------------------------------


class ProxySaver(BaseCheckpointSaver[Any]):
    """A saver that provides its methods dynamically, like LangGraph's own test saver
    `MemorySaverNeedsPendingSendsMigration`: only `get_tuple` is defined on its type."""

    def __init__(self) -> None:
        self.saver = InMemorySaver()

    def __getattribute__(self, name: str) -> Any:
        if name in ("saver", "__class__", "get_tuple"):
            return object.__getattribute__(self, name)
        return getattr(self.saver, name)

    def get_tuple(self, config: Any) -> Any:
        return self.saver.get_tuple(config)


@pytest.mark.parametrize("saver_type", [InMemorySaver, SqliteSaver, AsyncSqliteSaver])
def test_wrapper_type_mirrors_exactly_the_inner_capabilities(saver_type: type) -> None:
    inner = saver_type.__new__(saver_type)  # capabilities are the type's: no connection needed
    cls = wrapper_type(inner)
    for method in MIRRORED_METHODS:
        assert overrides(cls, method) == overrides(saver_type, method), method
    for method in CORE_METHODS:
        assert overrides(cls, method), method
    assert "task_path" in inspect.signature(cls.put_writes).parameters
    assert "task_path" in inspect.signature(cls.aput_writes).parameters


def test_a_proxy_saver_works_wrapped_as_bare_and_its_dynamic_capabilities_count(
    otel: OTel,
) -> None:
    proxy = ProxySaver()
    assert not overrides(type(proxy), "put") and not overrides(type(proxy), "copy_thread")
    saver = instrument(proxy, tracer_provider=otel.tracer_provider)
    # InMemorySaver's optional capability, reached only through the proxy's __getattribute__
    assert overrides(type(saver), "get_delta_channel_history")
    assert not overrides(type(saver), "copy_thread")  # InMemorySaver has none
    graph = counter_graph(saver)
    assert graph.invoke({"n": 0}, config()) == {"n": 2}
    bare = counter_graph(ProxySaver())
    assert bare.invoke({"n": 0}, config()) == {"n": 2}
    assert history(saver) == history(bare.checkpointer)
    saver.get_delta_channel_history(config=config(), channels=["n"])  # type: ignore[attr-defined]
    assert {"langgraph.checkpoint.put", "langgraph.checkpoint.get_delta_channel_history"} <= set(
        otel.span_names()
    )


def test_instrumenting_twice_returns_the_same_wrapper_and_uninstrument_returns_inner() -> None:
    inner = InMemorySaver()
    once = instrument(inner)
    assert instrument(once) is once
    assert is_instrumented(once) and not is_instrumented(inner)
    assert uninstrument(once) is inner
    assert uninstrument(inner) is inner


def test_inner_extras_and_serde_are_reachable(tmp_path: Any) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "x.db")) as inner:
        saver = instrument(inner)
        assert saver.conn is inner.conn  # type: ignore[attr-defined]
        saver.setup()  # type: ignore[attr-defined]
        assert saver.serde is inner.serde
        assert saver.config_specs == inner.config_specs
        # forwarded: SqliteSaver's own string versions, not the base class's integers
        assert str(saver.get_next_version(None, None)).startswith("0000000000000000000000000000000")
    with pytest.raises(AttributeError):
        _ = saver.no_such_attribute  # type: ignore[attr-defined]


def test_with_allowlist_returns_an_instrumented_wrapper_of_the_inner_clone(otel: OTel) -> None:
    inner = InMemorySaver(
        serde=JsonPlusSerializer(allowed_msgpack_modules=[("json", "JSONDecoder")])
    )
    saver = instrument(inner, tracer_provider=otel.tracer_provider)
    assert instrument(InMemorySaver()).with_allowlist([("a", "B")]) is not None
    clone = saver.with_allowlist([("tests", "Thing")])
    assert isinstance(clone, InstrumentedSaver)
    assert clone.inner is not inner
    assert clone.serde is clone.inner.serde
    assert clone.serde._allowed_msgpack_modules != inner.serde._allowed_msgpack_modules  # type: ignore[attr-defined]
    assert clone.observer is saver.observer  # type: ignore[attr-defined]


# --- errors -----------------------------------------------------------------------------------


class DiskFull(OSError):
    pass


class FailingSaver(InMemorySaver):
    """A real InMemorySaver whose writes fail after `ok_puts` successful puts."""

    def __init__(self, ok_puts: int) -> None:
        super().__init__()
        self.ok_puts = ok_puts
        self.raised: list[BaseException] = []

    def put(self, *args: Any, **kwargs: Any) -> Any:
        if self.ok_puts <= 0:
            exc = DiskFull("disk full")
            self.raised.append(exc)
            raise exc
        self.ok_puts -= 1
        return super().put(*args, **kwargs)


def test_inner_saver_exception_propagates_as_the_same_object(otel: OTel) -> None:
    inner = FailingSaver(ok_puts=1)
    saver = instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    with pytest.raises(DiskFull) as caught:
        counter_graph(saver).invoke({"n": 0}, config(), durability="sync")
    assert caught.value is inner.raised[0]
    failed = [s for s in otel.spans() if s.status.status_code.name == "ERROR"]
    assert [s.name for s in failed] == [names.SPAN_PUT, names.run_span_name("LangGraph")]
    assert failed[0].attributes[names.ERROR_TYPE] == "DiskFull"
    assert "disk full" not in str(failed[0].status.description)  # no exception message
    errors = [
        p.attributes
        for p in otel.metrics()[names.METRIC_OPERATION_DURATION]
        if names.ERROR_TYPE in p.attributes
    ]
    assert errors == [
        {names.OPERATION: "put", names.SAVER: "FailingSaver", names.ERROR_TYPE: "DiskFull"}
    ]


class UnreadableSaver(InMemorySaver):
    """A real InMemorySaver whose loads fail (a database that went away)."""

    def get_tuple(self, config: Any) -> Any:
        raise DiskFull("gone")


def test_a_failing_load_ends_the_run_and_leaves_no_span_current(otel: OTel) -> None:
    from opentelemetry import trace

    saver = instrument(UnreadableSaver(), tracer_provider=otel.tracer_provider)
    for _ in range(2):
        with pytest.raises(DiskFull):
            counter_graph(saver).invoke({"n": 0}, config())
        # the loop never entered, so never exits: the library ended its run span itself
        assert not trace.get_current_span().get_span_context().is_valid
    runs = [s for s in otel.spans() if is_run_span(s)]
    assert len(runs) == 2  # two traces, not the second run inside the first
    assert all(r.attributes[names.RUN_OUTCOME] == "error" for r in runs)
    assert {r.attributes[names.ERROR_TYPE] for r in runs} == {"DiskFull"}
    assert saver.observer.cache_sizes()["runs"] == 0  # type: ignore[attr-defined]


class RaisingExporter(SpanExporter):
    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        raise RuntimeError("exporter")


@pytest.mark.parametrize("broken", ["processor", "exporter"])
def test_raising_telemetry_never_changes_the_graph(
    broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry._FAULTS_LOGGED.clear()  # faults are logged once per process
    provider = TracerProvider()
    if broken == "processor":
        provider.add_span_processor(RaisingProcessor())
    else:
        provider.add_span_processor(SimpleSpanProcessor(RaisingExporter()))
    bare, inner = InMemorySaver(), InMemorySaver()
    expected = counter_graph(bare).invoke({"n": 0}, config())
    with caplog.at_level(logging.WARNING):
        result = counter_graph(instrument(inner, tracer_provider=provider)).invoke(
            {"n": 0}, config()
        )
        counter_graph(instrument(inner, tracer_provider=provider)).invoke(None, config())
    assert result == expected == {"n": 2}
    assert history(inner) == history(bare)
    if broken == "processor":
        faults = [r for r in caplog.records if r.name == "langgraph.checkpoint.otel"]
        # logged once per kind of fault, not once per call
        assert 1 <= len(faults) <= 3
        assert len({r.getMessage() for r in faults}) == len(faults)


class UnreadableLoop(RuntimeError):
    pass


def test_a_fault_noting_the_run_loops_steps_never_reaches_the_graph(
    otel: OTel, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.otel._langgraph import loop as pregel_signals

    def unreadable(self: Any, applying: bool = True) -> None:
        raise UnreadableLoop("tasks")

    monkeypatch.setattr(pregel_signals.LoopEntry, "_note_step", unreadable)
    telemetry._FAULTS_LOGGED.clear()
    bare = counter_graph(InMemorySaver())
    saver = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    with caplog.at_level(logging.WARNING):
        assert counter_graph(saver).invoke({"n": 0}, config()) == bare.invoke({"n": 0}, config())
    faults = [r.getMessage() for r in caplog.records if r.name == "langgraph.checkpoint.otel"]
    assert len(faults) == 1 and "note step" in faults[0] and "UnreadableLoop" in faults[0]
    assert "tasks" not in faults[0]  # no exception message


def test_with_telemetry_off_the_run_loop_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.checkpoint.otel._langgraph import loop as pregel_signals

    watched: list[Any] = []
    monkeypatch.setattr(
        pregel_signals.LoopEntry, "watch_steps", lambda self, fault: watched.append(1)
    )
    counter_graph(instrument(InMemorySaver(), enabled=False)).invoke({"n": 0}, config())
    assert watched == []
    counter_graph(instrument(InMemorySaver(), tracer_provider=TracerProvider())).invoke(
        {"n": 0}, config()
    )
    assert watched == [1]


class RaisingMeterProvider(MeterProvider):
    """The real SDK provider, except that every measurement raises."""

    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        meter = super().get_meter(*args, **kwargs)

        class Broken:
            def __init__(self, instrument: Any) -> None:
                self.instrument = instrument

            def record(self, *a: Any, **k: Any) -> None:
                raise RuntimeError("meter")

            add = record

        real_hist, real_counter = meter.create_histogram, meter.create_counter
        meter.create_histogram = lambda *a, **k: Broken(real_hist(*a, **k))  # type: ignore[method-assign]
        meter.create_counter = lambda *a, **k: Broken(real_counter(*a, **k))  # type: ignore[method-assign]
        return meter


def test_raising_meter_never_changes_the_graph(otel: OTel) -> None:
    saver = instrument(
        InMemorySaver(), tracer_provider=otel.tracer_provider, meter_provider=RaisingMeterProvider()
    )
    assert counter_graph(saver).invoke({"n": 0}, config()) == {"n": 2}
    assert len([s for s in otel.spans() if s.name == names.SPAN_PUT]) == 4


# --- options and suppression ------------------------------------------------------------------


def test_bad_arguments_fail_at_the_call() -> None:
    with pytest.raises(TypeError, match="BaseCheckpointSaver"):
        instrument(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'hash_cahce_size'"):
        instrument(InMemorySaver(), hash_cahce_size=10)
    with pytest.raises(ValueError, match="hash_cache_size='lots'"):
        instrument(InMemorySaver(), hash_cache_size="lots")


def test_options_from_environment(monkeypatch: pytest.MonkeyPatch, otel: OTel) -> None:
    monkeypatch.setenv("LANGGRAPH_OTEL_ENABLED", "false")
    saver = instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    counter_graph(saver).invoke({"n": 0}, config())
    assert otel.spans() == []
    monkeypatch.setenv("LANGGRAPH_OTEL_MAX_CHANNEL_EVENTS", "-1")
    with pytest.raises(ValueError, match="max_channel_events='-1'"):
        instrument(InMemorySaver())


def test_disabled_wrapper_stores_exactly_what_the_bare_saver_stores(otel: OTel) -> None:
    inner = InMemorySaver()
    saver = instrument(inner, tracer_provider=otel.tracer_provider, enabled=False)
    counter_graph(saver).invoke({"n": 0}, config())
    assert otel.spans() == []
    assert all(names.METADATA_KEY not in t.metadata for t in inner.list(config()))


def test_suppress_instrumentation_is_honoured(otel: OTel) -> None:
    inner = InMemorySaver()
    saver = instrument(inner, tracer_provider=otel.tracer_provider)
    token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        assert counter_graph(saver).invoke({"n": 0}, config()) == {"n": 2}
    finally:
        detach(token)
    assert otel.spans() == []
    assert len(list(inner.list(config()))) == 4


def test_a_users_own_otel_metadata_value_is_kept(otel: OTel) -> None:
    inner = InMemorySaver()
    saver = instrument(inner, tracer_provider=otel.tracer_provider)
    run_config = {**config(), "metadata": {"otel": "mine"}}
    counter_graph(saver).invoke({"n": 0}, run_config)
    assert [t.metadata["otel"] for t in inner.list(config())] == ["mine"] * 4
    # the spans still carry the hashes
    assert all(names.STATE_HASH in s.attributes for s in otel.spans() if s.name == names.SPAN_PUT)
