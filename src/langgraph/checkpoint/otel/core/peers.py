"""What the library knows of peer instrumentations, in one place.

Two kinds of peer behaviour meet the library's spans:

- **Spans a peer opens for a graph run, which the run's trace joins** (`peer_span`).
  OpenInference's LangChain instrumentation parents its spans by LangChain's run tree, not by
  the current context: its span of the graph is never current, so a run that opened its own
  run span would leave the node and tool spans it traces in another trace. When no span is
  current at a run's start, the run joins that span instead (as it joins an app's). The official
  GenAI instrumentation and OpenLIT make their workflow/agent spans current: the run joins them
  like any current span, and needs nothing from here.
- **Wrappers a peer puts around the checkpoint methods of a saver class, only to trace them**
  (`untraced`). OpenLIT 1.45's LangGraph instrumentation wraps (with `wrapt`, on the class)
  ``PostgresSaver.put`` / ``get_tuple`` / ``setup`` and ``AsyncPostgresSaver.aput`` /
  ``aget_tuple`` / ``setup``, and opens a span per call (``invoke_workflow checkpoint_write``,
  ``retrieval checkpoint``). Its sync wrapper stays quiet inside its own ``invoke`` span, but its
  async one does not, and neither does the sync one outside a graph call (``update_state``, a
  direct read): the same checkpoint call would be two spans, one of them looking like a
  workflow run. The instrumented saver calls the inner saver's method without those wrappers,
  so the library's span is the one span of the call. Only wrappers recognised below are
  skipped; anything else around the method (a retry, a cache, another instrumentation) is
  called as it is. The peer's wrapper only re-raises and returns the inner result, so the inner
  saver's behaviour and exceptions are the same either way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import MethodType
from typing import Any, ParamSpec, TypeVar, cast

from opentelemetry.trace import Span

P = ParamSpec("P")
R = TypeVar("R")

TRACING_ONLY_WRAPPERS: frozenset[tuple[str, str]] = frozenset(
    {
        # OpenLIT 1.45: PostgresSaver.put / get_tuple (sync; also Pregel.invoke and others)
        ("openlit.instrumentation.langgraph.langgraph", "general_wrap.<locals>.wrapper"),
        # OpenLIT 1.45: AsyncPostgresSaver.aput / aget_tuple
        (
            "openlit.instrumentation.langgraph.async_langgraph",
            "async_checkpoint_wrap.<locals>.wrapper",
        ),
    }
)
"""(module, qualified name) of the `wrapt` wrapper functions of peers that only trace the saver
method they wrap: they call it with the same arguments, return its result and re-raise its
exception."""


def untraced(method: Callable[P, R]) -> Callable[P, R]:
    """`method`, a bound checkpoint method of an inner saver, without the peer wrappers around it
    that only trace it (`TRACING_ONLY_WRAPPERS`): the library's own span is the call's span.

    A plain bound method (no peer installed) is returned as it is, at the cost of one type
    check; wrappers are peeled from the outside in while they are tracing-only ones, and the
    first other callable is returned as it is. Looked up at every call, so a peer instrumented
    before or after the saver was wrapped is skipped alike. Never raises: a callable that
    cannot be inspected is returned as it is."""
    current: Any = method
    while type(current) is not MethodType:
        try:
            wrapper = getattr(current, "_self_wrapper", None)  # a wrapt BoundFunctionWrapper's
            if wrapper is None or _name(wrapper) not in TRACING_ONLY_WRAPPERS:
                break
            current = current.__wrapped__  # the wrapped method, bound to the same saver
        except Exception:  # a proxy's attribute hook that raises: call what we have
            break
    return cast("Callable[P, R]", current)  # (a string: no generic alias built per call)


def _name(function: Any) -> tuple[str, str]:
    return (
        str(getattr(function, "__module__", None) or ""),
        str(getattr(function, "__qualname__", "")),
    )


def peer_span(langchain_run_id: Any) -> Span | None:
    """A peer instrumentation's recording span of the LangChain run `langchain_run_id`."""
    if langchain_run_id is None:
        return None
    module = "openinference.instrumentation.langchain"
    if not _instrumented(module, "LangChainInstrumentor"):
        return None  # (get_span would print a warning)
    span = sys.modules[module].LangChainInstrumentor().get_span(langchain_run_id)
    if span is None or not span.get_span_context().is_valid:
        return None
    return span  # type: ignore[no-any-return]


def names_graph_runs() -> bool:
    """Whether a peer instrumentation opens a GenAI-conventions span of each graph run itself
    (`invoke_agent` / `invoke_workflow`) and records its duration: the official GenAI LangChain
    instrumentation, or OpenLIT's LangGraph one, once instrumented. The library's run span then
    leaves `gen_ai.operation.name` to it, and records no duration, so a run is counted once."""
    return _instrumented(
        "opentelemetry.instrumentation.genai.langchain", "LangChainInstrumentor"
    ) or _instrumented("openlit.instrumentation.langgraph", "LangGraphInstrumentor")


def _instrumented(module: str, instrumentor: str) -> bool:
    """Whether the `BaseInstrumentor` singleton `instrumentor` of `module` is instrumented
    (False when the module was never imported: nothing instrumented it)."""
    make_instrumentor = getattr(sys.modules.get(module), instrumentor, None)
    if make_instrumentor is None:
        return False
    try:
        return bool(getattr(make_instrumentor(), "is_instrumented_by_opentelemetry", False))
    except Exception:
        return False
