"""Every span, attribute, event, metric and metadata name the library emits, in one place.

These names are the public contract (docs/telemetry.md is checked against this module).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

SCOPE: Final = "langgraph.checkpoint.otel"

# --- spans ------------------------------------------------------------------------------------
SPAN_PUT: Final = "langgraph.checkpoint.put"
SPAN_PUT_WRITES: Final = "langgraph.checkpoint.put_writes"
SPAN_GET: Final = "langgraph.checkpoint.get"
SPAN_RESUME: Final = "langgraph.checkpoint.resume"
SPAN_LIST: Final = "langgraph.checkpoint.list"
SPAN_DELETE_THREAD: Final = "langgraph.checkpoint.delete_thread"
SPAN_DELETE_FOR_RUNS: Final = "langgraph.checkpoint.delete_for_runs"
SPAN_COPY_THREAD: Final = "langgraph.checkpoint.copy_thread"
SPAN_PRUNE: Final = "langgraph.checkpoint.prune"
SPAN_GET_DELTA_CHANNEL_HISTORY: Final = "langgraph.checkpoint.get_delta_channel_history"
SPAN_RUN: Final = "invoke_workflow"
"""A graph run, opened by the library where no span is current when the run starts: the GenAI
conventions' workflow span, named `invoke_workflow {graph name}` (`run_span_name`)."""
SPAN_MIGRATE: Final = "langgraph.schema.migrate"
"""One schema migration applied to the checkpoint a run resumes (see `schema.Migrations`)."""
SPAN_TOOL_START: Final = "langgraph.tool.start"
"""A side-effecting tool starting (the `record_tool_start` helper): ended and
flushed before the tool's body runs, so it is exported even when the process dies inside it."""

# --- common attributes ------------------------------------------------------------------------
THREAD_ID: Final = "langgraph.thread_id"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
CHECKPOINT_NS: Final = "langgraph.checkpoint.ns"
CHECKPOINT_ID: Final = "langgraph.checkpoint.id"
SAVER: Final = "langgraph.saver"
OPERATION: Final = "langgraph.operation"
ERROR_TYPE: Final = "error.type"
INSTRUMENTATION_DURATION: Final = "langgraph.instrumentation.duration"
"""Seconds (double) this library itself spent in the call, outside the inner saver's call
(hashing, attributes, bookkeeping): what the instrumentation costs, per span."""
MAX_ID_LENGTH: Final = 256
"""Longest attribute value (characters) the library derives from a user value (thread ids,
namespaces, checkpoint ids); longer values are truncated and marked (see
`text_bounds.bounded_text`)."""

# --- run (the library's own run span) --------------------------------------------------------
GRAPH_NAME: Final = "langgraph.graph.name"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
"""`invoke_workflow` on the run span (GenAI semantic conventions, Development status)."""
GEN_AI_WORKFLOW_NAME: Final = "gen_ai.workflow.name"
"""The graph's name on the run span, as `langgraph.graph.name`: kept through the transition
to GenAI conventions v0.1.0, which replace it with `gen_ai.agent.name` (`AGENT_NAME`)."""
EXECUTION_ID: Final = "langgraph.execution.id"
"""On run spans: the execution a run belongs to, the same across the runs that resume one
another (an interrupt and its answer, a crash and its resume): the id of the first checkpoint
of the chain. A new input on the thread, or a fork, starts a new execution. Offered as
`gen_ai.agent.execution.id` on the opt-in agent events."""
RUN_RESUME_TRACE: Final = "langgraph.run.resume_trace"
"""On a run span opened under `resume_trace = "continue"` as the child of the put span that
wrote the checkpoint it resumes: `continue`."""
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
"""`CHAIN` on the run span: Phoenix derives its span kinds from `gen_ai.operation.name` for
agents, tools and models, not for `invoke_workflow`, and shows a graph run as OpenInference's
LangChain instrumentation does, as a chain, only by this attribute."""
SESSION_ID: Final = "session.id"
"""The thread on the run span, so backends that group by session (Phoenix, Langfuse) group a
thread's runs."""
RUN_OUTCOME: Final = "langgraph.run.outcome"
"""finished | interrupted | error"""


