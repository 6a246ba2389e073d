"""Recorded threads replayed against the current code: Temporal's replay check for LangGraph.

`replay_thread(graph, saver, thread_id)` reads the thread's stored checkpoints (read only),
then runs the current graph on a scratch in-memory saver, through the instrumented wrapper
(so its checkpoints get the same stored hashes as the recorded ones), giving it the
recorded inputs and interrupt answers in order, with every chat-model call answered from the
recorded model answers and every tool call from the recorded tool messages
(`_langgraph.recorded_answers`): no model is called, no tool body runs. A graph with nodes
that only run async (`async def` nodes) replays through `ainvoke`, on an event loop of its
own; any other through `invoke`. Handoff and delegation tools (`DivergencePolicy.control_tools`:
a supervisor's and a swarm's ``transfer_to_*``, deepagents' ``task``) run for real: they route.
Each replayed checkpoint is then compared with the recorded one at the same position, in every
graph: the root line, and each run of each subgraph (a supervisor's worker, a sub-agent: its
namespace without task ids, runs in recorded order) against the same run when recorded
(channel hashes, nodes, the tools its model asked for and their arguments;
`analysis.detectors.BranchComparison`); the first divergence, in recorded order, is
reported, content-free. A recording that ends mid-run (its process was killed, or
the run is still going) is compared as far as it goes: what the replay does after its end was
never recorded. A thread whose recording cannot be replayed (a model or tool call with no
recorded answer, an `update_state` in its line, a hash the recording lacks) is reported as
unreplayable, never guessed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from opentelemetry.sdk.trace import TracerProvider

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.formats import NULL_TASK_ID, RESUME_CHANNEL
from langgraph.checkpoint.otel._langgraph.graph import (
    graph_tools,
    runs_only_async,
    static_interrupts,
)
from langgraph.checkpoint.otel._langgraph.namespaces import START, graph_key
from langgraph.checkpoint.otel._langgraph.recorded_answers import (
    ArgumentChange,
    RecordedAnswers,
    Unanswered,
    UnofferedCall,
    answering,
)
from langgraph.checkpoint.otel.analysis.detectors import (
    BranchComparison,
    Finding,
    tool_arguments,
    trajectory,
)
from langgraph.checkpoint.otel.analysis.detectors.trajectory import length_finding
from langgraph.checkpoint.otel.analysis.records import (
    CheckpointRecord,
    history_records,
    is_state_channel,
    unseen_delta_channels,
)
from langgraph.checkpoint.otel.analysis.resume_kinds import (
    ResumeKind,
    RunRequest,
    classify_resume,
    loaded_checkpoint,
)
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.analysis.tool_calls import tool_call_key
from langgraph.checkpoint.otel.core.saver import astored_history, stored_history
from langgraph.checkpoint.otel.core.wrapping import instrument
from langgraph.checkpoint.otel.options import DivergencePolicy

POLICY = DivergencePolicy(
    detectors=frozenset({"state", "trajectory", "tool_arguments"}), window=10_000
)


@dataclass(frozen=True)
class ReplayResult:
    """One thread's replay: its first divergence, or why it could not be replayed."""

    thread_id: str
    checkpoints: int
    """Recorded checkpoints of the thread's root line."""
    replayed: int = 0
    """Checkpoints the replay wrote in the root graph."""
    divergence: Finding | None = None
    unreplayable: str | None = None
    model_calls: int = 0
    """Model calls answered from the recording."""
    tool_calls: int = 0
    """Tool calls answered from the recording."""
    ends_mid_run: bool = False
    """The recording stops where its run did not (the process was killed, or the run is still
    going): only the recorded checkpoints are compared."""

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.unreplayable is None


@dataclass(frozen=True)
class _Action:
    """What the recorded thread was given next: input, or the answer to an interrupt."""

    input: Any = None
    resume: Any = None
    is_resume: bool = False
    fork: bool = False
    """Time travel: a run from the checkpoint at `fork_depth` of the thread's latest line."""
    fork_depth: int = 0
    """The position (oldest first) of the checkpoint forked from in the line that was the
    thread's latest when the fork was taken."""
    written_before: int = 0
    """Root checkpoints (every branch) the recorded thread had stored when it was given
    this."""


