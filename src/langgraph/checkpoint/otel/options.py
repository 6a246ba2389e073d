"""Validated public options of the instrumentation, loadable from environment variables."""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from langgraph.checkpoint.otel.migrations import Migrations

logger = logging.getLogger("langgraph.checkpoint.otel")

ENV_PREFIX = "LANGGRAPH_OTEL_"
CODE_ONLY = frozenset({"redact", "on_divergence", "divergence", "migrations"})
"""Options that are objects and can only be given in code, not as environment variables."""

INSTRUMENT_PARAMETERS = ("tracer_provider", "meter_provider")
"""Keyword arguments of `instrument()` that are not options (so not environment variables)."""
_HINTS = {
    "tracer": "pass tracer_provider= (a TracerProvider; instrument() gets its own tracer from it)",
    "meter": "pass meter_provider= (a MeterProvider; instrument() gets its own meter from it)",
}

_ENV_WARNED: set[str] = set()
_ENV_LOCK = threading.Lock()


def _nearest(name: str, candidates: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _did_you_mean(name: str, candidates: Iterable[str]) -> str:
    nearest = _nearest(name, candidates)
    return f"; did you mean {nearest!r}?" if nearest else ""


DivergenceKind = Literal[
    "state",
    "trajectory",
    "tool_arguments",
    "duplicate_tool_call",
    "repeated_side_effect",
    "concurrent_write",
]
DETECTORS: tuple[DivergenceKind, ...] = get_args(DivergenceKind)


CONTROL_TOOLS = frozenset({"transfer_to_*", "transfer_back_to_*", "task"})
"""Handoff and delegation tools of langgraph-supervisor and langgraph-swarm
(``transfer_to_<agent>``, ``transfer_back_to_<supervisor>``) and deepagents (``task``): they move
control to another agent and have no side effect of their own, so running them again is not a
duplicate, and `replay` runs them for real (they route with LangGraph `Command`s)."""


class DivergencePolicy(BaseModel):
    """What counts as a divergence. The defaults give no finding on deterministic replays."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ValueError(f"invalid DivergencePolicy: {_problems(exc)}") from None

    @model_validator(mode="before")
    @classmethod
    def _check_names(cls, data: Any) -> Any:
        """Unknown fields and detector names fail with the nearest valid name."""
        if not isinstance(data, Mapping):
            return data
        fields = sorted(cls.model_fields)
        for key in data:
            if key not in cls.model_fields:
                raise ValueError(
                    f"unknown field {key!r}{_did_you_mean(str(key), fields)} "
                    f"(valid fields: {', '.join(fields)})"
                )
        detectors = data.get("detectors")
        if isinstance(detectors, str):
            raise ValueError(
                f"detectors must be a set of detector names, e.g. {{{detectors!r}}}, "
                f"not the string {detectors!r}"
            )
        if isinstance(detectors, Iterable):
            for name in detectors:
                if name not in DETECTORS:
                    raise ValueError(
                        f"unknown detector {name!r}{_did_you_mean(str(name), DETECTORS)} "
                        f"(valid detectors: {', '.join(DETECTORS)})"
                    )
        return data

    detectors: frozenset[DivergenceKind] = frozenset(DETECTORS)
    """Detectors that run."""
    ignore_channels: frozenset[str] = frozenset()
    """Channels whose hashes are never compared (timestamps, counters, scratch space)."""
    compare_tool_args: bool = True
    """Whether the same tool called with other arguments is a trajectory departure."""
    repeatable_tools: frozenset[str] = frozenset()
    """Tools safe to run again with the same arguments (read-only lookups, a multi-agent
    harness's handoffs): never reported as `duplicate_tool_call`. A name may be a shell-style
    pattern (``transfer_to_*``)."""
    control_tools: frozenset[str] = CONTROL_TOOLS
    """Handoff and delegation tools (names or shell-style patterns): repeatable, and run for
    real by `replay`. The default names those of langgraph-supervisor, langgraph-swarm and
    deepagents (`CONTROL_TOOLS`); ``frozenset()`` declares none."""
    window: int = Field(default=50, ge=1, le=10_000)
    """At most this many checkpoints after the fork point are compared."""

    def is_repeatable(self, tool: str) -> bool:
        """Whether `tool` is declared safe to run again (by name or pattern), a control tool
        included."""
        return matches_any(tool, self.repeatable_tools) or self.is_control(tool)

    def is_control(self, tool: str) -> bool:
        """Whether `tool` is a handoff or delegation tool (`control_tools`)."""
        return matches_any(tool, self.control_tools)

    @property
    def stored(self) -> dict[str, Any]:
        """The fields that differ from the default, JSON-compatible (sets as sorted lists):
        what checkpoints and spans carry of the policy a run applies ({} for the default)."""
        default = _DEFAULT_FIELDS
        out: dict[str, Any] = {}
        for name in _STORED_FIELDS:
            value = getattr(self, name)
            if value != default[name]:
                out[name] = sorted(value) if isinstance(value, frozenset) else value
        return out

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> DivergencePolicy:
        """The policy a stored value (`stored`) describes; fields that are unknown or do not
        validate are left at their default (stored data never fails a reader)."""
        policy = cls()
        for name in _STORED_FIELDS:
            if name in stored:
                try:
                    policy = cls(**{**policy.model_dump(), name: stored[name]})
                except ValueError:
                    continue
        return policy

    def adding(self, other: DivergencePolicy) -> DivergencePolicy:
        """This policy with `other`'s declarations added: repeatable tools and ignored
        channels united (what an offline command's flags do to the stored policy)."""
        return self.model_copy(
            update={
                "repeatable_tools": self.repeatable_tools | other.repeatable_tools,
                "ignore_channels": self.ignore_channels | other.ignore_channels,
            }
        )


_STORED_FIELDS = (
    "detectors",
    "ignore_channels",
    "compare_tool_args",
    "repeatable_tools",
    "control_tools",
)
"""What a stored policy carries (`window` bounds the online watch only)."""
_DEFAULT_FIELDS = {name: field.default for name, field in DivergencePolicy.model_fields.items()}


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` is one of `patterns` or matches one of the shell-style ones."""
    if name in patterns:
        return True
    return any(fnmatch.fnmatchcase(name, p) for p in patterns if any(c in p for c in "*?["))


class InstrumentOptions(BaseModel):
    """Options of `instrument()`; each can also be set as ``LANGGRAPH_OTEL_<NAME>``.

    Keyword arguments given to `instrument()` win over environment variables.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    enabled: bool = True
    """Emit telemetry. When false the wrapper only delegates (and still mirrors capabilities)."""

    store_hashes: bool = True
    """Store the state hash and per-channel hashes in each checkpoint's metadata."""

    hash_cache_size: int = Field(default=10_000, ge=16, le=10_000_000)
    """Entries in each bounded cache of channel digests (per wrapper)."""

    hash_memo_bytes: int = Field(default=64 * 1024 * 1024, ge=0, le=1 << 40)
    """Bound, in bytes of their canonical encoding, on the message lists that incremental
    hashing keeps alive (least recently used dropped first; 0 keeps none)."""

    ok_write_spans: bool = False
    """Also give a `langgraph.checkpoint.put_writes` span to the writes of tasks that finished
    normally (outcome ok). By default only error, interrupt and resume writes get one: an ok
    task's node is on the put that applies its writes, and every call is counted in
    `task.outcomes` and timed in `operation.duration` either way."""

    max_channel_events: int = Field(default=64, ge=0, le=10_000)
    """At most this many `langgraph.channel` events per put span (largest changes first)."""

    capture_content: bool = False
    """Opt-in: allow content in telemetry (values pass through `redact` and `content_max_bytes`)."""

    redact: Callable[[str, Any], Any] | None = None
    """Redaction hook ``(channel, value) -> value`` applied to every captured value."""

    content_max_bytes: int = Field(default=4096, ge=0, le=1_048_576)
    """Cap on the size of one captured value."""

    divergence: DivergencePolicy = DivergencePolicy()
    """What the divergence detectors compare after a resume (see `DivergencePolicy`)."""

    on_divergence: Callable[[Any], None] | None = None
    """Called with each `detectors.Finding` after its checkpoint is stored; an exception it raises
    propagates to the graph (strict mode, as Temporal fails a non-deterministic workflow)."""

    resume_trace: Literal["link", "continue"] = "link"
    """How a run that resumes a thread (input None or a `Command`, no explicit checkpoint: an
    interrupt's answer, a crash or error resume) is traced. ``link``: its own trace, linked to
    the put span that wrote the checkpoint it resumes. ``continue``: a child of that put span,
    in the writer's trace, across processes and restarts, so an interrupt, the human's answer
    and the rest of the work are one trace (the library reads the checkpoint once more when
    such a run is called, to know its writer)."""

    messages_channel: str = "messages"
    """The channel holding LangChain messages, read for tool calls (and the message history's
    channel first, when it holds messages)."""

    message_history: bool = True
    """Count the message history (messages and an estimate of its tokens, never content) on
    each put that changes it, and report when it shrinks (see docs/telemetry.md)."""

    token_counter: str | Callable[[Any], int] = "approximate"
    """How the history's tokens are estimated: ``approximate`` (LangChain's
    `count_tokens_approximately`), ``tiktoken`` or ``tiktoken:<encoding>`` (only where
    tiktoken imports and its encoding loads), or, in code, a callable ``messages -> int``
    (LangChain's ``token_counter`` convention; called with one message at a time)."""

    context_window: int | None = Field(default=None, ge=1, le=1_000_000_000)
    """The model's context window in tokens (``128000``, ``128k``, ``1m``): puts then carry the
    history's share of it (`langgraph.messages.window_share`) and record it in a histogram."""

    schema_version: str | None = Field(default=None, min_length=1, max_length=64)
    """The application's state schema version, recorded on every put (span attribute and
    stored telemetry). A run resuming a checkpoint written under another version gets a
    `langgraph.schema.mismatch` event on its resume span and is counted."""

    migrations: Migrations | None = None
    """Declared migrations between schema versions (`Migrations`), applied to the checkpoint a
    run resumes when it was written under another `schema_version`; a version with no path to
    the running one fails the run with `SchemaMigrationError`."""

    @field_validator("context_window", mode="before")
    @classmethod
    def _window_text(cls, value: Any) -> Any:
        """``128k`` and ``1m`` as numbers; other text is left to the integer check."""
        if not isinstance(value, str):
            return value
        text = value.strip().lower().replace("_", "")
        for suffix, factor in (("k", 1_000), ("m", 1_000_000)):
            if text.endswith(suffix) and text[:-1].replace(".", "", 1).isdigit():
                return int(float(text[:-1]) * factor)
        if not text.lstrip("-").isdigit():
            raise ValueError(f"a number of tokens is expected (128000, 128k, 1m), not {value!r}")
        return text

    @field_validator("token_counter")
    @classmethod
    def _usable_counter(cls, value: Any) -> Any:
        """A counter name is known and usable here (``tiktoken``: it imports and its encoding
        loads)."""
        if not isinstance(value, str) or value == "approximate":
            return value
        kind, _, encoding = value.partition(":")
        if kind != "tiktoken":
            raise ValueError(
                f"unknown token counter {value!r}: use 'approximate', 'tiktoken' or "
                "'tiktoken:<encoding>', or pass a callable (messages -> int) in code"
            )
        try:
            tiktoken = importlib.import_module("tiktoken")
            tiktoken.get_encoding(encoding or "o200k_base")
        except Exception as exc:  # any failure means: not usable here
            raise ValueError(
                f"{value!r} is not usable here ({type(exc).__name__}: {exc}); install tiktoken "
                "and make its encoding available offline (TIKTOKEN_CACHE_DIR), or use "
                "'approximate'"
            ) from None
        return value

    @classmethod
    def load(
        cls, overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None
    ) -> InstrumentOptions:
        """Build options from ``LANGGRAPH_OTEL_*`` variables, then `overrides`.

        Raises `ValueError` naming the bad option and value.
        """
        environ = os.environ if environ is None else environ
        _warn_about_environment(environ, cls.model_fields)
        values: dict[str, Any] = {}
        for name in cls.model_fields:
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None and name not in CODE_ONLY:
                values[name] = raw
        unknown = sorted(set(overrides) - set(cls.model_fields))
        if unknown:
            known = sorted(cls.model_fields)
            hints = "".join(f"; {name!r}: {_option_hint(name, known)}" for name in unknown)
            raise TypeError(
                f"instrument() got unknown option(s) {', '.join(map(repr, unknown))}{hints}; "
                f"known options: {', '.join(known)} (and instrument()'s "
                f"{', '.join(INSTRUMENT_PARAMETERS)})"
            )
        values.update(overrides)
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ValueError(
                f"invalid langgraph-checkpoint-otel option: {_problems(exc)}"
            ) from None


def _option_hint(name: str, known: Iterable[str]) -> str:
    """What to do about the unknown `instrument()` option `name`."""
    if name in _HINTS:
        return _HINTS[name]
    nearest = _nearest(name, [*known, *INSTRUMENT_PARAMETERS])
    return f"did you mean {nearest!r}?" if nearest else "no similar option"


def _problems(exc: ValidationError) -> str:
    """One line per validation error: where, the bad input, and pydantic's message."""
    parts = []
    for e in exc.errors():
        where = ".".join(map(str, e["loc"]))
        message = e["msg"].removeprefix("Value error, ")
        parts.append(f"{where}={e.get('input')!r}: {message}" if where else message)
    return "; ".join(parts)


def _warn_about_environment(environ: Mapping[str, str], fields: Iterable[str]) -> None:
    """Log once per process and variable each ``LANGGRAPH_OTEL_*`` variable that is ignored."""
    options = sorted(f for f in fields if f not in CODE_ONLY)
    settable = [ENV_PREFIX + f.upper() for f in options]
    for variable in environ:
        if not variable.startswith(ENV_PREFIX) or variable in settable:
            continue
        name = variable.removeprefix(ENV_PREFIX).lower()
        if name in CODE_ONLY:
            reason = f"{name!r} can only be given in code: instrument(saver, {name}=...)"
        else:
            nearest = _nearest(name, options)
            hint = f"; did you mean {ENV_PREFIX}{nearest.upper()}?" if nearest else ""
            reason = "no such option" + hint
        with _ENV_LOCK:
            if variable in _ENV_WARNED:
                continue
            _ENV_WARNED.add(variable)
        logger.warning(
            "langgraph-checkpoint-otel: ignoring environment variable %s (%s); valid variables: %s",
            variable,
            reason,
            ", ".join(settable),
        )
