"""Resume harness: interrupt a graph at every superstep, resume it, compare with a clean run.

    from langgraph.checkpoint.otel.testing import check_resume

    def test_agent_resumes_cleanly():
        check_resume(build_agent, {"messages": [("user", "hi")]}).raise_for_failures()

`check_resume` runs the graph to completion once for a reference. Then, for every superstep
``k`` that runs graph nodes and for each mode, it runs the graph again on a fresh thread:

- ``"error"``: every node that runs at step ``k`` raises `InjectedFailure` (once) before its
  body runs; the run is then resumed with ``invoke(None, config)``.
- ``"interrupt"``: the run stops before step ``k`` through a static ``interrupt_before`` (given
  per invoke, so the graph is not recompiled), then resumes with ``invoke(None, config)``.

Each resumed run must end in the reference's final state (equal canonical hashes, see
`hashing.hash_value`: message ids and tool-call ids do not count), its stored history must not
diverge from the reference's (`detectors.compare_branches`: `state` and `trajectory`
findings), and no tool call may be answered more often than in the reference (a duplicate side
effect). A control run without any injection comes first: when it already differs, the graph
is not deterministic and the report says so before anything about resuming.

Graphs are rebuilt for every run from a factory (``() -> StateGraph``, or ``() ->
CompiledStateGraph`` whose ``builder`` is recompiled with the harness's checkpointer), so
scripted models and other per-run state start fresh. A `StateGraph` may be passed directly
when its nodes keep no state between runs. Step 0 runs LangGraph's ``__start__`` (it applies
the input) and has no user node to fail, so the checked steps start at the first node.

Under pytest the ``resume_checker`` fixture (from the package's plugin, `testing.pytest_plugin`,
registered through the ``pytest11`` entry point) runs the check and fails the test with the
report's message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import uuid
from collections import Counter
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from typing import Any, Literal, NoReturn, TypeAlias

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph, StateGraph
from pydantic import BaseModel, ConfigDict, computed_field

from langgraph.checkpoint.otel._langgraph.graph import node_runnable, with_wrapped_nodes
from langgraph.checkpoint.otel.analysis.detectors import (
    DEFAULT_POLICY,
    DivergencePolicy,
    Finding,
    compare_branches,
)
from langgraph.checkpoint.otel.analysis.encoding import serde_fallback
from langgraph.checkpoint.otel.analysis.hashing import combine_state_hash, hash_value
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord, history_records
from langgraph.checkpoint.otel.core.saver import astored_history, stored_history

__all__ = [
    "DuplicateToolCall",
    "InjectedFailure",
    "Mode",
    "ReferenceRunFailed",
    "ResumeCheckFailed",
    "ResumeChecker",
    "ResumeReport",
    "ResumeResult",
    "StepInfo",
    "acheck_resume",
    "check_resume",
    "pytest_fail",
]

Mode: TypeAlias = Literal["error", "interrupt"]
MODES: tuple[Mode, ...] = ("error", "interrupt")
GraphSource: TypeAlias = (
    "StateGraph[Any, Any, Any, Any] | Callable[[], StateGraph[Any, Any, Any, Any] | "
    "CompiledStateGraph[Any, Any, Any, Any]]"
)
SaverFactory: TypeAlias = Callable[[], Any]
"""Returns a checkpoint saver, or a (sync or async) context manager that yields one."""

_MAX_PAUSES = 10_000
_MAX_MESSAGE_FAILURES = 5


class InjectedFailure(RuntimeError):
    """The exception the harness raises inside the nodes of the step under test.

    A `RuntimeError`, so LangGraph's default retry policy does not retry it.
    """


class ResumeCheckFailed(AssertionError):
    """A resumed run did not reproduce the reference run; the message says where and how."""

    def __init__(self, message: str, report: ResumeReport) -> None:
        super().__init__(message)
        self.report = report


# --- report ---------------------------------------------------------------------------------


class StepInfo(BaseModel):
    """A superstep of the reference run and the nodes (tasks) that ran in it."""

    model_config = ConfigDict(frozen=True)

    step: int
    nodes: tuple[str, ...]


class DuplicateToolCall(BaseModel):
    """A tool call answered more often in a resumed run than in the reference run."""

    model_config = ConfigDict(frozen=True)

    name: str
    key: str
    """Idempotency key: tool name + canonical hash of the arguments."""
    reference_count: int
    count: int
    step: int | None
    """Step of the checkpoint that recorded the extra answer."""
    node: str | None


class ResumeResult(BaseModel):
    """One run of the check: a failure injected at `step` with `mode`, then resumed."""

    model_config = ConfigDict(frozen=True)

    step: int | None
    """The step the failure was injected at; None for the control run."""
    mode: Mode | Literal["none"]
    nodes: tuple[str, ...] = ()
    """The reference's nodes at `step`, where the failure was injected."""
    thread_id: str
    inject: Literal["before", "after"] = "before"
    """Whether mode ``"error"`` raised before or after the node's body."""
    injected: bool = False
    """Whether the failure or interrupt really happened (a retry policy or a run that no longer
    reaches the step can prevent it)."""
    resumes: int = 0
    """Calls of ``invoke(None, config)`` until the run completed."""
    final_state_hash: str | None = None
    differing_channels: tuple[str, ...] = ()
    """Channels of the final state whose hashes differ from the reference's."""
    findings: tuple[Finding, ...] = ()
    """`state` and `trajectory` findings of the stored history against the reference's."""
    duplicate_tool_calls: tuple[DuplicateToolCall, ...] = ()
    error: str | None = None
    """An exception other than the injected one, or a run that did not complete."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return not (
            self.error or self.differing_channels or self.findings or self.duplicate_tool_calls
        )

    @property
    def label(self) -> str:
        """What was done: ``resume after error injected at step 3 (node 'tools')``."""
        where = f"step {self.step} ({_node_phrase(self.nodes)})"
        if self.mode == "error" and self.inject == "after":
            return f"resume after error injected at the end of {where}"
        if self.mode == "error":
            return f"resume after error injected at {where}"
        if self.mode == "interrupt":
            return f"resume after interrupt before {where}"
        return "control run (no failure injected)"

    def describe(self) -> str:
        """One readable line: what was done, what differed, and the first divergence."""
        if self.passed:
            note = "" if self.injected or self.mode == "none" else " (injection never fired)"
            return f"{self.label} passed{note}"
        problems: list[str] = []
        if self.error:
            problems.append(self.error)
        if self.differing_channels:
            problems.append(f"final state differs in {_plural('channel', self.differing_channels)}")
        if self.findings:
            problems.append(f"first divergence: {describe_finding(self.findings[0])}")
            if len(self.findings) > 1:
                problems.append(f"{len(self.findings) - 1} more finding(s)")
        for dup in self.duplicate_tool_calls:
            problems.append(
                f"duplicate tool call '{dup.name}' at step {dup.step} ({_node_phrase(dup.node)}):"
                f" answered {dup.count} time(s), {dup.reference_count} in the reference"
            )
        verb = "failed" if self.error and len(problems) == 1 else "diverged"
        if self.mode == "none":
            verb += " (the graph is not deterministic even without a resume)"
        return f"{self.label} {verb}: " + "; ".join(problems)


class ResumeReport(BaseModel):
    """Everything `check_resume` ran and found; JSON-printable (``model_dump_json``)."""

    model_config = ConfigDict(frozen=True)

    reference_thread_id: str
    reference_steps: tuple[StepInfo, ...]
    """Supersteps of the reference run that ran graph nodes, in order."""
    reference_state_hash: str
    reference_tool_calls: tuple[str, ...] = ()
    """Names of the tool calls answered in the reference run, in order."""
    modes: tuple[Mode, ...]
    control: ResumeResult | None = None
    results: tuple[ResumeResult, ...] = ()
    """One per (step, mode), steps in order."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def failures(self) -> tuple[ResumeResult, ...]:
        runs = ((self.control,) if self.control is not None else ()) + self.results
        return tuple(run for run in runs if not run.passed)

    @property
    def passed(self) -> bool:
        return not self.failures

    def result(self, step: int, mode: Mode) -> ResumeResult:
        """The result of the run with a failure injected at `step` with `mode`."""
        for run in self.results:
            if run.step == step and run.mode == mode:
                return run
        raise KeyError(f"no run at step {step} with mode {mode!r}")

    def message(self) -> str:
        """A readable summary: a line per failing run (at most five), or a pass line."""
        steps = ", ".join(f"{s.step}:{'+'.join(s.nodes)}" for s in self.reference_steps)
        if self.passed:
            return (
                f"resume check passed: {len(self.results)} run(s) over "
                f"{len(self.reference_steps)} step(s) [{steps}] x modes {list(self.modes)}"
            )
        failures = self.failures
        total = len(self.results) + (self.control is not None)
        lines = [run.describe() for run in failures[:_MAX_MESSAGE_FAILURES]]
        if len(failures) > _MAX_MESSAGE_FAILURES:
            lines.append(f"... and {len(failures) - _MAX_MESSAGE_FAILURES} more failing run(s)")
        header = (
            f"resume check failed: {len(failures)} of {total} run(s)"
            f" differ from the reference (steps [{steps}])"
        )
        return "\n".join([header, *(f"- {line}" for line in lines)])

    def raise_for_failures(self) -> ResumeReport:
        """Raise `ResumeCheckFailed` with `message()` when a run failed; else return self."""
        if not self.passed:
            raise ResumeCheckFailed(self.message(), self)
        return self