def run_span_name(graph_name: str | None) -> str:
    """The run span's name: `invoke_workflow {graph name}`, or `invoke_workflow` without one."""
    return f"{SPAN_RUN} {graph_name}" if graph_name else SPAN_RUN


FORMER_SPAN_RUN: Final = "langgraph.run"
"""The run span's name in earlier builds, still read in span files they exported."""


def is_run_span_name(name: str) -> bool:
    """Whether `name` is a run span's name (see `run_span_name`), or was in earlier builds."""
    return name in (SPAN_RUN, FORMER_SPAN_RUN) or name.startswith(SPAN_RUN + " ")


# --- agent lifecycle events (opt-in, see `core.agent_events`) ----------------------------------
# Proposed in open-telemetry/semantic-conventions-genai PR 445 (a draft); emitted only where
# OTEL_SEMCONV_STABILITY_OPT_IN lists gen_ai_latest_experimental.
EVENT_AGENT_CHECKPOINTED: Final = "gen_ai.agent.checkpointed"
"""A checkpoint was stored (in the put span's context)."""
EVENT_AGENT_PAUSED: Final = "gen_ai.agent.paused"
"""A run stopped at an interrupt, one per interrupt (in the run's context)."""
EVENT_AGENT_RESUMED: Final = "gen_ai.agent.resumed"
"""A run resumed a stored checkpoint (in the resume span's context)."""
AGENT_EXECUTION_ID: Final = "gen_ai.agent.execution.id"
"""The run's `langgraph.execution.id` (`EXECUTION_ID`): the same across a pause and its
resume; the thread where the run's execution is not known yet (a fork's resume event)."""
AGENT_NAME: Final = "gen_ai.agent.name"
"""The graph's name."""
AGENT_CHECKPOINT_ID: Final = "gen_ai.agent.checkpoint.id"
AGENT_PAUSE_ID: Final = "gen_ai.agent.pause.id"
"""The interrupt's id (`Interrupt.id`); a static interrupt's checkpoint id."""
AGENT_PAUSE_REASON: Final = "gen_ai.agent.pause.reason"
"""`human_input` for LangChain's human-in-the-loop middleware; else not set."""
AGENT_RESUMED_FROM_TYPE: Final = "gen_ai.agent.resumed_from.type"
"""`pause` (the run answers one pending interrupt) or `checkpoint`."""
AGENT_RESUMED_FROM_ID: Final = "gen_ai.agent.resumed_from.id"


# --- put --------------------------------------------------------------------------------------
PARENT_ID: Final = "langgraph.checkpoint.parent_id"
STEP: Final = "langgraph.checkpoint.step"
SOURCE: Final = "langgraph.checkpoint.source"
VERSION: Final = "langgraph.checkpoint.version"
NODES: Final = "langgraph.checkpoint.nodes"
CHANNELS_CHANGED: Final = "langgraph.checkpoint.channels_changed"
STATE_HASH: Final = "langgraph.checkpoint.state_hash"
SIZE_BYTES: Final = "langgraph.checkpoint.size_bytes"
WRITTEN_BYTES: Final = "langgraph.checkpoint.written_bytes"
WRITTEN_AFTER_CANCEL: Final = "langgraph.checkpoint.written_after_cancel"
"""On put and put_writes spans: the run was cancelled before this save finished (the save
stays in its run's trace, under a run span that has already ended)."""

# --- growth (put) -----------------------------------------------------------------------------
THREAD_CHECKPOINTS: Final = "langgraph.thread.checkpoints"
"""Checkpoints in this checkpoint's line of ancestors, itself included (continued from the
parent's stored telemetry, across processes); absent when the parent's count is unknown."""
THREAD_WRITTEN_BYTES: Final = "langgraph.thread.written_bytes"
"""`written_bytes` summed over the same line of checkpoints."""
LARGEST_CHANNEL: Final = "langgraph.checkpoint.largest_channel"
"""The state channel with the largest serialized size in this checkpoint."""
LARGEST_CHANNEL_SIZE_BYTES: Final = "langgraph.checkpoint.largest_channel.size_bytes"

