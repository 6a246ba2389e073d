"""What each inspector command shows, computed from the sources (no output formatting here).

From a saver: every stored checkpoint, with the wrapper's stored hashes, sizes, nodes and
resume marks (computed where a checkpoint has none). From spans: the put spans' attributes
and channel events, resume spans, and divergences flagged online. Given both, the saver gives
the structure and the spans add timings, resume details, online findings and the side
effects started twice (`side_effects`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel._langgraph.namespaces import parent_namespace, subgraph_node
from langgraph.checkpoint.otel.analysis.carrier import parse_carrier
from langgraph.checkpoint.otel.analysis.checkpoint_diff import (
    CheckpointDiff,
    ContentPolicy,
    checkpoint_digests,
    diff,
)
from langgraph.checkpoint.otel.analysis.detectors import DEFAULT_POLICY, Finding, divergences
from langgraph.checkpoint.otel.analysis.records import history_records, is_state_channel
from langgraph.checkpoint.otel.analysis.resume_events import ResumeEvent, resume_log
from langgraph.checkpoint.otel.analysis.span_records import span_facts, span_records
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text
from langgraph.checkpoint.otel.analysis.tool_calls import argument_names
from langgraph.checkpoint.otel.export.otlp_json import SpanRecord
from langgraph.checkpoint.otel.inspector.model import (
    ChannelGrowth,
    CheckpointRow,
    Diff,
    Divergences,
    Growth,
    GrowthPoint,
    Report,
    ResumeRow,
    Resumes,
    ThreadRow,
    Threads,
    Timeline,
    TraceLink,
)
from langgraph.checkpoint.otel.inspector.policies import ThreadPolicies
from langgraph.checkpoint.otel.inspector.side_effects import side_effect_findings
from langgraph.checkpoint.otel.inspector.sources import SourceError, Sources
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery, latest_threads
from langgraph.checkpoint.otel.inspector.trace_links import TraceUrlTemplate
from langgraph.checkpoint.otel.options import DivergencePolicy

MIN_SHORT_ID = 6


class UnknownThreadError(SourceError):
    """The sources hold nothing of the thread."""


# --- shared pieces ----------------------------------------------------------------------------


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """The shortest distinct ending of each id (at least `MIN_SHORT_ID` characters).

    Checkpoint ids are time-based (UUID v6): their starts are alike, their ends are not.
    """
    compact = {i: i.replace("-", "") for i in ids}
    width = MIN_SHORT_ID
    while width < max((len(c) for c in compact.values()), default=0):
        ends = [c[-width:] for c in compact.values()]
        if len(set(ends)) == len(ends):
            break
        width += 2
    return {i: c[-width:] for i, c in compact.items()}


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _span_time(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


def _ns(tup: CheckpointTuple) -> str:
    return str((tup.config.get("configurable") or {}).get("checkpoint_ns", ""))


def _parent_id(tup: CheckpointTuple) -> str | None:
    parent = ((tup.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
    return str(parent) if parent else None


def _lanes(ids: Sequence[str], parent_of: Mapping[str, str | None]) -> dict[str, int]:
    """Lane per checkpoint: a chain keeps its lane, each later child of a fork point opens one."""
    children: dict[str | None, list[str]] = defaultdict(list)
    for i in ids:
        parent = parent_of.get(i)
        children[parent if parent in parent_of else None].append(i)
    lanes: dict[str, int] = {}
    next_lane = 0
    stack: list[tuple[str, int | None]] = [(r, None) for r in sorted(children[None], reverse=True)]
    while stack:
        node, lane = stack.pop()
        if lane is None:
            lane, next_lane = next_lane, next_lane + 1
        lanes[node] = lane
        kids = sorted(children.get(node, []))
        # the first child continues the lane; later ones get new lanes (pushed so it runs first)
        stack.extend((kid, None) for kid in reversed(kids[1:]))
        if kids:
            stack.append((kids[0], lane))
    return lanes


def _thread_spans(sources: Sources, thread_id: str) -> list[SpanRecord]:
    if not sources.span_files:
        return []
    wanted = bounded_text(thread_id)
    return [s for s in sources.spans if str(s.attributes.get(names.THREAD_ID, "")) == wanted]


def _online_findings(spans: Iterable[SpanRecord]) -> list[Finding]:
    """The findings flagged online, as the put spans' events tell them."""
    findings = []
    for span in spans:
        for event in span.events:
            if event.name != names.EVENT_DIVERGENCE:
                continue
            a = event.attributes
            step = a.get(names.DIVERGENCE_STEP)
            arguments = a.get(names.DIVERGENCE_ARGUMENTS)
            if not isinstance(arguments, list | tuple):
                arguments = ()
            findings.append(
                Finding(
                    kind=str(a.get(names.DIVERGENCE_KIND, "state")),  # type: ignore[arg-type]
                    step=step if isinstance(step, int) else None,
                    checkpoint_id=str(span.attributes.get(names.CHECKPOINT_ID, "")),
                    reference_checkpoint_id=str(
                        a.get(names.DIVERGENCE_REFERENCE_CHECKPOINT_ID, "")
                    ),
                    node=_opt(a.get(names.DIVERGENCE_NODE)),
                    channel=_opt(a.get(names.DIVERGENCE_CHANNEL)),
                    expected=_opt(a.get(names.DIVERGENCE_EXPECTED)),
                    actual=_opt(a.get(names.DIVERGENCE_ACTUAL)),
                    tool=_opt(a.get(names.DIVERGENCE_TOOL)),
                    arguments=tuple(str(x) for x in arguments),
                    graph=_opt(a.get(names.DIVERGENCE_GRAPH)),
                )
            )
    return findings


