"""Tool idempotency keys on tool spans, and a start record flushed before a side effect runs.

`ToolKeySpanProcessor` puts ``langgraph.tool.idempotency_key`` (tool name + canonical hash
of the arguments, `tool_calls.tool_call_key`) on the tool spans of the official GenAI LangChain
instrumentation (``execute_tool``) and of OpenInference's (``TOOL``). Neither puts the tool
call id or the arguments on the span when it starts (measured on
opentelemetry-instrumentation-genai-langchain 1.3b0 + opentelemetry-util-genai 1.3b0 and
openinference-instrumentation-langchain 0.1.80):

- GenAI ``execute_tool``: at start only ``gen_ai.operation.name``, ``gen_ai.tool.name`` and
  ``gen_ai.tool.type``; the call id (and, opted in, the arguments) only as the span ends.
- OpenInference: at start nothing but the span name (the tool name); the span kind, input
  and output only as the span ends.

So the key comes from the LangChain tool start that starts those spans: LangChain hands
every callback handler the model's tool call id and the arguments (injected ones removed).
A handler of this module (registered through LangChain's `register_configure_hook`) looks
the call id up in `TOOL_CALLS` (the key of the AI message's call, noted by the observer) or
else hashes the arguments, and joins the span the processor saw start: on the same thread
(sync tools: the handlers run one after the other) or through a context variable (async
tools: this handler runs inline first, the instrumentations' own in a copied context). A span
that carries ``gen_ai.tool.call.id`` or ``gen_ai.tool.call.arguments`` at start (other
instrumentations, later versions) is keyed from those directly.

`record_tool_start` decorates a side-effecting tool function: before the body runs it records
a ``langgraph.tool.start`` event on the current span and a short ``langgraph.tool.start``
span (key, thread, whether the call is a retry after a crash), and flushes the tracer
provider, so the record is exported even when the process dies inside the side effect. The
same handler tells it the model's call (id and key) it runs.

Nothing here raises into the application: a fault is logged once (`telemetry.log_fault`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import math
import threading
import typing
import weakref
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolArg
from langchain_core.tracers.context import register_configure_hook
from langgraph.config import get_config
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Span, SpanKind, TracerProvider
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import task_checkpoint_id
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text, key_text
from langgraph.checkpoint.otel.analysis.tool_calls import tool_call_key
from langgraph.checkpoint.otel.core.requested_tools import TOOL_CALLS
from langgraph.checkpoint.otel.core.telemetry import PACKAGE_VERSION, log_fault

__all__ = ["ToolKeySpanProcessor", "add_tool_key_processor", "record_tool_start"]

F = TypeVar("F", bound=Callable[..., Any])

GENAI_OPERATION = "gen_ai.operation.name"
GENAI_EXECUTE_TOOL = "execute_tool"
GENAI_TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
OPENINFERENCE_KIND = "openinference.span.kind"
OPENINFERENCE_SCOPE = "openinference.instrumentation.langchain"
DEFAULT_FLUSH_TIMEOUT_S = 5.0
_MAX_WAITING = 8
"""Spans remembered per thread while their tool start is awaited (the newest)."""


# --- the key of a tool span -------------------------------------------------------------------


def _tool_span_name(span: Any, attributes: Mapping[str, Any]) -> str | None:
    """The tool name of a GenAI ``execute_tool`` or OpenInference span, else None."""
    if attributes.get(GENAI_OPERATION) == GENAI_EXECUTE_TOOL:
        return str(attributes.get(names.TOOL_NAME) or "") or None
    scope = getattr(getattr(span, "instrumentation_scope", None), "name", None)
    if attributes.get(OPENINFERENCE_KIND) == "TOOL" or scope == OPENINFERENCE_SCOPE:
        return str(getattr(span, "name", "") or "") or None  # named after the tool
    return None


def _key_from_attributes(name: str, attributes: Mapping[str, Any]) -> str | None:
    """The key from what a span carries at start: a noted call id, or the arguments."""
    arguments = attributes.get(GENAI_TOOL_ARGUMENTS)
    args = None
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except ValueError:
            return None
    return _call_key(name, attributes.get(names.TOOL_CALL_ID), args)


def _set_key(span: Span, key: str) -> None:
    if span.is_recording():
        span.set_attribute(names.TOOL_IDEMPOTENCY_KEY, bounded_text(key))


@dataclass(frozen=True, slots=True)
class _Call:
    """A LangChain tool start: the names its spans may carry (tool and run name), its key."""

    span_names: frozenset[str]
    key: str
    call_id: str | None


class _ToolStartJoin:
    """Joins a tool span of another instrumentation with the LangChain tool start that
    started it (whichever of the two comes second sets the key), and tells a running tool's
    body which call it is running."""

    def __init__(self) -> None:
        self._waiting = threading.local()
        self._pending: ContextVar[_Call | None] = ContextVar("lg_otel_pending_call", default=None)
        """A started call whose span is still to start in this context."""
        self._current: ContextVar[_Call | None] = ContextVar("lg_otel_current_call", default=None)
        """The call whose tool runs in this context."""

    def span_started(self, span: Span, name: str) -> None:
        pending = self._pending.get()
        if pending is not None and name in pending.span_names:
            _set_key(span, pending.key)
            return
        waiting: list[tuple[str, weakref.ref[Span]]] = getattr(self._waiting, "spans", [])
        self._waiting.spans = [*waiting[-(_MAX_WAITING - 1) :], (name, weakref.ref(span))]

    def tool_started(self, call: _Call) -> None:
        waiting: list[tuple[str, weakref.ref[Span]]] = getattr(self._waiting, "spans", [])
        self._waiting.spans = []
        matched = [
            s for name, ref in waiting if name in call.span_names and (s := ref()) is not None
        ]
        for span in matched:
            _set_key(span, call.key)
        self._current.set(call)
        if not matched:
            self._pending.set(call)

    def tool_ended(self) -> None:
        if self._pending.get() is not None:
            self._pending.set(None)
        if self._current.get() is not None:
            self._current.set(None)

    def current(self, name: str) -> _Call | None:
        """The call of the tool `name` running in this context, if LangChain started it."""
        call = self._current.get()
        return call if call is not None and name in call.span_names else None


_JOIN = _ToolStartJoin()


class ToolKeySpanProcessor:
    """An SDK span processor that sets ``langgraph.tool.idempotency_key`` on GenAI
    ``execute_tool`` and OpenInference tool spans (see the module docstring for what is known
    when). Never raises.

    It implements the SDK's `SpanProcessor` interface without subclassing it: the library
    imports no SDK module.
    """

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            attributes = getattr(span, "attributes", None) or {}
            name = _tool_span_name(span, attributes)
            if name is None:
                return
            key = _key_from_attributes(name, attributes)
            if key is not None:
                _set_key(span, key)
            else:
                _JOIN.span_started(span, name)
        except Exception as exc:
            log_fault("tool key span processor", exc)

    def _on_ending(self, span: Span) -> None:
        pass

    def on_end(self, span: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


_PROCESSED: weakref.WeakSet[Any] = weakref.WeakSet()
_PROCESSED_LOCK = threading.Lock()


def add_tool_key_processor(tracer_provider: TracerProvider | None = None) -> bool:
    """Add one `ToolKeySpanProcessor` to `tracer_provider` (default: the global one), once per
    provider. False when the provider takes no span processors (not an SDK provider) or
    refused it (logged once); never raises.

    `LangGraphCheckpointInstrumentor` calls it; `instrument()` users call it themselves.
    """
    try:
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        add = getattr(provider, "add_span_processor", None)
        if not callable(add):
            return False
        with _PROCESSED_LOCK:
            if provider not in _PROCESSED:
                add(ToolKeySpanProcessor())
                _PROCESSED.add(provider)
        _register_tool_start_hook()
    except Exception as exc:  # a provider that cannot take it is no reason to fail the app
        log_fault("add_tool_key_processor", exc)
        return False
    return True


# --- the LangChain side: the tool call id and arguments at tool start -------------------------

_HOOK_LOCK = threading.Lock()
_HOOK_REGISTERED = False


def _register_tool_start_hook() -> None:
    """Add `_ToolStartHandler` to every LangChain callback manager from now on (once)."""
    global _HOOK_REGISTERED
    with _HOOK_LOCK:
        if _HOOK_REGISTERED:
            return
        # the default, not a value set in one context: the one handler for every context
        hook: ContextVar[BaseCallbackHandler | None] = ContextVar(
            "langgraph_otel_tool_keys",
            default=_ToolStartHandler(),  # noqa: B039
        )
        register_configure_hook(hook, True)
        _HOOK_REGISTERED = True


class _ToolStartHandler(BaseCallbackHandler):
    """Keys the tool spans the processor saw start, from LangChain's tool start."""

    run_inline = True  # in async managers: before the instrumentations' own handlers

    @property
    def ignore_llm(self) -> bool:
        return True

    @property
    def ignore_chat_model(self) -> bool:
        return True

    @property
    def ignore_chain(self) -> bool:
        return True

    @property
    def ignore_retriever(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            name = str((serialized or {}).get("name") or "")
            call_id = kwargs.get("tool_call_id")
            key = _call_key(name, call_id, inputs)
            if name and key is not None:
                span_names = frozenset({name, str(kwargs.get("name") or name)})
                _JOIN.tool_started(_Call(span_names, key, str(call_id) if call_id else None))
        except Exception as exc:
            log_fault("tool key callback", exc)

    def on_tool_end(self, output: Any, **kwargs: Any) -> None:
        _JOIN.tool_ended()

    def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
        _JOIN.tool_ended()


def _call_key(name: str, call_id: Any, args: Any) -> str | None:
    """The key of the AI message's call noted under `call_id`, else of `args` (None: none)."""
    if call_id:
        noted = TOOL_CALLS.call(bounded_text(call_id))
        if noted is not None:
            return noted.key
    return tool_call_key(name, args) if args is not None else None


# --- record_tool_start ------------------------------------------------------------------------

_INJECTED_NAMES = frozenset({"run_manager", "callbacks"})
"""Parameters LangChain passes to a tool function itself (`FILTERED_ARGS`)."""


class _Arguments:
    """The arguments of a direct call of `func` (not started by LangChain): bound, without
    defaults and without the parameters LangChain injects."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.signature = inspect.signature(func)
        hints = _type_hints(func)
        self.injected = {
            p.name
            for p in self.signature.parameters.values()
            if _is_injected(p.name, hints.get(p.name, p.annotation))
        }

    def read(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        given: dict[str, Any] = {}
        for name, value in self.signature.bind_partial(*args, **kwargs).arguments.items():
            if name in self.injected:
                continue
            if self.signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                given.update(value)
            else:
                given[name] = _as_given(value)
        return given


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # unresolvable forward references: the raw annotations
        return {}


def _is_injected(name: str, annotation: Any) -> bool:
    """Whether LangChain passes the parameter itself (the model never gives it)."""
    if name in _INJECTED_NAMES or annotation is RunnableConfig:
        return True
    origin = typing.get_origin(annotation) or annotation
    if isinstance(origin, type) and _is_tool_runtime(origin):
        return True
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(
        issubclass(marker if isinstance(marker, type) else type(marker), InjectedToolArg)
        for marker in typing.get_args(annotation)[1:]
    )


def _is_tool_runtime(cls: type) -> bool:
    """`ToolRuntime` (langgraph.prebuilt, langchain.tools) and its subclasses, by base name:
    LangChain marks them with its private `_DirectlyInjectedToolArg`."""
    return any(base.__name__ == "_DirectlyInjectedToolArg" for base in cls.__mro__)


def _as_given(value: Any) -> Any:
    """A pydantic argument as the JSON object a model would give."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        return dump(mode="json", exclude_unset=True)
    if isinstance(value, list):
        return [_as_given(item) for item in value]
    if isinstance(value, dict):
        return {k: _as_given(v) for k, v in value.items()}
    return value


def _run_config() -> Mapping[str, Any]:
    """The configurable of the LangGraph run calling the tool, if any."""
    try:
        configurable = get_config().get("configurable")
    except Exception:  # outside a runnable context
        return {}
    return configurable if isinstance(configurable, Mapping) else {}


def _start_attributes(name: str, key: str, call_id: str | None) -> dict[str, AttributeValue]:
    configurable = _run_config()
    thread_id = configurable.get("thread_id")
    attributes: dict[str, AttributeValue] = {
        names.TOOL_NAME: bounded_text(name),
        names.TOOL_IDEMPOTENCY_KEY: bounded_text(key),
        names.TOOL_RETRY: thread_id is not None
        and TOOL_CALLS.was_in_flight(key_text(thread_id), bounded_text(key)),
    }
    if thread_id is not None:
        attributes[names.THREAD_ID] = bounded_text(thread_id)
    if call_id:
        attributes[names.TOOL_CALL_ID] = bounded_text(call_id)
    checkpoint_id = task_checkpoint_id(configurable)
    if checkpoint_id:
        attributes[names.CHECKPOINT_ID] = bounded_text(checkpoint_id)
    return attributes


class _Recorder:
    """What one decorated tool records as it starts."""

    def __init__(
        self,
        func: Callable[..., Any],
        name: str | None,
        tracer_provider: TracerProvider | None,
        flush_timeout_s: float,
    ) -> None:
        self.name: str = name or str(getattr(func, "__name__", "tool"))
        self.arguments = _Arguments(func)
        self.tracer_provider = tracer_provider
        self.flush_timeout_ms = max(1, math.ceil(flush_timeout_s * 1000))

    def record(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], None] | None:
        """Record the start; returns the flush to run before the body (None: nothing to do)."""
        try:
            if not is_instrumentation_enabled():
                return None
            provider = self.tracer_provider or trace.get_tracer_provider()
            force_flush = getattr(provider, "force_flush", None)
            if not callable(force_flush):
                return None  # no SDK: nothing would be exported
            call = _JOIN.current(self.name)  # started by LangChain: the model's own call
            if call is not None:
                key, call_id = call.key, call.call_id
            else:
                key, call_id = tool_call_key(self.name, self.arguments.read(args, kwargs)), None
            attributes = _start_attributes(self.name, key, call_id)
            trace.get_current_span().add_event(names.SPAN_TOOL_START, attributes)
            tracer = trace.get_tracer(names.SCOPE, PACKAGE_VERSION, tracer_provider=provider)
            tracer.start_span(
                names.SPAN_TOOL_START, kind=SpanKind.INTERNAL, attributes=attributes
            ).end()
        except Exception as exc:
            log_fault("record_tool_start", exc)
            return None
        return functools.partial(_flush, force_flush, self.flush_timeout_ms)


