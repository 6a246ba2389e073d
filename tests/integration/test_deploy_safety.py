"""Deploy safety, checked against LangGraph itself: threads written by release 1 of
`release_app` (parked at an interrupt, killed inside a node, finished) and resumed by each
release 2, on SQLite and PostgreSQL.

For every release-2 change, `langgraph-otel compat` must flag exactly the threads that
LangGraph then fails to resume or resumes with data lost (a final state other than release
1's for the same thread), its exit code must say so, and each resume must carry the
`langgraph.graph.changed` event naming what changed (and be counted). `langgraph-otel replay`
of the same threads (kept untouched under ``recorded/``) finds nothing under release 1, the
killed ones compared as far as their recording goes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph.types import Command
from typer.testing import CliRunner

import release_app
from crash_app import open_saver
from helpers import OTel, fresh_database
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.inspector.cli import app
from langgraph.checkpoint.otel.testing import replay_thread
from suite_paths import APPS

APP = APPS / "release_app.py"
RELEASES = ("release_1", *release_app.CHANGES)
KINDS = ("parked", "finished", "crashed-write", "crashed-merge")
RECORDED = "recorded/"
"""The prefix of release-1 threads no test resumes (replay only reads them)."""

CHANGED = {
    "remove_node": {
        names.GRAPH_NODES_REMOVED: ("review",),
        names.GRAPH_CHANNELS_REMOVED: ("branch:to:review",),
    },
    "rename_node": {
        names.GRAPH_NODES_ADDED: ("compose",),
        names.GRAPH_NODES_REMOVED: ("write",),
        names.GRAPH_CHANNELS_ADDED: ("branch:to:compose",),
        names.GRAPH_CHANNELS_REMOVED: ("branch:to:write",),
    },
    "add_required_channel": {names.GRAPH_CHANNELS_ADDED: ("audience",)},
    "change_channel_type": {names.GRAPH_CHANNELS_CHANGED: ("notes",)},
    "toggle_defer": {names.GRAPH_CHANNELS_CHANGED: ("branch:to:merge",)},
}
"""What each release's resume event names; every other list is empty."""
REASONS = {
    "remove_node": {"parked": {"interrupted_node_missing"}},
    "rename_node": {"crashed-write": {"missing_node"}},
    "add_required_channel": {kind: {"new_required_channel"} for kind in KINDS},
    "change_channel_type": {kind: {"schema_validation"} for kind in KINDS},
    "toggle_defer": {"crashed-merge": {"channel_restore_failed"}},
}
"""The reasons `compat` gives, per release and thread kind."""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(APP), *args],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def written(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A backend holding every kind of thread, written by release 1, once per release."""
    if request.param == "sqlite":
        yield from _written(f"sqlite:{tmp_path_factory.mktemp('deploy') / 'app.db'}")
    else:
        with fresh_database(request.getfixturevalue("postgres_url")) as url:
            yield from _written(f"postgres:{url}")


def _written(backend: str) -> Iterator[str]:
    prefixes = [f"{release}/" for release in RELEASES] + [RECORDED]
    done = _run("write", backend, *prefixes)
    assert done.returncode == 0, done.stderr
    for node in ("write", "merge"):
        killed = _run("crash", backend, node, *prefixes)
        assert killed.returncode == -9, killed.stderr  # SIGKILL
    yield backend


def saver_url(backend: str) -> str:
    kind, _, target = backend.partition(":")
    return f"sqlite:///{target}" if kind == "sqlite" else target


def compat(backend: str, release: str) -> tuple[int, dict[str, Any]]:
    """`langgraph-otel compat release_app:RELEASE` over the release's threads, as JSON."""
    result = CliRunner().invoke(
        app,
        [
            "compat",
            f"release_app:{release}",
            "-s",
            saver_url(backend),
            "--thread-prefix",
            f"{release}/",
            "--json",
        ],
    )
    return result.exit_code, json.loads(result.stdout)


def drive(graph: Any, thread_id: str) -> list[str] | str:
    """Resume a thread as its user would until it is done: answer its interrupts, run a
    killed run on, give a finished thread new input. Its final notes."""
    config = release_app.config(thread_id)
    if thread_id.endswith("finished"):
        out = graph.invoke({"topic": "again"}, config)
    elif thread_id.endswith("parked"):
        out = graph.invoke(Command(resume=True), config)
    else:
        out = graph.invoke(None, config)
    while graph.get_state(config).interrupts:
        out = graph.invoke(Command(resume=True), config)
    return out.get("notes")


def resume_all(backend: str, release: str, otel: OTel) -> dict[str, Any]:
    """Each kind of thread of `release`, resumed by that release: its final notes, or the
    exception's class where LangGraph failed."""
    outcomes: dict[str, Any] = {}
    with open_saver(backend) as inner:
        saver = instrument(
            inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
        graph = getattr(release_app, release)().builder.compile(checkpointer=saver)
        for kind in KINDS:
            try:
                outcomes[kind] = drive(graph, f"{release}/{kind}")
            except Exception as exc:
                outcomes[kind] = type(exc).__name__
    return outcomes


@pytest.fixture(scope="module")
def baseline(written: str) -> Iterator[dict[str, Any]]:
    """What release 1 itself makes of its threads: the outcome nothing is lost against."""
    otel = OTel()
    outcomes = resume_all(written, "release_1", otel)
    assert not [s for s in otel.spans() if _changed_events(s)]
    otel.shutdown()
    yield outcomes


def _changed_events(span: Any) -> list[Any]:
    return [e for e in span.events if e.name == names.EVENT_GRAPH_CHANGED]


def expected_at_risk(outcomes: dict[str, Any], baseline: dict[str, Any]) -> set[str]:
    """The threads LangGraph failed or lost data on."""
    return {kind for kind in KINDS if outcomes[kind] != baseline[kind]}


@dataclass
class Release2:
    """What compat said of a release's threads, then what LangGraph did resuming them."""

    name: str
    code: int
    report: dict[str, Any]
    outcomes: dict[str, Any]
    otel: OTel

    @property
    def flagged(self) -> dict[str, set[str]]:
        return {
            row["thread_id"].removeprefix(f"{self.name}/"): {r["reason"] for r in row["risks"]}
            for row in self.report["at_risk"]
        }


@pytest.fixture(scope="module")
def releases(written: str, baseline: dict[str, Any]) -> Iterator[dict[str, Release2]]:
    """Each release's threads, once per backend: compat over them, then LangGraph resuming
    them (which uses them up), made when a test first asks."""
    made: dict[str, Release2] = {}
    yield made
    for release in made.values():
        release.otel.shutdown()


@pytest.fixture(params=release_app.CHANGES)
def release_2(
    request: pytest.FixtureRequest, written: str, releases: dict[str, Release2]
) -> Release2:
    """compat over a release's threads, then the threads resumed by that release."""
    if request.param not in releases:
        code, report = compat(written, request.param)
        otel = OTel()
        outcomes = resume_all(written, request.param, otel)
        releases[request.param] = Release2(request.param, code, report, outcomes, otel)
    return releases[request.param]


def test_compat_flags_exactly_the_threads_langgraph_fails_or_loses_data_on(
    release_2: Release2, baseline: dict[str, Any]
) -> None:
    assert release_2.report["checked"] == len(KINDS)
    assert set(release_2.flagged) == expected_at_risk(release_2.outcomes, baseline)


def test_compat_names_the_reason_and_exits_1(release_2: Release2) -> None:
    assert release_2.flagged == REASONS[release_2.name]
    assert release_2.code == 1


def test_compat_passes_the_threads_of_the_release_that_wrote_them(written: str) -> None:
    code, report = compat(written, "release_1")
    assert (code, report["at_risk"], report["checked"]) == (0, [], len(KINDS))
    (written_under,) = report["structures"]
    assert written_under == report["structure_hash"]


def test_a_resume_under_another_structure_names_what_changed(release_2: Release2) -> None:
    resumes = [s for s in release_2.otel.spans() if s.name == names.SPAN_RESUME]
    changed = [e for s in resumes for e in _changed_events(s)]
    # the first resume of each thread loads release 1's checkpoint; later ones release 2's
    assert len(changed) == len(KINDS)
    lists = (
        names.GRAPH_NODES_ADDED,
        names.GRAPH_NODES_REMOVED,
        names.GRAPH_CHANNELS_ADDED,
        names.GRAPH_CHANNELS_REMOVED,
        names.GRAPH_CHANNELS_CHANGED,
    )
    for event in changed:
        named = {key: tuple(event.attributes[key]) for key in lists}
        assert named == {key: CHANGED[release_2.name].get(key, ()) for key in lists}
        assert (
            event.attributes[names.GRAPH_WRITTEN_STRUCTURE_HASH]
            != event.attributes[names.GRAPH_STRUCTURE_HASH]
        )


def test_resumes_under_another_structure_are_counted(release_2: Release2) -> None:
    (point,) = release_2.otel.metrics()[names.METRIC_GRAPH_CHANGES]
    assert point.value == len(KINDS)
    assert dict(point.attributes) == {names.GRAPH_NAME: "LangGraph"}


def test_release_1_replays_every_thread_it_wrote_as_recorded(written: str) -> None:
    with open_saver(written) as saver:
        results = {
            kind: replay_thread(release_app.release_1(), saver, f"{RECORDED}{kind}")
            for kind in KINDS
        }
    assert {kind: r.ok for kind, r in results.items()} == dict.fromkeys(KINDS, True)
    # a killed run's recording stops mid-run; the replay goes on past it, uncompared
    mid_run = {kind for kind, r in results.items() if r.ends_mid_run}
    assert mid_run == {"crashed-write", "crashed-merge"}
    assert all(results[kind].replayed > results[kind].checkpoints for kind in mid_run)


def test_a_release_without_the_node_a_thread_is_parked_in_replays_on_past_it(
    written: str,
) -> None:
    with open_saver(written) as saver:
        result = replay_thread(release_app.remove_node(), saver, f"{RECORDED}parked")
        (last,) = saver.list(release_app.config(f"{RECORDED}parked"), limit=1)
    found = result.divergence
    assert found is not None and not result.ends_mid_run
    assert (found.kind, found.node) == ("trajectory", "publish")
    assert found.step == last.metadata["step"] + 1  # where the recorded run stopped to ask
