"""Terminal output of the inspector commands: rich tables (colour only on a terminal).

With a `--trace-url` template, every checkpoint id, resume and writer trace that has a link
is a hyperlink on a terminal (OSC 8: the text is as without links); in piped output, which
carries no hyperlinks, the cell gets a footnote mark ``[n]`` and the table is followed by the
numbered URLs, one a line and never wrapped (a URL several cells share has one number).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Console
from rich.style import Style
from rich.table import Table
from rich.text import Text

from langgraph.checkpoint.otel._langgraph.namespaces import namespace_depth
from langgraph.checkpoint.otel.inspector.model import (
    Compat,
    Diff,
    Divergences,
    Growth,
    Replays,
    Restore,
    Resumes,
    Retention,
    RetentionThread,
    SourceInfo,
    Threads,
    Timeline,
    TraceLink,
)
from langgraph.checkpoint.otel.inspector.views import human_bytes, short_ids, subgraph_title


def _bytes(n: int | None) -> str:
    """A size in a table cell: `views.human_bytes`, ``-`` when unknown."""
    return human_bytes(n, missing="-")


def _signed(n: int | None) -> Text:
    if n is None or n == 0:
        return Text("" if n is None else "0", style="dim")
    return Text(("+" if n > 0 else "") + _bytes(n), style="yellow" if n > 0 else "green")


def _when(t: datetime | None) -> str:
    return t.astimezone().strftime("%Y-%m-%d %H:%M:%S") if t else "-"


def _clock(t: datetime | None) -> str:
    return t.astimezone().strftime("%H:%M:%S.%f")[:-3] if t else "-"


class Links:
    """Puts trace links on cells: hyperlinks on a terminal, else footnote marks whose URLs
    `footnotes` prints."""

    def __init__(self, console: Console) -> None:
        self.inline = console.is_terminal and console.color_system is not None
        self.numbers: dict[str, int] = {}

    def cell(self, text: str | Text, link: TraceLink | None) -> str | Text:
        """`text`, linked to `link` (unchanged without one)."""
        if link is None:
            return text
        out = Text(text) if isinstance(text, str) else text.copy()
        if self.inline:
            out.stylize(Style(link=link.url))
        else:
            number = self.numbers.setdefault(link.url, len(self.numbers) + 1)
            out.append(f" [{number}]", style="dim")
        return out

    def footnotes(self, console: Console) -> None:
        """The URLs of the footnote marks, numbered (nothing on a terminal)."""
        if not self.numbers:
            return
        console.print(Text("trace links:", style="dim"))
        for url, number in self.numbers.items():
            console.print(Text(f"[{number}] {url}"), soft_wrap=True)


def sources_line(console: Console, info: SourceInfo) -> None:
    read = ", ".join(x for x in (info.saver, info.spans) if x)
    console.print(Text(f"source: {read}", style="dim"))
    for line in info.cannot_show:
        console.print(Text(f"note: {line}", style="dim italic"))


def threads(console: Console, view: Threads) -> None:
    table = Table(title="threads", title_justify="left")
    widest = max((len(r.thread_id) for r in view.threads), default=6)
    table.add_column("thread", no_wrap=True, min_width=min(widest, 48))
    for column in ("checkpoints", "namespaces", "size", "last activity"):
        table.add_column(column, justify="right")
    table.add_column("resumes", justify="right")
    table.add_column("divergences", justify="right")
    for row in view.threads:
        table.add_row(
            row.thread_id,
            str(row.checkpoints),
            str(row.namespaces),
            _bytes(row.size_bytes),
            _when(row.last_activity),
            str(row.resumes) if row.resumes else Text("0", style="dim"),
            Text(str(row.divergences), style="bold red")
            if row.divergences
            else Text("0", style="dim"),
        )
    console.print(table)
    sources_line(console, view.source)


def timeline(console: Console, view: Timeline) -> None:
    table = Table(title=f"timeline of {view.thread_id}", title_justify="left")
    for column in (
        "",
        "checkpoint",
        "time",
        "step",
        "source",
        "nodes",
        "changed",
        "size",
        "growth",
    ):
        table.add_column(
            column,
            justify="right" if column in ("step", "size", "growth") else "left",
            no_wrap=column in ("", "checkpoint", "time", "size", "growth"),
        )
    table.add_column("hash", no_wrap=True)
    table.add_column("marks", overflow="fold")
    has_ns = any(r.namespace for r in view.checkpoints)
    if has_ns:
        table.add_column("subgraph (namespace)", overflow="fold")
    links = Links(console)
    for row in view.checkpoints:
        if row.namespace:  # a subgraph's checkpoint: under the branch it ran on, indented
            depth = namespace_depth(row.namespace)
            lane = Text("│ " * row.branch + "  " * depth + "○", style="magenta")
        else:
            lane = Text("│ " * row.branch + ("◆" if row.fork_point else "●"), style="cyan")
        marks = Text()
        if row.resume_kind:
            marks.append(f"resume {row.resume_kind} ", style="bold magenta")
        if row.fork_point:
            marks.append("fork point ", style="cyan")
        for kind in row.divergences:
            marks.append(f"DIVERGED {kind} ", style="bold red")
        cells: list[str | Text] = [
            lane,
            links.cell(row.short_id, row.trace_link),
            _clock(row.time),
            "" if row.step is None else str(row.step),
            row.source or "",
            ", ".join(row.nodes),
            ", ".join(row.changed_channels),
            _bytes(row.size_bytes),
            _signed(row.growth_bytes),
            (row.state_hash or "")[:8],
            marks,
        ]
        if has_ns:
            cells.append(
                Text(subgraph_title(row.namespace, view.graph_name, row.agent_name)).append(
                    f" {row.namespace}", style="dim"
                )
                if row.namespace
                else ""
            )
        table.add_row(*cells, style="on grey11" if row.divergences else None)
    console.print(table)
    links.footnotes(console)
    sources_line(console, view.source)


def resumes(console: Console, view: Resumes) -> None:
    table = Table(title=f"resumes of {view.thread_id}", title_justify="left")
    for column in (
        "time",
        "kind",
        "from checkpoint",
        "first checkpoint",
        "first node",
        "writer trace",
        "namespace",
    ):
        table.add_column(column, no_wrap=column == "writer trace")
    ids = [r.from_checkpoint_id for r in view.resumes] + [
        r.first_checkpoint_id for r in view.resumes if r.first_checkpoint_id
    ]
    shorts = short_ids(ids)
    links = Links(console)
    for row in view.resumes:
        first = row.first_checkpoint_id
        table.add_row(
            _when(row.time),
            links.cell(Text(row.kind, style="bold magenta"), row.trace_link),
            links.cell(
                shorts.get(row.from_checkpoint_id, row.from_checkpoint_id), row.writer_trace_link
            ),
            links.cell(shorts.get(first or "", "-"), row.trace_link if first else None),
            row.first_node or "-",
            links.cell(row.writer_trace_id or "-", row.writer_trace_link),
            row.namespace,
        )
    console.print(table if view.resumes else Text(f"no resumes of {view.thread_id}"))
    links.footnotes(console)
    sources_line(console, view.source)


def _tool_cell(tool: str | None, arguments: Sequence[str]) -> str:
    """A tool-call finding's tool, and the arguments whose values differ."""
    if tool is None:
        return ""
    return f"{tool} ({', '.join(arguments)} differ)" if arguments else tool