def describe_finding(finding: Finding) -> str:
    """``trajectory at step 4: expected 'search', got 'calendar'`` and the like."""
    at = f"step {finding.step}"
    if finding.kind == "state":
        return (
            f"state at {at} ({_node_phrase(finding.node)}): channel '{finding.channel}' differs"
            f" (hash {(finding.actual or '-')[:12]}, reference {(finding.expected or '-')[:12]})"
        )
    if finding.kind == "trajectory":
        return f"trajectory at {at}: expected '{finding.expected}', got '{finding.actual}'"
    return f"duplicate tool call '{finding.actual}' at {at} ({_node_phrase(finding.node)})"


def _node_phrase(nodes: str | Sequence[str] | None) -> str:
    if nodes is None:
        return "node ?"
    names = nodes.split(",") if isinstance(nodes, str) else list(nodes)
    if len(names) == 1:
        return f"node '{names[0]}'"
    return "nodes " + ", ".join(f"'{n}'" for n in names)


def _plural(word: str, names: Sequence[str]) -> str:
    quoted = ", ".join(f"'{n}'" for n in names)
    return f"{word} {quoted}" if len(names) == 1 else f"{word}s {quoted}"


# --- graph preparation ----------------------------------------------------------------------


@dataclasses.dataclass
class _Injector:
    """Makes the wrapped nodes raise while armed for a step."""

    step: int | None = None
    after: bool = False
    """Raise after the node's body ran (its side effects happened, its writes are lost)."""
    fired: list[str] = dataclasses.field(default_factory=list)

    def check(self, node: str, config: RunnableConfig) -> None:
        if self.step is None:
            return
        if (config.get("metadata") or {}).get("langgraph_step") == self.step:
            self.fired.append(node)
            raise InjectedFailure(f"failure injected by the resume harness in {node!r}")


