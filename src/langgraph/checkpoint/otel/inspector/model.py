"""What the inspector shows, as pydantic models: the `--json` schema of every command.

`langgraph-otel schema` prints the JSON Schema of each. All models are content-free: ids,
node and channel names, hashes, sizes, counts and times, never channel values (a diff's
`patch` only with `--content`, through the redaction hook).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from langgraph.checkpoint.otel.analysis.checkpoint_diff import CheckpointDiff
from langgraph.checkpoint.otel.analysis.detectors import Finding

SCHEMA_VERSION = 1


class TraceLink(BaseModel):
    """A trace in the user's backend, from the `--trace-url` template."""

    trace_id: str
    """32 hex digits."""
    span_id: str | None = None
    """16 hex digits: the span within the trace, where known."""
    url: str


class _Linked(BaseModel):
    """A model with link fields: they are in the JSON only when set (with `--trace-url`), so
    the output without a template is what it was before links existed."""

    link_fields: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unset_links(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.link_fields:
                if name in data and not data[name]:
                    del data[name]
        return data


class SourceInfo(BaseModel):
    """Where the data came from, and what that source cannot show."""

    saver: str | None = None
    """The saver URL read (credentials removed), if any."""
    spans: str | None = None
    """The span file read, if any."""
    cannot_show: list[str] = Field(default_factory=list)
    """Plain statements of what is missing from these sources (e.g. no timings from a saver)."""


class ThreadRow(BaseModel):
    thread_id: str
    checkpoints: int
    namespaces: int
    """Distinct checkpoint namespaces (1 without subgraphs)."""
    size_bytes: int | None
    """State size of the latest root checkpoint (stored hashes' sizes), if known."""
    last_activity: datetime | None
    resumes: int
    divergences: int


class Threads(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    threads: list[ThreadRow]
    """One page of the matching threads, most recently active first."""
    more: bool = False
    """More threads match than this page shows (see `--limit` and `--offset`)."""
    total: int | None = None
    """How many threads match, when the sources can count them cheaply (else null)."""


class CheckpointRow(_Linked):
    """One checkpoint on a thread's timeline."""

    link_fields: ClassVar[tuple[str, ...]] = ("trace_link",)

    checkpoint_id: str
    short_id: str
    """The shortest suffix-distinct form of the id among the thread's ids."""
    parent_id: str | None
    namespace: str
    """`checkpoint_ns`: empty for the root graph, `node:task` for a subgraph."""
    time: datetime | None
    step: int | None
    source: str | None
    """`input`, `loop`, `update` or `fork`."""
    nodes: list[str]
    """Nodes whose writes this checkpoint applies."""
    changed_channels: list[str]
    size_bytes: int | None
    growth_bytes: int | None
    """Size change against the parent checkpoint."""
    state_hash: str | None
    branch: int
    """Lane of the checkpoint: 0 for the first chain, 1, 2, ... for each later branch of the
    root graph. A subgraph's checkpoint is on the branch of the checkpoint it ran from (a
    subgraph is not a branch)."""
    graph_parent_id: str | None = None
    """A subgraph's checkpoint: the enclosing graph's checkpoint it ran from (LangGraph's
    `parents` metadata; from spans alone, the enclosing namespace's latest put before it)."""
    agent_name: str | None = None
    """The agent that wrote the checkpoint, as LangChain's `create_agent` stores it
    (`lc_agent_name` metadata: deepagents' sub-agents, say, which run inside a `tools` node);
    saver sources only."""
    fork_point: bool
    """More than one checkpoint has this one as parent (time travel, a resumed fork)."""
    resume_kind: str | None
    """Set on the first checkpoint a resumed run wrote (`crash`, `error`, `interrupt`, ...)."""
    resumed_from: str | None
    divergences: list[str]
    """Kinds of the divergence findings this checkpoint revealed."""
    duration_ms: float | None
    """The put's inner-saver time (spans only)."""
    trace_link: TraceLink | None = None
    """The trace of the put span that wrote the checkpoint (`--trace-url` only)."""


class Timeline(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    checkpoints: list[CheckpointRow]
    """Oldest first."""
    graph_name: str | None = None
    """The root graph's name, as the thread's run spans carry it, else the agent name stored
    with its root checkpoints (None when neither is known)."""


class ResumeRow(_Linked):
    link_fields: ClassVar[tuple[str, ...]] = ("trace_link", "writer_trace_link")

    time: datetime | None
    namespace: str
    kind: str
    from_checkpoint_id: str
    first_checkpoint_id: str | None
    """The first checkpoint the resumed run wrote (saver sources)."""
    first_node: str | None
    writer_trace_id: str | None = None
    """Trace of the put span that wrote the checkpoint resumed from (the resume's span link),
    32 hex digits: where to look in the trace viewer, also when it ran in another process."""
    writer_span_id: str | None = None
    trace_link: TraceLink | None = None
    """The resumed run's trace: its resume span (spans), else the put span of the first
    checkpoint it wrote (`--trace-url` only)."""
    writer_trace_link: TraceLink | None = None
    """The writer's trace: the put span that wrote the checkpoint resumed from
    (`--trace-url` only)."""


class Resumes(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    resumes: list[ResumeRow]


class Divergences(_Linked):
    link_fields: ClassVar[tuple[str, ...]] = ("checkpoint_links", "trace_links")

    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    diverged: bool
    findings: list[Finding]
    checkpoint_links: dict[str, TraceLink] = Field(default_factory=dict)
    """Per checkpoint a finding names (its own and its reference), the trace of the put span
    that wrote it (`--trace-url` only)."""
    trace_links: dict[str, TraceLink] = Field(default_factory=dict)
    """Per trace id in a finding's `traces` (`--trace-url` only)."""


class GrowthPoint(BaseModel):
    checkpoint_id: str
    step: int | None
    size_bytes: int


class ChannelGrowth(BaseModel):
    channel: str
    points: list[GrowthPoint]
    """Along the thread's first chain (branch 0), oldest first."""
    first_bytes: int
    last_bytes: int
    max_bytes: int


class Growth(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    channels: list[ChannelGrowth]
    """Largest last size first."""


class Diff(_Linked):
    link_fields: ClassVar[tuple[str, ...]] = ("checkpoint_links",)

    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    diffs: list[CheckpointDiff]
    checkpoint_links: dict[str, TraceLink] = Field(default_factory=dict)
    """Per checkpoint the diffs compare, the trace of the put span that wrote it
    (`--trace-url` only)."""


class Report(BaseModel):
    """Everything the HTML report draws, for one thread."""

    schema_version: int = SCHEMA_VERSION
    timeline: Timeline
    resumes: Resumes
    divergences: Divergences
    growth: Growth
    diffs: list[CheckpointDiff]
    """Each checkpoint against its parent (saver sources), in timeline order."""


class CompatRisk(BaseModel):
    """One reason a stored thread is at risk under the new graph (names only)."""

    reason: str
    """`missing_node`, `interrupted_node_missing`, `data_dropped`, `new_required_channel`,
    `channel_restore_failed`, `schema_validation` or `schema_version`."""
    subject: str
    """The node, channel, or `written -> running` schema versions."""
    detail: str = ""


class CompatThread(BaseModel):
    """A thread the new graph may not resume, and why."""

    thread_id: str
    checkpoint_id: str
    """The thread's latest checkpoint (root namespace), the one checked."""
    risks: list[CompatRisk]


class Compat(BaseModel):
    """`langgraph-otel compat`: which stored threads a new graph can resume."""

    schema_version: int = SCHEMA_VERSION
    graph: str
    """The MODULE:FACTORY checked."""
    structure_hash: str
    """The new graph's structure hash (`langgraph.graph.structure_hash`)."""
    checked: int
    """Threads checked."""
    at_risk: list[CompatThread]
    reasons: dict[str, int]
    """Threads at risk per reason."""
    structures: dict[str, int]
    """Threads by the structure hash their latest checkpoint was written under
    (`unknown`: stored without it)."""
    unchecked: list[str] = Field(default_factory=list)
    """What could not be checked, once each (e.g. new channels on checkpoints written
    without the stored structure)."""
    seconds: float = 0.0


class ReplayRow(BaseModel):
    """One recorded thread replayed against the current code."""

    thread_id: str
    ok: bool
    """It replays as recorded."""
    checkpoints: int
    """Recorded checkpoints of its root line."""
    replayed: int
    """Checkpoints the replay wrote."""
    model_calls: int
    """Model calls answered from the recording."""
    tool_calls: int
    """Tool calls answered from the recording."""
    ends_mid_run: bool = False
    """The recording stops where its run did not (a killed process, a run still going): only
    the recorded checkpoints are compared."""
    divergence: Finding | None = None
    """The first divergence (content-free), if any."""
    unreplayable: str | None = None
    """Why the recording cannot be replayed, if it cannot."""
    summary: str


class Replays(BaseModel):
    """`langgraph-otel replay`: recorded threads replayed against the current code."""

    schema_version: int = SCHEMA_VERSION
    graph: str
    threads: list[ReplayRow]


# --- retention (`langgraph-otel retention`, `restore`) ----------------------------------------


class RetentionThread(BaseModel):
    """One thread: what it stores and what the policy does to it."""

    thread_id: str
    checkpoints: int
    bytes: int
    """Stored bytes: checkpoints, writes and blobs (see `retention.scan` for each store's
    measure)."""
    namespaces: int
    oldest: datetime | None = None
    """When its oldest checkpoint was written (from the UUID v6 id)."""
    last: datetime | None = None
    """When its newest checkpoint was written: idle since."""
    remove_checkpoints: int = 0
    remove_writes: int = 0
    reclaim_bytes: int = 0
    whole_thread: bool = False
    """Idle: every checkpoint goes."""
    kept: dict[str, int] = Field(default_factory=dict)
    """Checkpoints the policy would remove, kept, by reason."""


class RetentionSize(BaseModel):
    """Stored bytes of one channel or one namespace (by graph: task ids left out) over the
    scanned threads."""

    name: str
    bytes: int
    threads: int
    """Threads that store some."""


class RetentionIdle(BaseModel):
    """Threads idle for at least `at_least` (and less than the next bucket's)."""

    at_least: str
    """A duration (`0s`, `1d`, `7d`, `30d`, `90d`, `365d`)."""
    threads: int
    bytes: int


class RetentionUnproven(BaseModel):
    """A checkpoint kept because the scan could not prove it unneeded."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    why: str


class RetentionApplied(BaseModel):
    """One thread of `--apply`: what was done."""

    thread_id: str
    outcome: str
    """`applied`, `skipped_written` (written to since the plan: untouched), `failed`, or
    `nothing`."""
    checkpoints_removed: int = 0
    writes_removed: int = 0
    bytes_reclaimed: int = 0
    detail: str | None = None


class RetentionApply(BaseModel):
    """What `--apply` did, and where the removed checkpoints were archived."""

    archive: str
    applied: int
    skipped: int
    failed: int
    checkpoints_removed: int
    writes_removed: int
    bytes_reclaimed: int
    threads: list[RetentionApplied]
    """Every thread not simply applied (skipped, failed), and the top threads applied."""


class Retention(BaseModel):
    """`langgraph-otel retention`: where the bytes are, what a policy removes and reclaims,
    and what it keeps against the policy, with why."""

    schema_version: int = SCHEMA_VERSION
    source: str | None
    policy: str
    """The policy in one line (`keep_last=20 older_than=30d idle_longer_than=90d`)."""
    now: datetime
    """The time ages and idle times are measured from."""
    threads: int
    """Threads scanned."""
    checkpoints: int
    bytes: int
    remove_threads: int
    """Threads the policy removes something from."""
    whole_threads: int
    """Idle threads removed whole."""
    remove_checkpoints: int
    remove_writes: int
    remove_blobs: int
    reclaim_bytes: int
    kept: dict[str, int]
    """Checkpoints the policy would remove, kept, by reason (`latest`, `pending_interrupt`,
    `delta_base`, `referenced`, `unproven`)."""
    unproven: list[RetentionUnproven]
    """The checkpoints kept as `unproven`, each with why (the first `unproven_shown`)."""
    heaviest: list[RetentionThread]
    """The top threads by stored bytes."""
    removing: list[RetentionThread]
    """The top threads by bytes the policy reclaims."""
    channels: list[RetentionSize]
    """The heaviest channels by stored values: blobs (PostgreSQL) and values inside the
    checkpoints (PostgreSQL: measured; SQLite, Redis, other savers: each checkpoint's bytes
    split in proportion to the channel sizes the wrapper stored in its metadata, an
    estimate). With `writes`, `values_not_broken_down` and `checkpoint_overhead` (all rows)
    they sum to `bytes`."""
    writes: list[RetentionSize] = Field(default_factory=list)
    """The heaviest channels by pending writes."""
    values_not_broken_down: RetentionSize | None = None
    """Values of checkpoints stored without the wrapper's channel sizes (written without the
    wrapper, or with nothing recording): not split by channel."""
    checkpoint_overhead: RetentionSize | None = None
    """The rest of the checkpoints' bytes: their metadata, and (PostgreSQL) ids and
    versions, (Redis) write-key registries."""
    namespaces: list[RetentionSize]
    """Stored bytes by namespace, subgraph calls grouped by graph (`""` is the root graph)."""
    idle: list[RetentionIdle]
    """Threads and bytes by idle time (since their newest checkpoint)."""
    applied: RetentionApply | None = None
    """With `--apply`: what was removed (archived first)."""
    seconds: float = 0.0


class Restore(BaseModel):
    """`langgraph-otel restore`: what an archive put back."""

    schema_version: int = SCHEMA_VERSION
    archive: str
    source: str | None
    threads: int
    checkpoints: int
    writes: int
    incomplete: int
    """Archive lines that could not be read (a line cut short by a killed apply, whose
    thread's delete never ran, or a bad checksum): skipped."""
    already_present: int = 0
    """Archived checkpoints still stored (never removed, or restored before): left as they
    are."""