def _short_value(value: str | None) -> str:
    """An expected/actual value in a table cell: a hash to 16 hex digits, an idempotency key
    to its tool and 8 (two keys of one tool then still read apart)."""
    if not value:
        return ""
    name, _, digest = value.rpartition(":")
    if name and len(digest) == 32 and all(c in "0123456789abcdef" for c in digest):
        return f"{name}:{digest[:8]}"
    return value if len(value) <= 40 else value[:16]


def divergences(console: Console, view: Divergences) -> None:
    if not view.findings:
        console.print(Text(f"no divergence in {view.thread_id}", style="green"))
        sources_line(console, view.source)
        return
    table = Table(title=f"divergences of {view.thread_id}", title_justify="left")
    with_traces = any(f.traces for f in view.findings)
    with_tools = any(f.tool for f in view.findings)
    for column in (
        "kind",
        "step",
        "checkpoint",
        "reference",
        "node",
        *(("tool",) if with_tools else ()),
        "channel",
        "expected",
        "actual",
        *(("traces",) if with_traces else ()),
    ):
        table.add_column(column)
    shorts = short_ids(
        [f.checkpoint_id for f in view.findings]
        + [f.reference_checkpoint_id for f in view.findings]
    )
    links = Links(console)
    for f in view.findings:
        table.add_row(
            Text(f.kind, style="bold red"),
            "" if f.step is None else str(f.step),
            links.cell(shorts[f.checkpoint_id], view.checkpoint_links.get(f.checkpoint_id)),
            links.cell(
                shorts[f.reference_checkpoint_id],
                view.checkpoint_links.get(f.reference_checkpoint_id),
            ),
            f"{f.graph} / {f.node or ''}" if f.graph else f.node or "",
            *((_tool_cell(f.tool, f.arguments),) if with_tools else ()),
            f.channel or "",
            _short_value(f.expected),
            _short_value(f.actual),
            *((_traces(f.traces, view, links),) if with_traces else ()),
        )
    console.print(table)
    links.footnotes(console)
    sources_line(console, view.source)