@dataclass
class _Recording:
    line: list[CheckpointTuple]
    tuples: list[CheckpointTuple]
    actions: list[_Action] = field(default_factory=list)
    roots: int = 0
    """Root checkpoints, every branch."""
    problem: str | None = None
    end: ResumeKind = "continue"
    """How the recorded line ends, as a resume of its last checkpoint would be classified:
    `crash` when nodes are scheduled there with no error or interrupt recorded (mid-run),
    `error` when a node failed there, `continue` when the run finished."""

    @property
    def ends_mid_run(self) -> bool:
        return self.end == "crash"


def replay_thread(
    graph: Any,
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    run_tools: Collection[str] = (),
) -> ReplayResult:
    """Replay one recorded thread of `saver` against `graph` (see the module docstring).
    `run_tools` names tools that run for real besides the handoff and delegation tools (the
    `control_tools` of the policy the thread was recorded with: by default
    `options.CONTROL_TOOLS`)."""
    tuples = stored_history(saver, {"configurable": {"thread_id": thread_id}})
    return _replay(graph, tuples, thread_id, run_tools)


async def areplay_thread(
    graph: Any,
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    run_tools: Collection[str] = (),
) -> ReplayResult:
    """The async twin of `replay_thread`, for async savers (`AsyncPostgresSaver`,
    `AsyncSqliteSaver`): the recording is read through the saver's async API, and the replay
    runs in a worker thread."""
    tuples = await astored_history(saver, {"configurable": {"thread_id": thread_id}})
    return await asyncio.to_thread(_replay, graph, tuples, thread_id, run_tools)


def _replay(
    graph: Any, tuples: list[CheckpointTuple], thread_id: str, run_tools: Collection[str]
) -> ReplayResult:
    recording = _read(tuples)
    if recording.problem is not None:
        return ReplayResult(thread_id, len(recording.line), unreplayable=recording.problem)
    recording.end = _end_of(recording.line[-1], graph)
    scratch = InMemorySaver()
    replaying = graph.copy(
        update={"checkpointer": instrument(scratch, tracer_provider=TracerProvider())}
    )
    controls = _recorded_policy(recording.line).control_tools
    answers = RecordedAnswers.of(recording.tuples, controls | frozenset(run_tools))
    answers.offered = graph_tools(graph)
    config = {"configurable": {"thread_id": thread_id}}
    run = _async_runner(replaying) if runs_only_async(graph) else replaying.invoke
    error: str | None = None
    with answering(answers):
        for action in [*recording.actions, None]:
            try:
                until = action.written_before if action else recording.roots
                _continue_static_stops(run, replaying, scratch, config, until)
                if action is not None and action.fork:
                    line = _replayed_line(scratch, thread_id)
                    if len(line) <= action.fork_depth:
                        break  # the replay never reached the checkpoint forked from
                    run(None, line[action.fork_depth].config)
                elif action is not None:
                    run(Command(resume=action.resume) if action.is_resume else action.input, config)
            except Exception as exc:
                if recording.ends_mid_run and len(_replayed_line(scratch, thread_id)) >= len(
                    recording.line
                ):
                    break  # past the end of the recording: nothing recorded to compare with
                if isinstance(exc, Unanswered):
                    return _result(thread_id, recording, scratch, answers, unreplayable=str(exc))
                error = f"raised {type(exc).__name__}"  # the new code fails where it went on
                break
    return _result(thread_id, recording, scratch, answers, error=error)


def _recorded_policy(line: Sequence[CheckpointTuple]) -> DivergencePolicy:
    """The divergence policy the recorded thread ran with (its newest checkpoint that stored
    the wrapper's telemetry); the default when none did: its control tools run for real."""
    for tup in reversed(line):
        stored = read_stored_telemetry(tup.metadata)
        if stored is not None:
            return DivergencePolicy.from_stored(stored.policy)
    return DivergencePolicy()


