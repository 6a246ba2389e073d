"""Side by side with the peer instrumentations: OpenLIT 1.45, the official GenAI LangChain
instrumentation and OpenInference, instrumented together with this library in either order.

The matrix: peers (OpenLIT on PostgreSQL, GenAI, OpenInference, all three) x order (the peer
instrumented first, or the library set up first) x the library's route (`instrument()` on the
saver, or the zero-code `LangGraphCheckpointInstrumentor`) x sync/async. Each cell runs the real
ReAct agent (`agents.react_agent`, `ScriptedChatModel`: two rounds of parallel tool calls) on
PostgreSQL with the real SDK, then writes once outside a run (`update_state`) and reads the
state, and is compared with a bare run (no instrumentation at all) of the same code.

Asserted per cell, one behaviour per test: nothing raises; each stored checkpoint has exactly
one put span and no peer span doubles a checkpoint call (OpenLIT wraps `PostgresSaver.put` /
`get_tuple` and `AsyncPostgresSaver.aput` / `aget_tuple` with a span of its own: see
`core/peers.py`); the run is one trace whose root is the peer's workflow/agent span, with every
checkpoint span of the library under it and no run span of the library's own; results, state
and stored checkpoints are the bare run's.

Isolation: GenAI and OpenInference uninstrument cleanly (checked: every function and `wrapt`
proxy of the loaded ``langchain*``/``langgraph*`` modules and classes is the same object after
as before), so their cells run in this process. OpenLIT's `uninstrument()` is a placeholder
that restores nothing (checked too) and it only traces through the global tracer provider, so
its cells run in subprocesses (this file run as a script), one per order, launched together;
GenAI and OpenInference join OpenLIT there for the "all" cells. 17-25 s in all here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import wrapt
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agents
from helpers import fresh_database
from langgraph.checkpoint.otel import instrument, names
from langgraph.checkpoint.otel.core.instrumentor import LangGraphCheckpointInstrumentor
from suite_paths import pythonpath

Saver = BaseCheckpointSaver[Any]
Outcome = dict[str, Any]

OPENLIT_VERSION = "1.45.0"
PEER_SETS: dict[str, tuple[str, ...]] = {
    "openlit": ("openlit",),
    "genai": ("genai",),
    "openinference": ("openinference",),
    "all": ("openlit", "genai", "openinference"),
}
OPENLIT_INSTRUMENTORS = ("langgraph", "langchain", "psycopg", "psycopg-pool")
"""What OpenLIT instruments here; `openlit.init()` skips its other 66 instrumentors."""
ISOLATED = ("openlit", "all")
"""Peer sets with OpenLIT, which cannot uninstrument: run in subprocesses."""
ORDERS = ("peer_first", "library_first")
ROUTES = ("instrument", "instrumentor")
MODES = ("sync", "async")
ROOT_SCOPE = {
    "openlit": "openlit.instrumentation.langgraph",  # invoke_workflow {graph} (Pregel.invoke)
    "genai": names.SCOPE,  # the library's run span, opened before GenAI's invoke_agent
    "openinference": names.SCOPE,  # the library's run span, parent of the graph's CHAIN span
    "all": "openlit.instrumentation.langgraph",  # OpenLIT wraps invoke, outside the others
}


def root_scopes(cell: Cell) -> set[str]:
    """Where OpenLIT is on, whichever of its and the library's wrappers of the graph's `invoke`
    is outer (the later one installed) gives the root; the other is its child."""
    return {ROOT_SCOPE[cell.peers], names.SCOPE}


"""The scope of the run's root span: OpenLIT's `invoke_workflow` where OpenLIT wraps the graph's
`invoke` (its span is current when the graph is called, so the run joins it); else the
library's run span, opened when the graph is called, before LangChain's callbacks start, so the
peers' spans of the graph are its children (`core/graph_runs.py`)."""
CHECKPOINT_CALL_SPANS = frozenset(
    {names.SPAN_PUT, names.SPAN_PUT_WRITES, names.SPAN_GET, names.SPAN_RESUME}
)


