"""The library's own API with bad input or broken providers: errors say what to do, a raising
provider never fails `instrument()`, ignored ``LANGGRAPH_OTEL_*`` variables are logged once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

import graphs
from helpers import OTel
from langgraph.checkpoint.otel import (
    InstrumentOptions,
    instrument,
    is_instrumented,
    options,
    uninstrument,
)
from langgraph.checkpoint.otel.core import telemetry
from langgraph.checkpoint.otel.options import DivergencePolicy

LOGGER = "langgraph.checkpoint.otel"


def counter_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    return graphs.counter().compile(checkpointer=saver)


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


def stored(saver: BaseCheckpointSaver[Any]) -> list[tuple[Any, ...]]:
    """What the saver holds, read through the bare saver (so nothing is hidden)."""
    return [
        (t.checkpoint["channel_values"], t.metadata, len(t.pending_writes or []))
        for t in uninstrument(saver).list(config())
    ]


def own_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


# --- a raising provider ---------------------------------------------------------------------


class RaisingTracerProvider(TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer provider is broken")


class RaisingMeterProvider(MeterProvider):
    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        raise LookupError("meter provider is broken")


class RaisingInstrumentsMeterProvider(MeterProvider):
    """A real SDK meter whose `create_histogram` raises."""

    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        meter = super().get_meter(*args, **kwargs)

        def create_histogram(*a: Any, **k: Any) -> Any:
            raise ZeroDivisionError("no histograms today")

        meter.create_histogram = create_histogram  # type: ignore[method-assign]
        return meter


@pytest.fixture
def fresh_faults() -> Iterator[None]:
    telemetry._FAULTS_LOGGED.clear()  # faults are logged once per process
    yield
    telemetry._FAULTS_LOGGED.clear()


@pytest.mark.parametrize(
    ("broken", "error"),
    [
        ("get_tracer", "RuntimeError"),
        ("get_meter", "LookupError"),
        ("create_histogram", "ZeroDivisionError"),
    ],
)
def test_a_raising_provider_gives_a_saver_that_only_delegates(
    broken: str, error: str, otel: OTel, caplog: pytest.LogCaptureFixture, fresh_faults: None
) -> None:
    tracer_provider: TracerProvider = otel.tracer_provider
    meter_provider: MeterProvider = otel.meter_provider
    if broken == "get_tracer":
        tracer_provider = RaisingTracerProvider()
    elif broken == "get_meter":
        meter_provider = RaisingMeterProvider()
    else:
        meter_provider = RaisingInstrumentsMeterProvider()

    bare = InMemorySaver()
    bare_result = counter_graph(bare).invoke({"n": 0}, config())

    with caplog.at_level(logging.WARNING):
        wrapped = instrument(
            InMemorySaver(), tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        result = counter_graph(wrapped).invoke({"n": 0}, config())
        again = instrument(
            InMemorySaver(), tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        counter_graph(again).invoke({"n": 0}, config())

    assert is_instrumented(wrapped)
    assert result == bare_result == {"n": 2}
    assert stored(wrapped) == stored(bare)  # no `otel` metadata either
    assert all("otel" not in metadata for _, metadata, _ in stored(wrapped))
    assert otel.spans() == []
    faults = own_records(caplog)
    assert len(faults) == 1, faults  # once, not once per instrument() call
    assert "instrument()" in faults[0] and error in faults[0]
    if meter_provider is not otel.meter_provider:
        meter_provider.shutdown()


def test_bad_arguments_still_raise_with_a_raising_provider() -> None:
    with pytest.raises(TypeError, match="unknown option"):
        instrument(InMemorySaver(), tracer_provider=RaisingTracerProvider(), bogus=1)
    with pytest.raises(ValueError, match="max_channel_events"):
        instrument(InMemorySaver(), tracer_provider=RaisingTracerProvider(), max_channel_events=-1)
    with pytest.raises(TypeError, match="BaseCheckpointSaver"):
        instrument(object(), tracer_provider=RaisingTracerProvider())  # type: ignore[arg-type]


# --- errors that say what to do -------------------------------------------------------------


def test_a_saver_class_asks_for_an_instance() -> None:
    with pytest.raises(TypeError) as info:
        instrument(InMemorySaver)  # type: ignore[arg-type]
    assert "got the class InMemorySaver: did you mean InMemorySaver()?" in str(info.value)


def test_an_unopened_context_manager_says_to_open_it_first() -> None:
    manager = SqliteSaver.from_conn_string(":memory:")
    with pytest.raises(TypeError) as info:
        instrument(manager)  # type: ignore[arg-type]
    message = str(info.value)
    assert "open it first" in message
    assert "`with SqliteSaver.from_conn_string(...) as saver: instrument(saver)`" in message
    with manager as saver:  # the manager itself is untouched and still works
        assert is_instrumented(instrument(saver))


async def test_an_unopened_async_context_manager_says_async_with() -> None:
    manager = AsyncSqliteSaver.from_conn_string(":memory:")
    with pytest.raises(TypeError) as info:
        instrument(manager)  # type: ignore[arg-type]
    assert "`async with AsyncSqliteSaver.from_conn_string(...) as saver:" in str(info.value)
    async with manager as saver:
        assert is_instrumented(instrument(saver))


@pytest.mark.parametrize(
    ("option", "hint"), [("tracer", "tracer_provider="), ("meter", "meter_provider=")]
)
def test_tracer_and_meter_point_to_the_provider_arguments(option: str, hint: str) -> None:
    with pytest.raises(TypeError) as info:
        instrument(InMemorySaver(), **{option: object()})
    assert f"unknown option(s) {option!r}" in str(info.value)
    assert hint in str(info.value)


@pytest.mark.parametrize(
    ("option", "nearest"),
    [
        ("enable", "enabled"),
        ("max_channel_event", "max_channel_events"),
        ("tracerprovider", "tracer_provider"),
    ],
)
def test_an_unknown_option_names_the_nearest_one(option: str, nearest: str) -> None:
    with pytest.raises(TypeError, match=f"did you mean {nearest!r}"):
        instrument(InMemorySaver(), **{option: 1})


def test_a_typo_in_a_divergence_policy_field_names_the_field() -> None:
    with pytest.raises(ValueError) as info:
        DivergencePolicy(detector=frozenset({"state"}))  # type: ignore[call-arg]
    message = str(info.value)
    assert "unknown field 'detector'; did you mean 'detectors'?" in message
    assert "validation error" not in message and "[type=" not in message  # no pydantic dump
    # the same through instrument(), with the policy given as a mapping
    with pytest.raises(ValueError, match="did you mean 'detectors'"):
        instrument(InMemorySaver(), divergence={"detector": ["state"]})


def test_a_bad_detector_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError) as info:
        DivergencePolicy(detectors=frozenset({"stat"}))  # type: ignore[arg-type]
    message = str(info.value)
    assert "unknown detector 'stat'; did you mean 'state'?" in message
    assert (
        "valid detectors: state, trajectory, tool_arguments, duplicate_tool_call, "
        "repeated_side_effect, concurrent_write" in message
    )
    assert "[type=" not in message
    assert DivergencePolicy(detectors=frozenset({"state"})).detectors == {"state"}


# --- ignored environment variables ------------------------------------------------------------


@pytest.fixture
def fresh_env_warnings() -> Iterator[None]:
    options._ENV_WARNED.clear()  # ignored variables are logged once per process
    yield
    options._ENV_WARNED.clear()


def test_a_misspelled_variable_is_logged_once_with_the_nearest_name(
    caplog: pytest.LogCaptureFixture, fresh_env_warnings: None
) -> None:
    environ = {"LANGGRAPH_OTEL_ENABLE": "false", "LANGGRAPH_OTEL_ENABLED": "true"}
    with caplog.at_level(logging.WARNING):
        first = InstrumentOptions.load({}, environ)
        InstrumentOptions.load({}, environ)
    assert first.enabled
    records = own_records(caplog)
    assert len(records) == 1, records
    assert "LANGGRAPH_OTEL_ENABLE " in records[0]
    assert "did you mean LANGGRAPH_OTEL_ENABLED?" in records[0]


def test_a_code_only_option_in_the_environment_is_logged(
    caplog: pytest.LogCaptureFixture, fresh_env_warnings: None
) -> None:
    with caplog.at_level(logging.WARNING):
        loaded = InstrumentOptions.load({}, {"LANGGRAPH_OTEL_REDACT": "mymodule.redact"})
        InstrumentOptions.load({}, {"LANGGRAPH_OTEL_REDACT": "mymodule.redact"})
    assert loaded.redact is None
    records = own_records(caplog)
    assert len(records) == 1, records
    assert "LANGGRAPH_OTEL_REDACT" in records[0] and "only be given in code" in records[0]


def test_instrument_reads_the_process_environment_and_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_env_warnings: None
) -> None:
    monkeypatch.setenv("LANGGRAPH_OTEL_STORE_HASH", "false")
    with caplog.at_level(logging.WARNING):
        instrument(InMemorySaver(), tracer_provider=TracerProvider())
    records = own_records(caplog)
    assert len(records) == 1, records
    assert "did you mean LANGGRAPH_OTEL_STORE_HASHES?" in records[0]


def test_valid_variables_are_not_logged(
    caplog: pytest.LogCaptureFixture, fresh_env_warnings: None
) -> None:
    with caplog.at_level(logging.WARNING):
        loaded = InstrumentOptions.load(
            {}, {"LANGGRAPH_OTEL_ENABLED": "false", "LANGGRAPH_OTEL_MAX_CHANNEL_EVENTS": "3"}
        )
    assert (loaded.enabled, loaded.max_channel_events) == (False, 3)
    assert own_records(caplog) == []
