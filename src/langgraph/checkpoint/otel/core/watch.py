"""Watching a resumed run for divergence: the bookkeeping between resumes and puts.

A resume (other than `continue`) opens a session for its thread and namespace: the tool calls
already answered in the loaded state's current turn (since its last human message: a call an
earlier turn made is not a duplicate when a later turn makes it again) and, after a fork, the
reference branch (the earlier descendants of the checkpoint forked from, read back through the
inner saver by the wrapper, bounded by the policy's window). Each later put of that thread is
turned into a record and compared. No OpenTelemetry here, and no saver I/O: reference reads are
requested through a generator the saver drives, so sync and async savers share this logic.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.otel.analysis.detectors import (
    BranchComparison,
    DivergencePolicy,
    Finding,
)
from langgraph.checkpoint.otel.analysis.records import (
    CheckpointRecord,
    Scope,
    checkpoint_record,
    history_records,
)
from langgraph.checkpoint.otel.analysis.resume_kinds import Resume
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.analysis.tool_calls import (
    MessagesMark,
    ToolActivity,
    message_tool_activity,
    turn_start,
)
from langgraph.checkpoint.otel.bounded import BoundedDict

ReferenceWalk = Generator[Any, Any, None]
"""Yields configs of checkpoints to load, sent the loaded tuples (or None); or a `Listing`,
sent the tuples it lists."""

LISTING_READS = 1000
"""Checkpoints a reference listing reads at most (newest first, down to the fork point)."""


@dataclass(frozen=True, slots=True)
class Listing:
    """A read of a namespace's checkpoints, newest first, at most `limit` of them."""

    config: RunnableConfig
    limit: int


UNWATCHED_KINDS = frozenset({"continue"})
"""New input on a finished thread is a new trajectory, not a replay."""


@dataclass(slots=True)
class _Session:
    comparison: BranchComparison
    messages_mark: MessagesMark
    """Where the branch's messages ended at its last checkpoint (no message is kept: the
    session outlives its run)."""
    own_tools: bool = False
    """The reference was written without the wrapper: its tool activity is read from each
    checkpoint's own messages, so this branch's puts are compared by theirs too (not with
    their subgraphs' activity added)."""
    puts: int = 0
    last_checkpoint_id: str | None = None
    """The branch's last checkpoint (fork copies included)."""