def _wrap_node(name: str, inner: Runnable[Any, Any], injector: _Injector) -> Runnable[Any, Any]:
    def run(state: Any, config: RunnableConfig) -> Any:
        if not injector.after:
            injector.check(name, config)
        result = inner.invoke(state, config)
        if injector.after:
            injector.check(name, config)
        return result

    async def arun(state: Any, config: RunnableConfig) -> Any:
        if not injector.after:
            injector.check(name, config)
        result = await inner.ainvoke(state, config)
        if injector.after:
            injector.check(name, config)
        return result

    return node_runnable(name, run, arun)


@dataclasses.dataclass
class _Run:
    graph: CompiledStateGraph[Any, Any, Any, Any]
    saver: BaseCheckpointSaver[Any]
    injector: _Injector
    config: RunnableConfig
    thread_id: str


def _builder_of(source: Any) -> tuple[StateGraph[Any, Any, Any, Any], dict[str, Any]]:
    built = source() if not isinstance(source, StateGraph) and callable(source) else source
    if isinstance(built, StateGraph):
        return built, {}
    if isinstance(built, CompiledStateGraph):
        return built.builder, {"store": built.store, "cache": built.cache, "name": built.name}
    raise TypeError(
        "check_resume() needs a StateGraph or a factory returning a StateGraph or a "
        f"CompiledStateGraph, got {type(built).__qualname__}"
    )