# --- schema versions --------------------------------------------------------------------------
SCHEMA_VERSION: Final = "langgraph.schema.version"
"""The application's declared state schema version (option `schema_version`), on puts and
resumes, when set."""
EVENT_SCHEMA_MISMATCH: Final = "langgraph.schema.mismatch"
"""On a resume span: the loaded checkpoint was written under another schema version."""
SCHEMA_WRITTEN_VERSION: Final = "langgraph.schema.written_version"
SCHEMA_RUNNING_VERSION: Final = "langgraph.schema.running_version"
UNVERSIONED: Final = "unversioned"
"""The version value of a checkpoint written (or a run running) without `schema_version`."""
MIGRATION_FROM: Final = "langgraph.schema.migration.from"
MIGRATION_TO: Final = "langgraph.schema.migration.to"

# --- graph structure (deploy safety) ----------------------------------------------------------
GRAPH_STRUCTURE_HASH: Final = "langgraph.graph.structure_hash"
"""The running graph's structure hash (`analysis.graph_structure`): nodes, edges, branch targets,
channels and reducers, interrupts, deferral, subgraphs, by name; on run spans, puts and
resumes."""
EVENT_GRAPH_CHANGED: Final = "langgraph.graph.changed"
"""On a resume span: the loaded checkpoint was written under another graph structure."""
GRAPH_WRITTEN_STRUCTURE_HASH: Final = "langgraph.graph.written_structure_hash"
GRAPH_NODES_ADDED: Final = "langgraph.graph.nodes_added"
GRAPH_NODES_REMOVED: Final = "langgraph.graph.nodes_removed"
GRAPH_CHANNELS_ADDED: Final = "langgraph.graph.channels_added"
GRAPH_CHANNELS_REMOVED: Final = "langgraph.graph.channels_removed"
GRAPH_CHANNELS_CHANGED: Final = "langgraph.graph.channels_changed"
"""Channels in both structures whose kind or reducer differs."""

# --- message history (context cliff) -------------------------------------------------------
MESSAGES_CHANNEL: Final = "langgraph.messages.channel"
"""On a put span whose step changed the message history: the channel holding it (a list of
LangChain messages, found by its value's type; the `messages_channel` option's channel first)."""
MESSAGES_COUNT: Final = "langgraph.messages.count"
"""Messages in the history (counts only, never content)."""
MESSAGES_TOKENS: Final = "langgraph.messages.tokens"
"""An estimate of the history's tokens (`langgraph.messages.token_counter` says how)."""
MESSAGES_TOKEN_COUNTER: Final = "langgraph.messages.token_counter"
"""How tokens are counted: `approximate` (LangChain's `count_tokens_approximately`),
`tiktoken:<encoding>`, or `custom` (the user's callable)."""
MESSAGES_CONTEXT_WINDOW: Final = "langgraph.messages.context_window"
"""The model's context window in tokens (option `context_window`), when set."""
MESSAGES_WINDOW_SHARE: Final = "langgraph.messages.window_share"
"""Double: the history's tokens over `context_window` (1.0: full), when set."""
EVENT_MESSAGES_SHRUNK: Final = "langgraph.messages.shrunk"
"""On a put span: the history is shorter (messages or tokens) than its parent checkpoint's
(trimmed, summarised, `RemoveMessage`)."""
MESSAGES_BEFORE_COUNT: Final = "langgraph.messages.before.count"
MESSAGES_BEFORE_TOKENS: Final = "langgraph.messages.before.tokens"
MESSAGES_AFTER_COUNT: Final = "langgraph.messages.after.count"
MESSAGES_AFTER_TOKENS: Final = "langgraph.messages.after.tokens"
MESSAGES_REMOVED: Final = "langgraph.messages.removed"
"""Messages of the parent's history no longer present (by message id)."""
MESSAGES_ADDED: Final = "langgraph.messages.added"
"""Messages present that the parent's history did not hold (a summary, new turns)."""
MESSAGES_SHRINK_KIND: Final = "langgraph.messages.shrink.kind"
"""`removed` (messages removed, none put in their place: trimmed, `RemoveMessage`), `replaced`
(removed and others put in their place: summarised) or `edited` (none removed, some shortened
under the same id)."""