@dataclass(slots=True)
class DivergenceWatch:
    """Open comparison sessions, one per (thread, namespace), bounded in number and length;
    safe to call from several threads."""

    policy: DivergencePolicy
    max_sessions: int = 1024
    messages_channel: str = "messages"
    _sessions: BoundedDict[Scope, _Session] = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._sessions = BoundedDict(self.max_sessions)

    def start(self, scope: Scope, resume: Resume, loaded: Any) -> None:
        """Open a session for a resume of `loaded` (a CheckpointTuple).

        A resume of the last checkpoint a watched branch wrote (its run stopped at an interrupt
        or an error, and goes on) keeps that branch's session: the comparison goes on.
        """
        with self._lock:
            if resume.kind in UNWATCHED_KINDS or not self.policy.detectors:
                self._sessions.pop(scope, None)
                return
            current = self._sessions.get(scope)
            if (
                current is not None
                and resume.kind != "fork"
                and current.last_checkpoint_id == str(loaded.checkpoint["id"])
            ):
                return
        messages = self._messages(loaded.checkpoint)
        _, answered = message_tool_activity(messages, turn_start(messages))
        session = _Session(
            BranchComparison([], {call.key for call in answered}, self.policy),
            MessagesMark.of(messages),
        )
        with self._lock:
            self._sessions[scope] = session

    def session_count(self) -> int:
        """Open sessions."""
        with self._lock:
            return len(self._sessions)

    def forget(self, stale: Callable[[Scope], bool]) -> None:
        """Close the sessions of every scope that is `stale`."""
        with self._lock:
            self._sessions.evict(stale)

    def reference_walk(self, scope: Scope, loaded: Any, latest: Any) -> ReferenceWalk | None:
        """After a fork: walk back from the thread's latest checkpoint to `loaded`.

        The chain found is the reference branch. The walk stops after `window` reads, or as
        soon as it passes `loaded`'s step without meeting it (`loaded` is then no ancestor of
        the latest checkpoint and there is nothing to compare with).
        """
        with self._lock:
            session = self._sessions.get(scope)
        if session is None or latest is None:
            return None
        return self._walk(session, loaded, latest)

    def _walk(self, session: _Session, loaded: Any, latest: Any) -> ReferenceWalk:
        chain = yield from self._walk_back(loaded, latest)
        if chain is None:  # the latest checkpoint is on another branch: find the fork point's
            chain = yield from self._earliest_descendants(loaded)
        if not chain:
            return
        # read as the offline detectors read them: hashes and nodes computed where the
        # wrapper stored none (a branch written before it was installed)
        records = history_records([loaded, *chain], messages_channel=self.messages_channel)
        loaded_id = str(loaded.checkpoint["id"])
        reference = [r for r in records if r.checkpoint_id != loaded_id]
        session.own_tools = any(read_stored_telemetry(t.metadata) is None for t in chain)
        session.comparison.use_reference(reference)

    def _walk_back(self, loaded: Any, latest: Any) -> Generator[Any, Any, list[Any] | None]:
        """The chain from `loaded` (excluded) to the thread's latest checkpoint, oldest first;
        None when `loaded` is no ancestor of it within `window` reads."""
        target = str(loaded.checkpoint["id"])
        target_step = _step(loaded)
        chain: list[Any] = []
        current = latest
        while current is not None and len(chain) <= self.policy.window:
            if str(current.checkpoint["id"]) == target:
                return chain[::-1]
            step = _step(current)
            if step is not None and target_step is not None and step <= target_step:
                return None
            chain.append(current)
            if current.parent_config is None:
                return None
            current = yield current.parent_config
        return None

    def _earliest_descendants(self, loaded: Any) -> Generator[Any, Any, list[Any]]:
        """`loaded`'s earliest child and its first-born descendants (what the offline
        detectors compare a fork with), from one listing of its namespace newer than it."""
        target = str(loaded.checkpoint["id"])
        configurable = dict((loaded.config or {}).get("configurable") or {})
        configurable.pop("checkpoint_id", None)
        listed = yield Listing(RunnableConfig(configurable=configurable), LISTING_READS)
        children: dict[str, list[Any]] = {}
        for tup in listed or ():
            if str(tup.checkpoint["id"]) <= target:
                break
            parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            children.setdefault(str(parent), []).append(tup)
        chain: list[Any] = []
        current = target
        while len(chain) < self.policy.window and (born := children.get(current)):
            first = min(born, key=lambda tup: str(tup.checkpoint["id"]))
            chain.append(first)
            current = str(first.checkpoint["id"])
        return chain

    def observe_put(
        self,
        scope: Scope,
        config: Mapping[str, Any],
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any],
        *,
        nodes: Sequence[str],
        channel_hashes: Mapping[str, str] | None,
        state_hash: str | None,
        tools: ToolActivity | None = None,
        own_tools: ToolActivity | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> list[Finding]:
        """Findings revealed by a put of a watched thread (none for unwatched threads).

        `tools`: the tool activity of the put's step, its subgraphs' included, when the
        wrapper knows it (else read from the messages it added); `own_tools`: the step's own
        (its messages' alone), compared instead when the reference was written without the
        wrapper; `values`: the checkpoint's values as the graph sees them (its delta channels
        included)."""
        with self._lock:
            session = self._sessions.get(scope)
            if session is None:
                return []
            parent = (config.get("configurable") or {}).get("checkpoint_id")
            record = self._record(
                parent,
                config,
                checkpoint,
                metadata,
                session.messages_mark,
                nodes=nodes,
                channel_hashes=channel_hashes,
                state_hash=state_hash,
                tools=own_tools if session.own_tools else tools,
            )
            session.messages_mark = MessagesMark.of(self._messages(checkpoint, values))
            session.last_checkpoint_id = record.checkpoint_id
            session.puts += 1
            if session.puts >= self.policy.window:
                self._sessions.pop(scope, None)
            return session.comparison.add(record)

    def _record(
        self,
        parent: Any,
        config: Mapping[str, Any],
        checkpoint: Mapping[str, Any],
        metadata: Mapping[str, Any] | None,
        previous_messages: MessagesMark,
        **known: Any,
    ) -> CheckpointRecord:
        return checkpoint_record(
            config,
            checkpoint,
            metadata,
            str(parent) if parent else None,
            messages_channel=self.messages_channel,
            previous_messages=previous_messages,
            **known,
        )

    def _messages(
        self, checkpoint: Mapping[str, Any], values: Mapping[str, Any] | None = None
    ) -> list[Any]:
        if values is None:
            values = checkpoint.get("channel_values") or {}
        value = values.get(self.messages_channel)
        return value if isinstance(value, list) else []

    def loaded_values(self, scope: Scope, values: Mapping[str, Any]) -> None:
        """The loaded checkpoint's delta channels, once the loop has rebuilt them: the tool
        calls answered before the resume are read from its messages."""
        messages = values.get(self.messages_channel)
        if not isinstance(messages, list):
            return
        _, answered = message_tool_activity(messages, turn_start(messages))
        with self._lock:
            session = self._sessions.get(scope)
            if session is None or session.comparison.compared:
                return
            session.messages_mark = MessagesMark.of(messages)
            session.comparison.completed_before = {call.key for call in answered}


def _step(tup: Any) -> int | None:
    step = (tup.metadata or {}).get("step")
    return step if isinstance(step, int) else None