def _validate_source(source: Any) -> None:
    if not (isinstance(source, StateGraph) or callable(source)):
        raise TypeError(
            "check_resume() needs a StateGraph or a factory () -> StateGraph, got "
            f"{type(source).__qualname__}"
        )


def _run_config(config: RunnableConfig | None, thread_id: str) -> RunnableConfig:
    base: dict[str, Any] = dict(config or {})
    configurable = dict(base.get("configurable") or {})
    configurable.pop("checkpoint_id", None)
    configurable["thread_id"] = thread_id
    configurable["checkpoint_ns"] = ""
    base["configurable"] = configurable
    return base  # type: ignore[return-value]


def _check_modes(modes: Iterable[str]) -> tuple[Mode, ...]:
    chosen = tuple(modes)
    unknown = [m for m in chosen if m not in MODES]
    if unknown or not chosen:
        raise ValueError(f"modes must be a non-empty subset of {MODES}, got {chosen!r}")
    return chosen  # type: ignore[return-value]


# --- comparison -----------------------------------------------------------------------------


@dataclasses.dataclass
class _History:
    records: list[CheckpointRecord]
    steps: list[StepInfo]
    final_values: dict[str, Any]
    final_hashes: dict[str, str]
    state_hash: str
    answered: Counter[str]
    tool_names: list[str]


def _history(
    tuples: Sequence[CheckpointTuple],
    final_values: dict[str, Any],
    saver: BaseCheckpointSaver[Any],
    messages_channel: str,
) -> _History:
    """Records of a thread's root-namespace history, hashed and with nodes, oldest first.

    Where the wrapper stored no hashes (any saver, telemetry off) `history_records` computes
    them from the stored checkpoints, so the harness works with every saver.
    """
    root = [
        t for t in tuples if (t.config.get("configurable") or {}).get("checkpoint_ns", "") == ""
    ]
    fallback = serde_fallback(saver.serde)
    records = history_records(root, messages_channel=messages_channel, fallback=fallback)
    steps = _steps(records)
    final_hashes = {
        name: hash_value(value, fallback=fallback) for name, value in final_values.items()
    }
    answered: Counter[str] = Counter()
    tool_names: list[str] = []
    for record in records:
        for call in record.tool_results:
            answered[call.key] += 1
            tool_names.append(call.name)
    return _History(
        records,
        steps,
        final_values,
        final_hashes,
        combine_state_hash(final_hashes),
        answered,
        tool_names,
    )


def _steps(records: Sequence[CheckpointRecord]) -> list[StepInfo]:
    return [
        StepInfo(step=r.step, nodes=r.nodes)
        for r in records
        if r.step is not None and r.step > 0 and r.nodes and r.source == "loop"
    ]


