"""One trace per graph run beside any mix of the LangChain peer instrumentations, started the way
users start them: ``opentelemetry-instrument``, which loads every installed instrumentor.

Environments (tests/support/peer_envs.py): a venv per cell holding exactly the chosen peers, as
``pip install`` would leave it (``opentelemetry_instrumentor`` entry points checked), since
the official GenAI LangChain instrumentation (1.3b0), OpenInference's (0.1.80) and Traceloop's
(0.62.4, from ``.venv-traceloop/``, scripts/tools/traceloop.sh) all register the entry point
``langchain`` and cannot be told apart by ``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS``.

The app (tests/apps/peer_app.py) is the support desk (`create_supervisor` over `create_react_agent`
workers) on ``instrument(InMemorySaver())``, run as ``<env>/bin/opentelemetry-instrument python
peer_app.py`` with the env activated, exporting over OTLP/HTTP to tests/support/otlp_receiver.py. Per
mode, three runs on one thread (a refund stopping at ``interrupt()``, ``Command(resume="yes")``,
a tracking request): ``sync`` = ``invoke``, ``invoke``, ``stream``; ``async`` = ``ainvoke``,
``astream``, ``ainvoke``; a state read after each run.

Cells:

- in-process: every subset of {genai, openinference, traceloop} (the empty one too) x
  {sync, async} (one process per subset runs both modes, on two threads);
- OpenLIT (``openlit.init()`` in the app) with all three auto-loaded, sync and async;
- the zero-code route (no ``instrument()``: the ``langgraph_checkpoint`` entry point) with
  genai + openinference (what ``[dev]`` installs), sync and async;
- on ``langgraph dev`` (tests/support/agent_server.py, ``instrument()`` around its custom
  checkpointer, the LangChain peers left on, server run from the cell's env), for
  genai + openinference, genai, openinference: the same three runs through ``langgraph_sdk``
  (``runs.wait``; the resume as ``command={"resume": "yes"}``), a state read after each.

A run's spans are the spans the process exported that started within the run's wall-clock
window (runs and reads are sequential in a process, and the clock is the machine's). Asserted
per run, one behaviour per test:

- the run is one trace;
- that trace has exactly one root, and no span whose parent was not exported;
- the run's trace holds the library's checkpoint spans and the spans of every peer installed;
- the run is claimed once per convention family. What the peers emit here (measured):
  GenAI's ``invoke_workflow support_desk`` (``gen_ai.workflow.name``) and ``invoke_agent
  <node>`` spans; Traceloop's ``invoke_agent support_desk`` with a ``support_desk.workflow``
  child (both ``gen_ai.operation.name=invoke_agent``, ``gen_ai.agent.name=support_desk``; the
  child has ``traceloop.span.kind=workflow``); OpenLIT's ``invoke_workflow support_desk`` (and
  ``... stream``), ``gen_ai.workflow.name``; OpenInference's graph CHAIN span ``support_desk``
  with CHAIN children for nodes, prompts and sequences; the library's own run span, when it opens
  one, ``invoke_workflow support_desk`` with ``openinference.span.kind=CHAIN``. So the rules:
  GenAI family: spans with ``gen_ai.operation.name`` in {invoke_workflow, invoke_agent} naming
  the top graph (``gen_ai.workflow.name`` or ``gen_ai.agent.name``) with no such span among
  their ancestors: exactly one (nested ones, such as Traceloop's own pair, are one claim);
  OpenInference family: CHAIN spans without a CHAIN ancestor: exactly one wherever a span
  carries ``openinference.span.kind``; Traceloop: ``traceloop.span.kind=workflow`` spans
  without a workflow ancestor: exactly one where Traceloop is installed;
- runs share no trace, and a state read outside a run is in none of them.

Cost (2 cores shared with other jobs, load average 8-10): 13 processes, 3 at a time, the 9
environments built in the same pool (~1 s each: symlinks); an app process 5-15 s (2 s on an
idle machine), a server 13-22 s; the session 60-80 s, the whole file 70-85 s, ~37 s of CPU.
Every test reads the one module-scoped session.

``PEERS_AUTOLOAD_SRC=/path/to/src`` runs the cells against another copy of the library's
``src`` (e.g. ``git archive <commit> src``) instead of this checkout's.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import peer_envs
from agent_server import AgentServer, AgentServerFailed, AgentServerUnavailable, Route, require_cli
from helpers import in_ci
from langgraph.checkpoint.otel import names
from otlp_receiver import OTLPReceiver, Received, attrs
from suite_paths import APPS

APP = APPS / "peer_app.py"
GRAPH = "support_desk"
LANGCHAIN_PEERS = ("genai", "openinference", "traceloop")
MODES = ("sync", "async")
RUNS = ("refund", "approval", "tracking")
READS = ("state after refund", "state after approval", "state after tracking")
SCOPES = {
    "library": names.SCOPE,
    "genai": "opentelemetry.instrumentation.genai.langchain",
    "openinference": "openinference.instrumentation.langchain",
    "traceloop": "opentelemetry.instrumentation.langchain",
    "openlit": "openlit.instrumentation.langgraph",
}
"""The instrumentation scope of each tracer's spans (measured)."""
INSTRUMENTORS = {
    "genai": "opentelemetry.instrumentation.genai.langchain.LangChainInstrumentor",
    "openinference": "openinference.instrumentation.langchain.LangChainInstrumentor",
    "traceloop": "opentelemetry.instrumentation.langchain.LangchainInstrumentor",
    "openlit": "openlit.instrumentation.langgraph.LangGraphInstrumentor",
}
APP_TIMEOUT_S = 120.0
SERVER_ROUTE = Route(
    "custom+peers",
    "./checkpointer.py:wrapped",
    instrumented=True,
    disabled_instrumentations=(),
    graphs=((GRAPH, "./desk.py:support_desk"),),
)
"""``instrument()`` around the server's custom checkpointer, nothing disabled: every
instrumentor installed in the environment is loaded, as for a user."""


