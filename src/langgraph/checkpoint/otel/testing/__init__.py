"""Testing a graph's resumes and replays, public from this package.

    from langgraph.checkpoint.otel.testing import assert_replays, check_resume

- `harness`: the resume harness. `check_resume` / `acheck_resume` interrupt a graph at every
  superstep, resume it and compare with a clean run (`ResumeReport`); `ResumeChecker` is what the
  ``resume_checker`` pytest fixture (`pytest_plugin`, the ``pytest11`` entry point) returns.
- `replay`: recorded threads replayed against the current code (`replay_thread`,
  `areplay_thread`, `assert_replays`, `aassert_replays`; `ReplayResult`, `ReplayFailed`).

The names are loaded on first use: pytest loads the plugin in every project where the package is
installed, and it must import nothing heavy until a test asks for the fixture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph.checkpoint.otel.lazy import lazy_names

if TYPE_CHECKING:
    from langgraph.checkpoint.otel.testing.harness import (
        ResumeChecker,
        ResumeReport,
        acheck_resume,
        check_resume,
    )
    from langgraph.checkpoint.otel.testing.replay import (
        ReplayFailed,
        ReplayResult,
        aassert_replays,
        areplay_thread,
        assert_replays,
        replay_thread,
    )

_EXPORTS: dict[str, str] = {
    "ReplayFailed": "replay",
    "ReplayResult": "replay",
    "ResumeChecker": "harness",
    "ResumeReport": "harness",
    "aassert_replays": "replay",
    "acheck_resume": "harness",
    "areplay_thread": "replay",
    "assert_replays": "replay",
    "check_resume": "harness",
    "replay_thread": "replay",
}
"""Public name -> the module under this package that defines it."""

__all__ = [
    "ReplayFailed",
    "ReplayResult",
    "ResumeChecker",
    "ResumeReport",
    "aassert_replays",
    "acheck_resume",
    "areplay_thread",
    "assert_replays",
    "check_resume",
    "replay_thread",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__)