def _compare(
    reference: _History,
    branch: _History,
    policy: DivergencePolicy,
) -> tuple[tuple[str, ...], tuple[Finding, ...], tuple[DuplicateToolCall, ...]]:
    ignore = policy.ignore_channels
    differing = tuple(
        sorted(
            name
            for name in set(reference.final_hashes) | set(branch.final_hashes)
            if name not in ignore
            and reference.final_hashes.get(name) != branch.final_hashes.get(name)
        )
    )
    # compare_branches' own duplicate detector treats every call answered in the reference as
    # done before the fork; the two runs here are independent, so duplicates are counted.
    detectors = policy.detectors - {"duplicate_tool_call"}
    findings: tuple[Finding, ...] = ()
    if detectors:
        findings = tuple(
            compare_branches(
                reference.records,
                branch.records,
                policy=policy.model_copy(update={"detectors": detectors}),
            )
        )
    duplicates: list[DuplicateToolCall] = []
    if "duplicate_tool_call" in policy.detectors:
        seen: Counter[str] = Counter()
        for record in branch.records:
            for call in record.tool_results:
                seen[call.key] += 1
                if seen[call.key] > reference.answered[call.key]:
                    duplicates.append(
                        DuplicateToolCall(
                            name=call.name,
                            key=call.key,
                            reference_count=reference.answered[call.key],
                            count=branch.answered[call.key],
                            step=record.step,
                            node=",".join(record.nodes) or None,
                        )
                    )
    return differing, findings, tuple(duplicates)


# --- running (sync) -------------------------------------------------------------------------


@contextlib.contextmanager
def _open_saver(factory: SaverFactory) -> Iterator[BaseCheckpointSaver[Any]]:
    made = factory()
    if isinstance(made, BaseCheckpointSaver):
        yield made
    elif hasattr(made, "__enter__"):
        with made as saver:
            yield _ensure_saver(saver)
    else:
        yield _ensure_saver(made)


@contextlib.asynccontextmanager
async def _aopen_saver(factory: SaverFactory) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    made = factory()
    if isinstance(made, Awaitable):
        made = await made
    if isinstance(made, BaseCheckpointSaver):
        yield made
    elif hasattr(made, "__aenter__"):
        async with made as saver:
            yield _ensure_saver(saver)
    elif hasattr(made, "__enter__"):
        with made as saver:
            yield _ensure_saver(saver)
    else:
        yield _ensure_saver(made)


def _ensure_saver(saver: Any) -> BaseCheckpointSaver[Any]:
    if not isinstance(saver, BaseCheckpointSaver):
        raise TypeError(
            "saver_factory must return a BaseCheckpointSaver (or a context manager yielding "
            f"one), got {type(saver).__qualname__}"
        )
    return saver


def _prepare(source: Any, saver: BaseCheckpointSaver[Any], config: RunnableConfig | None) -> _Run:
    builder, options = _builder_of(source)
    injector = _Injector()
    graph = with_wrapped_nodes(
        builder, lambda name, inner: _wrap_node(name, inner, injector)
    ).compile(checkpointer=saver, **options)
    thread_id = f"resume-check-{uuid.uuid4().hex[:12]}"
    return _Run(graph, saver, injector, _run_config(config, thread_id), thread_id)


# --- the check, written once as a generator of graph operations -----------------------------
#
# `_check` yields the operations it needs (prepare a run, invoke, read state, read history)
# and receives their results; `check_resume` performs them with the sync API and
# `acheck_resume` with the async one, so both follow exactly the same procedure.


@dataclasses.dataclass(frozen=True)
class _Prepare:
    pass


@dataclasses.dataclass(frozen=True)
class _Invoke:
    run: _Run
    input: Any
    interrupt_before: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True)
class _GetNext:
    run: _Run


@dataclasses.dataclass(frozen=True)
class _GetHistory:
    run: _Run


_Op: TypeAlias = _Prepare | _Invoke | _GetNext | _GetHistory
_Check: TypeAlias = Generator[_Op, Any, ResumeReport]


@dataclasses.dataclass
class _Outcome:
    injected: bool = False
    resumes: int = 0
    error: str | None = None


