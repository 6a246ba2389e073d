"""Graph calls: a graph's `stream` / `astream` (so `invoke` / `ainvoke` too), seen before
LangChain's callbacks start.

A run's trace is settled while its loop enters (`loop`), but by then LangChain has already
told its callback handlers that the graph started, and peer instrumentations have opened their
spans of the graph with whatever context was current: OpenInference's LangChain
instrumentation parents its span of the graph on that context and never makes it current, the
official GenAI one makes its own current only afterwards. Where nothing was current, the two
start two traces. `install()` wraps `Pregel.invoke`, `ainvoke`, `stream` and `astream` so
that a hook (`set_hook`) can open the run's span before any of that, and keep it current while
the graph's code runs: around the call (`invoke`, `ainvoke`: outermost, whatever a peer wraps
around `stream`), or around each step the caller pulls from a stream, detached before the step
is handed to the caller, so nothing of it leaks into the caller's context, even from a stream
abandoned half-way.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from langgraph.checkpoint.otel._langgraph.loop import _missing, _patch


class GraphCall(Protocol):
    """What the hook keeps of one graph call: its context, made current around each step."""

    def attach(self) -> object:
        """Make the call's context current; the token for `detach`."""

    def detach(self, token: object) -> None:
        """Undo the `attach` that gave `token`."""

    def end(self, error: BaseException | None) -> None:
        """The stream is done (exhausted, failed with `error`, or closed)."""


class PendingCall(Protocol):
    """A graph call about to start: `start` / `astart` it before its first step."""

    def start(self) -> GraphCall | None: ...

    async def astart(self) -> GraphCall | None: ...


Hook = Callable[[Any, Any, Any], PendingCall | None]
"""(graph, input, config) -> the call to keep current around the stream's steps, or None."""

_hook: Hook | None = None
_installed = False
_install_lock = threading.Lock()


CHECKPOINTER_OWNERS: tuple[tuple[str, str], ...] = (
    ("langgraph.pregel.main", "Pregel"),
    ("langgraph.func", "entrypoint"),
)
"""(module, class) of each LangGraph object whose constructor takes ``checkpointer=``: every
compiled graph is a `Pregel`; the functional API's `entrypoint` keeps it as its own attribute.
The Instrumentor wraps these constructors."""


def set_hook(hook: Hook) -> None:
    """Ask `hook(graph, input, config)` at the start of every graph stream (see `install`)."""
    global _hook
    _hook = hook


def checkpointer_of(graph: Any, config: Any) -> Any:
    """The checkpointer `graph` runs with under `config`: the one a parent lends through the
    config, else the graph's own (None, False or a flag where it has none)."""
    resolve = getattr(graph, "_resolve_checkpointer", None)
    if callable(resolve):
        try:
            return resolve(config if isinstance(config, dict) else {})
        except Exception:
            return None
    return getattr(graph, "checkpointer", None)


def install() -> None:
    """Wrap `Pregel.stream` and `Pregel.astream` once per process (a missing one is logged
    once, and runs get their span when their loop enters, as before)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        _installed = True
        try:
            from langgraph.pregel import Pregel
        except ImportError:
            _missing("Pregel.stream (the run's span before LangChain's callbacks)")
            return
        methods = {m: getattr(Pregel, m, None) for m in ("invoke", "ainvoke", "stream", "astream")}
        if None in methods.values():
            _missing("Pregel.stream (the run's span before LangChain's callbacks)")
            return
        wraps: dict[str, Callable[[Any], Callable[..., Any]]] = {
            "invoke": _wrap_invoke,
            "ainvoke": _wrap_ainvoke,
            "stream": _wrap_stream,
            "astream": _wrap_astream,
        }
        for name, wrap in wraps.items():
            _patch(Pregel, name, wrap(methods[name]), methods[name])


def _pending(graph: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> PendingCall | None:
    hook = _hook
    if hook is None:
        return None
    try:
        graph_input = args[0] if args else kwargs.get("input")
        config = args[1] if len(args) > 1 else kwargs.get("config")
        return hook(graph, graph_input, config)
    except Exception:
        _missing("the arguments of Pregel.stream (the run's span before LangChain's callbacks)")
        return None


def _wrap_invoke(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def invoke(self: Any, *args: Any, **kwargs: Any) -> Any:
        pending = _pending(self, args, kwargs)
        call = pending.start() if pending is not None else None
        if call is None:
            return original(self, *args, **kwargs)
        with _current(call):
            return original(self, *args, **kwargs)

    return invoke


def _wrap_ainvoke(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def ainvoke(self: Any, *args: Any, **kwargs: Any) -> Any:
        pending = _pending(self, args, kwargs)
        call = await pending.astart() if pending is not None else None
        if call is None:
            return await original(self, *args, **kwargs)
        with _current(call):
            return await original(self, *args, **kwargs)

    return ainvoke


@contextmanager
def _current(call: GraphCall) -> Iterator[None]:
    """The call's context current meanwhile; the call ended after, with the error if any."""
    token = call.attach()
    try:
        yield
    except BaseException as exc:
        call.detach(token)
        call.end(exc)
        raise
    call.detach(token)
    call.end(None)


def _wrap_stream(original: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    @functools.wraps(original)
    def stream(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        pending = _pending(self, args, kwargs)
        if pending is None:
            return original(self, *args, **kwargs)
        return _steps(pending, original(self, *args, **kwargs))

    return stream


def _wrap_astream(original: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(original)
    def astream(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        pending = _pending(self, args, kwargs)
        if pending is None:
            return original(self, *args, **kwargs)
        return _asteps(pending, original(self, *args, **kwargs))

    return astream


def _steps(pending: PendingCall, steps: Iterator[Any]) -> Iterator[Any]:
    call = pending.start()
    if call is None:
        yield from steps
        return
    error: BaseException | None = None
    try:
        while True:
            token = call.attach()
            try:
                step = next(steps)
            except StopIteration:
                return
            finally:
                call.detach(token)
            yield step
    except BaseException as exc:
        error = exc
        raise
    finally:
        token = call.attach()
        try:
            close = getattr(steps, "close", None)
            if close is not None:
                close()
        finally:
            call.detach(token)
            call.end(error)


async def _asteps(pending: PendingCall, steps: AsyncIterator[Any]) -> AsyncIterator[Any]:
    call = await pending.astart()
    if call is None:
        async for step in steps:
            yield step
        return
    error: BaseException | None = None
    try:
        while True:
            token = call.attach()
            try:
                step = await steps.__anext__()
            except StopAsyncIteration:
                return
            finally:
                call.detach(token)
            yield step
    except BaseException as exc:
        error = exc
        raise
    finally:
        token = call.attach()
        try:
            aclose = getattr(steps, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            call.detach(token)
            call.end(error)