# --- concurrent writes ---------------------------------------------------------------------
EVENT_CONCURRENT_WRITE: Final = "langgraph.concurrent_write"
"""On a put span: the checkpoint's parent already has a child written by another run."""
CONCURRENT_OTHER_CHECKPOINT_ID: Final = "langgraph.concurrent_write.other_checkpoint_id"
CONCURRENT_OTHER_TRACE_ID: Final = "langgraph.concurrent_write.other_trace_id"

# --- tool calls -------------------------------------------------------------------------------
EVENT_TOOL_CALL: Final = "langgraph.tool_call"
"""On a put span: one per tool call first requested in the checkpoint's new messages."""
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_IDEMPOTENCY_KEY: Final = "langgraph.tool.idempotency_key"
"""Tool name + canonical hash of the arguments: the same across runs, processes and hosts."""
TOOL_RETRY: Final = "langgraph.tool.retry"
"""On `langgraph.tool.start`: the call was requested, but not answered, in the checkpoint a
crash or error resume loaded (its side effect may already have run)."""

EVENT_CHANNEL: Final = "langgraph.channel"
CHANNEL_NAME: Final = "langgraph.channel.name"
CHANNEL_HASH: Final = "langgraph.channel.hash"
CHANNEL_SIZE_BYTES: Final = "langgraph.channel.size_bytes"
CHANNEL_SUMMARY: Final = "langgraph.channel.summary"

# --- put_writes -------------------------------------------------------------------------------
TASK_ID: Final = "langgraph.task.id"
TASK_PATH: Final = "langgraph.task.path"
TASK_NODE: Final = "langgraph.task.node"
TASK_OUTCOME: Final = "langgraph.task.outcome"
WRITES_CHANNELS: Final = "langgraph.writes.channels"
WRITES_COUNT: Final = "langgraph.writes.count"

# --- list / delete / copy / prune (additions beyond the contract's common attributes) ---------
LIST_LIMIT: Final = "langgraph.list.limit"
LIST_RESULTS: Final = "langgraph.list.results"
RUN_COUNT: Final = "langgraph.run.count"
SOURCE_THREAD_ID: Final = "langgraph.copy.source_thread_id"
TARGET_THREAD_ID: Final = "langgraph.copy.target_thread_id"
THREAD_COUNT: Final = "langgraph.prune.thread_count"
PRUNE_STRATEGY: Final = "langgraph.prune.strategy"
PRUNE_CHECKPOINTS_BEFORE: Final = "langgraph.prune.checkpoints_before"
PRUNE_CHECKPOINTS_REMOVED: Final = "langgraph.prune.checkpoints_removed"
"""Checkpoints of the pruned threads (all namespaces) before the call, and how many it removed
(counted by listing the threads before and after; set when the span is recording)."""

