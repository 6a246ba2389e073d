"""`compat`'s reasons one by one, on real graphs and a real SQLite saver (the five release-2
changes of `release_app` are checked against LangGraph in `test_deploy_safety.py`), its
paging and filters, and that it never writes; and the graph structure the wrapper records."""

from __future__ import annotations

import hashlib
import operator
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Send
from opentelemetry.sdk.trace import TracerProvider
from pydantic import BaseModel

from graphs import with_subgraph
from helpers import OTel, is_run_span
from langgraph.checkpoint.otel import Migrations, instrument, names, stored_history
from langgraph.checkpoint.otel.analysis.stored_metadata import read_stored_telemetry
from langgraph.checkpoint.otel.core.structure_cache import structure_of
from langgraph.checkpoint.otel.inspector import compat
from langgraph.checkpoint.otel.inspector.sources import open_sources
from langgraph.checkpoint.otel.inspector.thread_list import ThreadQuery


@pytest.fixture
def db(tmp_path: Path) -> Iterator[tuple[Path, SqliteSaver]]:
    path = tmp_path / "threads.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    yield path, saver
    conn.close()


def recorded(saver: SqliteSaver, **options: Any) -> Any:
    return instrument(saver, tracer_provider=TracerProvider(), **options)


def check(
    path: Path, graph: Any, query: ThreadQuery | None = None, limit: int | None = None, **kw: Any
) -> dict[str, set[tuple[str, str]]]:
    """thread -> {(reason, subject)} of the threads at risk under `graph`."""
    with open_sources([f"sqlite:///{path}"]) as sources:
        threads = compat.stored_threads(sources, query or ThreadQuery(limit=None), limit)
        report = compat.compat_report("test", compat.CompatCheck(graph, **kw), threads)
    return {row.thread_id: {(r.reason, r.subject) for r in row.risks} for row in report.at_risk}


def config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


# --- a map-reduce graph parked before its workers: the pending Sends ---------------------------


class Jobs(TypedDict, total=False):
    items: list[str]
    done: Annotated[list[str], operator.add]


def fan_out(worker: str = "worker") -> StateGraph:
    def split(state: Jobs) -> dict[str, Any]:
        return {}

    def work(state: Any) -> dict[str, Any]:
        return {"done": [state["item"]]}

    builder = StateGraph(Jobs)
    builder.add_node("split", split)
    builder.add_node(worker, work)
    builder.add_edge(START, "split")
    builder.add_conditional_edges(
        "split", lambda s: [Send(worker, {"item": i}) for i in s["items"]], [worker]
    )
    return builder


def test_a_pending_send_to_a_node_the_new_graph_lacks_is_at_risk(db: Any) -> None:
    path, saver = db
    graph = fan_out().compile(checkpointer=recorded(saver), interrupt_before=["worker"])
    graph.invoke({"items": ["a", "b"]}, config("parked"))
    assert check(path, fan_out().compile()) == {}
    assert check(path, fan_out("reviewer").compile()) == {"parked": {("missing_node", "worker")}}


# --- pydantic state ----------------------------------------------------------------------------


class Ticket(BaseModel):
    subject: str = ""
    priority: int = 0


class TicketV2(BaseModel):
    subject: str = ""
    priority: str = "normal"  # was an int
    owner: str  # required, no default


class TicketV3(BaseModel):
    priority: int = 0  # `subject` is gone


def tickets(schema: type[BaseModel]) -> StateGraph:
    def triage(state: Any) -> dict[str, Any]:
        return {"priority": 2} if schema is not TicketV2 else {"priority": "high"}

    builder = StateGraph(schema)
    builder.add_node("triage", triage)
    builder.add_edge(START, "triage")
    return builder


def test_pydantic_state_that_fails_the_new_schema_or_lacks_a_required_field_is_at_risk(
    db: Any,
) -> None:
    path, saver = db
    tickets(Ticket).compile(checkpointer=recorded(saver)).invoke(
        {"subject": "refund"}, config("t-1")
    )
    assert check(path, tickets(Ticket).compile()) == {}
    assert check(path, tickets(TicketV2).compile()) == {
        "t-1": {("schema_validation", "priority"), ("new_required_channel", "owner")}
    }
    assert check(path, tickets(TicketV3).compile()) == {"t-1": {("data_dropped", "subject")}}


# --- schema versions ---------------------------------------------------------------------------