def _async_runner(graph: Any) -> Callable[[Any, Any], Any]:
    """`graph.ainvoke` as a blocking call, on an event loop of its own in a worker thread (so
    it runs the same whether or not the caller is inside an event loop)."""

    def run(given: Any, config: Any) -> Any:
        with ThreadPoolExecutor(1, thread_name_prefix="replay") as pool:
            return pool.submit(asyncio.run, graph.ainvoke(given, config)).result()

    return run


def _continue_static_stops(
    run: Callable[[Any, Any], Any], graph: Any, scratch: InMemorySaver, config: Any, until: int
) -> None:
    """Continue the replay with `invoke(None)` while it is stopped at a static interrupt
    (`interrupt_before`/`interrupt_after`) short of `until` root checkpoints (every branch):
    the recorded run was continued so, and such a continuation stores nothing of its own to
    read it from."""
    thread_id = config["configurable"]["thread_id"]
    length = _replayed_roots(scratch, thread_id)
    while length < until:
        state = graph.get_state(config)
        if not state.next or state.interrupts:  # finished, or an interrupt() waits
            return
        run(None, config)
        length, before = _replayed_roots(scratch, thread_id), length
        if length == before:
            return


def _end_of(last: CheckpointTuple, graph: Any) -> ResumeKind:
    """How a recorded line whose last checkpoint is `last` ends (see `_Recording.end`)."""
    stored = read_stored_telemetry(last.metadata)
    interrupt_before, interrupt_after = static_interrupts(graph)
    return classify_resume(
        loaded_checkpoint(last, stored.nodes if stored else ()),
        RunRequest(False, interrupt_before, interrupt_after),
    ).kind


def _replayed_roots(scratch: InMemorySaver, thread_id: str) -> int:
    """Root checkpoints (every branch) the replay has written."""
    return sum(
        1 for _ in scratch.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    )


def _replayed_line(scratch: InMemorySaver, thread_id: str) -> list[CheckpointTuple]:
    """The replay's root line so far (see `_root_line`)."""
    return _root_line(scratch.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}))


def _root_line(tuples: Iterable[CheckpointTuple]) -> list[CheckpointTuple]:
    """The root graph's line among a thread's checkpoints: the latest root checkpoint and its
    ancestors, oldest first (a branch left by time travel is not in it)."""
    root = {
        str(t.checkpoint["id"]): t
        for t in tuples
        if not (t.config.get("configurable") or {}).get("checkpoint_ns")
    }
    return _line_of(list(root.values())) if root else []


def _read(tuples: list[CheckpointTuple]) -> _Recording:
    """A thread's stored checkpoints (every namespace), its root line (the latest root
    checkpoint's ancestors, oldest first) and what it was given, in the order it was given,
    on every branch: its inputs, its answers to interrupts, and its forks (a branch left by
    time travel was run, and answered, before the fork was taken)."""
    line = _root_line(tuples)
    if not line:
        return _Recording([], tuples, problem="no checkpoint stored")
    roots = sorted(
        (t for t in tuples if not (t.config.get("configurable") or {}).get("checkpoint_ns")),
        key=lambda t: str(t.checkpoint["id"]),
    )
    recording = _Recording(line, tuples, roots=len(roots))
    if (line[0].metadata or {}).get("source") != "input":
        recording.problem = (
            "the recorded line does not start with the thread's input (written with "
            "durability 'exit', or pruned)"
        )
        return recording
    for position, tup in enumerate(roots):
        source = (tup.metadata or {}).get("source")
        if source == "update":
            recording.problem = "an update_state in the recorded line"
            return recording
        if source == "input":
            recording.actions.append(_Action(_recorded_input(tup), written_before=position))
        elif source == "fork" and position > 0:
            depth = _depth_in_line(roots[:position], _parent_id(tup))
            if depth is None:
                recording.problem = "a fork from a checkpoint off the thread's latest line"
                return recording
            recording.actions.append(_Action(fork=True, fork_depth=depth, written_before=position))
        resumes = [w for w in tup.pending_writes or () if w[1] == RESUME_CHANNEL]
        given = [w for w in resumes if w[0] == NULL_TASK_ID]  # Command(resume=value)
        if resumes and not given:  # Command(resume={interrupt id: value, ...})
            recording.problem = "a resume answering interrupts by id"
            return recording
        if given:
            recording.actions.append(
                _Action(resume=given[-1][2], is_resume=True, written_before=position + 1)
            )
    return recording


