"""The `--trace-url` template on its own (`inspector/trace_links.py`): placeholders, errors that
say what to write, and where the template comes from (option, ``LANGGRAPH_OTEL_TRACE_URL``).
The commands and the report that use it, on a real thread: tests/integration/test_inspector_links.py."""

from __future__ import annotations

import urllib.parse
from datetime import UTC, datetime

import pytest

from langgraph.checkpoint.otel.inspector.trace_links import (
    ENV,
    PLACEHOLDERS,
    TraceUrlError,
    TraceUrlTemplate,
    from_setting,
)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"
AT = datetime(2026, 12, 2, 3, 0, 0, 250000, tzinfo=UTC)


def test_trace_and_span_ids_replace_their_placeholders() -> None:
    template = TraceUrlTemplate.parse(
        "https://jaeger.example.com/trace/{trace_id}?uiFind={span_id}"
    )
    assert template.url(TRACE, SPAN) == f"https://jaeger.example.com/trace/{TRACE}?uiFind={SPAN}"


def test_span_id_decimal_is_the_unsigned_decimal_form_of_the_span_id() -> None:
    template = TraceUrlTemplate.parse(
        "https://dd.example/apm/trace/{trace_id}?spanID={span_id_decimal}"
    )
    high = "f5e0c1a2b3c4d5e6"  # above 2**63: unsigned, never negative
    assert (
        template.url(TRACE, high) == f"https://dd.example/apm/trace/{TRACE}?spanID={int(high, 16)}"
    )


def test_times_are_unix_seconds_and_milliseconds_with_an_hour_either_side() -> None:
    template = TraceUrlTemplate.parse(
        "https://x.example/{trace_id}?t={time_s}&ms={time_ms}&a={from_s}&b={to_s}&c={from_ms}&d={to_ms}"
    )
    url = template.url(TRACE, SPAN, AT)
    assert url is not None
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    second = int(AT.timestamp())
    assert query == {
        "t": str(second),
        "ms": str(second * 1000 + 250),
        "a": str(second - 3600),
        "b": str(second + 3600),
        "c": str(second * 1000 + 250 - 3_600_000),
        "d": str(second * 1000 + 250 + 3_600_000),
    }


def test_an_unknown_placeholder_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(TraceUrlError) as raised:
        TraceUrlTemplate.parse("https://x.example/{trace_id}/{traceid}")
    message = str(raised.value)
    assert "unknown placeholder {traceid}" in message
    assert all(f"{{{name}}}" in message for name in PLACEHOLDERS)


def test_a_template_without_trace_id_is_an_error() -> None:
    with pytest.raises(TraceUrlError, match=r"uses no \{trace_id\}"):
        TraceUrlTemplate.parse("https://x.example/span/{span_id}")


@pytest.mark.parametrize(
    "text",
    ["javascript:alert(1)//{trace_id}", "/trace/{trace_id}", "{trace_id}", "ftp://x/{trace_id}"],
)
def test_a_template_that_is_not_an_http_url_is_an_error(text: str) -> None:
    with pytest.raises(TraceUrlError, match="not an http:// or https:// URL"):
        TraceUrlTemplate.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "https://x.example/{trace_id:>40}",
        "https://x.example/{trace_id!r}",
        "https://x.example/{trace_id.__class__}",
        "https://x.example/{trace_id[0]}",
        "https://x.example/{trace_id}/{}",
        "https://x.example/{trace_id}/{0}",
    ],
)
def test_format_specs_conversions_attributes_and_positions_are_errors(text: str) -> None:
    with pytest.raises(TraceUrlError):
        TraceUrlTemplate.parse(text)


def test_doubled_braces_are_literal_braces() -> None:
    template = TraceUrlTemplate.parse('https://g.example/explore?left={{"query":"{trace_id}"}}')
    assert template.url(TRACE) == f'https://g.example/explore?left={{"query":"{TRACE}"}}'


@pytest.mark.parametrize(
    "text",
    ['https://g.example/explore?left={"query":"{trace_id}"}', "https://x.example/{trace_id}}"],
)
def test_a_lone_brace_is_an_error_that_says_how_to_write_one(text: str) -> None:
    with pytest.raises(TraceUrlError, match=r"write \{\{ and \}\} for literal braces"):
        TraceUrlTemplate.parse(text)


def test_control_characters_are_an_error() -> None:
    with pytest.raises(TraceUrlError, match="control characters"):
        TraceUrlTemplate.parse("https://x.example/{trace_id}\x1b]8;;\x1b\\")


@pytest.mark.parametrize(
    "trace_id", ["", "0" * 32, TRACE.upper(), TRACE[:-1], TRACE + "0", "<script>" + TRACE[8:]]
)
def test_a_trace_id_that_is_not_32_lowercase_hex_digits_gives_no_link(trace_id: str) -> None:
    assert TraceUrlTemplate.parse("https://x.example/{trace_id}").url(trace_id) is None


@pytest.mark.parametrize("span_id", [None, "", "0" * 16, "not-a-span-id!!!", SPAN + "00"])
def test_an_unknown_or_malformed_span_leaves_the_span_placeholders_empty(
    span_id: str | None,
) -> None:
    template = TraceUrlTemplate.parse(
        "https://x.example/{trace_id}?s={span_id}&d={span_id_decimal}"
    )
    assert template.url(TRACE, span_id) == f"https://x.example/{TRACE}?s=&d="


def test_an_unknown_time_gives_no_link_when_the_template_needs_a_time() -> None:
    needs_time = TraceUrlTemplate.parse("https://x.example/{trace_id}?t={time_ms}")
    assert needs_time.url(TRACE, SPAN, None) is None
    assert needs_time.url(TRACE, SPAN, AT.replace(tzinfo=None)) is None  # no zone: no instant
    assert TraceUrlTemplate.parse("https://x.example/{trace_id}").url(TRACE, SPAN, None)


def test_the_option_wins_over_the_variable() -> None:
    chosen = from_setting("https://a.example/{trace_id}", {ENV: "https://b.example/{trace_id}"})
    assert chosen is not None and chosen.text == "https://a.example/{trace_id}"


def test_the_variable_gives_the_template_when_there_is_no_option() -> None:
    chosen = from_setting(None, {ENV: "https://b.example/{trace_id}"})
    assert chosen is not None and chosen.text == "https://b.example/{trace_id}"


def test_an_empty_option_turns_links_off_whatever_the_variable_says() -> None:
    assert from_setting("", {ENV: "https://b.example/{trace_id}"}) is None


def test_an_error_names_where_the_template_came_from() -> None:
    with pytest.raises(TraceUrlError, match=f"^{ENV} "):
        from_setting(None, {ENV: "https://b.example/{nope}"})