@dataclass(frozen=True)
class Cell:
    peers: tuple[str, ...]
    """Peers installed (and, for openlit, started by the app)."""
    mode: str
    """sync, async, or server."""
    route: str = "instrument"

    @property
    def process(self) -> str:
        """The process that runs this cell (one per environment and route)."""
        place = "server" if self.mode == "server" else "app"
        return f"{place}:{'+'.join(self.peers) or 'none'}:{self.route}"

    @property
    def key(self) -> str:
        return f"{'+'.join(self.peers) or 'none'}/{self.mode}/{self.route}"


SUBSETS = [
    tuple(p for p in LANGCHAIN_PEERS if p in chosen)
    for n in range(len(LANGCHAIN_PEERS) + 1)
    for chosen in itertools.combinations(LANGCHAIN_PEERS, n)
]
CELLS = (
    [Cell(peers, mode) for peers in SUBSETS for mode in MODES]
    + [Cell((*LANGCHAIN_PEERS, "openlit"), mode) for mode in MODES]
    + [Cell(("genai", "openinference"), mode, "instrumentor") for mode in MODES]
    + [
        Cell(peers, "server")
        for peers in (("genai", "openinference"), ("genai",), ("openinference",))
    ]
)
RUN_CELLS = [(cell, run) for cell in CELLS for run in RUNS]


# --------------------------------------------------------------------------------------------
# what a process left
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    name: str
    scope: str
    id: str
    parent: str | None
    trace: str
    start_ns: int
    attributes: dict[str, Any]


@dataclass
class Outcome:
    """One process (an app or a server) and what it exported."""

    process: str
    report: dict[str, Any] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    def events(self, mode: str, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.report.get("events", []) if e["mode"] == mode and e["kind"] == kind]

    def event(self, mode: str, label: str) -> dict[str, Any]:
        return next(
            e for e in self.report.get("events", []) if e["mode"] == mode and e["label"] == label
        )

    def within(self, event: dict[str, Any]) -> list[Span]:
        return [s for s in self.spans if event["started_ns"] <= s.start_ns <= event["ended_ns"]]


def _spans(received: Received) -> list[Span]:
    return [
        Span(
            name=span.name,
            scope=scope,
            id=span.span_id.hex(),
            parent=span.parent_span_id.hex() or None,
            trace=span.trace_id.hex(),
            start_ns=span.start_time_unix_nano,
            attributes=attrs(span.attributes),
        )
        for _, scope, span in received.spans()
    ]


