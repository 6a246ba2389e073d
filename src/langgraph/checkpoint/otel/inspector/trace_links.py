"""Links into the user's trace backend: a URL template filled with a trace's ids.

    https://jaeger.example.com/trace/{trace_id}?uiFind={span_id}

A template is checked once, when the inspector starts (`TraceUrlTemplate.parse`): it must be an
``http://`` or ``https://`` URL that uses ``{trace_id}``, and only the placeholders of
`PLACEHOLDERS`, plainly (no format spec, conversion, attribute or index); ``{{`` and ``}}`` are
literal braces. Filling it (`TraceUrlTemplate.url`) takes only ids and a time, never any state:
a trace id that is not 32 hex digits (a corrupted carrier, say) gives no link at all, so nothing
read from storage but hex digits and numbers ever reaches a URL.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

__all__ = [
    "ENV",
    "PLACEHOLDERS",
    "WINDOW",
    "TraceUrlError",
    "TraceUrlTemplate",
    "from_setting",
]

ENV: Final = "LANGGRAPH_OTEL_TRACE_URL"
"""The environment variable read when `--trace-url` is not given."""

WINDOW: Final = timedelta(hours=1)
"""How far before and after the checkpoint's (or the resume's) time the `from_*` and `to_*`
placeholders reach: a backend that searches a time range (Honeycomb, Grafana) finds the
trace in it."""

PLACEHOLDERS: Final[Mapping[str, str]] = {
    "trace_id": "the trace id: 32 lowercase hex digits",
    "span_id": "the span id: 16 lowercase hex digits (empty when only the trace is known)",
    "span_id_decimal": "the span id as an unsigned decimal number, as Datadog's `spanID` "
    "takes it (empty when only the trace is known)",
    "time_s": "the checkpoint's (or the resume's) time: Unix seconds",
    "time_ms": "the same time in Unix milliseconds",
    "from_s": "one hour before that time, Unix seconds",
    "to_s": "one hour after it, Unix seconds",
    "from_ms": "one hour before that time, Unix milliseconds",
    "to_ms": "one hour after it, Unix milliseconds",
}
"""Every placeholder a template may use, and what it is replaced with."""

_TIMES: Final = frozenset({"time_s", "time_ms", "from_s", "to_s", "from_ms", "to_ms"})
_TRACE_ID: Final = re.compile(r"[0-9a-f]{32}")
_SPAN_ID: Final = re.compile(r"[0-9a-f]{16}")
_SCHEME: Final = re.compile(r"https?://", re.IGNORECASE)
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")


class TraceUrlError(ValueError):
    """A trace URL template that cannot be used; the message says why, and where it came from."""


@dataclass(frozen=True, slots=True)
class TraceUrlTemplate:
    """A checked template (make one with `parse`)."""

    text: str
    parts: tuple[tuple[str, str | None], ...]
    """(literal text, placeholder or None), in order: the template without its braces."""

    @classmethod
    def parse(cls, text: str, where: str = "--trace-url") -> TraceUrlTemplate:
        """Check `text`; `where` names its origin in the error (the option or the variable)."""

        def bad(reason: str) -> TraceUrlError:
            return TraceUrlError(f"{where} {text!r}: {reason}")

        if _CONTROL.search(text):
            raise bad("control characters are not allowed in a URL")
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:  # a single "{" or "}": "{{" and "}}" are literal braces
            raise bad(f"{exc}; write {{{{ and }}}} for literal braces") from None
        known = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
        braces = "write {{ and }} for literal braces"
        parts: list[tuple[str, str | None]] = []
        for literal, field, spec, conversion in parsed:
            if field is not None:
                if field not in PLACEHOLDERS:
                    hint = "" if field.isidentifier() else f" ({braces})"
                    raise bad(f"unknown placeholder {{{field}}}{hint}; known: {known}")
                if spec or conversion:
                    raise bad(f"placeholder {{{field}}} takes no format spec or conversion")
            parts.append((literal, field))
        if not _SCHEME.match(parts[0][0] if parts else ""):
            raise bad("not an http:// or https:// URL (it must start with one)")
        if not any(field == "trace_id" for _, field in parts):
            raise bad("uses no {trace_id}: every link would be the same")
        return cls(text, tuple(parts))

    @property
    def placeholders(self) -> frozenset[str]:
        """The placeholders the template uses."""
        return frozenset(field for _, field in self.parts if field is not None)

    def url(
        self, trace_id: str, span_id: str | None = None, time: datetime | None = None
    ) -> str | None:
        """The link to `trace_id` (its span `span_id` where known, at about `time`), or None
        when the ids are not W3C ids (32 and 16 hex digits, not all zero) or the template
        needs a time that is not known."""
        if not _TRACE_ID.fullmatch(trace_id) or int(trace_id, 16) == 0:
            return None
        if span_id is not None and (not _SPAN_ID.fullmatch(span_id) or int(span_id, 16) == 0):
            span_id = None
        used = self.placeholders
        if used & _TIMES and (time is None or time.tzinfo is None):
            return None
        values = {"trace_id": trace_id, "span_id": span_id or ""}
        values["span_id_decimal"] = str(int(span_id, 16)) if span_id else ""
        if time is not None and time.tzinfo is not None:
            for name, at in (("time", time), ("from", time - WINDOW), ("to", time + WINDOW)):
                seconds = at.timestamp()
                values[f"{name}_s"] = str(int(seconds))
                values[f"{name}_ms"] = str(int(seconds * 1000))
        return "".join(literal + (values[field] if field else "") for literal, field in self.parts)


def from_setting(
    option: str | None, environ: Mapping[str, str], option_name: str = "--trace-url"
) -> TraceUrlTemplate | None:
    """The template given by the option, else by `ENV`; None when neither gives one (an empty
    option turns links off whatever the variable says)."""
    if option is not None:
        return TraceUrlTemplate.parse(option, option_name) if option.strip() else None
    value = environ.get(ENV, "")
    return TraceUrlTemplate.parse(value, ENV) if value.strip() else None