def _divergence_kinds(put: SpanRecord) -> list[str]:
    """The divergence kinds a put span's `langgraph.findings` names (`divergence.state` ->
    `state`)."""
    kinds = put.attributes.get(names.FINDINGS)
    if not isinstance(kinds, list | tuple):
        return []
    prefix = names.FindingKinds.DIVERGENCE_PREFIX
    return [str(k)[len(prefix) :] for k in kinds if str(k).startswith(prefix)]


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


# --- one thread -------------------------------------------------------------------------------


class ThreadData:
    """A thread's checkpoints as read from the sources, shared by the commands."""

    def __init__(
        self,
        sources: Sources,
        thread_id: str,
        policy: DivergencePolicy = DEFAULT_POLICY,
        tuples: Sequence[CheckpointTuple] | None = None,
        *,
        links: TraceUrlTemplate | None = None,
    ) -> None:
        """`tuples`: the thread's checkpoints when already read (else read from the saver);
        `links`: the `--trace-url` template, which fills the views' link fields."""
        self.sources = sources
        self.thread_id = thread_id
        self.links = links
        self.spans = _thread_spans(sources, thread_id)
        if tuples is None:
            tuples = sources.checkpoints(thread_id) if sources.saver is not None else []
        self.tuples: list[CheckpointTuple] = sorted(tuples, key=lambda t: str(t.checkpoint["id"]))
        self.puts = sorted(
            (s for s in self.spans if s.name == names.SPAN_PUT),
            key=lambda s: str(s.attributes.get(names.CHECKPOINT_ID, "")),
        )
        self.policies = ThreadPolicies(self.tuples, self.puts, policy)
        """The policies the thread's checkpoints were written under, the flags' added."""
        self.policy = self.policies.latest
        if not self.tuples and not self.puts:
            raise UnknownThreadError(f"no checkpoints of thread {thread_id!r} in these sources")
        if self.tuples:
            self.records = history_records(self.tuples)
        else:
            self.records = span_records(span_facts(self.puts), thread_id)
        self.by_id = {r.checkpoint_id: r for r in self.records}
        self.tuples_by_id = {str(t.checkpoint["id"]): t for t in self.tuples}

    @cached_property
    def findings(self) -> list[Finding]:
        """Offline findings over the stored history, with those flagged online and the side
        effects started in two traces (`side_effects`)."""
        found = {
            (f.kind, f.checkpoint_id, f.channel, f.actual): f
            for f in divergences(self.records, self.policies.detection)
        }
        for f in _online_findings(self.puts):
            found.setdefault((f.kind, f.checkpoint_id, f.channel, f.actual), f)
        started_twice = side_effect_findings(self.spans, self.policy)
        kept = [self._named(f) for f in found.values() if self.policies.keeps(f)]
        return sorted([*kept, *started_twice], key=lambda f: (f.checkpoint_id, f.kind))

    def _named(self, finding: Finding) -> Finding:
        """`finding` with its arguments shown by name (as the thread's messages name them)."""
        if not finding.arguments:
            return finding
        names_by_label = self.argument_names
        named = tuple(names_by_label.get(label, label) for label in finding.arguments)
        return finding.model_copy(update={"arguments": named})

    @cached_property
    def argument_names(self) -> dict[str, str]:
        """Label -> name of every tool-call argument in the thread's stored messages."""
        found: dict[str, str] = {}
        for tup in self.tuples:
            for value in (tup.checkpoint.get("channel_values") or {}).values():
                if isinstance(value, list):
                    found.update(argument_names(value))
            for _, _, value in tup.pending_writes or ():
                found.update(argument_names(value if isinstance(value, list) else [value]))
        return found

    @cached_property
    def timeline(self) -> Timeline:
        """The thread's timeline (see `timeline`), computed once."""
        return _timeline(self)

    @cached_property
    def resume_events(self) -> list[ResumeEvent]:
        """The thread's resumes as its spans tell them, in time order."""
        return resume_log(span_facts(self.spans), self.thread_id)

    @cached_property
    def resume_marks(self) -> dict[str, tuple[str | None, str | None]]:
        """(kind, from checkpoint) on the first checkpoint each resumed run wrote."""
        return _resume_marks(self)

    @cached_property
    def writer_ids(self) -> dict[str, tuple[str, str]]:
        """Per checkpoint, (trace id, span id) of the put span that wrote it: the carrier
        stored with it (saver), else the put span itself (spans), else the writer a resume
        span names."""
        found = {
            cid: (ids["writer_trace_id"], ids["writer_span_id"])
            for cid, ids in _writers(self).items()
        }
        for cid, put in self.puts_by_id.items():
            found.setdefault(cid, (put.trace_id, put.span_id))
        return found

    @cached_property
    def puts_by_id(self) -> dict[str, SpanRecord]:
        """The thread's put spans by the checkpoint they wrote."""
        return {str(s.attributes.get(names.CHECKPOINT_ID, "")): s for s in self.puts}

    def checkpoint_time(self, checkpoint_id: str) -> datetime | None:
        """When the checkpoint was written: its `ts` (saver), else its put span's start."""
        tup = self.tuples_by_id.get(checkpoint_id)
        when = _time(tup.checkpoint.get("ts")) if tup else None
        put = self.puts_by_id.get(checkpoint_id)
        if when is None and put is not None:
            when = _span_time(put.start_time_unix_nano)
        return when

    def link(
        self, trace_id: str | None, span_id: str | None, time: datetime | None
    ) -> TraceLink | None:
        """The `--trace-url` link to a trace (None without a template or a usable id)."""
        if self.links is None or trace_id is None:
            return None
        url = self.links.url(trace_id, span_id, time)
        return None if url is None else TraceLink(trace_id=trace_id, span_id=span_id, url=url)

    def checkpoint_link(self, checkpoint_id: str) -> TraceLink | None:
        """The link to the trace of the put span that wrote `checkpoint_id`."""
        if self.links is None:
            return None
        trace_id, span_id = self.writer_ids.get(checkpoint_id, (None, None))
        return self.link(trace_id, span_id, self.checkpoint_time(checkpoint_id))

    @cached_property
    def digests(self) -> dict[str, dict[str, tuple[str, int]]]:
        """(hash, size) per channel per checkpoint (changed channels carried over for spans)."""
        if self.tuples:
            return {str(t.checkpoint["id"]): checkpoint_digests(t) for t in self.tuples}
        out: dict[str, dict[str, tuple[str, int]]] = {}
        for span in self.puts:
            cid = str(span.attributes.get(names.CHECKPOINT_ID, ""))
            parent = span.attributes.get(names.PARENT_ID)
            channels = dict(out.get(str(parent), {})) if parent else {}
            for event in span.events:
                a = event.attributes
                if event.name == names.EVENT_CHANNEL and names.CHANNEL_NAME in a:
                    size = a.get(names.CHANNEL_SIZE_BYTES)
                    channels[str(a[names.CHANNEL_NAME])] = (
                        str(a.get(names.CHANNEL_HASH, "")),
                        size if isinstance(size, int) else 0,
                    )
            out[cid] = channels
        return out