SETTLE_S = 1.0


def _settle(received: Received, timeout: float = 20.0) -> None:
    """Wait until no span has arrived for `SETTLE_S` seconds."""
    deadline = time.monotonic() + timeout
    count, since = received.span_count(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = received.span_count()
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            return


def _otel_env(endpoint: str, service: str) -> dict[str, str]:
    return {
        "OTEL_SERVICE_NAME": service,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


def _clean_environ() -> dict[str, str]:
    dropped = ("OTEL_", "LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_", "OPENLIT_", "TRACELOOP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(PYTHONUNBUFFERED="1", LANGSMITH_TRACING="false", TRACELOOP_TELEMETRY="false")
    return env


def run_app(env: peer_envs.Env, cells: list[Cell], workdir: Path) -> Outcome:
    """``<env>/bin/opentelemetry-instrument python peer_app.py`` for the cells of one process."""
    cell = cells[0]
    outcome = Outcome(cell.process)
    began = time.monotonic()
    report = workdir / f"{cell.process.replace(':', '-')}.json"
    args = ["--modes", ",".join(c.mode for c in cells), "--route", cell.route, "--out", str(report)]
    if "openlit" in cell.peers:
        args.append("--openlit")
    with OTLPReceiver() as receiver:
        environ = env.environ(_clean_environ())
        environ.update(_otel_env(receiver.endpoint, cell.process))
        proc = subprocess.run(
            [str(env.bin / "opentelemetry-instrument"), "python", str(APP), *args],
            env=environ,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=APP_TIMEOUT_S,
        )
        _settle(receiver.received, timeout=5.0)
        outcome.spans = _spans(receiver.received)
    outcome.seconds = time.monotonic() - began
    if proc.returncode != 0 or not report.is_file():
        outcome.error = f"exit {proc.returncode}:\n{proc.stderr[-4000:]}"
        return outcome
    outcome.report = json.loads(report.read_text())
    return outcome


REFUND = "Please refund order A17."
TRACK = "Where is my package for order B22?"


async def _drive_server(server: AgentServer) -> list[dict[str, Any]]:
    """The three runs and three reads through ``langgraph_sdk``, timed like the app's."""
    from langgraph_sdk import get_client

    client = get_client(url=server.url, timeout=60)
    thread = (await client.threads.create())["thread_id"]
    events: list[dict[str, Any]] = []

    async def timed(kind: str, label: str, call: str, coro: Any) -> Any:
        started = time.time_ns()
        result = await coro
        stopped = isinstance(result, dict) and bool(result.get("__interrupt__"))
        events.append(
            {
                "mode": "server",
                "kind": kind,
                "label": label,
                "thread": thread,
                "call": call,
                "started_ns": started,
                "ended_ns": time.time_ns(),
                "outcome": ("interrupted" if stopped else "finished") if kind == "run" else None,
            }
        )
        return result

    def wait(**kwargs: Any) -> Any:
        return client.runs.wait(thread, GRAPH, **kwargs)

    human = {"messages": [{"role": "human", "content": REFUND}]}
    await timed("run", "refund", "runs.wait", wait(input=human))
    await timed("read", READS[0], "get_state", client.threads.get_state(thread))
    await timed("run", "approval", "runs.wait", wait(command={"resume": "yes"}))
    await timed("read", READS[1], "get_state", client.threads.get_state(thread))
    human = {"messages": [{"role": "human", "content": TRACK}]}
    await timed("run", "tracking", "runs.wait", wait(input=human))
    await timed("read", READS[2], "get_state", client.threads.get_state(thread))
    return events


def run_server(env: peer_envs.Env, cell: Cell) -> Outcome:
    """``opentelemetry-instrument -- langgraph dev`` from the cell's env, driven, stopped."""
    outcome = Outcome(cell.process)
    began = time.monotonic()
    with OTLPReceiver() as receiver:
        server = AgentServer(SERVER_ROUTE, receiver.endpoint, env_root=env.root)
        try:
            started = time.time_ns()
            server.start()
            build = {"mode": "server", "kind": "build", "label": "server start"}
            build.update(started_ns=started, ended_ns=time.time_ns())
            events = [build, *asyncio.run(_drive_server(server))]
            _settle(receiver.received)
            outcome.report = {"events": events, "executable": str(env.python)}
        except (AgentServerFailed, Exception) as exc:
            outcome.error = f"{exc!r}\nserver log:\n{server.log_tail(60)}"
        finally:
            server.stop()
            outcome.spans = _spans(receiver.received)
            server.cleanup()
    outcome.seconds = time.monotonic() - began
    return outcome


@dataclass
class Session:
    envs: dict[tuple[str, ...], peer_envs.Env]
    outcomes: dict[str, Outcome]
    seconds: float


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    """Every environment built, every process run (3 at a time), what each exported."""
    try:
        require_cli()
        peer_envs.require_traceloop()
    except (AgentServerUnavailable, peer_envs.PeerEnvUnavailable) as exc:
        if in_ci():
            pytest.fail(f"CI=true, so this is a failure, not a skip: {exc}", pytrace=False)
        pytest.skip(str(exc))
    began = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="lgotel-peer-envs-"))
    src = os.environ.get("PEERS_AUTOLOAD_SRC")
    library_src = Path(src) if src else None
    try:
        by_process: dict[str, list[Cell]] = {}
        for cell in CELLS:
            by_process.setdefault(cell.process, []).append(cell)
        with ThreadPoolExecutor(max_workers=3) as pool:
            # Environments are built in the pool too: symlinks (I/O) overlap the runs (CPU).
            env_jobs = {
                peers: pool.submit(peer_envs.build_env, root, peers, library_src=library_src)
                for peers in sorted({c.peers for c in CELLS})
            }

            def job(cells: list[Cell]) -> Outcome:
                env = env_jobs[cells[0].peers].result()
                if cells[0].mode == "server":
                    return run_server(env, cells[0])
                return run_app(env, cells, root)

            # Servers first: they take longest.
            ordered = sorted(by_process.items(), key=lambda kv: not kv[0].startswith("server"))
            futures = {process: pool.submit(job, cells) for process, cells in ordered}
            outcomes = {process: future.result() for process, future in futures.items()}
            envs = {peers: future.result() for peers, future in env_jobs.items()}
        result = Session(envs, outcomes, time.monotonic() - began)
        yield result
        print(f"\n[peers-autoload] {result.seconds:.1f} s in all; per process:")
        for process, outcome in sorted(outcomes.items()):
            print(f"  {process}: {outcome.seconds:.1f} s, {len(outcome.spans)} spans")
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# reading a run
# --------------------------------------------------------------------------------------------


def _outcome(session: Session, cell: Cell) -> Outcome:
    outcome = session.outcomes[cell.process]
    assert outcome.error is None, f"{cell.process} failed: {outcome.error}"
    return outcome


def run_spans(session: Session, cell: Cell, run: str) -> tuple[Outcome, list[Span]]:
    outcome = _outcome(session, cell)
    spans = outcome.within(outcome.event(cell.mode, run))
    assert spans, f"{cell.key} run {run!r}: no span exported while it ran"
    return outcome, spans


def describe(spans: list[Span]) -> str:
    """Per trace: its span count, roots and scopes (printed with every failure)."""
    lines = []
    ids = {s.id for s in spans}
    for trace, members in itertools.groupby(
        sorted(spans, key=lambda s: s.trace), key=lambda s: s.trace
    ):
        group = list(members)
        roots = [f"{s.name} [{s.scope}]" for s in group if s.parent is None or s.parent not in ids]
        scopes = Counter(s.scope for s in group)
        lines.append(
            f"  trace ..{trace[-6:]}: {len(group)} spans, roots {roots}, scopes {dict(scopes)}"
        )
    return "\n".join(lines)


def _ancestors(span: Span, by_id: dict[str, Span]) -> Iterator[Span]:
    seen = set()
    parent = by_id.get(span.parent or "")
    while parent is not None and parent.id not in seen:
        seen.add(parent.id)
        yield parent
        parent = by_id.get(parent.parent or "")


def _genai_claim(span: Span) -> bool:
    a = span.attributes
    return a.get("gen_ai.operation.name") in ("invoke_workflow", "invoke_agent") and GRAPH in (
        a.get("gen_ai.workflow.name"),
        a.get("gen_ai.agent.name"),
    )


def _openinference_claim(span: Span) -> bool:
    return span.attributes.get("openinference.span.kind") == "CHAIN"


def _traceloop_claim(span: Span) -> bool:
    return span.attributes.get("traceloop.span.kind") == "workflow"


FAMILIES = {
    "genai": _genai_claim,
    "openinference": _openinference_claim,
    "traceloop": _traceloop_claim,
}


def claims(spans: list[Span], family: str) -> list[Span]:
    """The family's spans that claim the run: theirs with no span of the family above them."""
    claim = FAMILIES[family]
    by_id = {s.id: s for s in spans}
    return [s for s in spans if claim(s) and not any(claim(a) for a in _ancestors(s, by_id))]


def families(spans: list[Span]) -> list[str]:
    """The families present in the run: those with a span carrying their marker
    (``gen_ai.operation.name`` invoke_workflow/invoke_agent, ``openinference.span.kind``,
    ``traceloop.span.kind``)."""
    markers = {
        "genai": lambda s: (
            s.attributes.get("gen_ai.operation.name") in ("invoke_workflow", "invoke_agent")
        ),
        "openinference": lambda s: "openinference.span.kind" in s.attributes,
        "traceloop": lambda s: "traceloop.span.kind" in s.attributes,
    }
    return [family for family, marked in markers.items() if any(marked(s) for s in spans)]


def _id(value: Any) -> str:
    if isinstance(value, Cell):
        return value.key
    return str(value)


# --------------------------------------------------------------------------------------------
# the environments and the processes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "peers", sorted({c.peers for c in CELLS}), ids=lambda p: "+".join(p) or "none"
)
def test_environment_has_exactly_the_chosen_peers(session: Session, peers: tuple[str, ...]) -> None:
    """The env's interpreter sees the ``langchain`` entry points of the chosen peers only (and
    the library's own), as a user's environment with just those installed would."""
    seen = session.envs[peers].check()
    expected = sorted(
        [f"langchain={peer_envs.PEERS[p]}" for p in peers if p != "openlit"]
        + ["langgraph_checkpoint=langgraph-checkpoint-otel"]
    )
    assert seen["entry_points"] == expected
    assert seen["prefix"] == str(session.envs[peers].root)


