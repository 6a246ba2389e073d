"""Checkpoint records read back from exported spans (`langgraph.checkpoint.put` spans and their
channel events), for the offline detectors and the resume log.

Pure logic: nothing here knows OpenTelemetry's SDK or any saver; spans are duck-typed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.records import CheckpointRecord
from langgraph.checkpoint.otel.analysis.text_bounds import bounded_text


@dataclass(frozen=True, slots=True)
class SpanFact:
    """The part of an exported span that records and the resume log read."""

    name: str
    start_ns: int
    attributes: Mapping[str, Any]
    events: tuple[tuple[str, Mapping[str, Any]], ...] = ()


def span_facts(spans: Iterable[Any]) -> list[SpanFact]:
    """`SpanFact`s from SDK `ReadableSpan`s or `otlp_json.SpanRecord`s (duck-typed)."""
    facts = []
    for span in spans:
        start = getattr(span, "start_time_unix_nano", None)
        if start is None:
            start = getattr(span, "start_time", None) or 0
        events = tuple(
            (str(event.name), dict(event.attributes or {})) for event in getattr(span, "events", ())
        )
        facts.append(SpanFact(str(span.name), int(start), dict(span.attributes or {}), events))
    return facts


def span_records(spans: Iterable[SpanFact], thread_id: str | None = None) -> list[CheckpointRecord]:
    """Records of the checkpoints written in exported `langgraph.checkpoint.put` spans.

    Channel hashes come from the `langgraph.channel` events of each put (changed channels) and
    are carried over from the parent's record for unchanged ones. Spans carry no tool-call
    arguments, so these records have no tool calls: offline, only the `state` and node
    `trajectory` detectors apply to them.
    """
    wanted = bounded_text(thread_id)  # spans carry the thread id bounded
    puts = sorted(
        (
            s
            for s in spans
            if s.name == names.SPAN_PUT
            and (thread_id is None or str(s.attributes.get(names.THREAD_ID)) == wanted)
        ),
        key=lambda s: str(s.attributes.get(names.CHECKPOINT_ID, "")),
    )
    hashes_by_id: dict[str, dict[str, str]] = {}
    records = []
    for span in puts:
        attrs = span.attributes
        checkpoint_id = str(attrs.get(names.CHECKPOINT_ID, ""))
        parent = attrs.get(names.PARENT_ID)
        hashes = dict(hashes_by_id.get(str(parent), {})) if parent else {}
        for event_name, event in span.events:
            if event_name == names.EVENT_CHANNEL and names.CHANNEL_NAME in event:
                hashes[str(event[names.CHANNEL_NAME])] = str(event.get(names.CHANNEL_HASH, ""))
        hashes_by_id[checkpoint_id] = hashes
        step = attrs.get(names.STEP)
        records.append(
            CheckpointRecord(
                checkpoint_id=checkpoint_id,
                parent_id=str(parent) if parent else None,
                step=step if isinstance(step, int) else None,
                source=attrs.get(names.SOURCE),
                nodes=tuple(str(n) for n in attrs.get(names.NODES, ()) or ()),
                channel_hashes=hashes,
                state_hash=attrs.get(names.STATE_HASH),
                ns=str(attrs.get(names.CHECKPOINT_NS, "") or ""),
            )
        )
    return records
