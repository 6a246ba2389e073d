"""Applying the declared schema migrations to a loaded checkpoint, one span each."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple

from langgraph.checkpoint.otel import names
from langgraph.checkpoint.otel.analysis.hashing import StateHasher
from langgraph.checkpoint.otel.core.calls import LoadCall, NextVersion, config_attributes
from langgraph.checkpoint.otel.core.scope_state import ScopeStates, scope_of
from langgraph.checkpoint.otel.core.telemetry import Telemetry
from langgraph.checkpoint.otel.options import InstrumentOptions


class Migrator:
    """Migrates the checkpoints the runs of one instrumented saver load."""

    def __init__(
        self,
        options: InstrumentOptions,
        telemetry: Telemetry,
        states: ScopeStates,
        hasher: StateHasher,
    ) -> None:
        self._options = options
        self._telemetry = telemetry
        self._states = states
        self._hasher = hasher

    def apply(
        self, call: LoadCall, loaded: CheckpointTuple, next_version: NextVersion
    ) -> CheckpointTuple:
        """The loaded checkpoint with the declared migrations applied, one span each.

        The channels a migration changed get a new version (above every version in the
        checkpoint), and the run's first put stores them as written, so the migrated values
        persist instead of the stored ones. Raises `SchemaMigrationError`.
        """
        assert call.migration is not None and self._options.migrations is not None
        written, running = call.migration
        path = self._options.migrations.path(written, running)
        checkpoint = loaded.checkpoint
        values: dict[str, Any] = dict(checkpoint.get("channel_values") or {})
        attributes = config_attributes(loaded.config)
        for step in path:
            span_attributes = {
                **attributes,
                names.MIGRATION_FROM: step.source,
                names.MIGRATION_TO: step.target,
            }
            with self._telemetry.operation(
                names.SPAN_MIGRATE, "migrate", span_attributes, run=call.run_trace
            ):
                values = step.apply(values)
        original = checkpoint.get("channel_values") or {}
        changed = sorted(c for c in values if c not in original or _differs(values[c], original[c]))
        dropped = set(original) - set(values)
        versions: dict[str, Any] = {
            c: v for c, v in (checkpoint.get("channel_versions") or {}).items() if c not in dropped
        }
        if changed:
            bumped = next_version(max(versions.values(), default=None), None)
            versions.update(dict.fromkeys(changed, bumped))
        scope = scope_of(loaded.config)
        self._hasher.forget(lambda key: key == scope)
        self._states.note_migrated(scope, {c: versions[c] for c in changed})
        migrated: Checkpoint = {
            **checkpoint,
            "channel_values": values,
            "channel_versions": versions,
        }
        return CheckpointTuple(
            loaded.config, migrated, loaded.metadata, loaded.parent_config, loaded.pending_writes
        )


def _differs(new: Any, old: Any) -> bool:
    """Whether a migrated channel value differs from the loaded one (unsure: it does)."""
    if new is old:
        return False
    try:
        return bool(new != old)
    except Exception:
        return True