def question() -> dict[str, Any]:
    """The agent's input. Its message has an id: `add_messages` gives one in place to a message
    without, and with durability "async" the input checkpoint is serialized before or after
    that, by chance, in a bare run too."""
    return {"messages": [HumanMessage(agents.QUESTION, id="question")]}


def thanks() -> dict[str, Any]:
    """A write outside a run (`update_state`), with an id for the same reason."""
    return {"messages": [HumanMessage("thanks", id="thanks")]}


@dataclass(frozen=True)
class Cell:
    peers: str
    order: str
    route: str
    mode: str

    @property
    def key(self) -> str:
        return f"{self.peers}/{self.order}/{self.route}/{self.mode}"

    @property
    def thread(self) -> str:
        return self.key.replace("/", "-")


CELLS = [
    Cell(p, o, r, m) for p in PEER_SETS for o in ORDERS for r in ROUTES for m in MODES
]  # fmt: skip

# --------------------------------------------------------------------------------------------
# What a cell leaves: canonical results and history, spans as plain records
# --------------------------------------------------------------------------------------------

_RUN_SPECIFIC = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # message, checkpoint, run ids
    r"|call_[0-9a-f]{12}"  # tool-call ids the scripted model issues
)


def canonical(value: Any) -> str:
    """`value` as JSON with run-specific ids replaced by positional tokens (<0>, <1>, ...)."""
    text = json.dumps(value, default=_plain, sort_keys=True)
    tokens: dict[str, str] = {}
    return _RUN_SPECIFIC.sub(lambda m: tokens.setdefault(m.group(0), f"<{len(tokens)}>"), text)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return {"__message__": value.type, **value.model_dump()}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return {"__type__": type(value).__qualname__, "repr": repr(value)}


def _counter(version: Any) -> Any:
    return int(version.split(".", 1)[0]) if isinstance(version, str) else version


def history_of(tuples: Sequence[CheckpointTuple]) -> str:
    """A thread's stored checkpoints (newest first), minus the library's metadata key."""
    return canonical(
        [
            {
                "ns": t.config["configurable"].get("checkpoint_ns", ""),
                "has_parent": t.parent_config is not None,
                "metadata": {k: v for k, v in t.metadata.items() if k != names.METADATA_KEY},
                "channel_values": t.checkpoint["channel_values"],
                "channel_versions": {
                    k: _counter(v) for k, v in t.checkpoint["channel_versions"].items()
                },
                "versions_seen": {
                    node: {k: _counter(v) for k, v in seen.items()}
                    for node, seen in t.checkpoint["versions_seen"].items()
                },
                "updated_channels": t.checkpoint.get("updated_channels"),
                "pending_writes": sorted(channel for _, channel, _ in t.pending_writes or []),
            }
            for t in tuples
        ]
    )


def record(span: ReadableSpan) -> dict[str, Any]:
    attributes = dict(span.attributes or {})
    return {
        "name": span.name,
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else "",
        "id": f"{span.context.span_id:016x}",
        "parent": f"{span.parent.span_id:016x}" if span.parent else None,
        "trace": f"{span.context.trace_id:032x}",
        "thread": attributes.get(names.THREAD_ID),
        "operation": attributes.get("gen_ai.operation.name"),
        "kind": attributes.get("openinference.span.kind"),
        "db": any(key.startswith("db.") for key in attributes),
    }


# --------------------------------------------------------------------------------------------
# Peers and the library, switched on and off
# --------------------------------------------------------------------------------------------


@dataclass
class Telemetry:
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    exporter: InMemorySpanExporter

    @classmethod
    def make(cls) -> Telemetry:
        exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        return cls(tracer_provider, MeterProvider(), exporter)

    def spans(self) -> list[dict[str, Any]]:
        return [record(s) for s in self.exporter.get_finished_spans()]


