"""The package's pytest plugin (the ``pytest11`` entry point): the ``resume_checker`` fixture.

pytest loads it in every project where the package is installed, so it imports nothing at
start-up: the resume harness (`testing.harness`, with LangGraph and the wrapper) is imported when
a test first asks for the fixture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.testing.harness import ResumeChecker


@pytest.fixture
def resume_checker() -> ResumeChecker:
    """`check_resume` / `acheck_resume` that fail the test with a readable message."""
    from langgraph.checkpoint.otel.testing.harness import ResumeChecker, pytest_fail

    return ResumeChecker(fail=pytest_fail)
