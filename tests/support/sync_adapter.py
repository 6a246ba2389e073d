"""Run a sync-only checkpoint saver under the async conformance suite.

``to_thread_adapter(saver)`` returns a ``BaseCheckpointSaver`` whose ``a*`` methods run the
wrapped saver's sync methods in ``asyncio.to_thread``. The adapter class is built per wrapped
*type* and defines an ``a*`` method only where that type overrides the matching sync method of
``BaseCheckpointSaver``: the conformance suite detects capabilities by overridden ``a*`` methods,
so the adapter reports exactly the capabilities the sync saver type implements (SqliteSaver: the
five base ones; PostgresSaver: those plus prune) — no more, no less.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

# sync method -> async counterpart, for every capability the conformance suite knows.
SYNC_TO_ASYNC: dict[str, str] = {
    "put": "aput",
    "put_writes": "aput_writes",
    "get_tuple": "aget_tuple",
    "list": "alist",
    "delete_thread": "adelete_thread",
    "delete_for_runs": "adelete_for_runs",
    "copy_thread": "acopy_thread",
    "prune": "aprune",
}


def overrides(tp: type, method: str) -> bool:
    """Whether ``tp`` overrides ``BaseCheckpointSaver.<method>``."""
    return getattr(tp, method, None) is not getattr(BaseCheckpointSaver, method, None)


class ToThreadSaver(BaseCheckpointSaver[Any]):
    """Base of the generated adapters; holds the wrapped sync saver in ``self.sync``."""

    def __init__(self, sync: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=sync.serde)
        self.sync = sync

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.sync.get_next_version(current, channel)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sync!r})"


# -- sync pass-throughs ------------------------------------------------------------------------


def _get_tuple(self: ToThreadSaver, config: RunnableConfig) -> CheckpointTuple | None:
    return self.sync.get_tuple(config)


def _list(
    self: ToThreadSaver,
    config: RunnableConfig | None,
    *,
    filter: dict[str, Any] | None = None,
    before: RunnableConfig | None = None,
    limit: int | None = None,
) -> Iterator[CheckpointTuple]:
    return self.sync.list(config, filter=filter, before=before, limit=limit)


def _put(
    self: ToThreadSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> RunnableConfig:
    return self.sync.put(config, checkpoint, metadata, new_versions)


def _put_writes(
    self: ToThreadSaver,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> None:
    self.sync.put_writes(config, writes, task_id, task_path)


def _delete_thread(self: ToThreadSaver, thread_id: str) -> None:
    self.sync.delete_thread(thread_id)


def _delete_for_runs(self: ToThreadSaver, run_ids: Sequence[str]) -> None:
    self.sync.delete_for_runs(run_ids)


def _copy_thread(self: ToThreadSaver, source_thread_id: str, target_thread_id: str) -> None:
    self.sync.copy_thread(source_thread_id, target_thread_id)


def _prune(
    self: ToThreadSaver, thread_ids: Sequence[str], *, strategy: str = "keep_latest"
) -> None:
    self.sync.prune(thread_ids, strategy=strategy)


# -- async via to_thread -----------------------------------------------------------------------


async def _aget_tuple(self: ToThreadSaver, config: RunnableConfig) -> CheckpointTuple | None:
    return await asyncio.to_thread(self.sync.get_tuple, config)


async def _alist(
    self: ToThreadSaver,
    config: RunnableConfig | None,
    *,
    filter: dict[str, Any] | None = None,
    before: RunnableConfig | None = None,
    limit: int | None = None,
) -> AsyncIterator[CheckpointTuple]:
    def collect() -> list[CheckpointTuple]:
        return list(self.sync.list(config, filter=filter, before=before, limit=limit))

    for item in await asyncio.to_thread(collect):
        yield item


async def _aput(
    self: ToThreadSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> RunnableConfig:
    return await asyncio.to_thread(self.sync.put, config, checkpoint, metadata, new_versions)


async def _aput_writes(
    self: ToThreadSaver,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> None:
    await asyncio.to_thread(self.sync.put_writes, config, writes, task_id, task_path)


async def _adelete_thread(self: ToThreadSaver, thread_id: str) -> None:
    await asyncio.to_thread(self.sync.delete_thread, thread_id)


async def _adelete_for_runs(self: ToThreadSaver, run_ids: Sequence[str]) -> None:
    await asyncio.to_thread(self.sync.delete_for_runs, run_ids)


async def _acopy_thread(self: ToThreadSaver, source_thread_id: str, target_thread_id: str) -> None:
    await asyncio.to_thread(self.sync.copy_thread, source_thread_id, target_thread_id)


async def _aprune(
    self: ToThreadSaver, thread_ids: Sequence[str], *, strategy: str = "keep_latest"
) -> None:
    await asyncio.to_thread(lambda: self.sync.prune(thread_ids, strategy=strategy))


_IMPLS: dict[str, Callable[..., Any]] = {
    "get_tuple": _get_tuple,
    "list": _list,
    "put": _put,
    "put_writes": _put_writes,
    "delete_thread": _delete_thread,
    "delete_for_runs": _delete_for_runs,
    "copy_thread": _copy_thread,
    "prune": _prune,
    "aget_tuple": _aget_tuple,
    "alist": _alist,
    "aput": _aput,
    "aput_writes": _aput_writes,
    "adelete_thread": _adelete_thread,
    "adelete_for_runs": _adelete_for_runs,
    "acopy_thread": _acopy_thread,
    "aprune": _aprune,
}

_ADAPTER_TYPES: dict[type, type[ToThreadSaver]] = {}


def adapter_type(sync_type: type) -> type[ToThreadSaver]:
    """The adapter class for ``sync_type`` (cached): mirrors its sync capabilities."""
    cached = _ADAPTER_TYPES.get(sync_type)
    if cached is not None:
        return cached
    ns: dict[str, Any] = {"__module__": __name__}
    for sync_name, async_name in SYNC_TO_ASYNC.items():
        if overrides(sync_type, sync_name):
            ns[sync_name] = _IMPLS[sync_name]
            ns[async_name] = _IMPLS[async_name]
    cls = type(f"ToThread[{sync_type.__name__}]", (ToThreadSaver,), ns)
    _ADAPTER_TYPES[sync_type] = cls
    return cls


def to_thread_adapter(sync: BaseCheckpointSaver[Any]) -> ToThreadSaver:
    """Wrap a sync-only saver so its sync methods are reachable through the async API."""
    return adapter_type(type(sync))(sync)
