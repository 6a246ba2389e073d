"""The HTML report of one thread: a single self-contained page (inline CSS, SVG and JS).

The timeline and the size chart are laid out here, as SVG coordinates; the Jinja template
(``templates/report.html.j2``, autoescaped: ids and names are untrusted text) only draws them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Final

import jinja2

from langgraph.checkpoint.otel._langgraph.namespaces import namespace_depth, subgraph_node
from langgraph.checkpoint.otel.analysis.checkpoint_diff import CheckpointDiff
from langgraph.checkpoint.otel.inspector.model import CheckpointRow, Report
from langgraph.checkpoint.otel.inspector.views import human_bytes, subgraph_title

__all__ = ["render_report", "write_report"]

#: Timeline geometry (SVG user units).
COLUMN: Final[int] = 44
LANE: Final[int] = 56
RADIUS: Final[int] = 8
SUB_RADIUS: Final[int] = 6
SUB_COLUMN: Final[int] = 28
"""Column width of a subgraph's checkpoint."""
_CHAR_WIDTH: Final[float] = 6.2
"""Average width of an 11 px system-ui character, in SVG units (labels are cut to fit)."""
_TOP: Final[int] = 40
_LEFT: Final[int] = 70

SUMMARY_LIMIT: Final[int] = 400
"""Characters of a diff summary shown in the diff box (the whole summary is its tooltip)."""

#: Size chart geometry.
CHART_WIDTH: Final[int] = 760
CHART_HEIGHT: Final[int] = 240
_CHART_LEFT: Final[int] = 70
_CHART_RIGHT: Final[int] = 20
_CHART_TOP: Final[int] = 16
_CHART_BOTTOM: Final[int] = 40

CRASH: Final[str] = "crash"
"""The resume kind the report marks as a finding (`langgraph.findings` `resume.crash`)."""

