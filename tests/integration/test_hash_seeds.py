"""Hashes that do not depend on the process: channel hashes and a graph's structure hash are the
same in another process with another ``PYTHONHASHSEED`` (and insertion order). Each side runs
in a fresh interpreter (`sys.executable -c`): a hash seed is fixed when a process starts.
(Moved from tests/unit/test_hashing.py and tests/unit/test_graph_fingerprint.py, which stay pure.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from suite_paths import APPS, SUPPORT, TESTS

_CHILD = textwrap.dedent(
    """
    import json, sys
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.otel.analysis.hashing import hash_value, StateHasher

    reverse = sys.argv[1] == "reverse"
    keys = [f"k{i}" for i in range(40)]
    if reverse:
        keys.reverse()
    d = {k: {"n": k, "tags": {f"t{j}" for j in range(len(k))}} for k in keys}
    s = set(keys)
    msgs = [HumanMessage("hello", id="h-" + sys.argv[1]),
            AIMessage("", id="a-" + sys.argv[1],
                      tool_calls=[{"name": "search", "args": {"b": 1, "a": 2} if reverse
                                   else {"a": 2, "b": 1}, "id": "call-" + sys.argv[1]}])]
    values = {"d": d, "s": s, "messages": msgs}
    if reverse:
        values = dict(reversed(list(values.items())))
    digest = StateHasher().digest_state(
        "scope", values, {c: 1 for c in values}, set(values))
    print(json.dumps({"d": hash_value(d), "s": hash_value(s), "m": hash_value(msgs),
                      "state": digest.state_hash}))
    """
)


def test_hashes_equal_across_processes_seeds_and_insertion_orders() -> None:
    outputs = []
    for seed, order in (("1", "forward"), ("98765", "reverse")):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, order],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    assert len(set(outputs[0].values())) == 4


def test_the_same_graph_hashes_alike_in_another_process_with_another_hash_seed() -> None:
    """`release()` of tests/unit/test_graph_fingerprint.py, hashed under two hash seeds."""
    code = (
        f"import sys; sys.path[:0] = {[str(TESTS / 'unit'), str(APPS), str(SUPPORT)]!r};"
        "from test_graph_fingerprint import release;"
        "from test_graph_fingerprint import graph_structure;"
        "print(graph_structure(release()).structure_hash())"
    )
    hashes = [
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("0", "12345")
    ]
    assert hashes[0] and hashes[0] == hashes[1]