def timeline(sources: Sources, thread_id: str, data: ThreadData | None = None) -> Timeline:
    """Every checkpoint of the thread, oldest first, with branches, resumes and divergences."""
    return (data or ThreadData(sources, thread_id)).timeline


def _timeline(data: ThreadData) -> Timeline:
    sources, thread_id = data.sources, data.thread_id
    records = data.records
    parent_of = {r.checkpoint_id: r.parent_id for r in records}
    graph_parents = _graph_parents(data)
    lanes = _lanes([r.checkpoint_id for r in records if not r.ns], parent_of)
    children: dict[str, int] = defaultdict(int)
    for r in records:
        if r.parent_id:
            children[r.parent_id] += 1
    shorts = short_ids(parent_of)
    digests = data.digests
    flagged: dict[str, list[str]] = defaultdict(list)
    for f in data.findings:
        flagged[f.checkpoint_id].append(f.kind)
    puts = {str(s.attributes.get(names.CHECKPOINT_ID, "")): s for s in data.puts}
    for cid, span in puts.items():  # kinds a put names even where its events were dropped
        flagged[cid].extend(_divergence_kinds(span))
    tuples = data.tuples_by_id
    resumes = data.resume_marks
    rows = []
    for r in records:
        cid = r.checkpoint_id
        channels = digests.get(cid, {})
        parent_channels = digests.get(r.parent_id or "", {})
        size = sum(size for _, size in channels.values()) if channels else None
        parent_size = sum(s for _, s in parent_channels.values()) if parent_channels else None
        put = puts.get(cid)
        tup = tuples.get(cid)
        changed = sorted(
            name
            for name, (digest, _) in channels.items()
            if is_state_channel(name) and parent_channels.get(name, ("",))[0] != digest
        )
        if put is not None and not tup:
            listed = put.attributes.get(names.CHANNELS_CHANGED)
            changed = [str(c) for c in listed] if isinstance(listed, tuple | list) else []
            span_size = put.attributes.get(names.SIZE_BYTES)
            size = span_size if isinstance(span_size, int) else size
        when = _time(tup.checkpoint.get("ts")) if tup else None
        if when is None and put is not None:
            when = _span_time(put.start_time_unix_nano)
        kind, origin = resumes.get(cid, (None, None))
        kind = kind or r.resume_kind  # a put marked resumed whose resume span is missing
        rows.append(
            CheckpointRow(
                checkpoint_id=cid,
                short_id=shorts[cid],
                parent_id=r.parent_id,
                namespace=_ns(tup)
                if tup
                else str(put.attributes.get(names.CHECKPOINT_NS, ""))
                if put
                else "",
                time=when,
                step=r.step,
                source=r.source,
                nodes=list(r.nodes),
                changed_channels=changed,
                size_bytes=size,
                growth_bytes=None if size is None or parent_size is None else size - parent_size,
                state_hash=r.state_hash,
                branch=_branch(cid, lanes, graph_parents),
                graph_parent_id=graph_parents.get(cid),
                agent_name=_agent_name(tup),
                fork_point=children[cid] > 1,
                resume_kind=kind,
                resumed_from=origin,
                divergences=sorted(set(flagged.get(cid, []))),
                duration_ms=_inner_ms(put) if put is not None else None,
                trace_link=data.checkpoint_link(cid),
            )
        )
    return Timeline(
        source=sources.info(), thread_id=thread_id, checkpoints=rows, graph_name=_graph_name(data)
    )