@pytest.mark.parametrize("process", sorted({c.process for c in CELLS if c.mode != "server"}))
def test_app_ran_in_its_env_with_the_peers_loaded(session: Session, process: str) -> None:
    """``opentelemetry-instrument`` ran the env's interpreter and instrumented exactly the
    installed peers (OpenLIT through the app's ``openlit.init()``)."""
    cell = next(c for c in CELLS if c.process == process)
    outcome = _outcome(session, cell)
    env = session.envs[cell.peers]
    assert outcome.report["executable"] == str(env.python)
    loaded = {p for p, cls in INSTRUMENTORS.items() if cls in outcome.report["instrumented"]}
    assert loaded == set(cell.peers)
    assert (
        "langgraph.checkpoint.otel.core.instrumentor.LangGraphCheckpointInstrumentor"
        in (outcome.report["instrumented"])
    )


# --------------------------------------------------------------------------------------------
# one trace per run
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cell", "run"), RUN_CELLS, ids=_id)
def test_each_run_is_one_trace(session: Session, cell: Cell, run: str) -> None:
    """Every span the process exported while the run lasted is in one trace."""
    _, spans = run_spans(session, cell, run)
    traces = {s.trace for s in spans}
    assert len(traces) == 1, (
        f"{cell.key} run {run!r}: {len(spans)} spans in {len(traces)} traces\n{describe(spans)}"
    )