def _traces(traces: Sequence[str], view: Divergences, links: Links) -> str | Text:
    """The trace ids of a finding, one a line, each linked where it has a link."""
    if not view.trace_links:
        return "\n".join(traces)
    return Text("\n").join(
        Text(c) if isinstance(c, str) else c
        for c in (links.cell(t, view.trace_links.get(t)) for t in traces)
    )


def growth(console: Console, view: Growth) -> None:
    table = Table(title=f"channel sizes of {view.thread_id} (first chain)", title_justify="left")
    for column in ("channel", "first", "last", "max", "checkpoints", "sizes"):
        table.add_column(column, justify="left" if column in ("channel", "sizes") else "right")
    for c in view.channels:
        table.add_row(
            c.channel,
            _bytes(c.first_bytes),
            _bytes(c.last_bytes),
            _bytes(c.max_bytes),
            str(len(c.points)),
            _sparkline([p.size_bytes for p in c.points]),
        )
    console.print(table)
    sources_line(console, view.source)


def _sparkline(values: list[int]) -> str:
    bars = "▁▂▃▄▅▆▇█"
    top = max(values, default=0)
    if top <= 0:
        return ""
    tail = values[-40:]
    return "".join(bars[min(len(bars) - 1, v * (len(bars) - 1) // top)] for v in tail)


def diffs(console: Console, view: Diff) -> None:
    shorts = short_ids(
        [d.to_checkpoint_id for d in view.diffs if d.to_checkpoint_id]
        + [d.from_checkpoint_id for d in view.diffs if d.from_checkpoint_id]
    )
    links = Links(console)
    for d in view.diffs:
        title = _diff_title(d.from_checkpoint_id, d.to_checkpoint_id, shorts, view, links)
        if not d.changes:
            line = Text.assemble(title, ": no state channel changed", style="dim")
            console.print(line)
            continue
        table = Table(title=title, title_justify="left")
        for column in ("channel", "status", "before", "after", "change", "summary"):
            table.add_column(column, justify="right" if column in ("before", "after") else "left")
        for c in d.changes:
            table.add_row(
                c.name,
                c.status,
                _bytes(c.size_before),
                _bytes(c.size_after),
                _signed(c.size_delta),
                c.summary,
            )
            if c.patch is not None:
                table.add_row("", "", "", "", "", Text(str(c.patch)[:400], style="dim"))
        console.print(table)
    links.footnotes(console)
    sources_line(console, view.source)


def _diff_title(
    before: str | None, after: str | None, shorts: dict[str, str], view: Diff, links: Links
) -> str | Text:
    """``A -> B``, each id linked to its writer's trace where it has a link (a plain string,
    as a table title takes it, when neither has one)."""
    first = links.cell(shorts.get(before or "", "(start)"), view.checkpoint_links.get(before or ""))
    second = links.cell(shorts.get(after or "", "?"), view.checkpoint_links.get(after or ""))
    if isinstance(first, str) and isinstance(second, str):
        return f"{first} -> {second}"
    return Text.assemble(first, " -> ", second, style="table.title")


def compat(console: Console, view: Compat) -> None:
    """The threads the new graph may not resume, one row per reason."""
    summary = (
        f"{_threads(view.checked)} checked against {view.graph} "
        f"(structure {view.structure_hash[:12]}) in {view.seconds:.1f} s"
    )
    if not view.at_risk:
        console.print(Text(f"no thread at risk: {summary}", style="green"))
    else:
        table = Table(title=f"{_threads(len(view.at_risk))} at risk", title_justify="left")
        for column in ("thread", "checkpoint", "reason", "node or channel", "detail"):
            table.add_column(column)
        shorts = short_ids([t.checkpoint_id for t in view.at_risk])
        for thread in view.at_risk:
            for index, risk in enumerate(thread.risks):
                table.add_row(
                    thread.thread_id if index == 0 else "",
                    shorts[thread.checkpoint_id] if index == 0 else "",
                    Text(risk.reason, style="bold red"),
                    risk.subject,
                    risk.detail,
                )
        console.print(table)
        reasons = ", ".join(f"{reason} {count}" for reason, count in view.reasons.items())
        console.print(Text(f"{summary}; threads per reason: {reasons}"))
    written = ", ".join(f"{h[:12]} {n}" for h, n in view.structures.items())
    console.print(Text(f"written under structures: {written}", style="dim"))
    for note in view.unchecked:
        console.print(Text(f"not checked: {note}", style="yellow"))


def replays(console: Console, view: Replays) -> None:
    """One line per replayed thread."""
    for row in view.threads:
        style = "green" if row.ok else ("yellow" if row.unreplayable else "bold red")
        console.print(Text(row.summary, style=style))
    failed = sum(1 for row in view.threads if not row.ok)
    console.print(
        Text(
            f"{_threads(len(view.threads))} replayed against {view.graph}: {failed} not as recorded"
        )
    )


def _threads(count: int) -> str:
    return f"{count} thread" if count == 1 else f"{count} threads"


def retention(console: Console, view: Retention) -> None:
    """Where the bytes are, what the policy removes and reclaims, what it keeps and why."""
    console.print(
        Text(
            f"{_threads(view.threads)}, {view.checkpoints} checkpoints, "
            f"{_bytes(view.bytes)} stored ({view.source or 'no source'}, "
            f"scanned in {view.seconds:.1f} s)"
        )
    )
    if view.heaviest:
        console.print(_retention_threads("heaviest threads", view.heaviest, view.now))
    sizes = Table(title="where the bytes are", title_justify="left")
    for column in ("what", "bytes", "threads"):
        sizes.add_column(column, justify="left" if column == "what" else "right")
    stored = [(f"values of {c.name}", c) for c in view.channels]
    stored += [(f"pending writes to {c.name}", c) for c in view.writes]
    stored += [
        (row.name, row)
        for row in (view.values_not_broken_down, view.checkpoint_overhead)
        if row is not None
    ]
    for label, row in sorted(stored, key=lambda item: -item[1].bytes):
        sizes.add_row(label, _bytes(row.bytes), str(row.threads))
    if stored and view.namespaces:
        sizes.add_section()
    for ns in view.namespaces:
        sizes.add_row(f"namespace {ns.name or '(root)'}", _bytes(ns.bytes), str(ns.threads))
    if view.channels:
        sizes.caption = (
            "values inside checkpoints: split by the channel sizes the wrapper stored "
            "(an estimate; measured on PostgreSQL)"
        )
        sizes.caption_justify = "left"
    if stored or view.namespaces:
        console.print(sizes)
    if view.values_not_broken_down is not None:
        console.print(
            Text(
                "values not broken down: checkpoints stored without the wrapper's channel "
                "sizes (written without it, or with no OpenTelemetry SDK recording)",
                style="dim",
            )
        )
    if view.idle:
        idle = ", ".join(f">= {b.at_least}: {b.threads} ({_bytes(b.bytes)})" for b in view.idle)
        console.print(Text(f"idle since their last checkpoint: {idle}", style="dim"))
    if view.policy == "none":
        console.print(
            Text("no policy given (--keep-last, --older-than, --idle-longer-than, --policy)")
        )
        return
    if not view.remove_checkpoints:
        console.print(Text(f"policy {view.policy}: removes nothing", style="green"))
    else:
        if view.removing:
            console.print(_retention_threads("what the policy removes", view.removing, view.now))
        console.print(
            Text(
                f"policy {view.policy}: removes {view.remove_checkpoints} checkpoints and "
                f"{view.remove_writes} writes"
                + (f" and {view.remove_blobs} blobs" if view.remove_blobs else "")
                + f" from {_threads(view.remove_threads)}"
                + (f" ({view.whole_threads} idle, whole)" if view.whole_threads else "")
                + f", reclaiming {_bytes(view.reclaim_bytes)}",
                style="bold",
            )
        )
    if view.kept:
        kept = ", ".join(f"{reason} {count}" for reason, count in view.kept.items())
        console.print(Text(f"kept against the policy: {kept}"))
    for item in view.unproven:
        console.print(
            Text(
                f"unproven, kept: {item.thread_id} {item.checkpoint_ns or '(root)'} "
                f"{item.checkpoint_id}: {item.why}",
                style="yellow",
            )
        )
    if view.applied is not None:
        done = view.applied
        console.print(
            Text(
                f"applied: {done.applied} threads, {done.checkpoints_removed} checkpoints and "
                f"{done.writes_removed} writes removed, {_bytes(done.bytes_reclaimed)} "
                f"reclaimed; archived to {done.archive}",
                style="bold green" if not (done.skipped or done.failed) else "bold",
            )
        )
        for outcome in done.threads:
            if outcome.outcome != "applied":
                style = "yellow" if outcome.outcome == "skipped_written" else "bold red"
                line = f"{outcome.outcome}: {outcome.thread_id} {outcome.detail or ''}"
                console.print(Text(line, style=style))


def _retention_threads(title: str, rows: Sequence[RetentionThread], now: datetime) -> Table:
    table = Table(title=title, title_justify="left")
    for column in (
        "thread",
        "checkpoints",
        "bytes",
        "namespaces",
        "age",
        "idle",
        "removes",
        "reclaims",
        "kept",
    ):
        table.add_column(column, justify="left" if column in ("thread", "kept") else "right")
    for row in rows:
        removes = "whole" if row.whole_thread else str(row.remove_checkpoints or "")
        table.add_row(
            row.thread_id,
            str(row.checkpoints),
            _bytes(row.bytes),
            str(row.namespaces),
            _age(now, row.oldest),
            _age(now, row.last),
            removes,
            _bytes(row.reclaim_bytes) if row.reclaim_bytes else "",
            ", ".join(f"{k} {v}" for k, v in row.kept.items()),
        )
    return table


def _age(now: datetime, when: datetime | None) -> str:
    if when is None:
        return "-"
    seconds = max(0.0, (now - when).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def restore(console: Console, view: Restore) -> None:
    """What a restore put back."""
    console.print(
        Text(
            f"restored {view.checkpoints} checkpoints and {view.writes} writes of "
            f"{_threads(view.threads)} from {view.archive} into {view.source}"
            + (f"; {view.already_present} already stored" if view.already_present else ""),
            style="bold green" if not view.incomplete else "bold",
        )
    )
    if view.incomplete:
        console.print(Text(f"{view.incomplete} archive lines unreadable, skipped", style="yellow"))
