"""dashboards/honeycomb/create.sh against a stub ``curl``: the order of its API calls and the
placeholders it fills in (bash and jq, from scripts/tools/jq.sh; the offline checks of the
files themselves are tests/unit/test_honeycomb_datadog.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite_paths import REPO

HC = REPO / "dashboards" / "honeycomb"

STUB_CURL = """#!/usr/bin/env bash
url=""; for a in "$@"; do case "$a" in http*) url="$a";; esac; done
body="$(cat)"; n=$(( $(ls "$STUB_LOG" | wc -l) + 1 ))
printf '%s\\n%s\\n' "$url" "$body" > "$STUB_LOG/$(printf %03d $n)"
echo "{\\"id\\": \\"id$n\\", \\"links\\": {\\"board_url\\": \\"https://ui.invalid/b/id$n\\"}}"
"""


def test_create_script_posts_queries_then_annotations_then_board_then_triggers(
    tmp_path: Path,
) -> None:
    import os
    import shutil
    import subprocess

    if not (shutil.which("bash") and shutil.which("jq")):
        pytest.skip("needs bash and jq")
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "curl").write_text(STUB_CURL)
    (stub / "curl").chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()
    env = dict(os.environ, PATH=f"{stub}:{os.environ['PATH']}", STUB_LOG=str(log))
    env |= {"HONEYCOMB_API_KEY": "test-key-not-real", "HONEYCOMB_DATASET": "svc"}
    subprocess.run(["bash", str(HC / "create.sh")], env=env, check=True, capture_output=True)
    calls = [p.read_text().split("\n", 1) for p in sorted(log.iterdir())]
    paths = [url.removeprefix("https://api.honeycomb.io") for url, _ in calls]
    n = len(list((HC / "queries").glob("*.json")))
    assert paths[: 2 * n : 2] == ["/1/queries/svc"] * n
    assert paths[1 : 2 * n : 2] == ["/1/query_annotations/svc"] * n
    assert paths[2 * n] == "/1/boards"
    assert paths[2 * n + 1 :] == ["/1/triggers/svc"] * len(list((HC / "triggers").glob("*.json")))
    board = json.loads(calls[2 * n][1])
    ids = {p["query_panel"]["query_id"] for p in board["panels"] if p["type"] == "query"}
    assert ids == {f"id{2 * i + 1}" for i in range(n)}
    assert "@query:" not in calls[2 * n][1] and "@annotation:" not in calls[2 * n][1]
