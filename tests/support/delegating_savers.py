"""Savers that sit between LangGraph and the wrapper, as users and the Agent Server put them
there: a user's delegating layer (`Delegating`) and the Agent Server's own adapter
(`server_adapter`). Used by tests/wrapper/test_savers_in_between.py and the tests that check a
layer changes nothing (tests/wrapper/test_instrumentor.py, tests/integration/test_cancelled_runs.py)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)


class Delegating(BaseCheckpointSaver[Any]):
    """A user's own layer in front of a saver (a cache, a retry layer): delegates every call."""

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=inner.serde)
        self.saver = inner

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.saver.aget_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        yield from self.saver.list(config, **kwargs)

    async def alist(
        self, config: RunnableConfig | None, **kwargs: Any
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.saver.alist(config, **kwargs):
            yield item

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.saver.put(config, checkpoint, metadata, new_versions)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.saver.aput(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.saver.put_writes(config, writes, task_id, task_path)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.saver.aput_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.saver.delete_thread(thread_id)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.saver.adelete_thread(thread_id)


def server_adapter(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """The Agent Server's own adapter, as it wraps a `langgraph.json` custom checkpointer."""
    # what `langgraph dev` sets before the server's modules are imported (in-memory runtime)
    for name, value in (
        ("REDIS_URI", "fake"),
        ("DATABASE_URI", ":memory:"),
        ("MIGRATIONS_PATH", "__inmem"),
    ):
        os.environ.setdefault(name, value)
    from langgraph_api._checkpointer._adapter import (
        CheckpointerCapabilities,
        _CustomCheckpointerAdapter,
    )

    return _CustomCheckpointerAdapter(saver, CheckpointerCapabilities.from_type(type(saver)))
