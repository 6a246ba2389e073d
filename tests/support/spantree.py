"""Render exported spans as an indented text tree, so a test compares one readable string.

Each line: ``<span name short> key=value ...`` with the attributes named in `keys`, children
indented under their parent, siblings in start order. Links render as ``-> link(type)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry.sdk.trace import ReadableSpan

PREFIX = "langgraph.checkpoint."

DEFAULT_KEYS: tuple[str, ...] = (
    "langgraph.checkpoint.step",
    "langgraph.checkpoint.source",
    "langgraph.checkpoint.nodes",
    "langgraph.checkpoint.channels_changed",
    "langgraph.task.node",
    "langgraph.task.outcome",
    "langgraph.writes.channels",
    "error.type",
    "langgraph.graph.name",
    "langgraph.run.outcome",
)


def _value(value: object) -> str:
    if isinstance(value, tuple | list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def render(
    spans: Iterable[ReadableSpan],
    keys: Sequence[str] = DEFAULT_KEYS,
    *,
    status: bool = True,
    events: bool = False,
) -> str:
    """The span tree as text (see module docstring)."""
    spans = sorted(spans, key=lambda s: s.start_time or 0)
    ids = {s.context.span_id for s in spans if s.context}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent and span.parent.span_id in ids else None
        children.setdefault(parent, []).append(span)

    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in children.get(parent, []):
            attrs = span.attributes or {}
            parts = [span.name.removeprefix(PREFIX)]
            parts += [f"{k.rsplit('.', 1)[-1]}={_value(attrs[k])}" for k in keys if k in attrs]
            if status and span.status.status_code.name == "ERROR":
                parts.append("ERROR")
            lines.append("  " * depth + " ".join(parts))
            if events:
                for event in span.events:
                    ev = event.attributes or {}
                    detail = " ".join(f"{k.rsplit('.', 1)[-1]}={_value(v)}" for k, v in ev.items())
                    lines.append("  " * (depth + 1) + f"* {event.name} {detail}")
            for link in span.links:
                kind = (link.attributes or {}).get("langgraph.link.type", "link")
                lines.append("  " * (depth + 1) + f"-> {kind}")
            if span.context:
                walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return "\n".join(lines)