# --- retention (`langgraph-otel retention --apply`; LangGraph's own prune reports the same) ---
SPAN_RETENTION_APPLY: Final = "langgraph.retention.apply"
"""One `retention --apply` (or `restore`): its policy and totals."""
SPAN_RETENTION_THREAD: Final = "langgraph.retention.thread"
"""One thread of an apply, a child of `langgraph.retention.apply`."""
RETENTION_POLICY: Final = "langgraph.retention.policy"
"""The policy as text, e.g. `keep_last=20 older_than=30d idle_longer_than=90d`."""
RETENTION_THREADS: Final = "langgraph.retention.threads"
"""Threads the apply changed or tried to (those its policy removed something from), set as the
span ends; for a restore, the threads it restores, set as it starts."""
RETENTION_THREADS_SKIPPED: Final = "langgraph.retention.threads_skipped"
"""Threads left untouched: written to during the apply, or whose latest state changed."""
RETENTION_OUTCOME: Final = "langgraph.retention.outcome"
"""Per thread: `applied`, `skipped_written` (written to during the apply), `restored`, or
`failed`."""
RETENTION_CHECKPOINTS_REMOVED: Final = "langgraph.retention.checkpoints_removed"
RETENTION_WRITES_REMOVED: Final = "langgraph.retention.writes_removed"
RETENTION_BYTES_RECLAIMED: Final = "langgraph.retention.bytes_reclaimed"
"""Stored bytes removed (checkpoints, their writes and blobs no kept checkpoint references);
on `langgraph.checkpoint.prune` spans too, measured the same way where the saver is known."""
RETENTION_CHECKPOINTS_KEPT: Final = "langgraph.retention.checkpoints_kept"
RETENTION_CHECKPOINTS_RESTORED: Final = "langgraph.retention.checkpoints_restored"
RETENTION_WRITES_RESTORED: Final = "langgraph.retention.writes_restored"
"""What a `restore` (`langgraph.operation` = `restore`) put back, per thread and in total."""
RETENTION_ARCHIVE: Final = "langgraph.retention.archive"
"""The archive file's name (not its path) the removed checkpoints were written to."""
RETENTION_BY: Final = "langgraph.retention.by"
"""Metric attribute: what removed the checkpoints, `apply` (this library) or `prune`
(LangGraph's `prune`)."""

# --- resume (issue: resume lineage) -----------------------------------------------------------
RESUME_KIND: Final = "langgraph.resume.kind"
RESUME_FROM_CHECKPOINT_ID: Final = "langgraph.resume.from_checkpoint_id"
RESUME_CHECKPOINT_AGE_S: Final = "langgraph.resume.checkpoint_age_s"
RESUME_PENDING_WRITES: Final = "langgraph.resume.pending_writes"
RESUME_TASKS: Final = "langgraph.resume.tasks"
RESUME_WRITER_TRACE_ID: Final = "langgraph.resume.writer.trace_id"
"""Trace id (hex) of the put span that wrote the loaded checkpoint, beside the span link."""
RESUME_WRITER_SPAN_ID: Final = "langgraph.resume.writer.span_id"
LINK_TYPE: Final = "langgraph.link.type"

# --- divergence -------------------------------------------------------------------------------
DIVERGENCE_DETECTED: Final = "langgraph.divergence.detected"
EVENT_DIVERGENCE: Final = "langgraph.divergence"
DIVERGENCE_KIND: Final = "langgraph.divergence.kind"
DIVERGENCE_STEP: Final = "langgraph.divergence.step"
DIVERGENCE_REFERENCE_CHECKPOINT_ID: Final = "langgraph.divergence.reference_checkpoint_id"
DIVERGENCE_NODE: Final = "langgraph.divergence.node"
"""The node(s) that produced the diverging write, comma separated."""
DIVERGENCE_CHANNEL: Final = "langgraph.divergence.channel"
DIVERGENCE_EXPECTED: Final = "langgraph.divergence.expected"
DIVERGENCE_ACTUAL: Final = "langgraph.divergence.actual"
DIVERGENCE_TOOL: Final = "langgraph.divergence.tool"
"""The tool of a tool-call finding (`tool_arguments`, `duplicate_tool_call`,
`repeated_side_effect`)."""
DIVERGENCE_ARGUMENTS: Final = "langgraph.divergence.arguments"
"""String array: the arguments whose values differ (`tool_arguments`, `repeated_side_effect`),
as labels (8 hex digits of each name's hash: a tool call's argument names are the model's
output); never values. The inspector shows them by name."""
DIVERGENCE_GRAPH: Final = "langgraph.divergence.graph"
"""The subgraph whose checkpoint revealed the finding, as its namespace without task ids
(``billing_agent``); absent for the root graph."""
DIVERGENCE_POLICY: Final = "langgraph.divergence.policy"
"""On put and resume spans: the divergence policy the run applies, where it differs from the
default, as compact JSON (`DivergencePolicy.stored`); offline commands apply it."""

