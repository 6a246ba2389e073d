"""Schema versions: a checkpoint written by one release, resumed by another.

A child process runs release "1" of `schema_app` (version from LANGGRAPH_OTEL_SCHEMA_VERSION)
until its review interrupt. This process resumes the thread as release "2", on SQLite and on
PostgreSQL (whose channel values are stored per channel version, so a migrated value only
persists if it gets a new version).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command
from opentelemetry import trace

from crash_app import open_saver
from helpers import OTel, is_run_span
from langgraph.checkpoint.otel import (
    Migrations,
    SchemaMigrationError,
    instrument,
    names,
    stored_history,
)
from langgraph.checkpoint.otel.export.otlp_json import read_spans
from schema_app import build_graph, release_2_migrations
from suite_paths import APPS

APP = APPS / "schema_app.py"
THREAD = "report-7"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'app.db'}"
    else:
        yield f"postgres:{request.getfixturevalue('postgres_db')}"


def run_release_1(backend: str, spans: Path, version: str | None = "1") -> None:
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_OTEL_SCHEMA_VERSION"}
    if version is not None:
        env["LANGGRAPH_OTEL_SCHEMA_VERSION"] = version
    proc = subprocess.run(
        [sys.executable, str(APP), backend, THREAD, str(spans)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == ["approve?"]


def config() -> Any:
    return {"configurable": {"thread_id": THREAD}}


def release_2(inner: Any, otel: OTel, **options: Any) -> Any:
    """Release 2 of the app over `inner`: schema version "2", with `options`."""
    saver = instrument(
        inner,
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        schema_version="2",
        **options,
    )
    return build_graph().compile(checkpointer=saver)


def resume_span(otel: OTel) -> Any:
    (span,) = [s for s in otel.spans() if s.name == names.SPAN_RESUME]
    return span


def mismatches(otel: OTel) -> list[tuple[dict[str, Any], int]]:
    points = otel.metrics().get(names.METRIC_SCHEMA_MISMATCHES, [])
    return [(dict(p.attributes), p.value) for p in points]


def test_release_2_resumes_and_migrates_what_release_1_wrote(
    backend: str, tmp_path: Path, otel: OTel
) -> None:
    spans_1 = tmp_path / "release-1.jsonl"
    run_release_1(backend, spans_1)
    written = [s for s in read_spans(spans_1) if s.name == names.SPAN_PUT]
    assert written and {s.attributes[names.SCHEMA_VERSION] for s in written} == {"1"}

    with open_saver(backend) as inner:
        graph = release_2(inner, otel, migrations=release_2_migrations())
        saver = graph.checkpointer
        result = graph.invoke(Command(resume="yes"), config())
        # release 2's node read the renamed and the added field
        assert result["log"] == ["input", "draft", "review:yes", "finish:quarterly report:normal"]

        resume = resume_span(otel)
        assert resume.attributes[names.SCHEMA_VERSION] == "2"
        assert [(e.name, dict(e.attributes)) for e in resume.events] == [
            (
                names.EVENT_SCHEMA_MISMATCH,
                {names.SCHEMA_WRITTEN_VERSION: "1", names.SCHEMA_RUNNING_VERSION: "2"},
            )
        ]
        assert mismatches(otel) == [
            ({names.SCHEMA_WRITTEN_VERSION: "1", names.SCHEMA_RUNNING_VERSION: "2"}, 1)
        ]
        # one span per step, in order, in the run's trace
        migrate = [s for s in otel.spans() if s.name == names.SPAN_MIGRATE]
        assert [
            (s.attributes[names.MIGRATION_FROM], s.attributes[names.MIGRATION_TO]) for s in migrate
        ] == [("1", "1.5"), ("1.5", "2")]
        assert {s.context.trace_id for s in migrate} == {resume.context.trace_id}
        # every checkpoint release 2 wrote is of version 2
        puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
        assert puts and {s.attributes[names.SCHEMA_VERSION] for s in puts} == {"2"}
        latest = stored_history(saver, config(), limit=1)[0]
        assert latest.metadata[names.METADATA_KEY][names.META_SCHEMA] == "2"

    # the migrated values persist: a bare saver (another process would read the same) sees
    # the renamed and the added channel, though the run never wrote them itself
    with open_saver(backend) as bare:
        stored = bare.get_tuple(config())
        assert stored is not None
        values = stored.checkpoint["channel_values"]
        assert values["subject"] == "quarterly report"
        assert values["meta"] == {"priority": "normal"}
        assert "title" not in values

    # a later run of release 2 finds its own version: no mismatch, no migration
    otel.clear()
    with open_saver(backend) as inner:
        graph = release_2(inner, otel, migrations=release_2_migrations())
        saver = graph.checkpointer
        graph.invoke({"log": ["again"]}, config())
        resume = resume_span(otel)
        assert resume.events == ()
        assert names.SPAN_MIGRATE not in otel.span_names()


def test_without_migrations_a_mismatch_is_reported_and_the_run_goes_on(
    tmp_path: Path, otel: OTel
) -> None:
    backend = f"sqlite:{tmp_path / 'app.db'}"
    run_release_1(backend, tmp_path / "release-1.jsonl")
    with open_saver(backend) as inner:
        result = release_2(inner, otel).invoke(Command(resume="ok"), config())
    # release 2 reads fields release 1 never wrote: what the event warns about
    assert result["log"][-1] == "finish:None:None"
    event = resume_span(otel).events[0]
    assert event.name == names.EVENT_SCHEMA_MISMATCH
    assert dict(event.attributes) == {
        names.SCHEMA_WRITTEN_VERSION: "1",
        names.SCHEMA_RUNNING_VERSION: "2",
    }
    assert names.SPAN_MIGRATE not in otel.span_names()


def test_an_unversioned_checkpoint_resumed_by_a_versioned_release(
    tmp_path: Path, otel: OTel
) -> None:
    backend = f"sqlite:{tmp_path / 'app.db'}"
    run_release_1(backend, tmp_path / "release-1.jsonl", version=None)
    migrations = Migrations()
    migrations.add("unversioned", "1", lambda values: values)
    migrations.add("1", "2", release_2_migrations().path("1", "2")[0].function)
    with open_saver(backend) as inner:
        result = release_2(inner, otel, migrations=migrations).invoke(
            Command(resume="ok"), config()
        )
    assert result["log"][-1] == "finish:quarterly report:None"
    assert mismatches(otel) == [
        ({names.SCHEMA_WRITTEN_VERSION: names.UNVERSIONED, names.SCHEMA_RUNNING_VERSION: "2"}, 1)
    ]


def test_a_version_without_a_path_fails_the_run_clearly(tmp_path: Path, otel: OTel) -> None:
    backend = f"sqlite:{tmp_path / 'app.db'}"
    run_release_1(backend, tmp_path / "release-1.jsonl")
    migrations = Migrations()
    migrations.add("1.5", "2", lambda values: values)  # nothing leads from "1"
    with open_saver(backend) as inner:
        before = inner.get_tuple(config())
        graph = release_2(inner, otel, migrations=migrations)
        with pytest.raises(SchemaMigrationError) as raised:
            graph.invoke(Command(resume="yes"), config())
        assert str(raised.value) == (
            "no schema migration path from version '1' to '2'; declared migrations: 1.5 -> 2"
        )
        # the run ended there (its span no longer current) ...
        assert not trace.get_current_span().get_span_context().is_valid
        (run,) = [s for s in otel.spans() if is_run_span(s)]
        assert run.attributes[names.RUN_OUTCOME] == "error"
        assert run.attributes[names.ERROR_TYPE] == "SchemaMigrationError"
        # ... and nothing was written: the thread waits at its interrupt, as release 1 left it
        after = inner.get_tuple(config())
        assert before is not None and after is not None
        assert after.checkpoint["id"] == before.checkpoint["id"]


def test_a_failing_step_fails_the_run_with_its_cause(tmp_path: Path, otel: OTel) -> None:
    backend = f"sqlite:{tmp_path / 'app.db'}"
    run_release_1(backend, tmp_path / "release-1.jsonl")
    migrations = Migrations()

    @migrations.register("1", "2")
    def broken(values: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("subject")

    with open_saver(backend) as inner, pytest.raises(SchemaMigrationError) as raised:
        release_2(inner, otel, migrations=migrations).invoke(Command(resume="yes"), config())
    assert isinstance(raised.value.__cause__, KeyError)
    assert "broken" in str(raised.value) and "KeyError" in str(raised.value)
    (span,) = [s for s in otel.spans() if s.name == names.SPAN_MIGRATE]
    assert span.status.status_code.name == "ERROR"
    assert span.attributes[names.ERROR_TYPE] == "SchemaMigrationError"


def test_migrations_find_the_shortest_declared_path() -> None:
    migrations = Migrations()
    for source, target in [("1", "2"), ("2", "3"), ("3", "4"), ("2", "4"), ("5", "1")]:
        migrations.add(source, target, lambda values: values)
    assert [(s.source, s.target) for s in migrations.path("1", "4")] == [("1", "2"), ("2", "4")]
    assert migrations.path("3", "3") == []
    with pytest.raises(SchemaMigrationError, match="reachable from '3': 4"):
        migrations.path("3", "1")
    with pytest.raises(ValueError, match="declared twice"):
        migrations.add("1", "2", lambda values: values)
    with pytest.raises(ValueError, match="two different versions"):
        migrations.add("1", "1", lambda values: values)


def test_the_schema_version_option_is_validated() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    with pytest.raises(ValueError, match="schema_version"):
        instrument(InMemorySaver(), schema_version="")
    with pytest.raises(ValueError, match="migrations"):
        instrument(InMemorySaver(), migrations={"1": "2"})
