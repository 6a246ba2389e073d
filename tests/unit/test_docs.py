"""docs/telemetry.md and names.py (the one place names are defined) must agree."""

from __future__ import annotations

import re

from langgraph.checkpoint.otel import names
from suite_paths import REPO

DOC = REPO / "docs" / "telemetry.md"

# names.py constants that are not telemetry names (metadata keys and format markers)
NOT_TELEMETRY = {
    "METADATA_KEY",
    "META_FORMAT",
    "META_STATE_HASH",
    "META_CHANNELS",
    "META_NODES",
    "META_RESUME",
    "META_SCHEMA",
    "META_LINEAGE",
    "META_TOOLS",
    "META_RUN_TOOLS",
    "META_GRAPH",
    "META_POLICY",
    "META_EXECUTION",
    "META_HISTORY",
    "UNVERSIONED",
    "SCOPE",
}


def defined_names() -> set[str]:
    return {
        value
        for key, value in vars(names).items()
        if key.isupper() and isinstance(value, str) and key not in NOT_TELEMETRY
    }


def documented_names() -> set[str]:
    text = DOC.read_text()
    return {
        token
        for token in re.findall(r"`([a-z_][a-z0-9_.]*)`", text)
        if (
            token.startswith(("langgraph.", "gen_ai.", "error.", "session.", "openinference."))
            and token != names.SCOPE
        )
        or token == names.SPAN_RUN
    }


def test_every_emitted_name_is_documented() -> None:
    missing = defined_names() - documented_names()
    assert not missing, f"add to docs/telemetry.md: {sorted(missing)}"


def test_the_docs_name_nothing_the_code_does_not_define() -> None:
    unknown = documented_names() - defined_names()
    assert not unknown, f"docs/telemetry.md names what names.py does not define: {sorted(unknown)}"


def test_documented_metadata_key_is_the_one_in_code() -> None:
    assert f'"{names.METADATA_KEY}": {{"{names.META_FORMAT}": {names.META_FORMAT_VERSION}' in (
        DOC.read_text()
    )