# --- findings (one attribute filter finds them) ---------------------------------------------
FINDINGS: Final = "langgraph.findings"
"""String array on put and resume spans: the kinds of findings the span carries (sorted, each
once; `FindingKinds`), set once per span; absent when there are none. Never content."""
FLAGGED: Final = "langgraph.flagged"
"""Boolean `true` on every span with `langgraph.findings`; absent otherwise: one exact-match
filter (Jaeger's tag search, a boolean facet) finds every flagged span."""


class FindingKinds:
    """The values of `langgraph.findings`."""

    DIVERGENCE_PREFIX: Final = "divergence."
    """A divergence finding: `divergence.<langgraph.divergence.kind>` (put spans)."""
    RESUME_CRASH: Final = "resume.crash"
    """A `crash` resume (resume spans); error, interrupt, fork, update and continue are not."""
    SCHEMA_MISMATCH: Final = "schema.mismatch"
    """The resume span's `langgraph.schema.mismatch` event."""
    GRAPH_CHANGED: Final = "graph.changed"
    """The resume span's `langgraph.graph.changed` event."""
    CONCURRENT_WRITE: Final = "concurrent_write"
    """The put span's `langgraph.concurrent_write` event."""

    @classmethod
    def divergence(cls, kind: str) -> str:
        """The finding of a divergence of `kind` (`state` -> `divergence.state`)."""
        return cls.DIVERGENCE_PREFIX + kind


def finding_attributes(kinds: Iterable[str]) -> dict[str, list[str] | bool]:
    """`langgraph.findings` and `langgraph.flagged` for `kinds` (empty: none)."""
    found = sorted(set(kinds))
    return {FINDINGS: found, FLAGGED: True} if found else {}


# --- metrics ----------------------------------------------------------------------------------
METRIC_OPERATION_DURATION: Final = "langgraph.checkpoint.operation.duration"
METRIC_RUN_DURATION: Final = "gen_ai.invoke_agent.duration"
"""Histogram, s: each run span the library opened, its duration (GenAI conventions v0.1.0:
workflows are recorded on the agent duration; attributes `gen_ai.operation.name =
invoke_workflow`, `gen_ai.agent.name`, `error.type`). Not recorded where a peer
instrumentation counts the run (`peers.names_graph_runs`)."""
METRIC_CHECKPOINT_SIZE: Final = "langgraph.checkpoint.size"
METRIC_CHANNEL_SIZE: Final = "langgraph.checkpoint.channel.size"
METRIC_RESUMES: Final = "langgraph.checkpoint.resumes"
METRIC_DIVERGENCES: Final = "langgraph.checkpoint.divergences"
METRIC_TASK_OUTCOMES: Final = "langgraph.checkpoint.task.outcomes"
METRIC_THREAD_CHECKPOINTS: Final = "langgraph.checkpoint.thread.checkpoints"
"""Histogram: a thread's `langgraph.thread.checkpoints` at the last put of each run (one sample
per run, no thread id)."""
METRIC_THREAD_WRITTEN: Final = "langgraph.checkpoint.thread.written"
"""Histogram, By: a thread's `langgraph.thread.written_bytes` at the last put of each run."""
METRIC_SCHEMA_MISMATCHES: Final = "langgraph.checkpoint.schema.mismatches"
"""Counter: resumes of a checkpoint written under another schema version (attributes: the
written and running versions, which the application declares)."""

