"""Declared migrations between an application's state schema versions.

    migrations = Migrations()

    @migrations.register("1.3", "1.4")
    def add_priority(values: dict[str, Any]) -> dict[str, Any]:
        return {**values, "priority": "normal"}

    saver = instrument(inner, schema_version="1.4", migrations=migrations)

A run that resumes a checkpoint written under "1.3" then sees the migrated channel values. The
path is the shortest chain of declared steps; a version without one fails the run with
`SchemaMigrationError` (which names the versions and the declared steps, never values).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

ChannelValues = dict[str, Any]
MigrationFunction = Callable[[ChannelValues], Mapping[str, Any]]
F = TypeVar("F", bound=MigrationFunction)


class SchemaMigrationError(Exception):
    """A checkpoint's schema version has no declared path to the running one, or a migration
    step raised (its exception is the `__cause__`)."""


@dataclass(frozen=True, slots=True)
class Migration:
    """One declared step: channel values of version `source` -> values of version `target`."""

    source: str
    target: str
    function: MigrationFunction

    @property
    def name(self) -> str:
        """The step's function name (for spans and errors)."""
        return str(getattr(self.function, "__qualname__", None) or repr(self.function))

    def apply(self, values: Mapping[str, Any]) -> ChannelValues:
        """The migrated values. The function gets a deep copy (where the values allow one), so
        it may change it in place and return it; channels it leaves out are dropped."""
        try:
            copied = copy.deepcopy(dict(values))
        except Exception:
            copied = dict(values)
        try:
            result = self.function(copied)
        except Exception as exc:
            raise SchemaMigrationError(
                f"schema migration {self.source!r} -> {self.target!r} ({self.name}) raised "
                f"{type(exc).__qualname__}"
            ) from exc
        if not isinstance(result, Mapping):
            raise SchemaMigrationError(
                f"schema migration {self.source!r} -> {self.target!r} ({self.name}) returned "
                f"{type(result).__qualname__}, not the channel values (a dict)"
            )
        return dict(result)


class Migrations:
    """A registry of migration steps between schema versions (see the module docstring)."""

    def __init__(self) -> None:
        self._steps: dict[str, dict[str, Migration]] = {}

    def add(self, source: str, target: str, function: MigrationFunction) -> None:
        """Declare `function` as the step from version `source` to `target`."""
        if not source or not target or source == target:
            raise ValueError(
                f"a migration needs two different versions, got {source!r} and {target!r}"
            )
        if not callable(function):
            raise TypeError(f"migration {source!r} -> {target!r} is not callable: {function!r}")
        steps = self._steps.setdefault(str(source), {})
        if str(target) in steps:
            raise ValueError(f"migration {source!r} -> {target!r} is declared twice")
        steps[str(target)] = Migration(str(source), str(target), function)

    def register(self, source: str, target: str) -> Callable[[F], F]:
        """Decorator form of `add`."""

        def declare(function: F) -> F:
            self.add(source, target, function)
            return function

        return declare

    def steps(self) -> list[Migration]:
        """Every declared step, in declaration order."""
        return [step for targets in self._steps.values() for step in targets.values()]

    def path(self, source: str, target: str) -> list[Migration]:
        """The shortest chain of steps from `source` to `target` ([] when equal).

        Raises `SchemaMigrationError` when there is none.
        """
        if source == target:
            return []
        came_from: dict[str, Migration] = {}
        queue = deque([source])
        while queue:
            version = queue.popleft()
            for nxt, step in self._steps.get(version, {}).items():
                if nxt in came_from or nxt == source:
                    continue
                came_from[nxt] = step
                if nxt == target:
                    chain = [step]
                    while chain[0].source != source:
                        chain.insert(0, came_from[chain[0].source])
                    return chain
                queue.append(nxt)
        declared = ", ".join(f"{s.source} -> {s.target}" for s in self.steps()) or "none"
        reachable = sorted(came_from)
        raise SchemaMigrationError(
            f"no schema migration path from version {source!r} to {target!r}; declared "
            f"migrations: {declared}"
            + (f"; reachable from {source!r}: {', '.join(reachable)}" if reachable else "")
        )

    def __len__(self) -> int:
        return len(self.steps())

    def __repr__(self) -> str:
        return f"Migrations({', '.join(f'{s.source}->{s.target}' for s in self.steps())})"
