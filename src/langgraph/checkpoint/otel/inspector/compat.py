"""`langgraph-otel compat MODULE:FACTORY -s SAVER`: which stored threads the new graph cannot
resume, and why (see `analysis.release_risks` for the reasons).

The saver is read only, a page of threads at a time (the inspector's thread listing, newest
first); for each thread its latest root checkpoint is loaded, checked and let go, so memory is
one page of checkpoints plus a row per thread at risk.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.types import INTERRUPT
from pydantic import TypeAdapter

from langgraph.checkpoint.otel._langgraph.formats import scheduled_nodes
from langgraph.checkpoint.otel._langgraph.graph import (
    channel_restore_error,
    graph_tools,
    reads_key,
    state_fields,
    state_is_validated,
    validation_error,
)
from langgraph.checkpoint.otel._langgraph.namespaces import graph_key
from langgraph.checkpoint.otel.analysis.records import is_state_channel
from langgraph.checkpoint.otel.analysis.release_risks import (
    PendingCall,
    Risk,
    RunningGraph,
    StoredThread,
    ThreadVerdict,
    channels_to_check,
    structural_risks,
    summarize_reasons,
)
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.core.structure_cache import structure_of
from langgraph.checkpoint.otel.inspector import model
from langgraph.checkpoint.otel.inspector.sources import SourceError, Sources
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery, latest_threads
from langgraph.checkpoint.otel.migrations import Migrations, SchemaMigrationError

PAGE = 500
"""Threads listed and checked at a time."""
UNKNOWN_TOOLS = (
    "pending tool calls in a graph whose tools compat cannot see (a sub-agent a tool runs, "
    "as deepagents' task; the Functional API's plain Python tools)"
)


def load_graph(spec: str) -> Any:
    """The compiled graph `MODULE:ATTRIBUTE` names, as `langgraph.json` names one: the
    attribute itself, or what calling it returns (with no argument, else with an empty config;
    an async factory is awaited), compiled when it is a `StateGraph` builder. The current
    directory is importable, as for `langgraph dev`."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SourceError(f"{spec}: not MODULE:FACTORY")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        made = getattr(importlib.import_module(module_name), attribute)
        if callable(made) and not hasattr(made, "get_graph"):
            try:
                made = made()
            except TypeError:
                made = made({})
        if inspect.isawaitable(made):
            made = asyncio.run(_awaited(made))
        if not hasattr(made, "get_graph") and callable(getattr(made, "compile", None)):
            made = made.compile()
    except SourceError:
        raise
    except Exception as exc:
        raise SourceError(f"{spec}: cannot make the graph ({type(exc).__name__}: {exc})") from None
    if not hasattr(made, "get_graph") or not hasattr(made, "channels"):
        raise SourceError(f"{spec}: returned {type(made).__name__}, not a compiled graph")
    return made


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