def _openlit_on(telemetry: Telemetry) -> Callable[[], None]:
    """`openlit.init()` as an app calls it (it reuses the global SDK provider this process set),
    with its LangGraph, LangChain and psycopg instrumentors only, no metrics or events exporters,
    and pricing from a local file instead of the network."""
    import openlit
    from openlit._instrumentors import MODULE_NAME_MAP

    unrelated = [name for name in MODULE_NAME_MAP if name not in OPENLIT_INSTRUMENTORS]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as pricing:
        pricing.write("{}")
    try:
        openlit.init(
            disable_metrics=True,
            disable_events=True,
            pricing_json=pricing.name,
            disabled_instrumentors=unrelated,  # (anthropic's and google-genai's: 2.5 s here)
        )
    finally:
        Path(pricing.name).unlink()

    def off() -> None:
        raise RuntimeError("OpenLIT cannot uninstrument: run it in a subprocess")

    return off


def _langchain_peer_on(module: str, telemetry: Telemetry, **kwargs: Any) -> Callable[[], None]:
    instrumentor = importlib.import_module(module).LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider, **kwargs)
    return instrumentor.uninstrument  # type: ignore[no-any-return]


PEERS: dict[str, Callable[[Telemetry], Callable[[], None]]] = {
    "openlit": _openlit_on,
    "genai": lambda t: _langchain_peer_on(
        "opentelemetry.instrumentation.genai.langchain", t, meter_provider=t.meter_provider
    ),
    "openinference": lambda t: _langchain_peer_on("openinference.instrumentation.langchain", t),
}


def library_on(route: str, telemetry: Telemetry) -> Callable[[], None]:
    """Set the library up on `route`; returns how to undo it. For `instrument()` the loop hooks
    are installed by a first wrap here (the cell's own saver is wrapped when it is opened)."""
    if route == "instrument":
        instrument(InMemorySaver(), tracer_provider=telemetry.tracer_provider)
        return lambda: None
    instrumentor = LangGraphCheckpointInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    return instrumentor.uninstrument  # type: ignore[no-any-return]


def checkpointer(saver: Saver, route: str, telemetry: Telemetry) -> Saver:
    if route == "instrumentor":
        return saver  # the instrumentor wraps it when the graph is compiled
    return instrument(
        saver, tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )


# --------------------------------------------------------------------------------------------
# One cell's run
# --------------------------------------------------------------------------------------------

BAD_CONFIG: dict[str, Any] = {"configurable": {}}
"""A put without a thread id: PostgresSaver raises KeyError('thread_id')."""


def _error(exc: BaseException) -> str:
    return f"{type(exc).__qualname__}: {exc}"


def _bad_put(saver: Saver) -> str:
    try:
        saver.put(BAD_CONFIG, empty_checkpoint(), {}, {})
    except Exception as exc:
        return _error(exc)
    return "no error"


async def _abad_put(saver: Saver) -> str:
    try:
        await saver.aput(BAD_CONFIG, empty_checkpoint(), {}, {})
    except Exception as exc:
        return _error(exc)
    return "no error"


def run_sync(url: str, thread: str, route: str | None, telemetry: Telemetry) -> Outcome:
    """The agent on PostgresSaver: invoke, then a write and a read outside the run."""
    config = agents.thread(thread)
    outcome: Outcome = {"error": None}
    with PostgresSaver.from_conn_string(url) as saver:
        used = saver if route is None else checkpointer(saver, route, telemetry)
        try:
            graph = agents.react_agent(used)
            telemetry.exporter.clear()
            outcome["result"] = canonical(graph.invoke(question(), config))
            outcome["run_spans"] = telemetry.spans()
            outcome["stored_by_run"] = len(list(saver.list(config)))
            telemetry.exporter.clear()
            graph.update_state(config, thanks())
            outcome["state"] = canonical(graph.get_state(config).values)
            outcome["outside_spans"] = telemetry.spans()
            outcome["history"] = history_of(list(saver.list(config)))
            outcome["bad_put"] = _bad_put(graph.checkpointer)
        except Exception as exc:
            outcome["error"] = _error(exc)
            outcome["traceback"] = traceback.format_exc()
    return outcome


