"""Chat-model and tool calls answered from a thread's recording, for `testing.replay`: while
`answering(answers)` is active, no chat model is called and no tool body runs.

LangChain internals, in one place: every chat model's calls go through
`BaseChatModel._generate_with_cache` / `_agenerate_with_cache` (streaming is turned off, so
`stream` does too), and every tool's through `BaseTool.run` / `arun`. A model call gets the
next recorded answer of the graph it runs in (its namespace without task ids: the root graph,
``researcher`` for a supervisor's worker, ``tools`` for a sub-agent a tool runs), in the
order they were recorded; a tool call gets the recorded `ToolMessage` of its call id (the
model's recorded answers carry the recorded call ids; a model that gives the same ids on every
run, as some test doubles do, reuses them on a fork: the answers of one id are given in the
order they were recorded). A tool call is first validated as the tool itself validates it, so
arguments the new tool refuses fail as they would for real. Tools named in `run_tools`
(handoffs, sub-agent delegation: they return LangGraph `Command`s, not only a message) run for
real, their own model and tool calls answered in turn.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME
from langgraph.types import interrupt

from langgraph.checkpoint.otel._langgraph.graph import validation_error
from langgraph.checkpoint.otel._langgraph.namespaces import (
    NAMESPACE_SEPARATOR,
    graph_key,
    parent_namespace,
)
from langgraph.checkpoint.otel.options import matches_any


class Unanswered(Exception):
    """A model or tool call the recording holds no answer for."""


@dataclass(frozen=True)
class ArgumentChange:
    """A tool called with other arguments than its recorded call (same call id)."""

    tool: str
    call_id: str
    recorded: Any
    called: Any
    step: int | None
    graph: str = ""
    """The graph the tool's node runs in (its namespace without task ids; "" the root)."""
    recorded_checkpoint: str = ""
    """The recorded checkpoint the model answer that asked for the call was written on."""


@dataclass(frozen=True)
class UnofferedCall:
    """A recorded model answer asks for a tool the new graph no longer gives that model (its
    graph's tool node lacks it: renamed or removed), or with arguments the new tool refuses
    (`refused`: the arguments at fault)."""

    tool: str
    graph: str
    step: int | None
    recorded_checkpoint: str
    args: Any = None
    """The recorded call's arguments."""
    refused: str | None = None


