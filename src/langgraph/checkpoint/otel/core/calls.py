"""The calls in progress that the saver and the observer share, and the attributes every span
of a config carries."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, CheckpointMetadata, CheckpointTuple
from opentelemetry.util.types import AttributeValue

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.detectors import Finding
from langgraph.checkpoint.otel.analysis.resume_kinds import RunRequest
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.core.telemetry import Operation, RunTrace
from langgraph.checkpoint.otel.core.watch import ReferenceWalk

NextVersion = Callable[[Any, None], Any]
"""A saver's `get_next_version`."""


@dataclass(slots=True)
class InnerCall:
    """A write in progress; the saver reports when its inner call began (`inner_since`), so
    `operation.duration` is that call alone."""

    op: Operation | None = None

    def inner_since(self, started: float) -> None:
        """The inner call began at `started` (`time.perf_counter()`) and has just returned."""
        if self.op is not None:
            self.op.inner_since(started)


@dataclass(slots=True, kw_only=True)
class PutCall(InnerCall):
    """A put in progress: `metadata` is what the inner saver must store."""

    metadata: CheckpointMetadata
    new_versions: ChannelVersions
    """What the inner saver must store as new channel versions (a migration adds some)."""
    findings: list[Finding] = field(default_factory=list)


@dataclass(slots=True)
class PruneCall:
    """A prune in progress: the saver sets `before` and `after` (checkpoints of the threads)
    and `bytes_before` and `bytes_after` (their stored bytes, `_langgraph.stored_bytes`) when
    `counting`, and times the inner call alone with `inner()`."""

    op: Operation | None = None
    counting: bool = False
    before: int | None = None
    after: int | None = None
    bytes_before: int | None = None
    bytes_after: int | None = None

    def inner(self) -> AbstractContextManager[None]:
        """Time the inner prune (the counting is the library's own time)."""
        return self.op.inner() if self.op is not None else nullcontext()


@dataclass(slots=True)
class ListCall:
    """A listing in progress: counts what it yields."""

    results: int = 0


@dataclass(slots=True)
class LoadCall:
    """A load in progress: `done()` reports what was loaded and returns it unchanged.

    When the load starts a run from an explicit checkpoint id, the saver also loads the
    thread's latest checkpoint (`wants_latest`) so a replay of an older one is told apart.
    """

    op: Operation | None = None
    run: RunRequest | None = None
    run_trace: RunTrace | None = None
    config: RunnableConfig | None = None
    walk: ReferenceWalk | None = None
    """After a fork: the reference-branch reads the saver must drive (see `watch`)."""
    migration: tuple[str, str] | None = None
    """(written, running) schema versions when the loaded checkpoint must be migrated."""
    _finish: Callable[[LoadCall, Any, Any], None] | None = field(default=None, repr=False)
    _migrate: Callable[[LoadCall, CheckpointTuple, NextVersion], CheckpointTuple] | None = field(
        default=None, repr=False
    )
    _started: float = 0.0
    """When the inner load began (the operation's duration is the inner calls' alone)."""

    @property
    def wants_latest(self) -> bool:
        """Whether the saver should also pass the thread's latest checkpoint to `done`."""
        return self.op is not None and self.run is not None and self.run.explicit_checkpoint

    def done(self, result: Any, latest: Any = None, next_version: NextVersion | None = None) -> Any:
        """Report the loaded checkpoint (if any) and return it: unchanged, or migrated to the
        running schema version (see `migrations`; `next_version` is the inner saver's).

        Raises `SchemaMigrationError` when a declared migration cannot be applied."""
        if self.op is not None:
            self.op.inner_since(self._started)
            if self._finish is not None:
                self.op.telemetry.guard("describe load", self._finish, self, result, latest)
            if self.migration is not None and self._migrate is not None and next_version:
                return self._migrate(self, result, next_version)
        return result


def latest_config(config: RunnableConfig) -> RunnableConfig:
    """`config` addressing the thread's latest checkpoint instead of a specific one."""
    configurable = {**(config.get("configurable") or {}), "checkpoint_id": None}
    return {**config, "configurable": configurable}


def config_attributes(config: RunnableConfig | None) -> dict[str, AttributeValue]:
    """Thread, namespace and checkpoint id from a config, where present (bounded, never
    raising: see `text_bounds.bounded_text`). A thread's config without a namespace addresses the
    root graph's (``""``), as every saver reads it."""
    configurable = (config or {}).get("configurable") or {}
    attributes: dict[str, AttributeValue] = {}
    thread_id = configurable.get("thread_id")
    if thread_id is not None:
        attributes[names.THREAD_ID] = bounded_text(thread_id)
    ns = configurable.get("checkpoint_ns", "" if thread_id is not None else None)
    if ns is not None:
        attributes[names.CHECKPOINT_NS] = bounded_text(ns)
    checkpoint_id = configurable.get("checkpoint_id")
    if checkpoint_id is not None:
        attributes[names.CHECKPOINT_ID] = bounded_text(checkpoint_id)
    return attributes
