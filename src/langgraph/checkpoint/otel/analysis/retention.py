"""What a retention policy removes from a thread and what it must keep (pure: no saver, no I/O).

The scan (`retention.scan`) reads each thread's stored checkpoints as `StoredCheckpoint` rows;
`plan_thread` turns them and a `RetentionPolicy` into a `ThreadPlan`: the checkpoints to remove
(their pending writes go with them), the blobs no kept checkpoint references, the bytes that
frees, and every checkpoint kept against the policy with its reason. The apply
(`retention.apply`) removes exactly a plan's `remove` and `remove_blobs`, after archiving them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum


class KeepReason(StrEnum):
    """Why a checkpoint the policy would remove is kept."""

    LATEST = "latest"
    """The latest checkpoint of its namespace: what the thread resumes from."""
    PENDING_INTERRUPT = "pending_interrupt"
    """An interrupt still waiting for its answer (kept with its writes)."""
    DELTA_BASE = "delta_base"
    """A delta channel of a kept checkpoint is rebuilt from this checkpoint's writes."""
    REFERENCED = "referenced"
    """A kept fork, subgraph call or another thread still points at it."""
    UNPROVEN = "unproven"
    """The scan cannot prove it unneeded (unreadable, or a shape it does not know)."""


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """One stored checkpoint."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str


@dataclass(frozen=True, slots=True)
class BlobRef:
    """One stored channel value kept apart from its checkpoints (PostgreSQL, Redis)."""

    thread_id: str
    checkpoint_ns: str
    channel: str
    version: str


@dataclass(frozen=True)
class StoredCheckpoint:
    """What the scan reads of one checkpoint: identity, links, sizes, and what keeps it."""

    ref: CheckpointRef
    parent_id: str | None
    source: str | None
    """The metadata's `source` (`input`, `loop`, `update`, `fork`), None when unreadable."""
    bytes: int
    """Stored bytes of the checkpoint row itself (checkpoint and metadata)."""
    writes: int
    """Pending writes stored for it."""
    writes_bytes: int
    blobs: frozenset[BlobRef] = frozenset()
    """Separately stored channel values it references (empty where values are inline)."""
    pending_interrupt: bool = False
    """Its writes hold an interrupt and no resume answers it."""
    delta_channels: frozenset[str] = frozenset()
    """Delta channels stored without a value here: rebuilt from its ancestors' writes."""
    references: frozenset[CheckpointRef] = frozenset()
    """Other checkpoints (another namespace or thread) it needs to stay resumable."""
    unproven: str | None = None
    """Why the scan could not read what it needs of this checkpoint, if it could not."""


@dataclass(frozen=True)
class RetentionPolicy:
    """Which checkpoints to remove; options combine (a checkpoint goes when any rule removes it,
    unless a `KeepReason` keeps it)."""

    keep_last: int | None = None
    """Keep the last N checkpoints of each thread and namespace."""
    older_than: timedelta | None = None
    """Remove checkpoints older than this."""
    idle_longer_than: timedelta | None = None
    """Remove whole threads whose latest checkpoint is older than this."""


@dataclass(frozen=True)
class ThreadPlan:
    """What a policy does to one thread."""

    thread_id: str
    latest: dict[str, str]
    """The latest checkpoint id of each namespace when planned: the apply skips the thread if
    any has changed."""
    checkpoints: int
    bytes: int
    """Every stored byte of the thread (checkpoints, writes, blobs)."""
    remove: tuple[CheckpointRef, ...] = ()
    remove_blobs: tuple[BlobRef, ...] = ()
    reclaim_bytes: int = 0
    reclaim_writes: int = 0
    whole_thread: bool = False
    """Idle: every checkpoint goes (archived first)."""
    kept: dict[CheckpointRef, KeepReason] = field(default_factory=dict)
    """Checkpoints the policy would remove, kept, each with its reason."""
