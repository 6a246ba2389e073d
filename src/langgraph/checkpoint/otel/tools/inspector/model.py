"""What the inspector shows, as pydantic models: the `--json` schema of every command.

`langgraph-otel schema` prints the JSON Schema of each. All models are content-free: ids,
node and channel names, hashes, sizes, counts and times, never channel values (a diff's
`patch` only with `--content`, through the redaction hook).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from langgraph.checkpoint.otel.analysis.diff import CheckpointDiff
from langgraph.checkpoint.otel.analysis.divergence import Finding

SCHEMA_VERSION = 1


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


class CheckpointRow(BaseModel):
    """One checkpoint on a thread's timeline."""

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


class Timeline(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    checkpoints: list[CheckpointRow]
    """Oldest first."""
    graph_name: str | None = None
    """The root graph's name, as the thread's run spans carry it, else the agent name stored
    with its root checkpoints (None when neither is known)."""


class ResumeRow(BaseModel):
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


class Resumes(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    resumes: list[ResumeRow]


class Divergences(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    diverged: bool
    findings: list[Finding]


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


class Diff(BaseModel):
    schema_version: int = SCHEMA_VERSION
    source: SourceInfo
    thread_id: str
    diffs: list[CheckpointDiff]


class Report(BaseModel):
    """Everything the HTML report draws, for one thread."""

    schema_version: int = SCHEMA_VERSION
    timeline: Timeline
    resumes: Resumes
    divergences: Divergences
    growth: Growth
    diffs: list[CheckpointDiff]
    """Each checkpoint against its parent (saver sources), in timeline order."""
