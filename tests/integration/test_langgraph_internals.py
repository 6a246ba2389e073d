"""The LangGraph internals the library reads (`langgraph.checkpoint.otel._langgraph`): every one
is there on the installed release (the supported range is tested on its oldest and newest
release, scripts/langgraph_versions/run.py); a release without one: the wrapper goes on
delegating and reporting what it knows (puts, loads), logs the missing signal once, and never
fails a run. Runtime: about 3 s (two subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from suite_paths import APPS, SUPPORT

APP = textwrap.dedent(
    """
    import asyncio, json, logging, sys
    sys.path[:0] = {paths!r}

    # a future LangGraph: its loop classes renamed (LangGraph's own modules keep their names)
    import langgraph.pregel._loop as loop_module
    del loop_module.SyncPregelLoop, loop_module.AsyncPregelLoop

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    from langgraph.checkpoint.memory import InMemorySaver
    from helpers import OTel
    import graphs
    from langgraph.checkpoint.otel import instrument

    def run(saver):
        graph = graphs.linear().compile(checkpointer=saver)
        config = {{"configurable": {{"thread_id": "t"}}}}
        first = graph.invoke(graphs.user_input("hi"), config)
        second = asyncio.run(graph.ainvoke(graphs.user_input("again"), config))
        graph.update_state(config, {{"log": ["edited"]}})
        return [first, second, graph.get_state(config).values]

    otel = OTel()
    wrapped = run(instrument(InMemorySaver(), tracer_provider=otel.tracer_provider))
    bare = run(InMemorySaver())
    print(json.dumps({{
        "same": repr(wrapped) == repr(bare),
        "spans": sorted(set(otel.span_names())),
    }}))
    """
)


def test_missing_loop_entries_leave_puts_and_loads_and_log_once(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(APP.format(paths=[str(APPS), str(SUPPORT)]))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["same"] is True
    # the run span still opens where the graph is called (`_langgraph.graph_calls`, which does
    # not need the loop classes); puts and loads are reported as before
    assert report["spans"] == [
        "invoke_workflow LangGraph",
        "langgraph.checkpoint.get",
        "langgraph.checkpoint.put",
    ]
    missing = [line for line in proc.stderr.splitlines() if "lacks" in line]
    assert len(missing) == 1 and "PregelLoop entries" in missing[0], proc.stderr


PRESENT_APP = textwrap.dedent(
    """
    import asyncio, json, logging, sys
    sys.path[:0] = {paths!r}

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.pregel import Pregel, _loop, _runner, main
    from helpers import OTel
    import graphs
    from langgraph.checkpoint.otel import instrument
    from langgraph.checkpoint.otel._langgraph import loop as internals

    otel = OTel()
    graph = graphs.linear().compile(
        checkpointer=instrument(InMemorySaver(), tracer_provider=otel.tracer_provider)
    )
    config = {{"configurable": {{"thread_id": "t"}}}}
    graph.invoke(graphs.user_input("hi"), config)
    asyncio.run(graph.ainvoke(graphs.user_input("again"), config))
    graph.update_state(config, {{"log": ["edited"]}}, as_node="b")
    wrapped = {{
        "SyncPregelLoop.__enter__": _loop.SyncPregelLoop.__enter__,
        "AsyncPregelLoop.__aenter__": _loop.AsyncPregelLoop.__aenter__,
        "_runner.arun_with_retry": _runner.arun_with_retry,
        "main._store_or_fork_delta_writes": main._store_or_fork_delta_writes,
        "main._astore_or_fork_delta_writes": main._astore_or_fork_delta_writes,
        "_loop.create_checkpoint": _loop.create_checkpoint,
        "main.create_checkpoint": main.create_checkpoint,
        "Pregel.invoke": Pregel.invoke,
        "Pregel.ainvoke": Pregel.ainvoke,
        "Pregel.stream": Pregel.stream,
        "Pregel.astream": Pregel.astream,
    }}
    print(json.dumps({{
        "wrapped": sorted(name for name, f in wrapped.items() if hasattr(f, "__wrapped__")),
        "delta_types": [internals._DELTA_CHANNEL is not None, internals._DELTA_SNAPSHOT is not None],
    }}))
    """
)


def test_every_internal_the_library_reads_is_found_on_the_installed_langgraph(
    tmp_path: Path,
) -> None:
    script = tmp_path / "app.py"
    script.write_text(PRESENT_APP.format(paths=[str(APPS), str(SUPPORT)]))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "lacks" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["wrapped"] == [
        "AsyncPregelLoop.__aenter__",
        "Pregel.ainvoke",
        "Pregel.astream",
        "Pregel.invoke",
        "Pregel.stream",
        "SyncPregelLoop.__enter__",
        "_loop.create_checkpoint",
        "_runner.arun_with_retry",
        "main._astore_or_fork_delta_writes",
        "main._store_or_fork_delta_writes",
        "main.create_checkpoint",
    ], proc.stderr
    assert report["delta_types"] == [True, True], "DeltaChannel or _DeltaSnapshot not found"


def test_a_graph_with_an_async_def_node_in_a_subgraph_is_known_to_run_only_async() -> None:
    from typing import Any, TypedDict

    from langgraph.graph import START, StateGraph

    import agents
    from langgraph.checkpoint.otel._langgraph.graph import runs_only_async

    class State(TypedDict):
        n: int

    def sync_node(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    async def async_node(state: State) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    def graph_of(node: Any, name: str) -> Any:
        builder = StateGraph(State)
        builder.add_node(name, node)
        builder.add_edge(START, name)
        return builder.compile()

    inner = graph_of(async_node, "inner")
    assert runs_only_async(graph_of(inner, "outer"))  # found through the subgraph
    assert not runs_only_async(graph_of(graph_of(sync_node, "inner"), "outer"))
    assert not runs_only_async(agents.langchain_agent(None))  # sync and async bodies
