"""When a checkpoint was written, from its id, and durations as the CLI writes them (pure).

LangGraph's checkpoint ids are UUID v6: their first 18 hex digits hold a 60-bit timestamp
(100-ns intervals since 1582-10-15), most significant first, so their text sorts in time
order. An id of another form has no readable time (`id_time` returns None).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

UUID_EPOCH = datetime(1582, 10, 15, tzinfo=UTC)
"""The UUID v1/v6 epoch: its timestamp counts 100-ns intervals from here."""
DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_V6 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-6[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")


def id_floor(when: datetime) -> str:
    """The smallest UUID v6 text of a checkpoint written at or after `when`."""
    ticks = max(0, (when - UUID_EPOCH) // timedelta(microseconds=1) * 10)
    return f"{ticks >> 28:08x}-{(ticks >> 12) & 0xFFFF:04x}-6{ticks & 0xFFF:03x}-0000-000000000000"


def id_time(checkpoint_id: str) -> datetime | None:
    """When a checkpoint with this UUID v6 id was written (UTC), None for another kind of id."""
    text = checkpoint_id.lower()
    if _V6.match(text) is None:
        return None
    ticks = (int(text[0:8], 16) << 28) | (int(text[9:13], 16) << 12) | int(text[15:18], 16)
    return UUID_EPOCH + timedelta(microseconds=ticks // 10)


def parse_duration(text: str) -> timedelta | None:
    """`90m`, `12h`, `7d`, `2w` (also `1.5d`, `30s`) as a timedelta; None when not one."""
    match = DURATION.match(text.strip().lower())
    if match is None:
        return None
    return timedelta(**{UNITS[match.group(2)]: float(match.group(1))})


def duration_text(duration: timedelta) -> str:
    """The shortest of `30d`, `12h`, `90m`, `45s` that is exact (`1.5d` never: `36h`)."""
    seconds = duration.total_seconds()
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
