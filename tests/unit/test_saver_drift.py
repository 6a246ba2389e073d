"""Drift between LangGraph and the wrapper: what a LangGraph release adds to, removes from or
changes in `BaseCheckpointSaver`, or in the LangGraph functions `_langgraph/` patches, fails
here with what to do.

`InstrumentedSaver` (core/saver.py) subclasses `BaseCheckpointSaver` for its type, not for its
behaviour: a method the wrapper does not define is found on the base class before `__getattr__`
could forward it to the inner saver. So a method LangGraph adds later would be answered by the
base class (`NotImplementedError`, or a default that ignores the inner saver), unreported,
instead of delegated. Hence (`saver_drift`):

- every attribute `BaseCheckpointSaver` defines (public or private; dunders that are methods)
  is defined by the wrapper itself (`InstrumentedSaver`, or `_Capabilities`, the optional
  methods it mirrors per inner saver), or named in `INHERITED` with the reason it may be;
- each one the wrapper defines reads as the base's (sync or async, parameter names, kinds and
  defaults; annotations aside), or is named in `DIFFERENCES` with the reason;
- the wrapper defines no method the base no longer has.

`BASE_SNAPSHOT` records the base as the supported releases have it (`base_changes`): a release
that adds, removes or changes an attribute fails here even where someone listed it in
`INHERITED` carelessly, so each change is looked at once and the snapshot updated.

The LangGraph functions `_langgraph/loop.py` and `_langgraph/graph_calls.py` replace (their
presence is tests/integration/test_langgraph_internals.py's) are checked the same way (`internal_drift`):
each one's flavour and the parameters its replacement reads or passes on by position
(`PATCHED`, `PER_LOOP`). Runtime: well under a second.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

import langgraph.checkpoint.otel as otel_package
from langgraph.checkpoint.otel import InstrumentedSaver, instrument
from langgraph.checkpoint.otel._langgraph import loop
from langgraph.checkpoint.otel.core.saver import _Capabilities

# --------------------------------------------------------------------------------------------
# BaseCheckpointSaver
# --------------------------------------------------------------------------------------------

INHERITED: dict[str, str] = {
    # name -> why the wrapper may answer it with BaseCheckpointSaver's own implementation
    # rather than the inner saver's. Empty: the wrapper delegates everything the base defines.
    # An entry needs a reason a reviewer can check, e.g. "a pure helper of the base class that
    # reads nothing of the saver and that no saver overrides".
}

DIFFERENCES: dict[str, str] = {
    # name -> why the wrapper's attribute does not read as the base's
    "__init__": "the wrapper is built around an inner saver and its observer; the base's "
    "(serde) is not called: the serializer is the inner saver's",
    "serde": "a class attribute on the base; on the wrapper a property reading and setting the "
    "inner saver's serializer (the wrapper has none of its own)",
}

BASE_SNAPSHOT: dict[str, str] = {
    # BaseCheckpointSaver as describe() reads it, the same on the oldest supported release
    # (langgraph-checkpoint 4.3.0, scripts/langgraph_versions/oldest.txt) and on 4.3.2. Where
    # supported releases come to differ, say which has what here.
    "__init__": "def (self, *, serde=None)",
    "acopy_thread": "async def (self, source_thread_id, target_thread_id)",
    "adelete_for_runs": "async def (self, run_ids)",
    "adelete_thread": "async def (self, thread_id)",
    "aget": "async def (self, config)",
    "aget_delta_channel_history": "async def (self, *, config, channels)",
    "aget_tuple": "async def (self, config)",
    "alist": "async generator (self, config, *, filter=None, before=None, limit=None)",
    "aprune": "async def (self, thread_ids, *, strategy='keep_latest')",
    "aput": "async def (self, config, checkpoint, metadata, new_versions)",
    "aput_writes": "async def (self, config, writes, task_id, task_path='')",
    "config_specs": "property",
    "copy_thread": "def (self, source_thread_id, target_thread_id)",
    "delete_for_runs": "def (self, run_ids)",
    "delete_thread": "def (self, thread_id)",
    "get": "def (self, config)",
    "get_delta_channel_history": "def (self, *, config, channels)",
    "get_next_version": "def (self, current, channel)",
    "get_tuple": "def (self, config)",
    "list": "def (self, config, *, filter=None, before=None, limit=None)",
    "prune": "def (self, thread_ids, *, strategy='keep_latest')",
    "put": "def (self, config, checkpoint, metadata, new_versions)",
    "put_writes": "def (self, config, writes, task_id, task_path='')",
    "serde": "attribute",
    "with_allowlist": "def (self, extra_allowlist)",
}

SAVER_MODULE = "src/langgraph/checkpoint/otel/core/saver.py"
THIS = "tests/unit/test_saver_drift.py"

_NOT_CHECKED_DUNDERS = frozenset({"__annotate__", "__annotate_func__", "__init_subclass__"})
"""Class machinery Python itself puts in a class's namespace (3.14's annotation function)."""


def describe(attribute: object) -> str:
    """How a class attribute reads to its callers: flavour and signature, annotations aside.

    A generator function reads as ``def`` (called, both give an iterator); an ``async def``
    and an async generator differ (one is awaited, the other iterated).
    """
    if isinstance(attribute, property):
        return "property (settable)" if attribute.fset is not None else "property"
    prefix = ""
    if isinstance(attribute, staticmethod | classmethod):
        prefix, attribute = f"{type(attribute).__name__} ", attribute.__func__
    if not callable(attribute):
        return "attribute"
    if inspect.isasyncgenfunction(attribute):
        flavour = "async generator"
    elif inspect.iscoroutinefunction(attribute):
        flavour = "async def"
    else:
        flavour = "def"
    return f"{prefix}{flavour} {_bare(inspect.signature(attribute))}"


def _bare(signature: inspect.Signature) -> str:
    """`signature` without annotations: names, kinds (``/``, ``*``, ``**``) and defaults."""
    parameters = [
        p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()
    ]
    return str(signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty))


def base_attributes(base: type) -> dict[str, object]:
    """What `base` and its LangGraph ancestors define (not `Generic`/`object`'s), by name: every
    attribute but the dunders that are class machinery rather than methods."""
    found: dict[str, object] = {}
    for cls in reversed(base.__mro__):
        if cls in BaseCheckpointSaver.__mro__[1:]:  # Generic, object
            continue
        for name, value in vars(cls).items():
            dunder = name.startswith("__") and name.endswith("__")
            if dunder and (name in _NOT_CHECKED_DUNDERS or not callable(value)):
                continue
            found[name] = value
    return found


def saver_drift(
    base: type,
    wrapper: type = InstrumentedSaver,
    mixins: Sequence[type] = (_Capabilities,),
    *,
    inherited: Mapping[str, str] = INHERITED,
    differences: Mapping[str, str] = DIFFERENCES,
) -> list[str]:
    """What the wrapper leaves unsettled about `base`'s attributes, one message each.

    `wrapper` defines an attribute when one of its own classes (those that are not
    `BaseCheckpointSaver` or its ancestors) or one of the `mixins` has it in its namespace.
    """
    owners = [c for c in wrapper.__mro__ if not issubclass(BaseCheckpointSaver, c)]
    owners += list(mixins)
    ours = {name: value for cls in reversed(owners) for name, value in vars(cls).items()}
    theirs = base_attributes(base)
    base_name, wrapper_name = base.__name__, wrapper.__name__
    problems: list[str] = []
    for name, value in sorted(theirs.items()):
        if name in inherited:
            if name in ours:
                problems.append(
                    f"{base_name}.{name} is in INHERITED but {wrapper_name} defines it: "
                    f"drop it from INHERITED in {THIS}"
                )
            continue
        if name not in ours:
            problems.append(
                f"{base_name}.{name} (`{describe(value)}`) is not delegated: {wrapper_name} "
                "inherits it, so the base class answers a call rather than the inner saver, "
                f"unreported. Delegate it in {SAVER_MODULE} (on InstrumentedSaver if every "
                "saver has it, on _Capabilities if it is optional), or add it to INHERITED in "
                f"{THIS} with the reason it may be inherited"
            )
            continue
        wrapped, original = describe(ours[name]), describe(value)
        if name in differences:
            if wrapped == original:
                problems.append(
                    f"{wrapper_name}.{name} now reads as {base_name}'s: drop it from "
                    f"DIFFERENCES in {THIS}"
                )
        elif wrapped != original:
            problems.append(
                f"{wrapper_name}.{name} is `{wrapped}` but {base_name}.{name} is "
                f"`{original}`: give the delegation in {SAVER_MODULE} the base's signature, "
                f"or add it to DIFFERENCES in {THIS} with the reason"
            )
    for name in sorted({*inherited, *differences} - set(theirs)):
        problems.append(
            f"{base_name} has no {name} any more: drop it from INHERITED / DIFFERENCES in {THIS}"
        )
    for name in sorted(set(ours) - set(theirs)):
        if not name.startswith("_") and callable(ours[name]):
            problems.append(
                f"{wrapper_name}.{name} delegates a method {base_name} no longer has: remove "
                f"it from {SAVER_MODULE} once no supported LangGraph release has it"
            )
    return problems


def base_changes(base: type, snapshot: Mapping[str, str] = BASE_SNAPSHOT) -> list[str]:
    """How `base` differs from the recorded `snapshot`, one message per attribute."""
    now = {name: describe(value) for name, value in base_attributes(base).items()}
    problems: list[str] = []
    for name in sorted(set(now) | set(snapshot)):
        before, after = snapshot.get(name), now.get(name)
        if before == after:
            continue
        if before is None:
            change = f"is new in this LangGraph release (`{after}`)"
            todo = "delegate it in {} (on InstrumentedSaver, or on _Capabilities if optional)"
        elif after is None:
            change = "is gone in this LangGraph release"
            todo = "remove its delegation from {} once no supported release has it"
        else:
            change = f"changed from `{before}` to `{after}`"
            todo = "give its delegation in {} the new signature"
        problems.append(
            f"{base.__name__}.{name} {change}: {todo.format(SAVER_MODULE)}, then update "
            f"BASE_SNAPSHOT in {THIS}"
        )
    return problems


def test_the_wrapper_delegates_everything_the_base_checkpoint_saver_defines() -> None:
    problems = saver_drift(BaseCheckpointSaver)
    assert not problems, "\n".join(problems)


def test_the_base_checkpoint_saver_is_the_one_recorded() -> None:
    changes = base_changes(BaseCheckpointSaver)
    assert not changes, "\n".join(changes)


def _variant(name: str, **changes: Any) -> type:
    """A copy of `BaseCheckpointSaver` with attributes added or replaced (None removes one): a
    LangGraph release to come."""
    namespace = {
        k: v for k, v in vars(BaseCheckpointSaver).items() if k not in ("__dict__", "__weakref__")
    }
    for key, value in changes.items():
        if value is None:
            del namespace[key]
        else:
            namespace[key] = value
    return type(name, (), namespace)


def _drift(variant: type, *args: Any, **kwargs: Any) -> list[str]:
    """`saver_drift` of `variant`, less what it reports of the installed base: the tests below
    prove the check whatever the state of the real wrapper (that is the first test's)."""
    now = saver_drift(BaseCheckpointSaver, *args)  # with the test's own lists
    now = [p.replace("BaseCheckpointSaver", variant.__name__) for p in now]
    return [p for p in saver_drift(variant, *args, **kwargs) if p not in now]


def _changes(variant: type) -> list[str]:
    """`base_changes` of `variant`, less those of the installed base (see `_drift`)."""
    now = [
        p.replace("BaseCheckpointSaver", variant.__name__)
        for p in base_changes(BaseCheckpointSaver)
    ]
    return [p for p in base_changes(variant) if p not in now]


def test_a_method_langgraph_adds_is_reported_until_it_is_delegated() -> None:
    def fork_thread(self: Any, source_thread_id: str, target_thread_id: str) -> None:
        raise NotImplementedError

    newer = _variant("NewerSaver", fork_thread=fork_thread)
    (problem,) = _drift(newer)
    assert problem.startswith("NewerSaver.fork_thread (`def (self, source_thread_id,")
    assert "is not delegated" in problem and "core/saver.py" in problem
    (change,) = _changes(newer)
    assert change.startswith("NewerSaver.fork_thread is new in this LangGraph release")

    # a careless INHERITED entry silences the first check, never the snapshot
    assert _drift(newer, inherited={"fork_thread": "?"}) == []
    assert _changes(newer) == [change]

    class Delegating(InstrumentedSaver):
        def fork_thread(self, source_thread_id: str, target_thread_id: str) -> None:
            self.inner.fork_thread(source_thread_id, target_thread_id)  # type: ignore[attr-defined]

    assert _drift(newer, Delegating) == []


def test_a_signature_langgraph_changes_is_reported() -> None:
    async def aput_writes(
        self: Any, config: Any, writes: Any, task_id: str, task_path: str = "", *, sync: bool = True
    ) -> None:
        raise NotImplementedError

    def list_(self: Any, config: Any, *, filter: Any = None, before: Any = None) -> Iterator[Any]:
        raise NotImplementedError

    changed = _variant("ChangedSaver", aput_writes=aput_writes, list=list_)
    assert _drift(changed) == [
        "InstrumentedSaver.aput_writes is `async def (self, config, writes, task_id, "
        "task_path='')` but ChangedSaver.aput_writes is `async def (self, config, writes, "
        "task_id, task_path='', *, sync=True)`: give the delegation in "
        "src/langgraph/checkpoint/otel/core/saver.py the base's signature, or add it to "
        "DIFFERENCES in tests/unit/test_saver_drift.py with the reason",
        "InstrumentedSaver.list is `def (self, config, *, filter=None, before=None, "
        "limit=None)` but ChangedSaver.list is `def (self, config, *, filter=None, "
        "before=None)`: give the delegation in src/langgraph/checkpoint/otel/core/saver.py "
        "the base's signature, or add it to DIFFERENCES in tests/unit/test_saver_drift.py with "
        "the reason",
    ]
    assert [p.split(" changed")[0] for p in _changes(changed)] == [
        "ChangedSaver.aput_writes",
        "ChangedSaver.list",
    ]

    async def aget(self: Any, config: Any) -> Any:  # an async method made an async generator
        raise NotImplementedError
        yield

    (problem,) = _drift(_variant("AsyncGenSaver", aget=aget))
    assert "is `async def (self, config)` but AsyncGenSaver.aget is `async generator" in problem


def test_a_method_langgraph_removes_is_reported() -> None:
    older = _variant("OlderSaver", prune=None)
    assert _drift(older) == [
        "InstrumentedSaver.prune delegates a method OlderSaver no longer has: remove it from "
        "src/langgraph/checkpoint/otel/core/saver.py once no supported LangGraph release has it"
    ]
    assert _changes(older) == [
        "OlderSaver.prune is gone in this LangGraph release: remove its delegation from "
        "src/langgraph/checkpoint/otel/core/saver.py once no supported release has it, then "
        "update BASE_SNAPSHOT in tests/unit/test_saver_drift.py"
    ]


def test_stale_allow_list_entries_are_reported() -> None:
    stale = _variant("Base")
    assert _drift(
        stale, inherited={"put": "?", "gone": "?"}, differences={**DIFFERENCES, "get": "?"}
    ) == [
        "InstrumentedSaver.get now reads as Base's: drop it from DIFFERENCES in "
        "tests/unit/test_saver_drift.py",
        "Base.put is in INHERITED but InstrumentedSaver defines it: drop it from INHERITED in "
        "tests/unit/test_saver_drift.py",
        "Base has no gone any more: drop it from INHERITED / DIFFERENCES in "
        "tests/unit/test_saver_drift.py",
    ]


# --------------------------------------------------------------------------------------------
# The LangGraph functions _langgraph/ patches
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Patched:
    """A LangGraph function `_langgraph/` replaces, and what its replacement relies on."""

    target: str
    """``module:qualified.name`` where LangGraph's code finds it."""
    flavour: Literal["def", "async def", "async generator"]
    leading: str
    """The first parameters, as `describe` renders them: those the replacement reads or passes
    on by position."""
    rest: Literal["any", "keyword-only", "none"]
    """The other parameters: "any"; "keyword-only" (the replacement passes on only keywords
    after `leading`); "none"."""
    replaced_by: str
    """Where in `_langgraph/` (for the message)."""


PATCHED: tuple[Patched, ...] = (
    # the run's entry (its load claims the run): the replacement takes only `self`
    Patched("langgraph.pregel._loop:SyncPregelLoop.__enter__", "def", "(self)", "none",
            "loop.py, _wrap_loop_entries"),
    Patched("langgraph.pregel._loop:AsyncPregelLoop.__aenter__", "async def", "(self)", "none",
            "loop.py, _wrap_loop_entries"),
    # the async task runner: reads the task's config; returns the original's coroutine
    Patched("langgraph.pregel._runner:arun_with_retry", "async def", "(task)", "any",
            "loop.py, _wrap_async_tasks"),
    # update_state's writers: read `writes` at position loop._UPDATE_WRITES_ARGUMENT
    Patched("langgraph.pregel.main:_store_or_fork_delta_writes", "def",
            "(checkpointer, config, saved, checkpoint_config, channels, writes)", "any",
            "loop.py, _wrap_update_writers"),
    Patched("langgraph.pregel.main:_astore_or_fork_delta_writes", "async def",
            "(checkpointer, config, saved, checkpoint_config, channels, writes)", "any",
            "loop.py, _wrap_update_writers"),
    # checkpoint creation: create_checkpoint(checkpoint, channels, step, **kwargs)
    Patched("langgraph.pregel._loop:create_checkpoint", "def", "(checkpoint, channels, step)",
            "keyword-only", "loop.py, _noting_creation"),
    Patched("langgraph.pregel.main:create_checkpoint", "def", "(checkpoint, channels, step)",
            "keyword-only", "loop.py, _noting_creation"),
    # graph calls: read `input` and `config` from the first two arguments after `self`;
    # `stream` hands on the iterator, `astream` the async iterator LangGraph's call returns
    Patched("langgraph.pregel.main:Pregel.invoke", "def", "(self, input, config=None)", "any",
            "graph_calls.py, _wrap_invoke"),
    Patched("langgraph.pregel.main:Pregel.ainvoke", "async def", "(self, input, config=None)",
            "any", "graph_calls.py, _wrap_ainvoke"),
    Patched("langgraph.pregel.main:Pregel.stream", "def", "(self, input, config=None)", "any",
            "graph_calls.py, _wrap_stream"),
    Patched("langgraph.pregel.main:Pregel.astream", "async generator",
            "(self, input, config=None)", "any", "graph_calls.py, _wrap_astream"),
)  # fmt: skip
"""What `_langgraph/` replaces at install, once per process."""

PER_LOOP: tuple[Patched, ...] = (
    # `loop.submit` (set from the executor's __enter__) is replaced by `_Submitter.submit(fn,
    # *args, **kwargs)`
    Patched("langgraph.pregel._executor:BackgroundExecutor.submit", "def", "(self, fn)", "any",
            "loop.py, _Submitter"),
    Patched("langgraph.pregel._executor:AsyncBackgroundExecutor.submit", "def", "(self, fn)",
            "any", "loop.py, _Submitter"),
    # `loop.checkpointer_get_next_version` (the saver's get_next_version, see BASE_SNAPSHOT, or
    # this default) is replaced by `next_version(current, channel)`
    Patched("langgraph.pregel._loop:increment", "def", "(current, channel)", "none",
            "loop.py, LoopEntry.watch_steps"),
)  # fmt: skip
"""What `_langgraph/loop.py` replaces on each loop it sees enter: the functions LangGraph puts
there."""

_OURS = Path(otel_package.__file__).resolve().parent


def resolve(target: str) -> Callable[..., Any] | None:
    """LangGraph's own function at `target` (under the replacement `_langgraph/` put there, if
    installed), or None when this release has none."""
    module_name, _, path = target.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in path.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    while _is_ours(found) and hasattr(found, "__wrapped__"):
        found = found.__wrapped__
    return found  # type: ignore[no-any-return]


def _is_ours(function: object) -> bool:
    code = getattr(function, "__code__", None)
    return code is not None and Path(code.co_filename).resolve().is_relative_to(_OURS)


def internal_drift(spec: Patched, function: Callable[..., Any] | None) -> list[str]:
    """How LangGraph's `function` at `spec.target` breaks what its replacement relies on."""
    todo = (
        f"adapt the replacement in src/langgraph/checkpoint/otel/_langgraph/{spec.replaced_by}, "
        f"then its entry in {THIS}"
    )
    if function is None:
        return [f"{spec.target} is gone in this LangGraph release: {todo}"]
    read = describe(function)
    flavour = read.partition(" (")[0]
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())
    count = next(
        (
            n
            for n in range(len(parameters) + 1)
            if _bare(signature.replace(parameters=parameters[:n])) == spec.leading
        ),
        None,
    )
    problems = []
    if flavour != spec.flavour:
        problems.append(f"is now `{flavour}`, not `{spec.flavour}`")
    if count is None:
        problems.append(f"no longer starts with `{spec.leading}`")
    else:
        rest = parameters[count:]
        if spec.rest == "none" and rest:
            problems.append(f"takes more than `{spec.leading}`")
        keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
        if spec.rest == "keyword-only" and any(p.kind not in keyword for p in rest):
            problems.append(f"takes positional parameters after `{spec.leading}`")
    if not problems:
        return []
    return [f"{spec.target} ({read}) {' and '.join(problems)}: {todo}"]


@pytest.mark.parametrize("spec", PATCHED + PER_LOOP, ids=lambda spec: spec.target)
def test_what_the_replacements_rely_on_is_there(spec: Patched) -> None:
    instrument(InMemorySaver())  # installs the replacements: LangGraph's functions under them
    problems = internal_drift(spec, resolve(spec.target))
    assert not problems, "\n".join(problems)


def test_update_writers_take_writes_where_the_replacement_reads_it() -> None:
    writer = resolve("langgraph.pregel.main:_store_or_fork_delta_writes")
    assert writer is not None
    parameters = list(inspect.signature(writer).parameters)
    assert parameters.index("writes") == loop._UPDATE_WRITES_ARGUMENT


def test_every_replacement_installed_has_its_entry() -> None:
    instrument(InMemorySaver())
    installed = set()
    for module_name in {spec.target.partition(":")[0] for spec in PATCHED}:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if _is_ours(value):
                installed.add(f"{module_name}:{name}")
            elif isinstance(value, type) and value.__module__ == module_name:
                installed.update(
                    f"{module_name}:{name}.{attr}"
                    for attr, member in vars(value).items()
                    if _is_ours(member)
                )
    assert installed == {spec.target for spec in PATCHED}


def test_the_internals_check_reports_what_breaks_a_replacement() -> None:
    spec = Patched("m:create_checkpoint", "def", "(checkpoint, channels, step)", "keyword-only",
                   "loop.py, _noting_creation")  # fmt: skip

    def positional(checkpoint: Any, channels: Any, step: Any, id: Any = None) -> Any: ...

    async def renamed(checkpoint: Any, values: Any, step: Any) -> Any: ...

    def keyword(checkpoint: Any, channels: Any, step: Any, *, id: Any = None) -> Any: ...

    assert internal_drift(spec, keyword) == []
    assert internal_drift(spec, positional) == [
        "m:create_checkpoint (def (checkpoint, channels, step, id=None)) takes positional "
        "parameters after `(checkpoint, channels, step)`: adapt the replacement in "
        "src/langgraph/checkpoint/otel/_langgraph/loop.py, _noting_creation, then its entry "
        "in tests/unit/test_saver_drift.py"
    ]
    (problem,) = internal_drift(spec, renamed)
    assert "is now `async def`, not `def` and no longer starts with" in problem
    assert internal_drift(spec, None)[0].startswith("m:create_checkpoint is gone")
    entry = Patched("m:L.__enter__", "def", "(self)", "none", "loop.py, _wrap_loop_entries")

    def enter(self: Any, timeout: float | None = None) -> Any: ...

    assert "takes more than `(self)`" in internal_drift(entry, enter)[0]