def human_bytes(size: int | None, missing: str = "") -> str:
    """A size as the inspector shows it, in 1024-byte units labelled ``B``, ``KB``, ``MB``,
    ``GB`` (``437 B``, ``1.3 KB``, ``-2.0 MB``); `missing` for None."""
    if size is None:
        return missing
    value = float(abs(size))
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            text = f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
            return ("-" if size < 0 else "") + text
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def subgraph_title(namespace: str, graph_name: str | None, agent: str | None = None) -> str:
    """``b (subgraph of a)``; a top-level subgraph is one of the root graph (by its name).

    With the `agent` name stored with its checkpoints, when the node that ran it is named
    otherwise (a deep agent's sub-agent runs in its `tools` node):
    ``refunds (subgraph of deep_support, run by tools)``.
    """
    outer = parent_namespace(namespace)
    parent = subgraph_node(outer) if outer else (graph_name or "the root graph")
    node = subgraph_node(namespace)
    if agent and agent != node:
        return f"{agent} (subgraph of {parent}, run by {node})"
    return f"{node} (subgraph of {parent})"


def _graph_parents(data: ThreadData) -> dict[str, str]:
    """Per subgraph checkpoint, the enclosing graph's checkpoint it ran from.

    From the saver: LangGraph's `parents` metadata (`{namespace: checkpoint id}`). From spans
    alone: the enclosing namespace's latest checkpoint created before the subgraph's first one
    (checkpoint ids are time-ordered and made when the loop creates the checkpoint, so this
    holds when the put itself runs later, as with durability `async`).
    """
    found: dict[str, str] = {}
    for tup in data.tuples:
        ns = _ns(tup)
        parents = tup.metadata.get("parents") if tup.metadata else None
        if ns and isinstance(parents, Mapping):
            parent = parents.get(parent_namespace(ns))
            if parent is not None:
                found[str(tup.checkpoint["id"])] = str(parent)
    by_ns: dict[str, list[str]] = defaultdict(list)
    for span in data.puts:
        by_ns[str(span.attributes.get(names.CHECKPOINT_NS, ""))].append(
            str(span.attributes.get(names.CHECKPOINT_ID, ""))
        )
    for ns, ids in by_ns.items():
        if not ns:
            continue
        first = min(ids)
        before = [cid for cid in by_ns.get(parent_namespace(ns), []) if cid < first]
        if before:
            for cid in ids:
                found.setdefault(cid, max(before))
    return found