METRIC_GRAPH_CHANGES: Final = "langgraph.checkpoint.graph.changes"
"""Counter: resumes of a checkpoint written under another graph structure (attribute: the
graph's name)."""
METRIC_CONCURRENT_WRITES: Final = "langgraph.checkpoint.concurrent_writes"
"""Counter: puts whose parent already has a child written by another run (attribute: the
graph's name)."""
METRIC_MESSAGES: Final = "langgraph.checkpoint.messages"
"""Histogram, {message}: `langgraph.messages.count` at each put that changed the message history
(attribute: `langgraph.saver`; no thread id)."""
METRIC_MESSAGE_TOKENS: Final = "langgraph.checkpoint.messages.tokens"
"""Histogram, {token}: `langgraph.messages.tokens` at each put that changed the history."""
METRIC_WINDOW_SHARE: Final = "langgraph.checkpoint.messages.window_share"
"""Histogram, 1: `langgraph.messages.window_share` at each put that changed the history (only
with the `context_window` option); the alert counts the puts above a share."""
METRIC_RETENTION_CHECKPOINTS_REMOVED: Final = "langgraph.checkpoint.retention.checkpoints_removed"
"""Counter, {checkpoint}: checkpoints removed by retention (attributes: `langgraph.retention.by`,
`langgraph.saver`)."""
METRIC_RETENTION_BYTES_RECLAIMED: Final = "langgraph.checkpoint.retention.reclaimed"
"""Counter, By: stored bytes reclaimed by retention (attributes as for the checkpoints
removed)."""

# --- checkpoint metadata written by the wrapper -----------------------------------------------
METADATA_KEY: Final = "otel"
"""The one metadata key the wrapper adds to each stored checkpoint; its value is a dict."""
META_FORMAT: Final = "v"
META_STATE_HASH: Final = "state_hash"
META_CHANNELS: Final = "channels"
"""channel name -> [hash, size_bytes] for every channel in the checkpoint."""
META_NODES: Final = "nodes"
"""the nodes whose writes the checkpoint applies (as on the put span)."""
META_RESUME: Final = "resume"
"""{"kind", "from"} on the first checkpoint a resumed run wrote."""
META_SCHEMA: Final = "schema"
"""The `schema_version` the checkpoint was written under (absent: unversioned)."""
META_GRAPH: Final = "graph"
"""[structure hash, [node, ...], {channel: kind}] of the graph that wrote the checkpoint
(`graph_structure.StructureSummary`)."""
META_LINEAGE: Final = "lineage"
"""[checkpoints, written_bytes] of the checkpoint's line of ancestors, itself included."""
META_TOOLS: Final = "tools"
"""{"calls": [key, ...], "results": [key, ...], "args": {key: {argument: hash}}}: idempotency
keys of the tool calls the checkpoint's step requested and answered, its subgraphs' included
(present when there were any), and per call a short hash of each argument's value keyed by
the argument's label (which arguments differ between two calls; no name, no value)."""
META_RUN_TOOLS: Final = "run_tools"
"""(a subgraph's checkpoints) {"calls", "results"} of the subgraph's run up to the checkpoint:
what a resumed run of the subgraph continues from."""
META_POLICY: Final = "policy"
"""The divergence policy the writer ran with, where it differs from the default
(`DivergencePolicy.stored`: e.g. {"repeatable_tools": [...]}); offline commands apply it."""
META_EXECUTION: Final = "execution"
"""The execution (`EXECUTION_ID`) of the run that wrote the checkpoint: a run resuming it
continues that execution."""
META_HISTORY: Final = "history"
"""[channel, messages, tokens, token counter] of the checkpoint's message history, as counted
(`langgraph.messages.*`): a run resuming the checkpoint continues the count from it instead of
counting the loaded history again."""
META_CARRIER_KEYS: Final = ("traceparent", "tracestate")
"""W3C trace context of the put span that wrote the checkpoint (never baggage)."""
META_FORMAT_VERSION: Final = 2
"""Format of the stored value. 2: list channel hashes are element chains (see hashing); a
format-1 value (list hashes of the whole encoding) is still read and hidden, but its hashes are
not compared with the current ones."""
META_FORMAT_VERSIONS: Final = (1, 2)
"""Every format the wrapper has written."""


def spans() -> dict[str, str]:
    """Span names by constant name."""
    return {k: v for k, v in globals().items() if k.startswith("SPAN_") and isinstance(v, str)}


def metrics() -> dict[str, str]:
    """Metric instrument names by constant name."""
    return {k: v for k, v in globals().items() if k.startswith("METRIC_") and isinstance(v, str)}


def events() -> dict[str, str]:
    """Span event names by constant name."""
    return {k: v for k, v in globals().items() if k.startswith("EVENT_") and isinstance(v, str)}