@dataclass
class CompatCheck:
    """The new graph, ready to check stored checkpoints against."""

    graph: Any
    schema_version: str | None = None
    migrations: Migrations | None = None
    running: RunningGraph = field(init=False)
    _fields: dict[str, tuple[Any, bool]] = field(init=False)
    _adapters: dict[str, TypeAdapter[Any] | None] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        options = getattr(getattr(self.graph, "checkpointer", None), "observer", None)
        options = getattr(options, "options", None)
        if self.schema_version is None:
            self.schema_version = getattr(options, "schema_version", None)
        if self.migrations is None:
            self.migrations = getattr(options, "migrations", None)
        self._fields = state_fields(self.graph)
        self._tools = graph_tools(self.graph)
        self.running = RunningGraph(
            structure=structure_of(self.graph),
            required_keys=self._required_on_resume(),
            schema_version=self.schema_version,
            migration_path=self._has_path if self.migrations is not None else None,
            tools={g: frozenset(tools) for g, tools in self._tools.items()},
        )

    def _required_on_resume(self) -> frozenset[str]:
        """Required state keys something needs on resume: all of them when LangGraph
        validates the state for every node (pydantic, dataclass), else those a node reads
        (or may read: its source cannot be read)."""
        required = [k for k, (_, needed) in self._fields.items() if needed]
        if state_is_validated(self.graph):
            return frozenset(required)
        return frozenset(k for k in required if reads_key(self.graph, k) is not False)

    def _has_path(self, written: str, running: str) -> bool:
        assert self.migrations is not None
        try:
            self.migrations.path(written, running)
        except SchemaMigrationError:
            return False
        return True

    def verdict(
        self,
        thread_id: str,
        latest: CheckpointTuple,
        pending: Sequence[tuple[str, str, Any]] = (),
    ) -> ThreadVerdict:
        """What puts the thread whose latest checkpoint is `latest` at risk; `pending`: the
        tool calls it has pending, (graph, tool, arguments) (see `pending_tool_calls`)."""
        checkpoint = latest.checkpoint
        values = checkpoint.get("channel_values") or {}
        stored = read_stored_telemetry(latest.metadata)
        thread = StoredThread(
            thread_id=thread_id,
            checkpoint_id=str(checkpoint.get("id", "")),
            scheduled=scheduled_nodes(values),
            interrupted=any(w[1] == INTERRUPT for w in latest.pending_writes or ()),
            state_channels=[c for c in values if is_state_channel(c)],
            written_channels=list(checkpoint.get("channel_versions") or ()),
            written_structure=stored.graph if stored is not None else None,
            schema_version=stored.schema_version if stored is not None else None,
            pending_calls=[PendingCall(g, tool) for g, tool, _ in pending],
        )
        risks = structural_risks(thread, self.running)
        for graph, tool, arguments in pending:
            found = self._tools.get(graph, {}).get(tool)
            refused = None if found is None else validation_error(found, arguments)
            if refused is not None:
                risks.append(Risk("invalid_tool_call", tool, f"arguments: {refused}"))
        for channel in channels_to_check(values, self.running):
            risks += self._value_risks(channel, values[channel])
        written = thread.written_structure
        return ThreadVerdict(
            thread_id,
            thread.checkpoint_id,
            tuple(risks),
            written.structure_hash if written is not None else None,
            note=UNKNOWN_TOOLS if any(g not in self._tools for g, _, _ in pending) else "",
        )

    def _value_risks(self, channel: str, value: Any) -> list[Risk]:
        restore = channel_restore_error(self.graph, channel, value)
        if restore is not None:
            return [Risk("channel_restore_failed", channel, restore)]
        adapter = self._adapter(channel)
        if adapter is None:
            return []
        try:
            adapter.validate_python(value)
        except Exception:  # content-free: the expected type only, never the value
            return [Risk("schema_validation", channel, f"not {self._type_name(channel)}")]
        return []

    def _adapter(self, channel: str) -> TypeAdapter[Any] | None:
        if channel not in self._adapters:
            hint = self._fields.get(channel, (None, False))[0]
            try:
                self._adapters[channel] = None if hint is None else TypeAdapter(hint)
            except Exception:  # a type pydantic cannot validate: not checked
                self._adapters[channel] = None
        return self._adapters[channel]

    def _type_name(self, channel: str) -> str:
        hint = self._fields[channel][0]
        origin = getattr(hint, "__origin__", None)
        if origin is not None and getattr(hint, "__metadata__", None) is not None:
            hint = origin  # Annotated[T, reducer]: T
        return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def pending_tool_calls(
    saver: Any, latest: CheckpointTuple, messages_channel: str = "messages"
) -> list[tuple[str, str, Any]]:
    """(graph, tool, arguments) of each tool call the thread whose latest root checkpoint is
    `latest` has pending: asked for by the last model answer of a graph that is still to run
    (the root, or a subgraph its pending task runs: the subgraphs' checkpoints written after
    `latest`, read newest first) and not answered. A finished thread has none (no read)."""
    if not scheduled_nodes(latest.checkpoint.get("channel_values") or {}):
        return []
    found = _unanswered("", latest, messages_channel)
    newest: dict[str, CheckpointTuple] = {}
    config = {"configurable": {"thread_id": latest.config["configurable"]["thread_id"]}}
    after = str(latest.checkpoint["id"])
    for tup in saver.list(config):
        if str(tup.checkpoint["id"]) <= after:
            break
        namespace = str((tup.config.get("configurable") or {}).get("checkpoint_ns") or "")
        if namespace:
            newest.setdefault(namespace, tup)
    for namespace, tup in newest.items():
        waiting = any(w[1] == INTERRUPT for w in tup.pending_writes or ())
        if waiting or scheduled_nodes(tup.checkpoint.get("channel_values") or {}):
            found += _unanswered(graph_key(namespace), tup, messages_channel)
    return found