@pytest.mark.parametrize(("cell", "run"), RUN_CELLS, ids=_id)
def test_each_run_trace_has_one_root(session: Session, cell: Cell, run: str) -> None:
    """The run's trace has exactly one span without a parent, and every other span's parent
    was exported (no orphan that a backend would show as a second root)."""
    _, spans = run_spans(session, cell, run)
    ids = {s.id for s in spans}
    roots = [s for s in spans if s.parent is None]
    orphans = [s for s in spans if s.parent is not None and s.parent not in ids]
    assert len(roots) == 1 and not orphans, (
        f"{cell.key} run {run!r}: roots {[f'{s.name} [{s.scope}]' for s in roots]}, "
        f"orphans {[f'{s.name} [{s.scope}]' for s in orphans]}\n{describe(spans)}"
    )


@pytest.mark.parametrize(("cell", "run"), RUN_CELLS, ids=_id)
def test_run_trace_holds_the_library_and_every_peer(session: Session, cell: Cell, run: str) -> None:
    """The trace of the run's root holds the library's checkpoint spans and spans of each
    installed peer (so "one trace" above is not one tracer alone)."""
    _, spans = run_spans(session, cell, run)
    root = next((s for s in spans if s.parent is None), spans[0])
    in_root = Counter(s.scope for s in spans if s.trace == root.trace)
    wanted = ["library", *cell.peers]
    missing = [p for p in wanted if in_root[SCOPES[p]] == 0]
    assert not missing, (
        f"{cell.key} run {run!r}: no span of {missing} in the trace of the root "
        f"{root.name} [{root.scope}]\n{describe(spans)}"
    )
    puts = [s for s in spans if s.scope == names.SCOPE and s.name == names.SPAN_PUT]
    assert puts and all(s.trace == root.trace for s in puts)


