"""With no OpenTelemetry SDK set up (the API's providers only), the wrapper only delegates.

Each case runs in a fresh process (`no_sdk_app.py`, or a script of its own): the global providers
are process-wide and can be set only once, and this suite sets them elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from langgraph.checkpoint.otel import names
from suite_paths import APPS

APP = APPS / "no_sdk_app.py"


def run_app(scenario: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, str(APP), scenario],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=APP.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_without_an_sdk_the_wrapper_stores_what_the_bare_saver_stores() -> None:
    seen = run_app("delegate")
    assert seen["same_result"] is True
    assert seen["stored"][0] == seen["stored"][1] > 0
    assert seen["otel_keys"] and not any(seen["otel_keys"])  # nothing added to the metadata


def test_without_an_sdk_an_on_divergence_callback_still_sees_the_finding() -> None:
    """Behaviour beyond telemetry (a strict-mode callback, migrations) keeps the library on."""
    assert run_app("strict")["findings"] == ["state"]


def test_an_sdk_set_up_after_instrument_is_used_from_the_next_run() -> None:
    seen = run_app("later")
    assert seen["before"] and not any(seen["before"])
    assert seen["after"] and all(seen["after"])
    assert names.SPAN_PUT in seen["spans"]
    assert any(names.is_run_span_name(name) for name in seen["spans"])


API_ONLY = """
import json, sys
from typing import TypedDict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from langgraph.checkpoint.otel import instrument
from langgraph.checkpoint.otel.analysis import hashing

calls = []
original = hashing.StateHasher.digest_state
def counting(self, *a, **k):
    calls.append(1)
    return original(self, *a, **k)
hashing.StateHasher.digest_state = counting

class S(TypedDict):
    n: int
builder = StateGraph(S)
builder.add_node("inc", lambda s: {"n": s["n"] + 1})
builder.add_edge(START, "inc")
inner = InMemorySaver()
graph = builder.compile(checkpointer=instrument(inner))
result = graph.invoke({"n": 0}, {"configurable": {"thread_id": "t"}})
print(json.dumps({
    "result": result,
    "hash_calls": len(calls),
    "stored_hashes": any("otel" in t.metadata for t in inner.list(None)),
}))
"""


def test_api_only_does_no_hashing() -> None:
    """No SDK provider configured (global API defaults): no hashing, no per-channel work."""
    out = subprocess.run(
        [sys.executable, "-c", API_ONLY], capture_output=True, text=True, check=True
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {
        "result": {"n": 1},
        "hash_calls": 0,
        "stored_hashes": False,
    }
