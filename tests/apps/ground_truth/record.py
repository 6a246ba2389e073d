"""``python -m ground_truth.record SPEC SCENARIO THREAD DB LOG``: record a killed scenario in
this process, which SIGKILLs itself at the scenario's kill point (no exception, no cleanup);
the world's log goes to LOG as it happens (one JSON event a line, flushed and fsynced)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from ground_truth import verdicts
from ground_truth.apps import AppSpec, build
from ground_truth.desk import World
from ground_truth.threads import Scenario, drive


class FileLog(list):  # type: ignore[type-arg]
    """A list that also appends each event to a file, durably."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._file = path.open("a", encoding="utf-8")

    def append(self, event: object) -> None:
        super().append(event)
        self._file.write(json.dumps(event) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def main(spec_json: str, scenario_json: str, thread_id: str, db: str, log: str) -> None:
    spec, scenario = AppSpec.from_json(spec_json), Scenario.from_json(scenario_json)
    conn = sqlite3.connect(db, check_same_thread=False)
    inner = SqliteSaver(conn)
    saver = inner if scenario.bare else verdicts.instrumented(inner, spec)
    world = World()
    graph = build(spec, world, saver)
    world.new_segment()
    world.log = FileLog(Path(log))
    *before, last = scenario.acts
    drive(graph, thread_id, tuple(before), world, spec)
    world.kill_at, world.really_kill = scenario.kill, True
    # sync durability: each step is stored before the next starts, so what a kill leaves is
    # the same on every run (with async it races the kill: the harness must be repeatable)
    drive(graph, thread_id, (last,), world, replace(spec, durability="sync"))
    sys.exit(3)  # the kill point was never reached


if __name__ == "__main__":
    main(*sys.argv[1:6])