def _drive(
    run: _Run, input: Any, step: int | None, mode: Mode | None, nodes: tuple[str, ...]
) -> Generator[_Op, Any, _Outcome]:
    """Run once: inject at `step` with `mode` (None: no injection), then resume to the end."""
    outcome = _Outcome()
    try:
        if mode == "error":
            run.injector.step = step
            try:
                yield _Invoke(run, input)
            except InjectedFailure:
                outcome.injected = True
            finally:
                run.injector.step = None
        elif mode == "interrupt":
            yield _Invoke(run, input, nodes)
            for _ in range(_MAX_PAUSES):
                paused = yield _GetNext(run)
                if paused is None:
                    break
                paused_at, _next = paused
                if step is None or paused_at >= step:
                    outcome.injected = paused_at == step
                    break
                # paused before an earlier run of the same node: go on to step k
                yield _Invoke(run, None, nodes)
        else:
            yield _Invoke(run, input)
        while (paused := (yield _GetNext(run))) is not None:
            if mode is None or outcome.resumes >= 3:
                outcome.error = _not_completed(paused[1])
                break
            outcome.resumes += 1
            yield _Invoke(run, None)
    except Exception as exc:
        outcome.error = f"the run raised {type(exc).__name__}: {exc}"
    return outcome


def _not_completed(next_nodes: Sequence[str]) -> str:
    return f"the run did not complete: it stopped before {_node_phrase(list(next_nodes))}"


def _check(
    input: Any,
    modes: tuple[Mode, ...],
    policy: DivergencePolicy,
    control: bool,
    steps: Collection[int] | None,
    inject: Literal["before", "after"],
) -> _Check:
    reference_run: _Run = yield _Prepare()
    outcome = yield from _drive(reference_run, input, None, None, ())
    if outcome.error:
        raise ReferenceRunFailed(f"the reference run (no failure injected) failed: {outcome.error}")
    reference: _History = yield _GetHistory(reference_run)

    def result(
        run: _Run, outcome: _Outcome, step: int | None, mode: Mode | Literal["none"], nodes: Any
    ) -> Generator[_Op, Any, ResumeResult]:
        after = run.injector.after
        differing: tuple[str, ...] = ()
        findings: tuple[Finding, ...] = ()
        duplicates: tuple[DuplicateToolCall, ...] = ()
        final_hash: str | None = None
        if outcome.error is None:
            branch: _History = yield _GetHistory(run)
            final_hash = branch.state_hash
            differing, findings, duplicates = _compare(reference, branch, policy)
        return ResumeResult(
            step=step,
            mode=mode,
            nodes=tuple(nodes),
            thread_id=run.thread_id,
            inject="after" if after else "before",
            injected=outcome.injected,
            resumes=outcome.resumes,
            final_state_hash=final_hash,
            differing_channels=differing,
            findings=findings,
            duplicate_tool_calls=duplicates,
            error=outcome.error,
        )

    control_result: ResumeResult | None = None
    if control:
        run = yield _Prepare()
        outcome = yield from _drive(run, input, None, None, ())
        control_result = yield from result(run, outcome, None, "none", ())
    results: list[ResumeResult] = []
    for info in reference.steps:
        if steps is not None and info.step not in steps:
            continue
        for mode in modes:
            run = yield _Prepare()
            run.injector.after = inject == "after"
            outcome = yield from _drive(run, input, info.step, mode, info.nodes)
            results.append((yield from result(run, outcome, info.step, mode, info.nodes)))
    return ResumeReport(
        reference_thread_id=reference_run.thread_id,
        reference_steps=tuple(reference.steps),
        reference_state_hash=reference.state_hash,
        reference_tool_calls=tuple(reference.tool_names),
        modes=modes,
        control=control_result,
        results=tuple(results),
    )


class ReferenceRunFailed(RuntimeError):
    """The graph did not complete even without any injected failure: nothing to compare."""


def _next_of(snapshot: Any) -> tuple[int, tuple[str, ...]] | None:
    if not snapshot.next:
        return None
    step = (snapshot.metadata or {}).get("step")
    return (step if isinstance(step, int) else -1) + 1, tuple(snapshot.next)