def _branch(cid: str, lanes: Mapping[str, int], graph_parents: Mapping[str, str]) -> int:
    """The root graph's lane of `cid`: a subgraph's checkpoint is on its parent's lane."""
    for _ in range(64):  # namespaces nest a few levels; a cycle in bad metadata ends here
        if cid in lanes:
            return lanes[cid]
        parent = graph_parents.get(cid)
        if parent is None:
            return 0
        cid = parent
    return 0


def _graph_name(data: ThreadData) -> str | None:
    for span in data.spans:
        name = span.attributes.get(names.GRAPH_NAME)
        if names.is_run_span_name(span.name) and name:
            return str(name)
    for tup in data.tuples:
        name = _agent_name(tup) if not _ns(tup) else None
        if name:
            return name
    return None


def _agent_name(tup: CheckpointTuple | None) -> str | None:
    """LangChain's `lc_agent_name` stored with the checkpoint (`create_agent`), if any."""
    name = (tup.metadata or {}).get("lc_agent_name") if tup is not None else None
    return str(name) if isinstance(name, str) and name else None


def _inner_ms(span: SpanRecord) -> float:
    own = span.attributes.get(names.INSTRUMENTATION_DURATION)
    own_s = float(own) if isinstance(own, int | float) else 0.0
    return max(0.0, span.duration_s - own_s) * 1e3


def _resume_marks(data: ThreadData) -> dict[str, tuple[str | None, str | None]]:
    """(kind, from checkpoint) on the first checkpoint each resumed run wrote: stored with it
    (saver), else the resume log's (spans); several runs may resume from one checkpoint."""
    marks: dict[str, tuple[str | None, str | None]] = {}
    for tup in data.tuples:
        stored = read_stored_telemetry(tup.metadata)
        if stored is not None and stored.resume is not None:
            marks[str(tup.checkpoint["id"])] = stored.resume
    for event in data.resume_events:
        if event.first_checkpoint_id is not None:
            marks.setdefault(event.first_checkpoint_id, (event.kind, event.from_checkpoint_id))
    for put in data.puts:
        origin = put.attributes.get(names.RESUME_FROM_CHECKPOINT_ID)
        cid = str(put.attributes.get(names.CHECKPOINT_ID, ""))
        if origin is not None and cid not in marks:
            marks[cid] = (None, str(origin))  # its resume span is not in these files
    return marks


