"""Chat-model and tool calls answered from a thread's recording, for `tools.replay`: while
`answering(answers)` is active, no chat model is called and no tool body runs.

LangChain internals, in one place: every chat model's calls go through
`BaseChatModel._generate_with_cache` / `_agenerate_with_cache` (streaming is turned off, so
`stream` does too), and every tool's through `BaseTool.run` / `arun`. A model call gets the
next recorded answer of the graph it runs in (its namespace without task ids: the root graph,
``researcher`` for a supervisor's worker, ``tools`` for a sub-agent a tool runs), in the
order they were recorded; a tool call gets the recorded `ToolMessage` of its call id (the
model's recorded answers carry the recorded call ids). Tools named in `run_tools` (handoffs,
sub-agent delegation: they return LangGraph `Command`s, not only a message) run for real,
their own model and tool calls answered in turn.
"""

from __future__ import annotations

import fnmatch
import threading
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langgraph.checkpoint.serde.types import INTERRUPT
from langgraph.types import interrupt

from langgraph.checkpoint.otel._langgraph.formats import NAMESPACE_SEPARATOR, parent_namespace


class Unanswered(Exception):
    """A model or tool call the recording holds no answer for."""


def graph_key(namespace: str) -> str:
    """A graph's namespace without its task ids: ``researcher:1f2|agent:9c`` ->
    ``researcher|agent``."""
    return NAMESPACE_SEPARATOR.join(
        part.partition(":")[0] for part in namespace.split(NAMESPACE_SEPARATOR) if part
    )


@dataclass(frozen=True)
class ArgumentChange:
    """A tool called with other arguments than its recorded call (same call id)."""

    tool: str
    call_id: str
    recorded: Any
    called: Any
    step: int | None


@dataclass
class RecordedAnswers:
    """What a thread's recording answers: model answers by graph, tool answers by call id."""

    models: dict[str, deque[AIMessage]] = field(default_factory=dict)
    tools: dict[str, ToolMessage] = field(default_factory=dict)
    run_tools: Collection[str] = ()
    """Tool names (or shell-style patterns) that run for real."""
    interrupts: dict[str, Any] = field(default_factory=dict)
    """call id -> the value the recorded tool call interrupted with (it was answered later)."""
    parked: dict[str, list[Any]] = field(default_factory=dict)
    """graph -> values of recorded interrupts never answered (the thread is parked there)."""
    requested: dict[str, Any] = field(default_factory=dict)
    """call id -> the arguments the recorded model answer asked the tool for."""
    changed_arguments: list[ArgumentChange] = field(default_factory=list)
    model_calls: int = 0
    tool_calls: int = 0

    @classmethod
    def of(cls, tuples: Iterable[Any], run_tools: Collection[str] = ()) -> RecordedAnswers:
        """The answers in a thread's stored checkpoints (every namespace): each task's writes
        on them, oldest checkpoint first. A write of AI messages alone is a model's answer;
        AI messages written with tool messages (a handoff's synthetic pair) are not."""
        answers = cls(run_tools=run_tools)
        ordered = sorted(tuples, key=lambda t: str(t.checkpoint.get("id", "")))
        for tup in ordered:
            namespace = str((tup.config.get("configurable") or {}).get("checkpoint_ns") or "")
            interrupted: dict[str, Any] = {}
            answered: dict[str, str] = {}
            for task, channel, value in tup.pending_writes or ():
                if channel == INTERRUPT:
                    interrupted[task] = _interrupt_value(value)
                    continue
                messages = value if isinstance(value, list) else [value]
                tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
                for message in tool_messages:
                    answers.tools[message.tool_call_id] = message
                    answered[task] = message.tool_call_id
                ai = [m for m in messages if isinstance(m, AIMessage)]
                if ai and not tool_messages:
                    answers.models.setdefault(graph_key(namespace), deque()).extend(ai)
                for answer in ai:
                    for call in answer.tool_calls:
                        answers.requested[str(call.get("id"))] = call.get("args")
            for task, asked in interrupted.items():
                if task in answered:
                    answers.interrupts[answered[task]] = asked
                else:
                    answers.parked.setdefault(graph_key(namespace), []).append(asked)
        return answers

    def answer_model(self) -> AIMessage:
        key = graph_key(parent_namespace(_current_namespace()))
        with _lock:
            queue = self.models.get(key)
            if not queue:
                raise Unanswered(
                    f"a model call in graph {key or '(root)'!r} has no recorded answer"
                )
            self.model_calls += 1
            return queue.popleft()

    def answer_tool(self, name: str, call_id: str | None, arguments: Any) -> ToolMessage:
        """The recorded answer; a call that interrupted when recorded interrupts again with
        the recorded value (LangGraph parks the replay there, and gives the recorded answer
        to the interrupt when the replay resumes)."""
        with _lock:
            asked = self.interrupts.get(call_id or "", _NOTHING)
            recorded = self.tools.get(call_id or "")
            parked = self.parked.get(graph_key(parent_namespace(_current_namespace())))
        if asked is _NOTHING and recorded is None and parked:
            asked = parked[0]
        if asked is not _NOTHING:
            interrupt(asked)
        with _lock:
            if recorded is None:
                raise Unanswered(f"a call of tool {name!r} has no recorded answer")
            self.tool_calls += 1
            requested = self.requested.get(call_id or "")
            if isinstance(arguments, dict) and requested is not None and arguments != requested:
                step = (_current_config().get("metadata") or {}).get("langgraph_step")
                self.changed_arguments.append(
                    ArgumentChange(name, str(call_id), requested, arguments, step)
                )
            return recorded

    def runs(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.run_tools)


_NOTHING: Any = object()
_lock = threading.RLock()


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


def _current_namespace() -> str:
    configurable: Mapping[str, Any] = _current_config().get("configurable") or {}
    return str(configurable.get("checkpoint_ns") or "")


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
            if answers.runs(self.name):
                return tool_run(self, *args, **kwargs)
            return answers.answer_tool(self.name, kwargs.get("tool_call_id"), _input(args, kwargs))

        async def arun(self: BaseTool, *args: Any, **kwargs: Any) -> Any:
            if answers.runs(self.name):
                return await tool_arun(self, *args, **kwargs)
            return answers.answer_tool(self.name, kwargs.get("tool_call_id"), _input(args, kwargs))

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
