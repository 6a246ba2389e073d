"""Spans that peer instrumentations open for a graph run, which the run's trace joins.

OpenInference's LangChain instrumentation parents its spans by LangChain's run tree, not by the
current context: its span of the graph is never current, so a run that opened its own
`langgraph.run` span would leave the node and tool spans it traces in another trace. When no
span is current at a run's start, the run joins that span instead (as it joins an app's).
"""

from __future__ import annotations

import sys
from typing import Any

from opentelemetry.trace import Span


def peer_span(langchain_run_id: Any) -> Span | None:
    """A peer instrumentation's recording span of the LangChain run `langchain_run_id`."""
    if langchain_run_id is None:
        return None
    openinference = sys.modules.get("openinference.instrumentation.langchain")
    make_instrumentor = getattr(openinference, "LangChainInstrumentor", None)
    if make_instrumentor is None:
        return None  # not imported: not instrumented
    instrumentor = make_instrumentor()  # a singleton
    if not getattr(instrumentor, "is_instrumented_by_opentelemetry", False):
        return None  # (get_span would print a warning)
    span = instrumentor.get_span(langchain_run_id)
    if span is None or not span.get_span_context().is_valid:
        return None
    return span  # type: ignore[no-any-return]