def resumes(sources: Sources, thread_id: str, data: ThreadData | None = None) -> Resumes:
    """The resume log: from resume spans where there are spans, else from stored marks."""
    data = data or ThreadData(sources, thread_id)
    marks = data.resume_marks
    writers = _writers(data)
    rows: list[ResumeRow] = []
    claimed: set[str] = set()
    resume_spans = _resume_spans(data)
    for event in data.resume_events:
        first = event.first_checkpoint_id or _first_marked(data, event, claimed)
        if first is not None:
            claimed.add(first)
        span = resume_spans.get((event.at_ns, event.from_checkpoint_id))
        rows.append(
            ResumeRow(
                time=_span_time(event.at_ns),
                namespace=event.checkpoint_ns,
                kind=event.kind,
                from_checkpoint_id=event.from_checkpoint_id,
                first_checkpoint_id=first,
                first_node=event.first_node
                or (_first_node_from(data, first) if first is not None else None),
                writer_trace_id=writers.get(event.from_checkpoint_id, {}).get("writer_trace_id"),
                writer_span_id=writers.get(event.from_checkpoint_id, {}).get("writer_span_id"),
            )
        )
        rows[-1] = _with_links(rows[-1], data, span)
    tuples = data.tuples_by_id
    for cid, (kind, origin) in marks.items():
        if origin is None or cid in claimed or kind is None:
            continue
        tup = tuples.get(cid)
        rows.append(
            ResumeRow(
                time=_time(tup.checkpoint.get("ts")) if tup else None,
                namespace=_ns(tup) if tup else "",
                kind=kind,
                from_checkpoint_id=origin,
                first_checkpoint_id=cid,
                first_node=_first_node_from(data, cid),
                writer_trace_id=writers.get(origin, {}).get("writer_trace_id"),
                writer_span_id=writers.get(origin, {}).get("writer_span_id"),
            )
        )
        rows[-1] = _with_links(rows[-1], data, None)
    rows.sort(key=lambda r: r.time or datetime.min.replace(tzinfo=UTC))
    return Resumes(source=sources.info(), thread_id=thread_id, resumes=rows)


def _resume_spans(data: ThreadData) -> dict[tuple[int, str], SpanRecord]:
    """The thread's resume spans by (start, checkpoint resumed from), as the resume log
    reads them."""
    if data.links is None:
        return {}
    return {
        (s.start_time_unix_nano, str(s.attributes.get(names.RESUME_FROM_CHECKPOINT_ID, ""))): s
        for s in data.spans
        if s.name == names.SPAN_RESUME
    }


def _with_links(row: ResumeRow, data: ThreadData, span: SpanRecord | None) -> ResumeRow:
    """`row` with `trace_link` (the resumed run: its resume `span`, else the put span of the
    first checkpoint it wrote) and `writer_trace_link` (the put span that wrote the checkpoint
    it resumed from), when there is a `--trace-url` template."""
    if data.links is None:
        return row
    if span is not None:
        run = data.link(span.trace_id, span.span_id, row.time)
    elif row.first_checkpoint_id is not None:
        run = data.checkpoint_link(row.first_checkpoint_id)
    else:
        run = None
    origin = row.from_checkpoint_id
    writer_id, writer_span = data.writer_ids.get(origin, (None, None))
    writer = data.link(writer_id, writer_span, data.checkpoint_time(origin) or row.time)
    return row.model_copy(update={"trace_link": run, "writer_trace_link": writer})


def _first_marked(data: ThreadData, event: ResumeEvent, claimed: set[str]) -> str | None:
    """The earliest unclaimed checkpoint marked as resumed from the event's checkpoint and
    written after it (when the spans do not name the resumed run's first put)."""
    candidates = sorted(
        cid
        for cid, (_, origin) in data.resume_marks.items()
        if origin == event.from_checkpoint_id and cid not in claimed
    )
    at = _span_time(event.at_ns)
    for cid in candidates:
        tup = data.tuples_by_id.get(cid)
        when = _time(tup.checkpoint.get("ts")) if tup else None
        if when is None or when >= at:
            return cid
    return None