def _flush(force_flush: Callable[..., Any], timeout_ms: int) -> None:
    try:
        force_flush(timeout_ms)
    except Exception as exc:
        log_fault("record_tool_start flush", exc)


@overload
def record_tool_start(func: F, /) -> F: ...


@overload
def record_tool_start(
    *,
    name: str | None = None,
    tracer_provider: TracerProvider | None = None,
    flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
) -> Callable[[F], F]: ...


def record_tool_start(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    tracer_provider: TracerProvider | None = None,
    flush_timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S,
) -> Any:
    """Record a side-effecting tool's start, exported before its body runs.

    Use bare (``@record_tool_start``) or with arguments, under LangChain's ``@tool`` (the
    signature is kept, so ``@tool`` still reads the arguments)::

        @tool
        @record_tool_start
        def book(flight: str) -> str: ...

    Each call adds a ``langgraph.tool.start`` event to the current span and a
    ``langgraph.tool.start`` span (a child of it) with ``gen_ai.tool.name``,
    ``langgraph.tool.idempotency_key``, ``gen_ai.tool.call.id``, ``langgraph.thread_id``,
    ``langgraph.checkpoint.id`` (the checkpoint the tool's task runs from) and
    ``langgraph.tool.retry`` (the call was requested but unanswered when a crash or error
    resume loaded the thread: its side effect may already have run), then flushes the tracer
    provider (at most `flush_timeout_s` seconds) and only then runs the body.

    The key is that of the AI message's call: read from LangChain's tool start (the model's
    call id and arguments, before LangChain validates them and applies defaults). A direct
    call, not through LangChain, is keyed by its bound arguments (no defaults applied; the
    parameters LangChain injects left out; pydantic values as JSON objects).

    `name` is the tool's name when it is not the function's (``@tool("other_name")``);
    `tracer_provider` defaults to the global one. Under ``suppress_instrumentation`` or
    without an SDK provider the body just runs. Recording never raises; the body's
    exceptions propagate unchanged.
    """
    if func is None:
        return functools.partial(
            record_tool_start,
            name=name,
            tracer_provider=tracer_provider,
            flush_timeout_s=flush_timeout_s,
        )
    if not callable(func):
        raise TypeError(f"record_tool_start decorates a function, got {type(func).__name__}")
    if name is not None and (not isinstance(name, str) or not name):
        raise ValueError(f"record_tool_start: name must be a non-empty string, got {name!r}")
    if (
        isinstance(flush_timeout_s, bool)
        or not isinstance(flush_timeout_s, int | float)
        or not math.isfinite(flush_timeout_s)
        or flush_timeout_s <= 0
    ):
        raise ValueError(
            f"record_tool_start: flush_timeout_s must be a positive number of seconds, "
            f"got {flush_timeout_s!r}"
        )
    recorder = _Recorder(func, name, tracer_provider, float(flush_timeout_s))
    try:
        _register_tool_start_hook()  # tells the body which of the model's calls it runs
    except Exception as exc:
        log_fault("record_tool_start", exc)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def record_async(*args: Any, **kwargs: Any) -> Any:
            flush = recorder.record(args, kwargs)
            if flush is not None:
                await asyncio.to_thread(flush)  # the loop keeps running while it exports
            return await func(*args, **kwargs)

        return record_async

    @functools.wraps(func)
    def record_sync(*args: Any, **kwargs: Any) -> Any:
        flush = recorder.record(args, kwargs)
        if flush is not None:
            flush()
        return func(*args, **kwargs)

    return record_sync
