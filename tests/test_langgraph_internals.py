"""A LangGraph release without an internal the library reads: the wrapper goes on delegating and
reporting what it knows (puts, loads), logs the missing signal once, and never fails a run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

APP = textwrap.dedent(
    """
    import asyncio, json, logging, sys
    sys.path.insert(0, {tests!r})

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
    script.write_text(APP.format(tests=str(Path(__file__).parent)))
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["same"] is True
    assert report["spans"] == ["langgraph.checkpoint.get", "langgraph.checkpoint.put"]
    missing = [line for line in proc.stderr.splitlines() if "lacks" in line]
    assert len(missing) == 1 and "PregelLoop entries" in missing[0], proc.stderr