def _unanswered(graph: str, tup: CheckpointTuple, channel: str) -> list[tuple[str, str, Any]]:
    """The calls of the last model answer in `tup`'s messages that no tool message answers,
    in its messages or in the writes its tasks already stored (LangGraph applies those on
    resume instead of running the call again)."""
    messages = (tup.checkpoint.get("channel_values") or {}).get(channel)
    if not isinstance(messages, list):
        return []
    answered = {
        str(getattr(m, "tool_call_id", ""))
        for _, written, value in tup.pending_writes or ()
        if written == channel
        for m in (value if isinstance(value, list) else [value])
        if getattr(m, "type", None) == "tool"
    }
    for message in reversed(messages):
        if getattr(message, "type", None) == "tool":
            answered.add(str(getattr(message, "tool_call_id", "")))
            continue
        calls = getattr(message, "tool_calls", None) or ()
        if calls:
            return [
                (graph, str(call.get("name")), call.get("args"))
                for call in calls
                if str(call.get("id")) not in answered
            ]
    return []


def thread_verdict(check: CompatCheck, saver: Any, thread_id: str) -> ThreadVerdict | None:
    """The verdict on one stored thread (None: the saver holds no root checkpoint of it)."""
    latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if latest is None:
        return None
    return check.verdict(thread_id, latest, pending_tool_calls(saver, latest))


def stored_threads(
    sources: Sources, query: ThreadQuery, limit: int | None
) -> Iterator[tuple[str, CheckpointTuple, list[tuple[str, str, Any]]]]:
    """(thread id, latest root checkpoint, pending tool calls) of the threads `query`
    selects, newest first, a page at a time, at most `limit`."""
    saver = sources.saver
    if saver is None:
        raise SourceError("compat needs a saver (-s sqlite:///..., postgresql://..., ...)")
    offset, seen = 0, 0
    while limit is None or seen < limit:
        want = PAGE if limit is None else min(PAGE, limit - seen)
        page = latest_threads(sources, ThreadQuery(want, offset, query.since, query.prefix))
        for thread_id in page.ids:
            latest = saver.get_tuple(
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
            )
            if latest is not None:
                yield thread_id, latest, pending_tool_calls(saver, latest)
        seen += len(page.ids)
        offset += len(page.ids)
        if not page.more or not page.ids:
            return


def compat_report(
    spec: str,
    check: CompatCheck,
    threads: Iterator[tuple[str, CheckpointTuple, list[tuple[str, str, Any]]]],
    advance: Callable[[], None] = lambda: None,
) -> model.Compat:
    """Check every thread; the report (rows only for threads at risk)."""
    started = time.perf_counter()
    at_risk: list[ThreadVerdict] = []
    structures: Counter[str] = Counter()
    unchecked: set[str] = set()
    checked = 0
    for thread_id, latest, pending in threads:
        verdict = check.verdict(thread_id, latest, pending)
        checked += 1
        structures[verdict.written_structure_hash or "unknown"] += 1
        if verdict.note:
            unchecked.add(verdict.note)
        if verdict.at_risk:
            at_risk.append(verdict)
        advance()
    return model.Compat(
        graph=spec,
        structure_hash=check.running.structure.structure_hash,
        checked=checked,
        at_risk=[
            model.CompatThread(
                thread_id=v.thread_id,
                checkpoint_id=v.checkpoint_id,
                risks=[
                    model.CompatRisk(reason=r.reason, subject=r.subject, detail=r.detail)
                    for r in v.risks
                ],
            )
            for v in at_risk
        ],
        reasons={str(k): v for k, v in summarize_reasons(at_risk).items()},
        structures=dict(structures.most_common()),
        unchecked=sorted(unchecked),
        seconds=round(time.perf_counter() - started, 3),
    )