def _writers(data: ThreadData) -> dict[str, dict[str, str]]:
    """Per checkpoint, the trace and span of the put span that wrote it: from the carrier
    stored with it (saver), else from the resume spans' writer attributes."""
    found: dict[str, dict[str, str]] = {}
    for span in data.spans:
        a = span.attributes
        trace, span_id = a.get(names.RESUME_WRITER_TRACE_ID), a.get(names.RESUME_WRITER_SPAN_ID)
        origin = a.get(names.RESUME_FROM_CHECKPOINT_ID)
        if span.name == names.SPAN_RESUME and origin and trace and span_id:
            found[str(origin)] = {"writer_trace_id": str(trace), "writer_span_id": str(span_id)}
    for tup in data.tuples:
        stored = read_stored_telemetry(tup.metadata)
        context = parse_carrier(stored.carrier) if stored is not None else None
        if context is not None:
            found[str(tup.checkpoint["id"])] = {
                "writer_trace_id": f"{context.trace_id:032x}",
                "writer_span_id": f"{context.span_id:016x}",
            }
    return found


def _first_node_from(data: ThreadData, checkpoint_id: str) -> str | None:
    """The first node applied at or after a checkpoint along its first chain (a fork copy
    applies none; its child names what ran)."""
    current: str | None = checkpoint_id
    for _ in range(len(data.records)):
        record = data.by_id.get(current or "")
        if record is None:
            return None
        if record.nodes:
            return record.nodes[0]
        children = sorted(r.checkpoint_id for r in data.records if r.parent_id == current)
        current = children[0] if children else None
    return None


def divergence_report(
    sources: Sources, thread_id: str, data: ThreadData | None = None
) -> Divergences:
    """Offline detectors over the thread's history, with findings flagged online."""
    data = data or ThreadData(sources, thread_id)
    findings = data.findings
    checkpoint_links: dict[str, TraceLink] = {}
    trace_links: dict[str, TraceLink] = {}
    if data.links is not None:
        for f in findings:
            for cid in (f.checkpoint_id, f.reference_checkpoint_id):
                link = data.checkpoint_link(cid)
                if link is not None:
                    checkpoint_links[cid] = link
            for trace_id in f.traces:
                link = data.link(trace_id, None, data.checkpoint_time(f.checkpoint_id))
                if link is not None:
                    trace_links[trace_id] = link
    return Divergences(
        source=sources.info(),
        thread_id=thread_id,
        diverged=bool(findings),
        findings=findings,
        checkpoint_links=checkpoint_links,
        trace_links=trace_links,
    )


def growth(sources: Sources, thread_id: str, data: ThreadData | None = None) -> Growth:
    """Per-channel size along the thread's first chain (root namespace), largest first."""
    data = data or ThreadData(sources, thread_id)
    rows = [r for r in timeline(sources, thread_id, data).checkpoints if r.branch == 0]
    rows = [r for r in rows if r.namespace == ""] or rows
    digests = data.digests
    series: dict[str, list[GrowthPoint]] = defaultdict(list)
    for row in rows:
        for name, (_, size) in digests.get(row.checkpoint_id, {}).items():
            if is_state_channel(name):
                series[name].append(
                    GrowthPoint(checkpoint_id=row.checkpoint_id, step=row.step, size_bytes=size)
                )
    channels = [
        ChannelGrowth(
            channel=name,
            points=points,
            first_bytes=points[0].size_bytes,
            last_bytes=points[-1].size_bytes,
            max_bytes=max(p.size_bytes for p in points),
        )
        for name, points in series.items()
    ]
    channels.sort(key=lambda c: (-c.last_bytes, c.channel))
    return Growth(source=sources.info(), thread_id=thread_id, channels=channels)


def resolve_checkpoint(data: ThreadData, text: str) -> str:
    """A checkpoint id from a full id, or a unique start or end of one (dashes optional)."""
    wanted = text.replace("-", "").lower()
    ids = [r.checkpoint_id for r in data.records]
    exact = [i for i in ids if i == text]
    if exact:
        return exact[0]
    hits = [
        i
        for i in ids
        if i.replace("-", "").lower().endswith(wanted)
        or i.replace("-", "").lower().startswith(wanted)
    ]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise SourceError(f"no checkpoint {text!r} in thread {data.thread_id!r}")
    raise SourceError(f"{text!r} matches {len(hits)} checkpoints of thread {data.thread_id!r}")