def check_resume(
    graph: GraphSource,
    input: Any,
    *,
    saver_factory: SaverFactory = InMemorySaver,
    config: RunnableConfig | None = None,
    modes: Iterable[Mode] = MODES,
    messages_channel: str = "messages",
    policy: DivergencePolicy | None = None,
    control: bool = True,
    steps: Collection[int] | None = None,
    inject: Literal["before", "after"] = "before",
) -> ResumeReport:
    """Inject a failure at every superstep of `graph`, resume, and compare with a clean run.

    Args:
        graph: a factory ``() -> StateGraph`` (or ``-> CompiledStateGraph``: its builder is
            recompiled with the harness's checkpointer, keeping its store and cache), called
            once per run so per-run state (scripted models) starts fresh; or a `StateGraph`
            whose nodes keep no state between runs.
        input: the graph input of every run.
        saver_factory: makes the checkpointer of each run (a saver, or a context manager
            yielding one, such as ``lambda: SqliteSaver.from_conn_string(":memory:")``).
        config: extra run config (``recursion_limit``, ``configurable`` values); the harness
            sets ``thread_id`` (a fresh one per run).
        modes: ``"error"`` (an `InjectedFailure` raised in the step's nodes) and/or
            ``"interrupt"`` (a static interrupt before them).
        messages_channel: the channel holding LangChain messages (for tool calls).
        policy: what counts as a divergence (`DivergencePolicy`: ignored channels, detectors,
            whether tool arguments count); ignored channels are ignored in the final state too.
        control: first run the graph once more without injection, to tell a graph that is not
            deterministic at all from one that breaks on resume.
        steps: only these supersteps (default: all that run graph nodes).
        inject: where mode ``"error"`` raises: ``"before"`` the node's body (default: a node
            that failed before doing anything), or ``"after"`` it (a crash after the node's
            side effects and model calls, before its writes were saved: the resume runs the
            body again, which reveals nodes that are not idempotent, such as a model that
            answers differently when called again).

    Raises `ReferenceRunFailed` when the graph does not complete without injection, and
    `TypeError`/`ValueError` for bad arguments. Failures of resumed runs are in the report:
    call `ResumeReport.raise_for_failures()` (or use the ``resume_checker`` fixture).
    """
    chosen, resolved = _validate(graph, modes, policy, inject)
    check = _check(input, chosen, resolved, control, steps, inject)
    with contextlib.ExitStack() as stack:
        op: _Op = next(check)
        while True:
            try:
                result: Any = _perform_sync(
                    op, graph, saver_factory, config, messages_channel, stack
                )
            except Exception as exc:
                if not isinstance(op, _Invoke):
                    raise
                send: Callable[[], _Op] = functools.partial(check.throw, exc)
            else:
                send = functools.partial(check.send, result)
            try:
                op = send()
            except StopIteration as stop:
                report: ResumeReport = stop.value
                return report


async def acheck_resume(
    graph: GraphSource,
    input: Any,
    *,
    saver_factory: SaverFactory = InMemorySaver,
    config: RunnableConfig | None = None,
    modes: Iterable[Mode] = MODES,
    messages_channel: str = "messages",
    policy: DivergencePolicy | None = None,
    control: bool = True,
    steps: Collection[int] | None = None,
    inject: Literal["before", "after"] = "before",
) -> ResumeReport:
    """`check_resume` with ``ainvoke``/``aget_state``/``alist`` (async nodes and savers).

    `saver_factory` may also return an async context manager (``AsyncSqliteSaver.
    from_conn_string(":memory:")``) or an awaitable.
    """
    chosen, resolved = _validate(graph, modes, policy, inject)
    check = _check(input, chosen, resolved, control, steps, inject)
    async with contextlib.AsyncExitStack() as stack:
        op: _Op = next(check)
        while True:
            try:
                result: Any = await _perform_async(
                    op, graph, saver_factory, config, messages_channel, stack
                )
            except Exception as exc:
                if not isinstance(op, _Invoke):
                    raise
                send: Callable[[], _Op] = functools.partial(check.throw, exc)
            else:
                send = functools.partial(check.send, result)
            try:
                op = send()
            except StopIteration as stop:
                report: ResumeReport = stop.value
                return report