def run_async(url: str, thread: str, route: str | None, telemetry: Telemetry) -> Outcome:
    """`run_sync` through the async API on AsyncPostgresSaver."""

    async def main() -> Outcome:
        config = agents.thread(thread)
        outcome: Outcome = {"error": None}
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            used = saver if route is None else checkpointer(saver, route, telemetry)
            try:
                graph = agents.react_agent(used)
                telemetry.exporter.clear()
                outcome["result"] = canonical(await graph.ainvoke(question(), config))
                outcome["run_spans"] = telemetry.spans()
                outcome["stored_by_run"] = len([t async for t in saver.alist(config)])
                telemetry.exporter.clear()
                await graph.aupdate_state(config, thanks())
                outcome["state"] = canonical((await graph.aget_state(config)).values)
                outcome["outside_spans"] = telemetry.spans()
                outcome["history"] = history_of([t async for t in saver.alist(config)])
                outcome["bad_put"] = await _abad_put(graph.checkpointer)
            except Exception as exc:
                outcome["error"] = _error(exc)
                outcome["traceback"] = traceback.format_exc()
        return outcome

    return asyncio.run(main())


RUNS = {"sync": run_sync, "async": run_async}


def run_bare(url: str, telemetry: Telemetry, name: str) -> dict[str, Outcome]:
    return {mode: RUNS[mode](url, f"bare-{name}-{mode}", None, telemetry) for mode in MODES}


def run_cells(
    peers: str, order: str, route: str, url: str, telemetry: Telemetry
) -> dict[str, Outcome]:
    """Both modes of (peers, order, route), switching everything off afterwards."""
    undo: list[Callable[[], None]] = []
    try:
        if order == "library_first":
            undo.append(library_on(route, telemetry))
        undo.extend(PEERS[peer](telemetry) for peer in PEER_SETS[peers])
        if order == "peer_first":
            undo.append(library_on(route, telemetry))
        return {
            cell.key: RUNS[cell.mode](url, cell.thread, route, telemetry)
            for cell in (Cell(peers, order, route, mode) for mode in MODES)
        }
    finally:
        for off in reversed(undo):
            off()


# --------------------------------------------------------------------------------------------
# The OpenLIT cells: this file as a script, one process per order and route
# --------------------------------------------------------------------------------------------


ISOLATED_STEPS: dict[str, tuple[str, ...]] = {
    "library_first": (
        "+library", "+instrumentor", "+openlit", "openlit/instrumentor", "+langchain_peers",
        "all/instrumentor", "-instrumentor", "all/instrument", "-langchain_peers",
        "openlit/instrument",
    ),
    "peer_first": (
        "+openlit", "+instrumentor", "openlit/instrumentor", "-instrumentor",
        "openlit/instrument", "+langchain_peers", "all/instrument", "+instrumentor",
        "all/instrumentor", "-instrumentor", "-langchain_peers",
    ),
}  # fmt: skip
"""What one subprocess does, in order: ``+x``/``-x`` switch x on/off (``library``: the first
`instrument()` call, which installs the library's loop hooks; ``langchain_peers``: GenAI and
OpenInference), ``peers/route`` runs both modes of those cells. OpenLIT, once on, stays on; the
library is set up before every peer, or after, as the order says."""


def isolated_main(order: str, url: str, out: Path) -> None:
    """Bare runs, then the OpenLIT and "all" cells of `order`; writes the outcomes as JSON."""
    from opentelemetry import trace

    telemetry = Telemetry.make()
    trace.set_tracer_provider(telemetry.tracer_provider)  # OpenLIT traces only through it
    outcomes: dict[str, Any] = {"openlit_version": importlib.metadata.version("openlit")}
    outcomes["bare"] = run_bare(url, telemetry, order)
    off: dict[str, list[Callable[[], None]]] = {}
    for step in ISOLATED_STEPS[order]:
        if step.startswith("+"):
            name = step[1:]
            if name == "openlit":
                _openlit_on(telemetry)
            elif name == "langchain_peers":
                off[name] = [PEERS[p](telemetry) for p in ("genai", "openinference")]
            else:
                off[name] = [library_on("instrument" if name == "library" else name, telemetry)]
        elif step.startswith("-"):
            for undo in reversed(off.pop(step[1:])):
                undo()
        else:
            peers, route = step.split("/")
            for mode in MODES:
                cell = Cell(peers, order, route, mode)
                outcomes[cell.key] = RUNS[mode](url, cell.thread, route, telemetry)
    outcomes["openlit_after_uninstrument"] = _openlit_uninstrumented()
    out.write_text(json.dumps(outcomes))