#: Series colours of the size chart (cycled), readable on white.
PALETTE: Final[tuple[str, ...]] = (
    "#2563eb",
    "#16a34a",
    "#9333ea",
    "#ea580c",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4b5563",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """One checkpoint circle of the timeline."""

    row: CheckpointRow
    x: int
    y: int
    diverged: bool
    resume_labels: tuple[str, ...]
    radius: int = RADIUS
    """Smaller for a subgraph's checkpoint."""

    @property
    def crashed(self) -> bool:
        """A `crash` resume starts here (or, from spans alone, resumed from here): a finding."""
        return any(label.split(" ")[0] == CRASH for label in self.resume_labels)


@dataclasses.dataclass(frozen=True, slots=True)
class Edge:
    """The line from a checkpoint's parent to it: an SVG path."""

    d: str
    fork: bool
    """The child sits on another lane than its parent (a branch starts here)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Lane:
    """One row of the timeline: a branch of the root graph, or subgraph runs under one."""

    label: str
    y: int
    subgraphs: bool
    """A row of subgraph runs (drawn under the branch whose checkpoints ran them)."""


@dataclasses.dataclass(frozen=True, slots=True)
class SubgraphRun:
    """The checkpoints of one subgraph namespace, boxed and labelled on their lane."""

    namespace: str
    node: str
    """The node of the enclosing graph that ran the subgraph."""
    agent: str | None
    """The agent name stored with its checkpoints (`CheckpointRow.agent_name`), if any."""
    title: str
    """``refund_agent (subgraph of support_desk)``."""
    label: str
    """`title`, truncated to the box's width (the full text is in the box's tooltip)."""
    x: float
    y: float
    width: float
    height: float
    links: list[str]
    """SVG paths: from the checkpoint it ran from, and up to the one applying its result."""


@dataclasses.dataclass(frozen=True, slots=True)
class TimelineLayout:
    width: int
    height: int
    nodes: list[Node]
    edges: list[Edge]
    lanes: list[Lane]
    """Every row drawn, top to bottom."""
    branches: int
    """Branches of the root graph (subgraph rows are not branches)."""
    subgraphs: list[SubgraphRun] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True, slots=True)
class Series:
    channel: str
    colour: str
    points: str
    """SVG polyline `points`."""
    dots: list[tuple[float, float, str]]
    """(x, y, tooltip) of each point."""
    first_bytes: int
    last_bytes: int
    max_bytes: int


@dataclasses.dataclass(frozen=True, slots=True)
class Tick:
    position: float
    label: str


@dataclasses.dataclass(frozen=True, slots=True)
class GrowthChart:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    series: list[Series]
    x_ticks: list[Tick]
    y_ticks: list[Tick]


def signed_bytes(delta: int | None) -> str:
    """``+1.5 KB`` / ``-12 B`` / ``±0 B``; empty for None."""
    if delta is None:
        return ""
    if delta == 0:
        return "±0 B"
    return ("+" if delta > 0 else "") + human_bytes(delta)


def format_time(value: datetime | None, *, date: bool = True) -> str:
    """``2024-05-01 12:00:00.123+00:00`` (the zone as stored), or ``12:00:00.123`` without
    `date`; empty for None."""
    if value is None:
        return ""
    if not date:
        return value.time().isoformat(timespec="milliseconds")
    return value.isoformat(sep=" ", timespec="milliseconds")


def _resume_labels(report: Report) -> dict[str, list[str]]:
    ids = {row.checkpoint_id for row in report.timeline.checkpoints}
    labels: dict[str, list[str]] = {}
    for row in report.timeline.checkpoints:
        if row.resume_kind:
            labels.setdefault(row.checkpoint_id, []).append(row.resume_kind)
    for resume in report.resumes.resumes:
        target = resume.first_checkpoint_id
        if target is None and resume.from_checkpoint_id in ids:
            # spans only: the resumed run's first checkpoint is unknown, mark where it resumed
            labels.setdefault(resume.from_checkpoint_id, []).append(f"{resume.kind} (from)")
        elif target in ids and resume.kind not in labels.get(target, []):
            labels.setdefault(target, []).append(resume.kind)
    return labels


def _fit(text: str, width: float) -> str:
    """`text` cut to about `width` SVG units of 11 px text, with an ellipsis when cut."""
    room = max(1, int(width / _CHAR_WIDTH))
    return text if len(text) <= room else text[: max(1, room - 1)] + "…"


def _pack(spans: list[tuple[int, int, str]]) -> dict[str, int]:
    """Row of each (first, last, namespace) span: the first row free before it starts."""
    ends: list[int] = []
    row_of: dict[str, int] = {}
    for first, last, namespace in sorted(spans):
        row = next((i for i, end in enumerate(ends) if end < first), len(ends))
        if row == len(ends):
            ends.append(last)
        ends[row] = last
        row_of[namespace] = row
    return row_of


def layout_timeline(report: Report) -> TimelineLayout:
    """x = order along the checkpoint's branch (a branch starts one column after its fork
    point, so the same step of two branches is near the same x; a subgraph's checkpoints take
    narrower columns); y = the row: each branch of the root graph (the root
    namespace's `CheckpointRow.branch`), then under it rows of the subgraph runs its
    checkpoints started, one box per namespace (boxes that do not overlap share a row, nested
    subgraphs go a row deeper). Edges join each checkpoint to its parent; dashed links join a
    subgraph run to the checkpoint it ran from and to the one that applied its result."""
    rows = report.timeline.checkpoints
    diverged = {finding.checkpoint_id for finding in report.divergences.findings}
    resumes = _resume_labels(report)
    index = {row.checkpoint_id: i for i, row in enumerate(rows)}
    by_ns: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_ns.setdefault(row.namespace, []).append(i)
    branches = sorted({row.branch for row in rows if not row.namespace}) or [0]
    spans: dict[tuple[int, int], list[tuple[int, int, str]]] = {}  # (branch, depth) -> spans
    for namespace, members in by_ns.items():
        if namespace:
            key = (rows[members[0]].branch, namespace_depth(namespace))
            spans.setdefault(key, []).append((members[0], members[-1], namespace))
    lanes: list[Lane] = []
    row_y: dict[str, int] = {}  # namespace -> y
    branch_y: dict[int, int] = {}
    y = _TOP
    for branch in sorted(set(branches) | {b for b, _ in spans}):
        branch_y[branch] = y
        lanes.append(Lane("main" if branch == 0 else f"branch {branch}", y, subgraphs=False))
        y += LANE
        for depth in sorted(d for b, d in spans if b == branch):
            packed = _pack(spans[(branch, depth)])
            for sub_row in range(max(packed.values()) + 1):
                lanes.append(Lane("subgraphs" if depth == 1 else "nested", y, subgraphs=True))
                for namespace, assigned in packed.items():
                    if assigned == sub_row:
                        row_y[namespace] = y
                y += LANE
    xs = _columns(rows)
    nodes: list[Node] = []
    where: dict[str, Node] = {}
    for i, row in enumerate(rows):
        node = Node(
            row=row,
            x=xs[i],
            y=row_y[row.namespace] if row.namespace else branch_y[row.branch],
            diverged=bool(row.divergences) or row.checkpoint_id in diverged,
            resume_labels=tuple(resumes.get(row.checkpoint_id, ())),
            radius=SUB_RADIUS if row.namespace else RADIUS,
        )
        nodes.append(node)
        where.setdefault(row.checkpoint_id, node)
    edges: list[Edge] = []
    for node in nodes:
        parent = where.get(node.row.parent_id) if node.row.parent_id else None
        if parent is None:
            continue
        if parent.y == node.y:
            edges.append(Edge(f"M{parent.x},{parent.y} L{node.x},{node.y}", fork=False))
        else:
            edges.append(Edge(_bend(parent.x, parent.y, node.x, node.y), fork=True))
    runs = [
        _subgraph_run(report, namespace, [nodes[i] for i in members], where, index)
        for namespace, members in by_ns.items()
        if namespace
    ]
    width = max(xs, default=_LEFT) + 110
    return TimelineLayout(
        width=width,
        height=y - LANE + 44,
        nodes=nodes,
        edges=edges,
        lanes=lanes,
        branches=len(branches),
        subgraphs=runs,
    )


def _columns(rows: list[CheckpointRow]) -> list[int]:
    """x of each row: along its branch, in timeline order, from one column after the fork
    point the branch leaves (branch 0 from the left edge)."""
    x_of: dict[str, int] = {}
    xs = [0] * len(rows)
    cursors: dict[int, int] = {}
    for i, row in enumerate(rows):
        if row.branch not in cursors:
            origin = x_of.get(row.parent_id or "")
            cursors[row.branch] = _LEFT if origin is None else origin + COLUMN
        xs[i] = cursors[row.branch]
        x_of.setdefault(row.checkpoint_id, xs[i])
        cursors[row.branch] += SUB_COLUMN if row.namespace else COLUMN
    return xs


def _bend(x1: float, y1: float, x2: float, y2: float) -> str:
    """Down (or up) to the second point's row within one column, then along the row."""
    bend = min(x1 + COLUMN, x2)
    mid = (x1 + bend) / 2
    return f"M{x1:g},{y1:g} C{mid:g},{y1:g} {mid:g},{y2:g} {bend:g},{y2:g} L{x2:g},{y2:g}"


def _subgraph_run(
    report: Report,
    namespace: str,
    members: list[Node],
    where: dict[str, Node],
    index: dict[str, int],
) -> SubgraphRun:
    first, last = members[0], members[-1]
    agent = first.row.agent_name
    title = subgraph_title(namespace, report.timeline.graph_name, agent)
    node = subgraph_node(namespace)
    name = agent or node
    width = last.x - first.x + SUB_COLUMN - 4
    links = []
    origin = where.get(first.row.graph_parent_id or "")
    if origin is not None:
        links.append(_bend(origin.x, origin.y, first.x, first.y))
        applied = [
            n
            for n in where.values()
            if n.row.parent_id == origin.row.checkpoint_id
            and n.row.namespace == origin.row.namespace
            and node in n.row.nodes
            and index[n.row.checkpoint_id] > index[last.row.checkpoint_id]
        ]
        if applied:
            back = applied[0]
            links.append(
                f"M{last.x},{last.y} C{back.x:g},{last.y} {back.x},{last.y} {back.x},{back.y}"
            )
    return SubgraphRun(
        namespace=namespace,
        node=node,
        agent=agent,
        title=title,
        label=_fit(title if len(title) * _CHAR_WIDTH <= width - 8 else name, width - 8),
        x=first.x - SUB_COLUMN / 2 + 2,
        y=first.y - 26,
        width=width,
        height=50,
        links=links,
    )


def _nice_ceiling(value: int) -> int:
    """The smallest 1/2/5 x 10^n at or above `value` (at least 1)."""
    if value <= 1:
        return 1
    magnitude = 1
    while True:
        for step in (1, 2, 5):
            if step * magnitude >= value:
                return step * magnitude
        magnitude *= 10


def _tick_step(top: int) -> int:
    """Round tick spacing for an axis from 0 to `top` (a `_nice_ceiling` value)."""
    leading = int(str(top)[0])
    return max(1, top // 4 if leading == 2 else top // 5)


def layout_growth(report: Report) -> GrowthChart | None:
    """One polyline per channel: x = order on the timeline (steps as labels), y = size."""
    channels = [c for c in report.growth.channels if c.points]
    if not channels:
        return None
    order = {row.checkpoint_id: i for i, row in enumerate(report.timeline.checkpoints)}
    keys: dict[str, float] = {}
    labels: dict[float, str] = {}
    for channel in channels:
        for index, point in enumerate(channel.points):
            key = float(
                order.get(point.checkpoint_id, point.step if point.step is not None else index)
            )
            keys[point.checkpoint_id] = key
            labels.setdefault(key, str(point.step) if point.step is not None else "")
    low, high = min(keys.values()), max(keys.values())
    top_bytes = _nice_ceiling(max(c.max_bytes for c in channels))
    plot_w = CHART_WIDTH - _CHART_LEFT - _CHART_RIGHT
    plot_h = CHART_HEIGHT - _CHART_TOP - _CHART_BOTTOM

    def x_of(key: float) -> float:
        if high == low:
            return _CHART_LEFT + plot_w / 2
        return round(_CHART_LEFT + (key - low) / (high - low) * plot_w, 1)

    def y_of(size: int) -> float:
        return round(_CHART_TOP + plot_h - size / top_bytes * plot_h, 1)

    series = []
    for index, channel in enumerate(channels):
        dots = [
            (
                x_of(keys[p.checkpoint_id]),
                y_of(p.size_bytes),
                f"{channel.channel} at step {p.step}: {human_bytes(p.size_bytes)}",
            )
            for p in channel.points
        ]
        series.append(
            Series(
                channel=channel.channel,
                colour=PALETTE[index % len(PALETTE)],
                points=" ".join(f"{x:g},{y:g}" for x, y, _ in dots),
                dots=dots,
                first_bytes=channel.first_bytes,
                last_bytes=channel.last_bytes,
                max_bytes=channel.max_bytes,
            )
        )
    every = max(1, len(labels) // 12)
    x_ticks = [
        Tick(x_of(key), labels[key]) for i, key in enumerate(sorted(labels)) if i % every == 0
    ]
    y_ticks = [
        Tick(y_of(size), human_bytes(size))
        for size in range(0, top_bytes + 1, _tick_step(top_bytes))
    ]
    return GrowthChart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        left=_CHART_LEFT,
        right=CHART_WIDTH - _CHART_RIGHT,
        top=_CHART_TOP,
        bottom=CHART_HEIGHT - _CHART_BOTTOM,
        series=series,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
    )


def _diffs_by_checkpoint(diffs: Iterable[CheckpointDiff]) -> dict[str, CheckpointDiff]:
    found: dict[str, CheckpointDiff] = {}
    for item in diffs:
        if item.to_checkpoint_id is not None:
            found.setdefault(item.to_checkpoint_id, item)
    return found


def _initial_selection(report: Report) -> str | None:
    """The first diverged checkpoint, else the latest one."""
    rows = report.timeline.checkpoints
    diverged = {finding.checkpoint_id for finding in report.divergences.findings}
    for row in rows:
        if row.divergences or row.checkpoint_id in diverged:
            return row.checkpoint_id
    return rows[-1].checkpoint_id if rows else None


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("langgraph.checkpoint.otel.inspector", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(report: Report) -> str:
    """The report of `report`'s thread as one self-contained HTML page."""
    short_ids = {row.checkpoint_id: row.short_id for row in report.timeline.checkpoints}

    def short(checkpoint_id: str | None) -> str:
        if checkpoint_id is None:
            return ""
        return short_ids.get(checkpoint_id, checkpoint_id[-8:])

    times = [row.time for row in report.timeline.checkpoints if row.time is not None]
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        period=(min(times), max(times)) if times else None,
        timeline=layout_timeline(report),
        growth=layout_growth(report),
        diffs=_diffs_by_checkpoint(report.diffs),
        selected=_initial_selection(report),
        short=short,
        subgraph_title=lambda namespace, agent=None: subgraph_title(
            namespace, report.timeline.graph_name, agent
        ),
        subgraph_node=subgraph_node,
        summary_limit=SUMMARY_LIMIT,
        human_bytes=human_bytes,
        signed_bytes=signed_bytes,
        format_time=format_time,
    )


def write_report(report: Report, path: Path) -> Path:
    """Write the report page to `path` (UTF-8; parent directories created); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(report), encoding="utf-8")
    return path