def test_a_schema_version_without_a_migration_path_is_at_risk(db: Any) -> None:
    path, saver = db
    tickets(Ticket).compile(checkpointer=recorded(saver, schema_version="1")).invoke(
        {"subject": "refund"}, config("t-1")
    )
    migrations = Migrations()
    migrations.register("1", "2")(lambda values: values)
    new = tickets(Ticket).compile()
    assert check(path, new, schema_version="1") == {}
    assert check(path, new, schema_version="3") == {"t-1": {("schema_version", "1 -> 3")}}
    assert check(path, new, schema_version="2", migrations=migrations) == {}
    # the version and migrations of the graph's own instrumented saver are used by default
    declared = tickets(Ticket).compile(
        checkpointer=recorded(saver, schema_version="3", migrations=migrations)
    )
    assert check(path, declared) == {"t-1": {("schema_version", "1 -> 3")}}


# --- paging, filters, read only ----------------------------------------------------------------


def test_compat_pages_through_every_thread_and_honours_its_filters(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, saver = db
    graph = tickets(Ticket).compile(checkpointer=recorded(saver))
    for i in range(7):
        graph.invoke({"subject": "s"}, config(f"{'a' if i < 4 else 'b'}-{i}"))
    monkeypatch.setattr(compat, "PAGE", 3)
    changed = tickets(TicketV3).compile()
    assert len(check(path, changed)) == 7
    assert len(check(path, changed, limit=5)) == 5
    assert set(check(path, changed, ThreadQuery(limit=None, prefix="b-"))) == {"b-4", "b-5", "b-6"}


def test_compat_never_writes_to_the_saver(db: Any) -> None:
    path, saver = db
    tickets(Ticket).compile(checkpointer=recorded(saver)).invoke({"subject": "s"}, config("t"))
    saver.conn.commit()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    check(path, tickets(TicketV2).compile())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_thread_written_without_the_structure_is_checked_by_its_values(db: Any) -> None:
    """Written bare: no stored structure, so a new required key is judged by the values the
    thread holds (it holds none for `owner`: the pydantic state fails every node)."""
    path, saver = db
    tickets(Ticket).compile(checkpointer=saver).invoke({"subject": "s"}, config("bare"))
    with open_sources([f"sqlite:///{path}"]) as sources:
        threads = compat.stored_threads(sources, ThreadQuery(limit=None), None)
        report = compat.compat_report(
            "test", compat.CompatCheck(tickets(TicketV2).compile()), threads
        )
    assert [(r.reason, r.subject) for row in report.at_risk for r in row.risks] == [
        ("new_required_channel", "owner"),
        ("schema_validation", "priority"),
    ]
    assert report.unchecked == []
    assert report.structures == {"unknown": 1}


# --- the structure the wrapper records ---------------------------------------------------------


def test_the_run_span_every_put_and_the_stored_metadata_carry_the_graphs_structure_hash(
    db: Any, otel: OTel
) -> None:
    _, saver = db
    builder = with_subgraph()
    graph = builder.compile(
        checkpointer=instrument(
            saver, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
        )
    )
    graph.invoke({"log": []}, config("t"))
    root = structure_of(graph).structure_hash
    ((_, subgraph),) = graph.get_subgraphs()
    inner = structure_of(subgraph).structure_hash
    assert root != inner
    (run,) = [s for s in otel.spans() if is_run_span(s)]
    assert run.attributes[names.GRAPH_STRUCTURE_HASH] == root
    puts = [s for s in otel.spans() if s.name == names.SPAN_PUT]
    by_namespace = {
        str(s.attributes.get(names.CHECKPOINT_NS, "")): s.attributes[names.GRAPH_STRUCTURE_HASH]
        for s in puts
    }
    assert by_namespace[""] == root
    assert {h for ns, h in by_namespace.items() if ns} == {inner}
    stored = [read_stored_telemetry(t.metadata) for t in stored_history(saver, config("t"))]
    assert {s.graph.structure_hash for s in stored if s and s.graph} == {root, inner}


def test_the_new_graph_is_named_as_langgraph_json_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "new_release.py").write_text(
        "from typing import TypedDict\n"
        "from langgraph.graph import START, StateGraph\n\n"
        "class State(TypedDict):\n    n: int\n\n"
        "builder = StateGraph(State)\n"
        "builder.add_node('step', lambda state: {'n': state['n'] + 1})\n"
        "builder.add_edge(START, 'step')\n"
        "compiled = builder.compile()\n\n"
        "def factory():\n    return builder.compile()\n\n"
        "def with_config(config):\n    return builder.compile()\n\n"
        "async def async_factory():\n    return builder.compile()\n"
    )
    monkeypatch.chdir(tmp_path)  # importable from the current directory, as for langgraph dev
    hashes = {
        structure_of(compat.load_graph(f"new_release:{name}")).structure_hash  # type: ignore[union-attr]
        for name in ("compiled", "builder", "factory", "with_config", "async_factory")
    }
    assert len(hashes) == 1