def diffs(
    sources: Sources,
    thread_id: str,
    a: str | None = None,
    b: str | None = None,
    *,
    content: ContentPolicy | None = None,
    data: ThreadData | None = None,
) -> Diff:
    """`a` -> `b`; `a` alone: its parent -> `a`; neither: each checkpoint against its parent."""
    data = data or ThreadData(sources, thread_id)
    if not data.tuples:
        raise SourceError(
            "diff needs a saver source: spans carry no channel values (timeline shows which "
            "channels changed and their sizes)"
        )
    tuples = data.tuples_by_id
    pairs: list[tuple[CheckpointTuple | None, CheckpointTuple]] = []
    if a is not None and b is not None:
        pairs.append((tuples[resolve_checkpoint(data, a)], tuples[resolve_checkpoint(data, b)]))
    elif a is not None:
        after = tuples[resolve_checkpoint(data, a)]
        pairs.append((tuples.get(_parent_id(after) or ""), after))
    else:
        pairs = [(tuples.get(_parent_id(t) or ""), t) for t in data.tuples]
    out = []
    for before, after in pairs:
        if before is None:
            out.append(_first_diff(after, content))
        else:
            out.append(diff(before, after, content=content))
    links: dict[str, TraceLink] = {}
    for item in out if data.links is not None else ():
        for cid in (item.from_checkpoint_id, item.to_checkpoint_id):
            link = data.checkpoint_link(cid) if cid else None
            if cid and link is not None:
                links[cid] = link
    return Diff(source=sources.info(), thread_id=thread_id, diffs=out, checkpoint_links=links)


class _Empty:
    """Stands in for the nothing before a thread's first checkpoint."""

    checkpoint: Mapping[str, Any] = {"channel_values": {}}
    metadata: Mapping[str, Any] | None = None
    config: Mapping[str, Any] = {"configurable": {}}


def _first_diff(after: CheckpointTuple, content: ContentPolicy | None) -> CheckpointDiff:
    result = diff(_Empty(), after, content=content)
    return result.model_copy(update={"from_checkpoint_id": None, "state_hash_before": None})


def build_report(
    sources: Sources,
    thread_id: str,
    policy: DivergencePolicy = DEFAULT_POLICY,
    *,
    links: TraceUrlTemplate | None = None,
) -> Report:
    """Everything the HTML report shows of one thread (`links`: the `--trace-url` template)."""
    data = ThreadData(sources, thread_id, policy, links=links)
    return Report(
        timeline=timeline(sources, thread_id, data),
        resumes=resumes(sources, thread_id, data),
        divergences=divergence_report(sources, thread_id, data),
        growth=growth(sources, thread_id, data),
        diffs=diffs(sources, thread_id, data=data).diffs if data.tuples else [],
    )


# --- all threads ------------------------------------------------------------------------------


def threads(
    sources: Sources,
    progress: Any = None,
    policy: DivergencePolicy = DEFAULT_POLICY,
    query: ThreadQuery | None = None,
) -> Threads:
    """One page of the threads the sources know, most recently active first (which threads:
    `thread_list`); each row from that thread's own checkpoints only."""
    page = latest_threads(sources, query or ThreadQuery())
    rows = []
    for thread_id in page.ids if progress is None else progress(page.ids):
        data = ThreadData(sources, thread_id, policy)
        line = data.timeline
        root = [r for r in line.checkpoints if r.namespace == ""] or line.checkpoints
        times = [r.time for r in line.checkpoints if r.time is not None]
        rows.append(
            ThreadRow(
                thread_id=thread_id,
                checkpoints=len(line.checkpoints),
                namespaces=len({r.namespace for r in line.checkpoints}),
                size_bytes=root[-1].size_bytes,
                last_activity=max(times) if times else None,
                resumes=len(resumes(sources, thread_id, data).resumes),
                divergences=len(data.findings),  # exactly what `diverge` lists
            )
        )
    return Threads(source=sources.info(), threads=rows, more=page.more, total=page.total)


__all__ = [
    "ThreadData",
    "UnknownThreadError",
    "build_report",
    "diffs",
    "divergence_report",
    "growth",
    "human_bytes",
    "resumes",
    "short_ids",
    "subgraph_title",
    "threads",
    "timeline",
]
