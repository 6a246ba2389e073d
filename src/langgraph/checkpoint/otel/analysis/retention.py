"""What a retention policy removes from a thread and what it must keep (pure: no saver, no I/O).

The scan (`retention.scan`) reads each thread's stored checkpoints as `StoredCheckpoint` rows;
`plan_thread` turns them and a `RetentionPolicy` into a `ThreadPlan`: the checkpoints to remove
(their pending writes go with them), the blobs no kept checkpoint references, the bytes that
frees, and every checkpoint kept against the policy with its reason. The apply
(`retention.apply`) removes exactly a plan's `remove` and `remove_blobs`, after archiving them.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.namespaces import (
    NAMESPACE_SEPARATOR,
    TASK_SEPARATOR,
    namespace_depth,
)
from langgraph.checkpoint.otel.analysis.checkpoint_time import (
    duration_text,
    id_time,
    parse_duration,
)


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
    bytes: int = field(default=0, compare=False)
    """Its stored size (see `retention.scan` for each store's measure); not part of its
    identity."""


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
    started_by: CheckpointRef | None = None
    """For a subgraph call's namespace (`node:<task id>`): the parent namespace's checkpoint
    whose task ran the call (the metadata's `parents`). The call's checkpoints go with it."""
    writes_by_channel: tuple[tuple[str, int], ...] = ()
    """Its writes' bytes by channel (for where the bytes are; sums to `writes_bytes`)."""
    values_by_channel: tuple[tuple[str, int], ...] = ()
    """The part of `bytes` holding channel values stored inside the checkpoint, by channel
    (exact on PostgreSQL; elsewhere the checkpoint's share split by the sizes the wrapper
    stored, see `retention.scan`)."""
    values_not_broken_down: int = 0
    """The part of `bytes` holding channel values the scan cannot split by channel (a
    checkpoint written without the wrapper's stored channel sizes). The rest of `bytes`, past
    this and `values_by_channel`, is the checkpoint's metadata and bookkeeping."""


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
    unproven: dict[CheckpointRef, str] = field(default_factory=dict)
    """Why each checkpoint kept as `unproven` could not be proven unneeded."""
    namespaces: dict[str, int] = field(default_factory=dict)
    """Stored bytes by namespace (checkpoints, writes, blobs)."""
    channel_bytes: dict[str, int] = field(default_factory=dict)
    """Channel values by channel: blobs (PostgreSQL) and values stored inside checkpoints
    (`StoredCheckpoint.values_by_channel`)."""
    write_bytes: dict[str, int] = field(default_factory=dict)
    """Pending writes by channel."""
    values_not_broken_down: int = 0
    """Channel values of checkpoints the scan cannot split by channel."""
    checkpoint_overhead: int = 0
    """The rest of the checkpoints' bytes: metadata and bookkeeping (ids, versions, Redis's
    write-key registry). With `channel_bytes`, `write_bytes` and `values_not_broken_down` it
    sums to `bytes`."""
    oldest: str | None = None
    """The oldest checkpoint id of the thread (its age)."""
    last: str | None = None
    """The newest checkpoint id of the thread (its idle time)."""


class PolicyError(ValueError):
    """A retention policy that cannot be read; the message is one line for the user."""


POLICY_KEYS = ("keep_last", "older_than", "idle_longer_than")


def parse_policy(text: str) -> RetentionPolicy:
    """A policy from TOML text: `keep_last = 20`, `older_than = "30d"`,
    `idle_longer_than = "90d"` (each optional; durations as `90m`, `12h`, `7d`, `2w`)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"not TOML ({exc})") from None
    return policy_from_mapping(data)


def load_policy_file(path: Path | str) -> RetentionPolicy:
    """`parse_policy` of a file (errors name the file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return parse_policy(text)
    except PolicyError as exc:
        raise PolicyError(f"{path}: {exc}") from None


def policy_from_mapping(data: Mapping[str, Any]) -> RetentionPolicy:
    """A policy from its keys (a TOML table or the CLI's options); unknown keys are errors."""
    unknown = sorted(set(data) - set(POLICY_KEYS))
    if unknown:
        raise PolicyError(f"unknown key {unknown[0]!r} (known: {', '.join(POLICY_KEYS)})")
    keep_last = data.get("keep_last")
    if keep_last is not None and (
        isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1
    ):
        raise PolicyError(f"keep_last = {keep_last!r}: not a whole number of at least 1")
    return RetentionPolicy(
        keep_last=keep_last,
        older_than=_duration(data, "older_than"),
        idle_longer_than=_duration(data, "idle_longer_than"),
    )


def _duration(data: Mapping[str, Any], key: str) -> timedelta | None:
    value = data.get(key)
    if value is None or isinstance(value, timedelta):
        return value
    duration = parse_duration(value) if isinstance(value, str) else None
    if duration is None or duration <= timedelta(0):
        raise PolicyError(f"{key} = {value!r}: not a duration (90m, 12h, 30d, 2w)")
    return duration


def policy_text(policy: RetentionPolicy) -> str:
    """The policy in one line: `keep_last=20 older_than=30d idle_longer_than=90d` (only the
    rules set; `none` when none is)."""
    parts = []
    if policy.keep_last is not None:
        parts.append(f"keep_last={policy.keep_last}")
    if policy.older_than is not None:
        parts.append(f"older_than={duration_text(policy.older_than)}")
    if policy.idle_longer_than is not None:
        parts.append(f"idle_longer_than={duration_text(policy.idle_longer_than)}")
    return " ".join(parts) or "none"


def stored_channel_sizes(metadata: Mapping[str, Any] | None) -> list[tuple[str, int]] | None:
    """The `[hash, size_bytes]` sizes the wrapper stored for each channel of a checkpoint
    (`names.METADATA_KEY`, every format), sorted by channel; None when none were stored.
    Malformed entries are left out."""
    value = metadata.get(names.METADATA_KEY) if isinstance(metadata, Mapping) else None
    channels = value.get(names.META_CHANNELS) if isinstance(value, Mapping) else None
    if not isinstance(channels, Mapping):
        return None
    return sorted(
        (name, pair[1])
        for name, pair in channels.items()
        if isinstance(name, str)
        and isinstance(pair, list | tuple)
        and len(pair) == 2
        and type(pair[1]) is int
        and pair[1] >= 0
    )


def split_values(sizes: Iterable[tuple[str, int]], stored: int) -> tuple[tuple[str, int], ...]:
    """`stored` bytes split among channels in proportion to `sizes` (whole bytes, summing to
    `stored` exactly; nothing when the sizes sum to 0). Channels of size 0 are left out."""
    pairs = [(channel, size) for channel, size in sizes if size > 0]
    if len(pairs) == 1 and stored > 0:
        return ((pairs[0][0], stored),)
    total = sum([size for _, size in pairs])
    if total <= 0 or stored <= 0:
        return ()
    out = []
    seen = given = 0
    for channel, size in pairs:
        seen += size
        upto = stored * seen // total
        out.append((channel, upto - given))
        given = upto
    return tuple(out)


def is_call_namespace(namespace: str) -> bool:
    """Whether a namespace is one subgraph call's (`node:<task id>`, nested or not), whose
    checkpoints belong to the call, rather than a `checkpointer=True` subgraph's (`node`),
    whose state outlives each call."""
    return TASK_SEPARATOR in namespace.rpartition(NAMESPACE_SEPARATOR)[2]


def plan_thread(
    rows: Sequence[StoredCheckpoint], policy: RetentionPolicy, now: datetime
) -> ThreadPlan:
    """What `policy` removes from one thread's stored checkpoints (all namespaces), and what it
    keeps against the policy.

    Rules (a checkpoint goes when any selects it): `keep_last` N per namespace by id order,
    `older_than` by the time in its id, `idle_longer_than` the whole thread when its newest
    checkpoint is older. A subgraph call's namespace goes with the checkpoint that started it
    (`started_by`), once that one is stored and removed, as LangGraph's own
    `prune(keep_latest)` does. Kept whatever the rules say (`KeepReason`): the latest of each
    namespace (unless the whole idle thread or a call's namespace goes with its starter); a
    checkpoint with an unanswered interrupt (interrupt writes, no resume, no child in its
    namespace), and a whole idle thread that has one; the ancestors whose writes a delta
    channel of a kept checkpoint is rebuilt from, back to the one holding its value; the
    parent of a kept fork, whatever a kept checkpoint references (`references`) and the
    starter of a call namespace with a kept checkpoint; and what the scan could not read
    (`unproven`), or whose time is unknown under a time rule. The kept set is closed: what a
    kept checkpoint needs is kept too.
    """
    if not rows:
        raise ValueError("plan_thread needs the thread's checkpoints (none given)")
    thread_id = rows[0].ref.thread_id
    by_ref = {r.ref: r for r in rows}
    by_ns: dict[str, list[StoredCheckpoint]] = {}
    for row in sorted(rows, key=lambda r: r.ref.checkpoint_id):
        by_ns.setdefault(row.ref.checkpoint_ns, []).append(row)
    latest = {ns: ns_rows[-1].ref.checkpoint_id for ns, ns_rows in by_ns.items()}
    has_child = {(r.ref.checkpoint_ns, r.parent_id) for r in rows if r.parent_id is not None}
    pending = {
        r.ref
        for r in rows
        if r.pending_interrupt and (r.ref.checkpoint_ns, r.ref.checkpoint_id) not in has_child
    }
    time_rules = policy.older_than is not None or policy.idle_longer_than is not None
    times = {r.ref: id_time(r.ref.checkpoint_id) for r in rows} if time_rules else {}
    newest_time = id_time(max(latest.values())) if policy.idle_longer_than else None
    idle = (
        policy.idle_longer_than is not None
        and newest_time is not None
        and newest_time < now - policy.idle_longer_than
    )
    old_cut = None if policy.older_than is None else now - policy.older_than

    def by_rule(ns_rows: Sequence[StoredCheckpoint]) -> set[CheckpointRef]:
        """The namespace's checkpoints keep_last and older_than select."""
        chosen: set[CheckpointRef] = set()
        if policy.keep_last is not None:
            chosen.update(r.ref for r in ns_rows[: max(0, len(ns_rows) - policy.keep_last)])
        if old_cut is not None:
            for r in ns_rows:
                when = times[r.ref]
                if when is not None and when < old_cut:
                    chosen.add(r.ref)
        return chosen

    kept: dict[CheckpointRef, KeepReason] = {}
    if idle and pending:  # an idle thread waiting for an answer stays whole
        kept.update((r.ref, KeepReason.PENDING_INTERRUPT) for r in rows)
    whole = idle and not pending
    # the namespaces, parents before their subgraphs (a call's namespace follows its starter)
    order = sorted(by_ns, key=lambda ns: (namespace_depth(ns) if ns else 0, ns))
    while True:
        selected: set[CheckpointRef] = set()
        follows_starter: set[str] = set()
        for ns in order:
            ns_rows = by_ns[ns]
            starter = _starter(ns, ns_rows)
            if (
                starter is not None
                and starter in by_ref
                and starter in selected
                and starter not in kept
            ):
                follows_starter.add(ns)
                selected.update(r.ref for r in ns_rows)
            elif whole:
                selected.update(r.ref for r in ns_rows)
            else:
                selected.update(by_rule(ns_rows))
        grown = dict(kept)
        for ref in selected:
            if ref in grown:
                continue
            row = by_ref[ref]
            ns = ref.checkpoint_ns
            if not whole and ns not in follows_starter and latest[ns] == ref.checkpoint_id:
                grown[ref] = KeepReason.LATEST
            elif ref in pending:
                grown[ref] = KeepReason.PENDING_INTERRUPT
            elif row.unproven is not None or (time_rules and times.get(ref) is None):
                grown[ref] = KeepReason.UNPROVEN
        # closure: what every kept checkpoint needs (kept = not selected, or kept against it)
        stack = [r for r in rows if r.ref not in selected or r.ref in grown]
        seen: set[CheckpointRef] = set()
        while stack:
            row = stack.pop()
            if row.ref in seen:
                continue
            seen.add(row.ref)
            for need, reason in _needs(row, by_ref):
                if need in selected and need not in grown:
                    grown[need] = reason
                    stack.append(by_ref[need])
        if grown == kept:
            break
        kept = grown
    remove = sorted(
        (ref for ref in selected if ref not in kept),
        key=lambda ref: (ref.checkpoint_ns, ref.checkpoint_id),
    )
    unproven = {
        ref: by_ref[ref].unproven or "its id is not a UUID v6: its age is unknown"
        for ref, reason in kept.items()
        if reason is KeepReason.UNPROVEN
    }
    return _finish(thread_id, rows, latest, remove, kept, unproven, whole)


def _starter(ns: str, ns_rows: Sequence[StoredCheckpoint]) -> CheckpointRef | None:
    """The checkpoint that started a call namespace (read from its latest checkpoint)."""
    if not is_call_namespace(ns):
        return None
    return ns_rows[-1].started_by


def _needs(
    row: StoredCheckpoint, by_ref: Mapping[CheckpointRef, StoredCheckpoint]
) -> Iterable[tuple[CheckpointRef, KeepReason]]:
    """The checkpoints of its thread a kept checkpoint needs, each with why."""
    ref = row.ref
    if row.delta_channels and row.parent_id is not None:
        # LangGraph rebuilds a delta channel from the parent chain's writes, up to a checkpoint
        # holding its value: the parent is needed, and, kept, needs its own parent while the
        # channel is a delta there too (the closure walks the chain, each checkpoint once)
        parent = CheckpointRef(ref.thread_id, ref.checkpoint_ns, row.parent_id)
        if parent in by_ref:
            yield parent, KeepReason.DELTA_BASE
    if row.source == "fork" and row.parent_id is not None:
        yield CheckpointRef(ref.thread_id, ref.checkpoint_ns, row.parent_id), KeepReason.REFERENCED
    for other in row.references:
        if other in by_ref:
            yield other, KeepReason.REFERENCED
    if row.started_by is not None and row.started_by in by_ref:
        yield row.started_by, KeepReason.REFERENCED


def _finish(
    thread_id: str,
    rows: Sequence[StoredCheckpoint],
    latest: dict[str, str],
    remove: list[CheckpointRef],
    kept: dict[CheckpointRef, KeepReason],
    unproven: dict[CheckpointRef, str],
    whole: bool,
) -> ThreadPlan:
    """The plan's figures: bytes where they are, and what removing `remove` reclaims."""
    removed = set(remove)
    kept_blobs: set[BlobRef] = set()
    freed_blobs: dict[BlobRef, BlobRef] = {}
    blob_sizes: dict[BlobRef, int] = {}
    namespaces: dict[str, int] = {}
    channels: dict[str, int] = {}
    writes: dict[str, int] = {}
    total = reclaim = reclaim_writes = not_broken_down = overhead = 0
    for row in rows:
        own = row.bytes + row.writes_bytes
        total += own
        ns = row.ref.checkpoint_ns
        namespaces[ns] = namespaces.get(ns, 0) + own
        by_channel = 0
        for channel, size in row.writes_by_channel:
            writes[channel] = writes.get(channel, 0) + size
            by_channel += size
        inline = 0
        for channel, size in row.values_by_channel:
            channels[channel] = channels.get(channel, 0) + size
            inline += size
        not_broken_down += row.values_not_broken_down
        # and what the writes' bytes hold past their channels (Redis: the write-key registry)
        overhead += row.bytes - inline - row.values_not_broken_down + row.writes_bytes - by_channel
        for blob in row.blobs:
            blob_sizes.setdefault(blob, blob.bytes)
        if row.ref in removed:
            reclaim += own
            reclaim_writes += row.writes
            for blob in row.blobs:
                freed_blobs.setdefault(blob, blob)
        else:
            kept_blobs.update(row.blobs)
    for blob, size in blob_sizes.items():
        total += size
        namespaces[blob.checkpoint_ns] = namespaces.get(blob.checkpoint_ns, 0) + size
        channels[blob.channel] = channels.get(blob.channel, 0) + size
    remove_blobs = sorted(
        (b for b in freed_blobs.values() if b not in kept_blobs),
        key=lambda b: (b.checkpoint_ns, b.channel, b.version),
    )
    reclaim += sum(b.bytes for b in remove_blobs)
    ids = [r.ref.checkpoint_id for r in rows]
    return ThreadPlan(
        thread_id=thread_id,
        latest=latest,
        checkpoints=len(rows),
        bytes=total,
        remove=tuple(remove),
        remove_blobs=tuple(remove_blobs),
        reclaim_bytes=reclaim,
        reclaim_writes=reclaim_writes,
        whole_thread=whole and len(removed) == len(rows),
        kept=kept,
        unproven=unproven,
        namespaces=namespaces,
        channel_bytes=channels,
        write_bytes=writes,
        values_not_broken_down=not_broken_down,
        checkpoint_overhead=overhead,
        oldest=min(ids),
        last=max(ids),
    )