def _validate(
    graph: Any, modes: Iterable[str], policy: DivergencePolicy | None, inject: str
) -> tuple[tuple[Mode, ...], DivergencePolicy]:
    _validate_source(graph)
    if inject not in ("before", "after"):
        raise ValueError(f"inject must be 'before' or 'after', got {inject!r}")
    if policy is not None and not isinstance(policy, DivergencePolicy):
        raise TypeError(f"policy must be a DivergencePolicy, got {type(policy).__qualname__}")
    return _check_modes(modes), policy or DEFAULT_POLICY


def _perform_sync(
    op: _Op,
    source: Any,
    saver_factory: SaverFactory,
    config: RunnableConfig | None,
    messages_channel: str,
    stack: contextlib.ExitStack,
) -> Any:
    if isinstance(op, _Prepare):
        saver = stack.enter_context(_open_saver(saver_factory))
        return _prepare(source, saver, config)
    if isinstance(op, _Invoke):
        interrupt = None if op.interrupt_before is None else list(op.interrupt_before)
        return op.run.graph.invoke(op.input, op.run.config, interrupt_before=interrupt)
    if isinstance(op, _GetNext):
        return _next_of(op.run.graph.get_state(op.run.config))
    tuples = stored_history(op.run.saver, {"configurable": {"thread_id": op.run.thread_id}})
    values = dict(op.run.graph.get_state(op.run.config).values)
    return _history(tuples, values, op.run.saver, messages_channel)


async def _perform_async(
    op: _Op,
    source: Any,
    saver_factory: SaverFactory,
    config: RunnableConfig | None,
    messages_channel: str,
    stack: contextlib.AsyncExitStack,
) -> Any:
    if isinstance(op, _Prepare):
        saver = await stack.enter_async_context(_aopen_saver(saver_factory))
        return _prepare(source, saver, config)
    if isinstance(op, _Invoke):
        interrupt = None if op.interrupt_before is None else list(op.interrupt_before)
        return await op.run.graph.ainvoke(op.input, op.run.config, interrupt_before=interrupt)
    if isinstance(op, _GetNext):
        return _next_of(await op.run.graph.aget_state(op.run.config))
    thread = {"configurable": {"thread_id": op.run.thread_id}}
    tuples = await astored_history(op.run.saver, thread)  # type: ignore[arg-type]
    values = dict((await op.run.graph.aget_state(op.run.config)).values)
    return _history(tuples, values, op.run.saver, messages_channel)


# --- pytest ---------------------------------------------------------------------------------


class ResumeChecker:
    """What the ``resume_checker`` fixture returns: `check_resume` that fails the test.

        def test_agent(resume_checker):
            report = resume_checker(build_agent, {"messages": [("user", "hi")]})
            assert len(report.reference_steps) == 4

        async def test_async_agent(resume_checker):
            await resume_checker.acheck(build_agent, {"messages": [("user", "hi")]})

    On failure the test fails with `ResumeReport.message()` (no traceback into the harness).
    Keyword arguments are those of `check_resume`; `defaults` apply to every call.
    """

    def __init__(self, fail: Callable[[str], NoReturn] | None = None, **defaults: Any) -> None:
        self._fail = fail or _raise_failed
        self.defaults = defaults
        self.reports: list[ResumeReport] = []

    def __call__(self, graph: GraphSource, input: Any, **options: Any) -> ResumeReport:
        return self._done(check_resume(graph, input, **{**self.defaults, **options}))

    async def acheck(self, graph: GraphSource, input: Any, **options: Any) -> ResumeReport:
        return self._done(await acheck_resume(graph, input, **{**self.defaults, **options}))

    def _done(self, report: ResumeReport) -> ResumeReport:
        self.reports.append(report)
        if not report.passed:
            self._fail(report.message())
        return report


def _raise_failed(message: str) -> NoReturn:
    raise AssertionError(message)


def pytest_fail(message: str) -> NoReturn:
    """Fail the running test with `message`, without a traceback into the harness."""
    import pytest

    pytest.fail(message, pytrace=False)
