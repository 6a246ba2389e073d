"""Instrumentation faults are logged by place and exception type, never with the exception's
message or anything else that can hold application data (issue: exception text leaked)."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import InMemoryLogExporter, SimpleLogRecordProcessor

from helpers import OTel
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.core import telemetry

CANARY = "patient-Jane-Roe-7f3a"


class Record(dict):  # type: ignore[type-arg]
    """A mapping the hasher cannot read: its `items()` raises with application data."""

    def items(self) -> Any:
        raise ValueError(f"cannot list the record of {CANARY}")


class State(TypedDict):
    record: Any


def build(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("store", lambda state: {"record": Record(name=1)})
    builder.add_edge(START, "store")
    return builder.compile(checkpointer=saver)


def test_a_fault_is_logged_without_its_message_also_through_the_otel_logs_signal(
    otel: OTel, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry._FAULTS_LOGGED.clear()  # faults are logged once per process
    exporter = InMemoryLogExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    handler = LoggingHandler(level=logging.DEBUG, logger_provider=provider)
    library_logger = logging.getLogger("langgraph.checkpoint.otel")
    library_logger.addHandler(handler)
    try:
        with caplog.at_level(logging.DEBUG, logger="langgraph.checkpoint.otel"):
            saver = instrument(
                InMemorySaver(),
                tracer_provider=otel.tracer_provider,
                meter_provider=otel.meter_provider,
            )
            result = build(saver).invoke({"record": {}}, {"configurable": {"thread_id": "t"}})
    finally:
        library_logger.removeHandler(handler)
    assert isinstance(result["record"], Record)  # the graph ran as it does bare
    records = [r for r in caplog.records if r.name == "langgraph.checkpoint.otel"]
    assert [r.levelname for r in records] == ["WARNING", "DEBUG"]
    assert "hash state" in records[0].getMessage() and "ValueError" in records[0].getMessage()
    assert "hashing.py" in records[1].getMessage()  # the frames, at DEBUG
    for record in records:
        assert record.exc_info is None and record.exc_text is None
        assert CANARY not in record.getMessage()
    exported = exporter.get_finished_logs()
    assert len(exported) == 2
    for log in exported:
        text = f"{log.log_record.body} {dict(log.log_record.attributes or {})}"
        assert CANARY not in text
        assert "exception.message" not in (log.log_record.attributes or {})
    assert all(CANARY not in str(dict(s.attributes or {})) for s in otel.spans())