@pytest.mark.parametrize(("cell", "run"), RUN_CELLS, ids=_id)
def test_run_is_claimed_once_per_convention_family(session: Session, cell: Cell, run: str) -> None:
    """Exactly one span per convention family claims the top-level graph run (module
    docstring: the counting rules)."""
    _, spans = run_spans(session, cell, run)
    present = families(spans)
    assert "genai" in present or "openinference" in present, f"{cell.key} run {run!r}: no run span"
    counted = {family: claims(spans, family) for family in present}
    wrong = {
        family: [f"{s.name} [{s.scope}]" for s in found]
        for family, found in counted.items()
        if len(found) != 1
    }
    assert not wrong, f"{cell.key} run {run!r}: claimed {wrong}\n{describe(spans)}"


@pytest.mark.parametrize("cell", CELLS, ids=_id)
def test_runs_share_no_trace_and_reads_are_outside(session: Session, cell: Cell) -> None:
    """The three runs are three traces, and no span of a state read outside a run (``get_state``
    after each run) is in a run's trace."""
    outcome = _outcome(session, cell)
    run_traces = [{s.trace for s in outcome.within(outcome.event(cell.mode, r))} for r in RUNS]
    assert all(run_traces)
    for a, b in itertools.combinations(range(len(RUNS)), 2):
        assert not run_traces[a] & run_traces[b], (
            f"{cell.key}: runs {RUNS[a]!r} and {RUNS[b]!r} share a trace"
        )
    in_runs = set().union(*run_traces)
    for read in READS:
        spans = outcome.within(outcome.event(cell.mode, read))
        inside = [f"{s.name} [{s.scope}]" for s in spans if s.trace in in_runs]
        assert not inside, f"{cell.key} {read!r}: {inside} in a run's trace"


@pytest.mark.parametrize("cell", CELLS, ids=_id)
def test_runs_end_as_the_scenario_says(session: Session, cell: Cell) -> None:
    """The refund stops for approval, the approval and the tracking request finish."""
    outcome = _outcome(session, cell)
    ended = [e["outcome"] for e in outcome.events(cell.mode, "run")]
    assert ended == ["interrupted", "finished", "finished"]


@pytest.mark.parametrize("process", sorted({c.process for c in CELLS}))
def test_every_span_started_in_a_run_or_a_read(session: Session, process: str) -> None:
    """No span of the process started outside the graph builds (or server start), runs and
    reads (so a run's spans are all within its window: the tests above see every span of
    every run)."""
    outcome = _outcome(session, next(c for c in CELLS if c.process == process))
    windows = [(e["started_ns"], e["ended_ns"]) for e in outcome.report["events"]]
    outside = [s for s in outcome.spans if not any(a <= s.start_ns <= b for a, b in windows)]
    assert outcome.spans
    assert not outside, f"{process}: {Counter(f'{s.name} [{s.scope}]' for s in outside)}"
