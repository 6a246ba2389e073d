"""The GenAI conventions' proposed agent lifecycle events, opt-in.

`gen_ai.agent.checkpointed`, `gen_ai.agent.paused` and `gen_ai.agent.resumed`, as proposed in
open-telemetry/semantic-conventions-genai PR 445 (a draft: the names may still change), are
emitted as OpenTelemetry events (log records with an event name) only where
``OTEL_SEMCONV_STABILITY_OPT_IN`` lists ``gen_ai_latest_experimental``, the switch the GenAI
instrumentations use for conventions in Development. Each is emitted in the context of the span
it describes (the put, the run, the resume), so backends correlate it with the trace.

The library fills them from what it knows: the checkpoint id of every stored checkpoint, the
interrupt ids of a pause and the checkpoint it paused at (`human_input` as the reason only for
LangChain's human-in-the-loop middleware, whose interrupts are reviews by a person; LangGraph
says nothing of who answers any other), and what a resume continued from (the pause it answers,
else the checkpoint) with the ids of the span that wrote that checkpoint. Hashes, idempotency
keys and the library's own facts stay under `langgraph.*`.

Where the official GenAI LangChain instrumentation emits these events itself (its lifecycle
support wraps `StateGraph.compile`), the library emits none, so no event is counted twice.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry._logs import (
    Logger,
    LoggerProvider,
    LogRecord,
    get_logger,
    get_logger_provider,
)
from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.carrier import TraceContext
from langgraph.checkpoint.otel.core.telemetry import records_somewhere

OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
OPT_IN_VALUE = "gen_ai_latest_experimental"
OFFICIAL_PACKAGE = "opentelemetry.instrumentation.genai."


def opted_in() -> bool:
    """Whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` lists ``gen_ai_latest_experimental``."""
    value = os.environ.get(OPT_IN_ENV, "")
    return OPT_IN_VALUE in {part.strip() for part in value.split(",")}


def official_events_present() -> bool:
    """Whether the official GenAI instrumentation's lifecycle support is instrumented: its
    wrapper is on `StateGraph.compile`, from a module that defines these events."""
    state = sys.modules.get("langgraph.graph.state")
    graph = getattr(state, "StateGraph", None)
    if graph is None:
        return False
    wrapper = getattr(inspect.getattr_static(graph, "compile", None), "_self_wrapper", None)
    module = type(wrapper).__module__ if wrapper is not None else ""
    if not module.startswith(OFFICIAL_PACKAGE):
        return False
    defining = sys.modules.get(module)
    return getattr(defining, "EVENT_AGENT_CHECKPOINTED", None) == names.EVENT_AGENT_CHECKPOINTED


@dataclass(frozen=True, slots=True)
class Pause:
    """One interrupt a run stopped at."""

    pause_id: str
    checkpoint_id: str
    human_input: bool = False


class AgentEvents:
    """Emits the agent lifecycle events of one instrumented saver (when opted in)."""

    def __init__(self, logger_provider: LoggerProvider | None, version: str) -> None:
        self._logger: Logger = get_logger(names.SCOPE, version, logger_provider=logger_provider)
        self._logger_provider = logger_provider

    def live(self) -> bool:
        """Whether the events can reach an SDK (a logger provider that is not the API's)."""
        return records_somewhere(self._logger_provider or get_logger_provider())

    def checkpointed(
        self, span: Span | None, execution_id: str, checkpoint_id: str, graph_name: str | None
    ) -> None:
        """A checkpoint was stored (in the context of its put span)."""
        self._emit(
            names.EVENT_AGENT_CHECKPOINTED,
            span,
            execution_id,
            graph_name,
            {names.AGENT_CHECKPOINT_ID: checkpoint_id},
        )

    def paused(
        self, context: Context, execution_id: str, pause: Pause, graph_name: str | None
    ) -> None:
        """A run stopped at an interrupt (in the context of the run)."""
        attributes: dict[str, AttributeValue] = {
            names.AGENT_PAUSE_ID: pause.pause_id,
            names.AGENT_CHECKPOINT_ID: pause.checkpoint_id,
        }
        if pause.human_input:
            attributes[names.AGENT_PAUSE_REASON] = "human_input"
        self._emit(names.EVENT_AGENT_PAUSED, context, execution_id, graph_name, attributes)

    def resumed(
        self,
        span: Span | None,
        execution_id: str,
        graph_name: str | None,
        *,
        kind: str,
        checkpoint_id: str,
        pause_id: str | None,
        writer: TraceContext | None,
    ) -> None:
        """A run resumed a stored checkpoint (in the context of its resume span): from the
        pause it answers where it answers one, else from the checkpoint."""
        attributes: dict[str, AttributeValue] = {
            names.AGENT_RESUMED_FROM_TYPE: "pause" if pause_id is not None else "checkpoint",
            names.AGENT_RESUMED_FROM_ID: pause_id if pause_id is not None else checkpoint_id,
            names.AGENT_CHECKPOINT_ID: checkpoint_id,
            names.RESUME_KIND: kind,
        }
        if writer is not None:
            attributes[names.RESUME_WRITER_TRACE_ID] = f"{writer.trace_id:032x}"
            attributes[names.RESUME_WRITER_SPAN_ID] = f"{writer.span_id:016x}"
        self._emit(names.EVENT_AGENT_RESUMED, span, execution_id, graph_name, attributes)

    def _emit(
        self,
        event_name: str,
        where: Span | Context | None,
        execution_id: str,
        graph_name: str | None,
        attributes: Mapping[str, AttributeValue],
    ) -> None:
        if official_events_present():
            return
        context = trace.set_span_in_context(where) if isinstance(where, Span) else where
        common: dict[str, AttributeValue] = {names.AGENT_EXECUTION_ID: execution_id}
        if graph_name:
            common[names.AGENT_NAME] = graph_name
        self._logger.emit(
            LogRecord(
                event_name=event_name,
                context=context,
                attributes={**common, **attributes},
            )
        )
