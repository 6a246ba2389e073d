"""Every relative link in README.md and docs/*.md leads somewhere: the file or folder exists,
and a `#fragment` into a Markdown file names one of its headings (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suite_paths import REPO as ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to
    `-`, a repeated heading numbered."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", FENCED.sub("", page.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def test_the_anchors_follow_githubs_rules() -> None:
    assert {"install-into-your-app", "grafana-tempo--prometheus"} <= anchors(ROOT / "README.md")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", FENCED.sub("", page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):
            continue  # https:, mailto:
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(f"{link}: no such heading")
    assert broken == []