def _depth_in_line(before: Sequence[CheckpointTuple], checkpoint_id: str | None) -> int | None:
    """The position of `checkpoint_id` in the line of the newest of `before` (the thread's
    latest checkpoint then), None when it is not on that line."""
    if not before or checkpoint_id is None:
        return None
    line = _line_of(list(before))
    ids = [str(t.checkpoint["id"]) for t in line]
    return ids.index(checkpoint_id) if checkpoint_id in ids else None


def _recorded_input(tup: CheckpointTuple) -> Any:
    """The input an input checkpoint records, as its input task wrote it to the state
    channels (messages with the ids they were given then, so the replay's state hashes
    alike); the raw input where it wrote none (an entrypoint's)."""
    written = {
        channel: value
        for _task, channel, value in tup.pending_writes or ()
        if is_state_channel(channel)
    }
    if written:
        return written
    return (tup.checkpoint.get("channel_values") or {}).get(START)


def _parent_id(tup: CheckpointTuple) -> str | None:
    parent = ((tup.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
    return str(parent) if parent else None


def _result(
    thread_id: str,
    recording: _Recording,
    scratch: InMemorySaver,
    answers: RecordedAnswers,
    *,
    unreplayable: str | None = None,
    error: str | None = None,
) -> ReplayResult:
    stored = _stores_hashes(recording.line)
    expected = _records(recording.line, stored)
    replayed = list(scratch.list({"configurable": {"thread_id": thread_id}}))
    actual = _records(_root_line(replayed), stored)
    common = dict(
        thread_id=thread_id,
        checkpoints=len(expected),
        replayed=len(actual),
        model_calls=answers.model_calls,
        tool_calls=answers.tool_calls,
        ends_mid_run=recording.ends_mid_run,
    )
    unseen = unseen_delta_channels(recording.line)
    if unreplayable is None and unseen:
        unreplayable = (
            f"delta channel {', '.join(sorted(unseen))} stored without its snapshot or the "
            "wrapper's hash: the recorded state cannot be compared"
        )
    if recording.end == "error" and error is not None and len(actual) == len(expected):
        error = None  # the recorded run failed at this point too
    found = [
        _first_divergence(
            expected,
            actual[: len(expected)] if recording.ends_mid_run else actual,
            error,
            lengths=unreplayable is None,
        ),
        trajectory.next_after_end(expected, actual) if recording.ends_mid_run else None,
        *_subgraph_divergences(recording.tuples, replayed, stored, recording.ends_mid_run),
        *(_arguments_finding(change) for change in answers.changed_arguments[:1]),
        *(_unfit_finding(call) for call in answers.unoffered[:1]),
    ]
    divergence = min(
        (f for f in found if f is not None),
        key=lambda f: f.reference_checkpoint_id or "~",
        default=None,
    )
    if unreplayable is not None and divergence is None:
        return ReplayResult(**common, unreplayable=unreplayable)  # type: ignore[arg-type]
    return ReplayResult(**common, divergence=divergence)  # type: ignore[arg-type]


def _unfit_finding(call: UnofferedCall) -> Finding:
    """A recorded call of a tool the new graph does not offer its model, or with arguments
    the new tool refuses."""
    if call.refused is None:
        return trajectory.unoffered_tool(call.tool, call.graph, call.step, call.recorded_checkpoint)
    return tool_arguments.call_finding(
        call.tool,
        tool_call_key(call.tool, call.args),
        "(refused by the new tool)",
        arguments=tuple(call.refused.split(", ")),
        step=call.step,
        graph=call.graph or None,
        reference_id=call.recorded_checkpoint,
    )


def _arguments_finding(changed: ArgumentChange) -> Finding:
    """A tool called with other arguments than its recorded call (same call id), naming the
    arguments that differ (replay reads the recorded calls: a local report, not telemetry)."""
    return tool_arguments.call_finding(
        changed.tool,
        tool_call_key(changed.tool, changed.recorded),
        tool_call_key(changed.tool, changed.called),
        arguments=_differing(changed.recorded, changed.called),
        step=changed.step,
        graph=changed.graph or None,
        reference_id=changed.recorded_checkpoint,
    )


def _differing(recorded: Any, called: Any) -> tuple[str, ...]:
    """The names of the arguments whose values differ between two calls' arguments."""
    if not isinstance(recorded, dict) or not isinstance(called, dict):
        return ()
    missing = object()
    names = {*recorded, *called}
    return tuple(
        sorted(str(n) for n in names if recorded.get(n, missing) != called.get(n, missing))
    )


def _stores_hashes(line: Sequence[CheckpointTuple]) -> bool:
    """Whether the recording carries the wrapper's stored hashes (else both sides are hashed
    offline, alike)."""
    return all(
        (stored := read_stored_telemetry(t.metadata)) is not None and stored.state_hash
        for t in line
    )


def _records(tuples: Sequence[CheckpointTuple], stored: bool) -> list[CheckpointRecord]:
    """The records replay compares, built alike for the recording and the replay: the tool
    calls each checkpoint's own messages request and answer (a subgraph's are compared in its
    own runs, not merged into its parent's step as the wrapper stores them), and the stored
    hashes and nodes when the recording has them, else both hashed offline."""
    return history_records([_comparable(t, stored) for t in tuples])


def _comparable(tup: CheckpointTuple, keep_stored: bool) -> CheckpointTuple:
    metadata = dict(tup.metadata or {})
    value = metadata.get(names.METADATA_KEY)
    if not keep_stored or not isinstance(value, dict):
        metadata.pop(names.METADATA_KEY, None)
    else:
        metadata[names.METADATA_KEY] = {
            k: v for k, v in value.items() if k not in (names.META_TOOLS, names.META_RUN_TOOLS)
        }
    return tup._replace(metadata=metadata)  # type: ignore[arg-type]


def _subgraph_runs(tuples: Iterable[CheckpointTuple]) -> dict[str, list[list[CheckpointTuple]]]:
    """Per subgraph (its namespace without task ids), its runs (one per namespace: a fork runs
    it again under new task ids) in the order they started, each run's checkpoints oldest
    first along its latest line."""
    by_namespace: dict[str, list[CheckpointTuple]] = {}
    for tup in tuples:
        namespace = str((tup.config.get("configurable") or {}).get("checkpoint_ns") or "")
        if namespace:
            by_namespace.setdefault(namespace, []).append(tup)
    runs: dict[str, list[list[CheckpointTuple]]] = {}
    for namespace, members in by_namespace.items():
        runs.setdefault(graph_key(namespace), []).append(_line_of(members))
    for each in runs.values():
        each.sort(key=lambda run: str(run[0].checkpoint["id"]))
    return runs


def _subgraph_divergences(
    recorded: Iterable[CheckpointTuple],
    replayed: Iterable[CheckpointTuple],
    stored: bool,
    ends_mid_run: bool,
) -> list[Finding]:
    """The first divergence of each subgraph's runs (see `_subgraph_runs`) from its recorded
    runs; a recording that ends mid-run is compared as far as it goes."""
    expected_runs, actual_runs = _subgraph_runs(recorded), _subgraph_runs(replayed)
    found: list[Finding] = []
    for key in sorted(set(expected_runs) | set(actual_runs)):
        want, got = expected_runs.get(key, []), actual_runs.get(key, [])
        for index in range(max(len(want), len(got))):
            if index >= len(want):
                if not ends_mid_run:  # a run the recording does not have
                    extra = _records(got[index], stored)[0]
                    found.append(trajectory.run_count(key, len(want), len(got), extra))
                break
            expected = _records(want[index], stored)
            actual = _records(got[index], stored) if index < len(got) else []
            finding = None
            if ends_mid_run and index == len(want) - 1:  # the run the process died in
                finding = trajectory.next_after_end(expected, actual)
                actual = actual[: len(expected)]
            finding = _first_divergence(expected, actual, None, lengths=True) or finding
            if finding is not None:
                found.append(finding.model_copy(update={"graph": key}))
                break
    return found


def _line_of(tuples: Sequence[CheckpointTuple]) -> list[CheckpointTuple]:
    """The latest checkpoint of `tuples` (one namespace) and its ancestors, oldest first."""
    by_id = {str(t.checkpoint["id"]): t for t in tuples}
    line = [by_id[max(by_id)]]
    while (parent := _parent_id(line[-1])) is not None and parent in by_id:
        line.append(by_id[parent])
    line.reverse()
    return line


def _first_divergence(
    expected: Sequence[CheckpointRecord],
    actual: Sequence[CheckpointRecord],
    error: str | None,
    lengths: bool = True,
) -> Finding | None:
    """The first checkpoint of `actual` that departs from `expected` at its position; with
    `lengths`, a replay that ended early, ran on or raised departs where it stopped."""
    comparison = BranchComparison(expected, policy=POLICY)
    for record in actual:
        findings = comparison.add(record)
        if findings:
            return findings[0]
    if not lengths or not expected:
        return None
    return length_finding(expected, actual, error)


class ReplayFailed(AssertionError):
    """Recorded threads the current code does not replay as recorded (see `assert_replays`)."""


def describe(result: ReplayResult) -> str:
    """One line for a thread's replay: ok, its first divergence, or why it cannot be replayed."""
    if result.unreplayable is not None:
        return f"{result.thread_id}: cannot be replayed: {result.unreplayable}"
    finding = result.divergence
    if finding is None:
        where = ", where the recording ends mid-run" if result.ends_mid_run else ""
        return f"{result.thread_id}: replays as recorded ({result.checkpoints} checkpoints{where})"
    where = ", ".join(
        part
        for part in (
            f"{finding.graph}" if finding.graph else "",
            f"step {finding.step}" if finding.step is not None else "",
            f"node {finding.node}" if finding.node else "",
            f"channel {finding.channel}" if finding.channel else "",
        )
        if part
    )
    detail = f"expected {finding.expected or '(absent)'}, got {finding.actual or '(absent)'}"
    if finding.arguments:
        detail += f" (arguments {', '.join(finding.arguments)} differ)"
    return f"{result.thread_id}: {finding.kind} divergence at {where}: {detail}"


def assert_replays(
    graph: Any,
    saver: BaseCheckpointSaver[Any],
    thread_ids: Iterable[str],
    run_tools: Collection[str] = (),
) -> list[ReplayResult]:
    """Replay each recorded thread (`replay_thread`) and raise `ReplayFailed`, naming each
    divergence and each thread that cannot be replayed, unless all replay as recorded: a
    deploy gate in a test suite, over a copy of production checkpoints."""
    return _all_replayed([replay_thread(graph, saver, t, run_tools) for t in thread_ids])


async def aassert_replays(
    graph: Any,
    saver: BaseCheckpointSaver[Any],
    thread_ids: Iterable[str],
    run_tools: Collection[str] = (),
) -> list[ReplayResult]:
    """The async twin of `assert_replays`, for async savers (see `areplay_thread`)."""
    return _all_replayed([await areplay_thread(graph, saver, t, run_tools) for t in thread_ids])


def _all_replayed(results: list[ReplayResult]) -> list[ReplayResult]:
    failed = [r for r in results if not r.ok]
    if failed:
        raise ReplayFailed("\n".join(describe(r) for r in failed))
    return results