def _openlit_uninstrumented() -> list[str]:
    """What stays wrapped on the savers after OpenLIT's own `uninstrument()`."""
    from openlit.instrumentation.langgraph import LangGraphInstrumentor

    LangGraphInstrumentor().uninstrument()
    return [
        f"{cls.__name__}.{method}"
        for cls in (PostgresSaver, AsyncPostgresSaver)
        for method in ("setup", "put", "get_tuple", "aput", "aget_tuple")
        if isinstance(vars(cls).get(method), _PROXY)
    ]


_PROXY: type = getattr(wrapt, "BaseObjectProxy", wrapt.ObjectProxy)


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[str]:
    """One database for the module (each cell has its own thread), tables made once."""
    with fresh_database(postgres_url) as url:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
        yield url


def patches() -> dict[tuple[str, str, str], Any]:
    """Every function and `wrapt` proxy in the loaded langchain*/langgraph* modules and their
    classes' namespaces (what an instrumentation patches)."""
    found: dict[tuple[str, str, str], Any] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith(("langchain", "langgraph")):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType | _PROXY):
                found[(module_name, "", attr)] = value
            elif isinstance(value, type) and value.__module__ == module_name:
                for name, member in list(vars(value).items()):
                    if isinstance(member, types.FunctionType | _PROXY):
                        found[(module_name, value.__qualname__, name)] = member
    return found


@pytest.fixture(scope="module")
def in_process(database: str) -> dict[str, Any]:
    """Bare runs, then the GenAI and OpenInference cells, each with what their switching off
    left patched (``left_patched/<peers>/<order>/<route>``)."""
    telemetry = Telemetry.make()
    instrument(InMemorySaver())  # the library's loop hooks stay once installed, by design
    outcomes: dict[str, Any] = {"bare": run_bare(database, telemetry, "in-process")}
    for peers in PEER_SETS:
        if peers in ISOLATED:
            continue
        for order in ORDERS:
            for route in ROUTES:
                before = patches()
                outcomes |= run_cells(peers, order, route, database, telemetry)
                after = patches()
                outcomes[f"left_patched/{peers}/{order}/{route}"] = sorted(
                    ".".join(filter(None, key))
                    for key, value in before.items()
                    if after.get(key) is not value
                )
    return outcomes


