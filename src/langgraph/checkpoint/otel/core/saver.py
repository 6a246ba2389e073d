"""The instrumented saver: delegates every call to an inner saver and reports it.

The wrapper does not subclass the inner saver's type (InMemorySaver.aput calls self.put: one
logical call must give one span). The core methods (loads, listings, writes, delete_thread,
sync and async) always delegate to the inner instance. The optional capabilities are mirrored:
for each inner saver a wrapper type is built that defines exactly the optional methods the
inner saver really provides (by its type, or dynamically, as a proxy does), so capability
detection (LangGraph's and the conformance suite's) sees the inner saver's true capabilities.

What the wrapper returns carries exactly the metadata the app and LangGraph wrote: the
wrapper's own stored telemetry is hidden from its callers (`stored_history` reads it).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.stored_bytes import athread_bytes, thread_bytes
from langgraph.checkpoint.otel.analysis.stored_metadata import without_stored_telemetry
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.core.calls import config_attributes, latest_config
from langgraph.checkpoint.otel.core.graph_runs import install_graph_call_hook
from langgraph.checkpoint.otel.core.observer import PRUNE_COUNT_LIMIT, CheckpointObserver
from langgraph.checkpoint.otel.core.peers import untraced
from langgraph.checkpoint.otel.core.runs import install_loop_hooks
from langgraph.checkpoint.otel.core.watch import Listing, ReferenceWalk

Saver = BaseCheckpointSaver[Any]


class InstrumentedSaver(BaseCheckpointSaver[Any]):
    """A checkpointer that persists through `inner` and emits OpenTelemetry telemetry.

    Build one with `langgraph.checkpoint.otel.instrument`. Attributes the wrapper does not
    define (``setup()``, ``conn``, ...) are read from the inner saver.
    """

    inner: Saver
    observer: CheckpointObserver

    def __init__(self, inner: Saver, observer: CheckpointObserver) -> None:
        # BaseCheckpointSaver.__init__ is not called: `serde` belongs to the inner saver.
        self.inner = inner
        self.observer = observer
        install_loop_hooks()  # runs are told by LangGraph's loop, whoever calls the wrapper
        install_graph_call_hook()  # a root run's span opens before LangChain's callbacks

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("inner", "observer"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"instrument({self.inner!r})"

    @property
    def serde(self) -> SerializerProtocol:
        """The inner saver's serializer."""
        return self.inner.serde

    @serde.setter
    def serde(self, value: SerializerProtocol) -> None:
        self.inner.serde = value

    @property
    def config_specs(self) -> list[Any]:
        """The inner saver's configuration specs."""
        return self.inner.config_specs

    def get_next_version(self, current: Any, channel: None) -> Any:
        """Forwarded without a span (called on the event loop thread)."""
        return self.inner.get_next_version(current, channel)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> Saver:
        """An instrumented wrapper of ``inner.with_allowlist(...)`` sharing this telemetry."""
        inner = self.inner.with_allowlist(extra_allowlist)
        if inner is self.inner:
            return self
        return wrapper_type(inner)(inner, self.observer)

    # --- core methods: always delegated to the inner instance ------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        with self.observer.load(config, may_start_run=True) as call:
            get_tuple = untraced(self.inner.get_tuple)  # our span is the call's one span
            loaded = get_tuple(config)
            latest = get_tuple(latest_config(config)) if call.wants_latest else None
            loaded = call.done(loaded, latest, self.inner.get_next_version)
            if call.walk is not None:
                drive = self.observer.telemetry.guard
                drive("read reference branch", _drive, call.walk, self._reference_read)
            return None if loaded is None else _visible(loaded)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        with self.observer.load(config, may_start_run=True) as call:
            aget_tuple = untraced(self.inner.aget_tuple)  # our span is the call's one span
            loaded = await aget_tuple(config)
            latest = await aget_tuple(latest_config(config)) if call.wants_latest else None
            loaded = call.done(loaded, latest, self.inner.get_next_version)
            if call.walk is not None:
                try:
                    await _adrive(call.walk, self._areference_read)
                except Exception as exc:
                    self.observer.telemetry.fault("read reference branch", exc)
            return None if loaded is None else _visible(loaded)

    def _reference_read(self, wanted: Any) -> Any:
        """One read of a reference walk, through the inner saver."""
        if isinstance(wanted, Listing):
            return list(itertools.islice(self.inner.list(wanted.config), wanted.limit))
        return untraced(self.inner.get_tuple)(wanted)

    async def _areference_read(self, wanted: Any) -> Any:
        if isinstance(wanted, Listing):
            listed = []
            async for tup in self.inner.alist(wanted.config):
                listed.append(tup)
                if len(listed) >= wanted.limit:
                    break
            return listed
        return await untraced(self.inner.aget_tuple)(wanted)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        with self.observer.listing(config, limit, may_start_run=True) as call:
            for item in self.inner.list(config, filter=filter, before=before, limit=limit):
                call.results += 1
                yield _visible(item)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        with self.observer.listing(config, limit, may_start_run=True) as call:
            async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
                call.results += 1
                yield _visible(item)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not self.observer.active():  # nothing can receive telemetry: only delegate
            return self.inner.put(config, checkpoint, metadata, new_versions)
        with self.observer.put(config, checkpoint, metadata, new_versions) as call:
            started = time.perf_counter()
            try:
                put = untraced(self.inner.put)  # our span is the call's one span (see peers)
                return put(config, checkpoint, call.metadata, call.new_versions)
            finally:
                call.inner_since(started)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if not self.observer.active():
            return await self.inner.aput(config, checkpoint, metadata, new_versions)
        with self.observer.put(config, checkpoint, metadata, new_versions) as call:
            started = time.perf_counter()
            try:
                aput = untraced(self.inner.aput)  # our span is the call's one span (see peers)
                return await aput(config, checkpoint, call.metadata, call.new_versions)
            finally:
                call.inner_since(started)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self.observer.active():
            return self.inner.put_writes(config, writes, task_id, task_path)
        with self.observer.put_writes(config, writes, task_id, task_path) as call:
            started = time.perf_counter()
            try:
                self.inner.put_writes(config, writes, task_id, task_path)
            finally:
                call.inner_since(started)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not self.observer.active():
            return await self.inner.aput_writes(config, writes, task_id, task_path)
        with self.observer.put_writes(config, writes, task_id, task_path) as call:
            started = time.perf_counter()
            try:
                await self.inner.aput_writes(config, writes, task_id, task_path)
            finally:
                call.inner_since(started)

    def delete_thread(self, thread_id: str) -> None:
        with self.observer.maintenance(*_delete_thread(thread_id), forget=(thread_id,)):
            self.inner.delete_thread(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        with self.observer.maintenance(*_delete_thread(thread_id), forget=(thread_id,)):
            await self.inner.adelete_thread(thread_id)


def _visible(tup: CheckpointTuple) -> CheckpointTuple:
    """`tup` as its caller must see it: with the metadata the app and LangGraph wrote."""
    metadata = without_stored_telemetry(tup.metadata)
    return tup if metadata is tup.metadata else tup._replace(metadata=metadata)


def stored_history(
    saver: Saver, config: RunnableConfig | None, **list_options: Any
) -> list[CheckpointTuple]:
    """A thread's stored checkpoints with the wrapper's telemetry (for offline readers).

    Reads through the inner saver of an instrumented `saver` (no span), so the tuples keep
    the metadata the wrapper stored; pass them to `records.history_records`.
    """
    inner = saver.inner if isinstance(saver, InstrumentedSaver) else saver
    return list(inner.list(config, **list_options))


async def astored_history(
    saver: Saver, config: RunnableConfig | None, **list_options: Any
) -> list[CheckpointTuple]:
    """The async twin of `stored_history`."""
    inner = saver.inner if isinstance(saver, InstrumentedSaver) else saver
    return [item async for item in inner.alist(config, **list_options)]


class _Capabilities:
    """Instrumented implementations of the optional checkpointer methods, mirrored per saver."""

    inner: Saver
    observer: CheckpointObserver

    def get(self, config: RunnableConfig) -> Checkpoint | None:
        with self.observer.load(config) as call:
            return cast(Checkpoint | None, call.done(self.inner.get(config)))

    async def aget(self, config: RunnableConfig) -> Checkpoint | None:
        with self.observer.load(config) as call:
            return cast(Checkpoint | None, call.done(await self.inner.aget(config)))

    # --- maintenance ------------------------------------------------------------------------

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        with self.observer.maintenance(*_delete_for_runs(run_ids)):
            self.inner.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        with self.observer.maintenance(*_delete_for_runs(run_ids)):
            await self.inner.adelete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        with self.observer.maintenance(*_copy_thread(source_thread_id, target_thread_id)):
            self.inner.copy_thread(source_thread_id, target_thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        with self.observer.maintenance(*_copy_thread(source_thread_id, target_thread_id)):
            await self.inner.acopy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        with self.observer.pruning(_prune(thread_ids, strategy), thread_ids) as call:
            if call.counting:
                call.before = _count(self.inner, thread_ids, self.observer)
                call.bytes_before = _measure(self.inner, thread_ids, self.observer)
            with call.inner():
                self.inner.prune(thread_ids, strategy=strategy)
            if call.before is not None:
                call.after = _count(self.inner, thread_ids, self.observer)
            if call.bytes_before is not None:
                call.bytes_after = _measure(self.inner, thread_ids, self.observer)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        with self.observer.pruning(_prune(thread_ids, strategy), thread_ids) as call:
            if call.counting:
                call.before = await _acount(self.inner, thread_ids, self.observer)
                call.bytes_before = await _ameasure(self.inner, thread_ids, self.observer)
            with call.inner():
                await self.inner.aprune(thread_ids, strategy=strategy)
            if call.before is not None:
                call.after = await _acount(self.inner, thread_ids, self.observer)
            if call.bytes_before is not None:
                call.bytes_after = await _ameasure(self.inner, thread_ids, self.observer)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        with self.observer.maintenance(*_delta_history(config), within=config):
            return self.inner.get_delta_channel_history(config=config, channels=channels)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        with self.observer.maintenance(*_delta_history(config), within=config):
            return await self.inner.aget_delta_channel_history(config=config, channels=channels)


def _drive(walk: ReferenceWalk, load: Callable[[Any], Any]) -> None:
    """Serve a reference walk's reads with a sync load."""
    try:
        wanted = next(walk)
        while True:
            wanted = walk.send(load(wanted))
    except StopIteration:
        return


async def _adrive(walk: ReferenceWalk, load: Callable[[Any], Awaitable[Any]]) -> None:
    """Serve a reference walk's reads with an async load."""
    try:
        wanted = next(walk)
        while True:
            wanted = walk.send(await load(wanted))
    except StopIteration:
        return


Maintenance = tuple[str, str, dict[str, Any]]


def _delete_thread(thread_id: str) -> Maintenance:
    thread = bounded_text(thread_id)
    attributes = {names.THREAD_ID: thread}
    return names.SPAN_DELETE_THREAD, "delete_thread", attributes


def _delete_for_runs(run_ids: Sequence[str]) -> Maintenance:
    return names.SPAN_DELETE_FOR_RUNS, "delete_for_runs", {names.RUN_COUNT: len(run_ids)}


def _copy_thread(source: str, target: str) -> Maintenance:
    source_id = bounded_text(source)
    attributes = {
        names.THREAD_ID: source_id,
        names.SOURCE_THREAD_ID: source_id,
        names.TARGET_THREAD_ID: bounded_text(target),
    }
    return names.SPAN_COPY_THREAD, "copy_thread", attributes


def _count(inner: Saver, thread_ids: Sequence[str], observer: CheckpointObserver) -> int | None:
    """Checkpoints of the threads (every namespace), or None beyond `PRUNE_COUNT_LIMIT`
    or when listing fails (the fault is logged; the prune goes on)."""
    try:
        total = 0
        for thread_id in thread_ids:
            for _ in inner.list({"configurable": {"thread_id": thread_id}}):
                total += 1
                if total > PRUNE_COUNT_LIMIT:
                    return None
        return total
    except Exception as exc:
        observer.telemetry.fault("count checkpoints", exc)
        return None


async def _acount(
    inner: Saver, thread_ids: Sequence[str], observer: CheckpointObserver
) -> int | None:
    """`_count`, async."""
    try:
        total = 0
        for thread_id in thread_ids:
            async for _ in inner.alist({"configurable": {"thread_id": thread_id}}):
                total += 1
                if total > PRUNE_COUNT_LIMIT:
                    return None
        return total
    except Exception as exc:
        observer.telemetry.fault("count checkpoints", exc)
        return None


def _measure(inner: Saver, thread_ids: Sequence[str], observer: CheckpointObserver) -> int | None:
    """Stored bytes of the threads (`_langgraph.stored_bytes`), or None where the saver has no
    measure or measuring fails (the fault is logged; the prune goes on)."""
    try:
        return thread_bytes(inner, thread_ids)
    except Exception as exc:
        observer.telemetry.fault("measure stored bytes", exc)
        return None


async def _ameasure(
    inner: Saver, thread_ids: Sequence[str], observer: CheckpointObserver
) -> int | None:
    """`_measure`, async (`AsyncPostgresSaver`; None for the other async savers)."""
    try:
        return await athread_bytes(inner, thread_ids)
    except Exception as exc:
        observer.telemetry.fault("measure stored bytes", exc)
        return None


def _prune(thread_ids: Sequence[str], strategy: str) -> dict[str, AttributeValue]:
    return {names.THREAD_COUNT: len(thread_ids), names.PRUNE_STRATEGY: bounded_text(strategy)}


def _delta_history(config: RunnableConfig) -> Maintenance:
    return (
        names.SPAN_GET_DELTA_CHANNEL_HISTORY,
        "get_delta_channel_history",
        config_attributes(config),
    )


MIRRORED_METHODS: tuple[str, ...] = tuple(
    name
    for name, value in vars(_Capabilities).items()
    if callable(value) and not name.startswith("_")
)
"""Optional checkpointer methods the wrapper defines exactly where the inner saver has them."""

CORE_METHODS: tuple[str, ...] = (
    "get_tuple", "aget_tuple", "list", "alist", "put", "aput",
    "put_writes", "aput_writes", "delete_thread", "adelete_thread",
)  # fmt: skip
"""Checkpointer methods the wrapper always defines and delegates to the inner instance."""


def overrides(saver_type: type, method: str) -> bool:
    """Whether `saver_type` implements `method` itself rather than inheriting the base one."""
    return getattr(saver_type, method, None) is not getattr(BaseCheckpointSaver, method, None)


def provides(saver: object, method: str) -> bool:
    """Whether `saver` really provides `method`: by its type, or dynamically (a proxy's
    ``__getattribute__``/``__getattr__``) with an implementation other than the base one."""
    if overrides(type(saver), method):
        return True
    try:
        bound = getattr(saver, method)
    except Exception:
        return False
    return getattr(bound, "__func__", bound) is not getattr(BaseCheckpointSaver, method, None)


_WRAPPER_TYPES: dict[tuple[type, frozenset[str]], type[InstrumentedSaver]] = {}
"""One wrapper type per inner saver type and capability set (bounded by the program's types)."""


def wrapper_type(inner: object) -> type[InstrumentedSaver]:
    """The instrumented wrapper type mirroring the optional capabilities of `inner`."""
    inner_type = type(inner)
    mirrored = frozenset(name for name in MIRRORED_METHODS if provides(inner, name))
    key = (inner_type, mirrored)
    cached = _WRAPPER_TYPES.get(key)
    if cached is not None:
        return cached
    namespace: dict[str, Any] = {name: vars(_Capabilities)[name] for name in sorted(mirrored)}
    namespace["__doc__"] = f"{InstrumentedSaver.__doc__}\n\nMirrors {inner_type.__qualname__}."
    namespace["__module__"] = __name__
    built = type(f"Instrumented{inner_type.__name__}", (InstrumentedSaver,), namespace)
    return _WRAPPER_TYPES.setdefault(key, built)