@dataclass
class RecordedAnswers:
    """What a thread's recording answers: model answers by graph, tool answers by call id."""

    models: dict[str, deque[tuple[AIMessage, str]]] = field(default_factory=dict)
    """graph -> its model answers, in recorded order, each with the checkpoint it was written
    on."""
    offered: Mapping[str, Mapping[str, BaseTool]] = field(default_factory=dict)
    """graph -> the tools its tool node runs in the new code, by name (graphs absent: not
    checked)."""
    unoffered: list[UnofferedCall] = field(default_factory=list)
    tools: dict[str, list[ToolMessage]] = field(default_factory=dict)
    """call id -> its distinct recorded answers, oldest first (a model that reuses call ids
    reuses them on a fork: the n-th call of an id gets the n-th answer, or the last)."""
    run_tools: Collection[str] = ()
    """Tool names (or shell-style patterns) that run for real."""
    interrupts: dict[str, list[Any]] = field(default_factory=dict)
    """call id -> the distinct values the recorded tool call interrupted with (answered
    later)."""
    parked: dict[str, list[Any]] = field(default_factory=dict)
    """graph -> values of recorded interrupts never answered (the thread is parked there)."""
    requested: dict[str, list[tuple[Any, str]]] = field(default_factory=dict)
    """call id -> the distinct arguments the recorded model answers asked the tool for, each
    with the checkpoint the answer was written on."""
    changed_arguments: list[ArgumentChange] = field(default_factory=list)
    model_calls: int = 0
    tool_calls: int = 0
    _given: dict[str, int] = field(default_factory=dict)
    """call id -> answers given so far (which branch's answer is next)."""

    @classmethod
    def of(cls, tuples: Iterable[Any], run_tools: Collection[str] = ()) -> RecordedAnswers:
        """The answers in a thread's stored checkpoints (every namespace): each task's writes
        on them, oldest checkpoint first. A write of AI messages alone is a model's answer;
        AI messages written with tool messages (a handoff's synthetic pair, a parent's write
        of its subgraph's messages) are not. A value written again (a parent writes its
        subgraph's messages) is kept once per call id."""
        answers = cls(run_tools=run_tools)
        ordered = sorted(tuples, key=lambda t: str(t.checkpoint.get("id", "")))
        for tup in ordered:
            namespace = str((tup.config.get("configurable") or {}).get("checkpoint_ns") or "")
            interrupted: dict[str, Any] = {}
            answered: dict[str, str] = {}
            went_on: set[str] = set()
            for task, channel, value in tup.pending_writes or ():
                if channel == INTERRUPT:
                    interrupted[task] = _interrupt_value(value)
                    continue
                if channel != RESUME:
                    went_on.add(task)
                messages = value if isinstance(value, list) else [value]
                tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
                ai = [m for m in messages if isinstance(m, AIMessage)]
                for message in tool_messages:
                    _add_distinct(answers.tools, message.tool_call_id, message, _content)
                if len(tool_messages) == 1 and not ai:  # a tool call's own task
                    answered[task] = tool_messages[0].tool_call_id
                if ai and not tool_messages:
                    answers.models.setdefault(graph_key(namespace), deque()).extend(
                        (m, str(tup.checkpoint.get("id", ""))) for m in ai
                    )
                for answer in ai:
                    for call in answer.tool_calls:
                        _add_distinct(
                            answers.requested,
                            str(call.get("id")),
                            (call.get("args"), str(tup.checkpoint.get("id", ""))),
                            lambda pair: repr(pair[0]),
                        )
            for task, asked in interrupted.items():
                if task in answered:
                    _add_distinct(answers.interrupts, answered[task], asked)
                elif task not in went_on:  # (a node running a subgraph that interrupted went on)
                    answers.parked.setdefault(graph_key(namespace), []).append(asked)
        return answers

    def answer_model(self) -> AIMessage:
        graph = _current_graph()
        key = _recorded_in(self.models, graph)
        with _lock:
            queue = self.models.get(key)
            if not queue:
                raise Unanswered(
                    f"a model call in graph {key or '(root)'!r} has no recorded answer"
                )
            self.model_calls += 1
            answer, checkpoint_id = queue.popleft()
            tools = self.offered.get(graph)
            for call in answer.tool_calls if tools is not None else ():
                name = str(call.get("name"))
                if self.runs(name):
                    continue
                tool = (tools or {}).get(name)
                refused = None if tool is None else validation_error(tool, call.get("args"))
                if tool is None or refused is not None:
                    step = (_current_config().get("metadata") or {}).get("langgraph_step")
                    self.unoffered.append(
                        UnofferedCall(name, graph, step, checkpoint_id, call.get("args"), refused)
                    )
            return answer

    def answer_tool(self, tool: BaseTool, call_id: str | None, arguments: Any) -> ToolMessage:
        """The recorded answer; a call that interrupted when recorded interrupts again with
        the recorded value (LangGraph parks the replay there, and gives the recorded answer
        to the interrupt when the replay resumes)."""
        name, key = tool.name, call_id or ""
        with _lock:
            recorded = self.tools.get(key)
            given = self._given.get(key, 0)
            asked = _nth(self.interrupts.get(key), given, _NOTHING)
            parked = self.parked.get(_recorded_in(self.parked, _current_graph()))
        if asked is _NOTHING and not recorded and parked:
            asked = parked[0]
        if asked is not _NOTHING:
            interrupt(asked)
        with _lock:
            if not recorded:
                raise Unanswered(f"a call of tool {name!r} has no recorded answer")
            self.tool_calls += 1
            self._given[key] = given + 1
            requested, asked_on = _nth(self.requested.get(key), given, (None, ""))
            called = _model_arguments(tool, arguments)
            if isinstance(called, dict) and requested is not None and called != requested:
                step = (_current_config().get("metadata") or {}).get("langgraph_step")
                self.changed_arguments.append(
                    ArgumentChange(
                        name, str(call_id), requested, called, step, _current_graph(), asked_on
                    )
                )
            answer: ToolMessage = _nth(recorded, given, None)
            return answer

    def runs(self, tool: str) -> bool:
        return matches_any(tool, self.run_tools)


_NOTHING: Any = object()
_lock = threading.RLock()


def _add_distinct(
    into: dict[str, list[Any]], key: str, value: Any, same: Callable[[Any], Any] = repr
) -> None:
    """Append `value` to `into[key]` unless an equal one (by `same`) is there."""
    values = into.setdefault(key, [])
    if all(same(v) != same(value) for v in values):
        values.append(value)