@pytest.fixture(scope="module")
def isolated(database: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The OpenLIT and "all" cells: one subprocess per order, both run together."""
    version = _installed("openlit")
    assert version == OPENLIT_VERSION, (
        f"openlit {version} installed; these tests know the patches of {OPENLIT_VERSION} "
        f"(`pip install --no-deps openlit=={OPENLIT_VERSION}`)"
    )
    out_dir = tmp_path_factory.mktemp("peers")
    procs = []
    for order in ORDERS:
        out = out_dir / f"{order}.json"
        command = [sys.executable, __file__, order, database, str(out)]
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONPATH": pythonpath()},  # run as a script: its imports
        )
        procs.append((proc, out))
    outcomes: dict[str, Any] = {}
    for proc, out in procs:
        output, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, output[-4000:]
        got = json.loads(out.read_text())
        outcomes[f"bare/{out.stem}"] = got.pop("bare")
        outcomes[f"openlit_after_uninstrument/{out.stem}"] = got.pop("openlit_after_uninstrument")
        got.pop("openlit_version")
        outcomes |= got
    return outcomes


def _installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def outcome_of(request: pytest.FixtureRequest, cell: Cell) -> Outcome:
    source = "isolated" if cell.peers in ISOLATED else "in_process"
    got: Outcome = request.getfixturevalue(source)[cell.key]
    return got


def bare_of(request: pytest.FixtureRequest, cell: Cell) -> Outcome:
    if cell.peers in ISOLATED:
        bare: Outcome = request.getfixturevalue("isolated")[f"bare/{cell.order}"]
    else:
        bare = request.getfixturevalue("in_process")["bare"]
    return bare[cell.mode]  # type: ignore[no-any-return]


@pytest.fixture(params=CELLS, ids=lambda cell: cell.key)
def cell(request: pytest.FixtureRequest) -> Cell:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def outcome(request: pytest.FixtureRequest, cell: Cell) -> Outcome:
    got = outcome_of(request, cell)
    assert got["error"] is None, got.get("traceback")
    return got


# --------------------------------------------------------------------------------------------
# Span analysis
# --------------------------------------------------------------------------------------------


def ours(spans: list[dict[str, Any]], *span_names: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["scope"] == names.SCOPE and s["name"] in span_names]


def peer_checkpoint_spans(spans: list[dict[str, Any]]) -> list[str]:
    """Spans of other scopes that stand for a checkpoint call (not the database statements
    inside one, which carry db.* attributes)."""
    return [
        f"{s['name']} ({s['scope']})"
        for s in spans
        if s["scope"] != names.SCOPE and "checkpoint" in s["name"].lower() and not s["db"]
    ]


def assert_same(got: str, bare: str) -> None:
    """Two canonical JSON texts are equal (else: their difference, line by line)."""
    if got != bare:
        before, after = (json.dumps(json.loads(t), indent=1, sort_keys=True) for t in (bare, got))
        diff = difflib.unified_diff(
            before.splitlines(), after.splitlines(), "bare", "with peers", lineterm="", n=2
        )
        pytest.fail("\n".join(list(diff)[:200]), pytrace=False)


def ancestors(span: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    chain = []
    parent = by_id.get(span["parent"] or "")
    while parent is not None:
        chain.append(parent)
        parent = by_id.get(parent["parent"] or "")
    return chain


# --------------------------------------------------------------------------------------------
# The cells
# --------------------------------------------------------------------------------------------


def test_nothing_raises(request: pytest.FixtureRequest, cell: Cell) -> None:
    got = outcome_of(request, cell)
    assert got["error"] is None, got.get("traceback")


def test_each_checkpoint_the_run_stores_has_exactly_one_put_span(outcome: Outcome) -> None:
    puts = ours(outcome["run_spans"], names.SPAN_PUT)
    assert outcome["stored_by_run"] > 0
    assert len(puts) == outcome["stored_by_run"]


def test_no_peer_span_doubles_a_checkpoint_call_of_the_run(outcome: Outcome) -> None:
    assert peer_checkpoint_spans(outcome["run_spans"]) == []


def test_a_write_and_reads_outside_a_run_are_one_span_each(outcome: Outcome) -> None:
    spans = outcome["outside_spans"]
    assert len(ours(spans, names.SPAN_PUT)) == 1  # update_state
    assert ours(spans, names.SPAN_GET)  # update_state's and get_state's loads
    assert peer_checkpoint_spans(spans) == []


def test_the_run_is_one_trace_with_one_root(outcome: Outcome, cell: Cell) -> None:
    """Every span of the run but OpenLIT's psycopg statements, some of which (batched writes
    on the connection's own thread) start traces of their own, with or without this library."""
    spans = [s for s in outcome["run_spans"] if not s["db"]]
    (trace_id,) = {s["trace"] for s in spans}
    (root,) = [s for s in spans if s["trace"] == trace_id and s["parent"] is None]
    assert root["scope"] in root_scopes(cell), root
    assert root["operation"] in ("invoke_workflow", "invoke_agent") or root["kind"] == "CHAIN"


def test_every_checkpoint_span_descends_from_the_runs_root(outcome: Outcome, cell: Cell) -> None:
    spans = outcome["run_spans"]
    by_id = {s["id"]: s for s in spans}
    mine = ours(spans, *CHECKPOINT_CALL_SPANS)
    assert mine
    for span in mine:
        chain = ancestors(span, by_id)
        assert chain and chain[-1]["scope"] in root_scopes(cell), (span, chain)


def test_the_run_is_counted_once(outcome: Outcome) -> None:
    """Exactly one span names the graph's run in GenAI terms (`invoke_workflow` /
    `invoke_agent` with no such span above it): the library's run span where no peer names
    runs, GenAI's or OpenLIT's where they do (the library's then carries no operation name)."""
    spans = outcome["run_spans"]
    by_id = {s["id"]: s for s in spans}
    naming = [s for s in spans if s["operation"] in ("invoke_workflow", "invoke_agent")]
    top = [
        s
        for s in naming
        if not any(
            a["operation"] in ("invoke_workflow", "invoke_agent") for a in ancestors(s, by_id)
        )
    ]
    assert len(top) == 1, [(s["name"], s["scope"]) for s in top]
    runs = [s for s in spans if s["scope"] == names.SCOPE and names.is_run_span_name(s["name"])]
    assert len(runs) <= 1


def test_results_are_the_bare_runs(
    request: pytest.FixtureRequest, outcome: Outcome, cell: Cell
) -> None:
    bare = bare_of(request, cell)
    assert_same(outcome["result"], bare["result"])
    assert_same(outcome["state"], bare["state"])


def test_stored_checkpoints_are_the_bare_runs(
    request: pytest.FixtureRequest, outcome: Outcome, cell: Cell
) -> None:
    assert_same(outcome["history"], bare_of(request, cell)["history"])


def test_an_inner_saver_error_reaches_the_caller_as_it_is(
    request: pytest.FixtureRequest, outcome: Outcome, cell: Cell
) -> None:
    bare = bare_of(request, cell)
    assert bare["bad_put"] == "KeyError: 'thread_id'"
    assert outcome["bad_put"] == bare["bad_put"]


# --------------------------------------------------------------------------------------------
# Isolation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("peers", ["genai", "openinference"])
def test_switching_off_leaves_no_patch_behind(
    in_process: dict[str, Any], peers: str, order: str, route: str
) -> None:
    assert in_process[f"left_patched/{peers}/{order}/{route}"] == []


def test_openlits_uninstrument_leaves_its_saver_patches_so_its_cells_run_apart(
    isolated: dict[str, Any],
) -> None:
    for order in ORDERS:
        assert isolated[f"openlit_after_uninstrument/{order}"] == [
            "PostgresSaver.setup",
            "PostgresSaver.put",
            "PostgresSaver.get_tuple",
            "AsyncPostgresSaver.setup",
            "AsyncPostgresSaver.aput",
            "AsyncPostgresSaver.aget_tuple",
        ]


# --------------------------------------------------------------------------------------------
# Only tracing-only peer wrappers are skipped
# --------------------------------------------------------------------------------------------


class _CountingSaver(InMemorySaver):
    """An InMemorySaver whose put gets a wrapt wrapper that is not a peer's (a user's retry or
    cache would look like this)."""


def test_a_wrapper_that_is_not_a_tracing_peers_is_still_called() -> None:
    calls: list[str] = []

    def counting(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        calls.append("put")
        return wrapped(*args, **kwargs)

    saver = _CountingSaver()
    with _wrapped(_CountingSaver, "put", counting):
        graph = agents.react_agent(instrument(saver, tracer_provider=TracerProvider()))
        graph.invoke(question(), agents.thread("counted"))
    stored = len(list(saver.list(agents.thread("counted"))))
    assert len(calls) == stored > 0


class _Opaque:
    """A callable whose attribute hook raises (as a careless proxy's may)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self._function = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name} here")


class _OpaqueSaver(InMemorySaver):
    @property
    def put(self) -> Any:  # type: ignore[override]
        return _Opaque(InMemorySaver.put.__get__(self))


def test_a_saver_method_that_cannot_be_inspected_is_called_as_it_is() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    saver = _OpaqueSaver()
    graph = agents.react_agent(instrument(saver, tracer_provider=provider))
    graph.invoke(question(), agents.thread("opaque"))
    stored = len(list(saver.list(agents.thread("opaque"))))
    puts = [s for s in exporter.get_finished_spans() if s.name == names.SPAN_PUT]
    assert len(puts) == stored > 0


@contextlib.contextmanager
def _wrapped(owner: type, name: str, wrapper: Callable[..., Any]) -> Iterator[None]:
    wrapt.wrap_function_wrapper(owner, name, wrapper)
    try:
        yield
    finally:
        delattr(owner, name)  # the inherited method again


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Run the OpenLIT cells of one order.")
    parser.add_argument("order", choices=ORDERS)
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    arguments = parser.parse_args()
    isolated_main(arguments.order, arguments.url, arguments.out)