def _content(message: ToolMessage) -> Any:
    return (message.content, message.status)


def _nth(values: list[Any] | None, index: int, default: Any) -> Any:
    """`values[index]`, the last value past the end, `default` when there is none."""
    if not values:
        return default
    return values[min(index, len(values) - 1)]


def _model_arguments(tool: BaseTool, arguments: Any) -> Any:
    """The arguments of a call as the model gave them: without those LangGraph injects (the
    state, the store, the call id: not in the tool's call schema)."""
    if not isinstance(arguments, dict):
        return arguments
    try:
        fields = set(getattr(tool.tool_call_schema, "model_fields", {}) or {})
    except Exception:  # a schema LangChain cannot build: compare what was given
        return arguments
    if not fields:
        return arguments
    return {k: v for k, v in arguments.items() if k in fields}


def _validates(tool: BaseTool, arguments: Any, call_id: str | None) -> bool:
    """Whether the tool accepts the arguments (its own validation, before its body runs)."""
    try:
        tool._parse_input(arguments, call_id)
    except Exception:
        return False
    return True


def _interrupt_value(written: Any) -> Any:
    """The value of the (first) `Interrupt` in an `__interrupt__` write."""
    first = written[0] if isinstance(written, list | tuple) and written else written
    return getattr(first, "value", first)


_active: RecordedAnswers | None = None


def _current_config() -> Mapping[str, Any]:
    try:
        from langgraph.config import get_config

        return get_config()
    except RuntimeError:  # outside a graph's task
        return {}


def _current_graph() -> str:
    """The graph running the current task, as its namespace without task ids."""
    configurable: Mapping[str, Any] = _current_config().get("configurable") or {}
    return graph_key(parent_namespace(str(configurable.get("checkpoint_ns") or "")))


def _recorded_in(recorded: Mapping[str, Any], graph: str) -> str:
    """The graph whose recorded answers a call in `graph` takes: its own, else the nearest
    enclosing graph's that has some (a Functional API `@task` runs inside its entrypoint's
    node, and its writes are stored with the entrypoint's graph)."""
    key = graph
    while key and key not in recorded:
        key = key.rpartition(NAMESPACE_SEPARATOR)[0]
    return key


def _input(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The `tool_input` a `BaseTool.run` call was given."""
    return args[0] if args else kwargs.get("tool_input")


@contextmanager
def answering(answers: RecordedAnswers) -> Iterator[RecordedAnswers]:
    """Answer every chat-model and tool call in this process from `answers` meanwhile (one
    replay at a time: the patch is process-wide)."""
    global _active
    with _lock:
        if _active is not None:
            raise RuntimeError("one replay at a time")
        _active = answers
        originals = {
            (BaseChatModel, "_generate_with_cache"): BaseChatModel._generate_with_cache,
            (BaseChatModel, "_agenerate_with_cache"): BaseChatModel._agenerate_with_cache,
            (BaseChatModel, "_should_stream"): BaseChatModel._should_stream,
            (BaseTool, "run"): BaseTool.run,
            (BaseTool, "arun"): BaseTool.arun,
        }
        tool_run, tool_arun = BaseTool.run, BaseTool.arun

        def generate(self: Any, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=answers.answer_model())])

        async def agenerate(self: Any, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=answers.answer_model())])

        def no_stream(self: Any, *args: Any, **kwargs: Any) -> bool:
            return False

        def run(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
            given, call_id = _input(args, kwargs), kwargs.get("tool_call_id")
            if answers.runs(self.name) or not _validates(self, given, call_id):
                return tool_run(self, *args, **kwargs)  # a refused call fails before the body
            return answers.answer_tool(self, call_id, given)

        async def arun(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
            given, call_id = _input(args, kwargs), kwargs.get("tool_call_id")
            if answers.runs(self.name) or not _validates(self, given, call_id):
                return await tool_arun(self, *args, **kwargs)
            return answers.answer_tool(self, call_id, given)

        replacements = {
            (BaseChatModel, "_generate_with_cache"): generate,
            (BaseChatModel, "_agenerate_with_cache"): agenerate,
            (BaseChatModel, "_should_stream"): no_stream,
            (BaseTool, "run"): run,
            (BaseTool, "arun"): arun,
        }
        for (owner, name), replacement in replacements.items():
            setattr(owner, name, replacement)
    try:
        yield answers
    finally:
        with _lock:
            for (owner, name), original in originals.items():
                setattr(owner, name, original)
            _active = None
