"""The cost of hashing follows the change across runs and restarts, on a real agent.

A fresh wrapper over the same database (what a restarted process has: no cache) continues each
message list's hash from the loaded checkpoint's stored hash, so the first put of its run
encodes each new message once, the history never, and every stored hash equals the from-scratch one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

import agents
from helpers import OTel
from langgraph.checkpoint.otel import instrument, names, stored_history
from langgraph.checkpoint.otel.analysis import encoding, hashing

TURNS = 6


class EncodedMessages:
    """How many messages were encoded (a digest computed, not reused), per call (patched)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: list[int] = []
        original = encoding._element_digest

        def counting(x: Any, ctx: Any) -> Any:
            if isinstance(x, BaseMessage) and id(x) not in ctx.elements:
                self.counts.append(1)
            return original(x, ctx)

        monkeypatch.setattr(encoding, "_element_digest", counting)


def wrapped(inner: Any, otel: OTel) -> Any:
    return instrument(
        inner, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )


def assert_stored_hashes_are_from_scratch(saver: Any, config: Any) -> int:
    """Every stored messages hash equals the hash of the stored messages; returns how many."""
    checked = 0
    for item in stored_history(saver, config):
        stored = item.metadata[names.METADATA_KEY]["channels"]
        messages = item.checkpoint["channel_values"].get("messages")
        if messages is not None:
            assert stored["messages"][0] == hashing.hash_value(messages), item.config
            checked += 1
    return checked


def test_a_restarted_process_hashes_only_the_new_messages(
    otel: OTel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.sqlite"
    config = agents.thread("long")
    with SqliteSaver.from_conn_string(str(path)) as inner:
        agent = agents.react_agent(wrapped(inner, otel))
        for turn in range(TURNS):
            agent.invoke(agents.question(f"turn {turn}"), config)
        history = len(agent.get_state(config).values["messages"])
    assert history >= 3 * TURNS

    counts = EncodedMessages(monkeypatch)
    with SqliteSaver.from_conn_string(str(path)) as inner:  # the restarted process
        saver = wrapped(inner, otel)
        agent = agents.react_agent(saver)
        agent.invoke(agents.question("after the restart"), config)
        added = len(agent.get_state(config).values["messages"]) - history
        assert counts.counts, "nothing was hashed"
        # each new message once, and the input once more inside `__start__`
        assert sum(counts.counts) <= 2 * added, (sum(counts.counts), added, history)
        assert saver.observer.cache_sizes()["hasher_lists"] == 0  # released as the run ended
        assert assert_stored_hashes_are_from_scratch(saver, config) > 3 * TURNS


def test_async_runs_continue_from_the_loaded_checkpoint_too(
    otel: OTel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.sqlite"
    config = agents.thread("long-async")

    async def turns(n: int, label: str) -> tuple[Any, int]:
        async with AsyncSqliteSaver.from_conn_string(str(path)) as inner:
            saver = wrapped(inner, otel)
            agent = agents.react_agent(saver)
            for turn in range(n):
                await agent.ainvoke(agents.question(f"{label} {turn}"), config)
            state = await agent.aget_state(config)
            return saver.observer.cache_sizes(), len(state.values["messages"])

    _, history = asyncio.run(turns(TURNS, "turn"))
    counts = EncodedMessages(monkeypatch)
    sizes, total = asyncio.run(turns(1, "after the restart"))
    assert counts.counts and sum(counts.counts) <= 2 * (total - history), (counts.counts, history)
    assert sizes["hasher_lists"] == 0
    with SqliteSaver.from_conn_string(str(path)) as inner:
        assert assert_stored_hashes_are_from_scratch(wrapped(inner, otel), config) > 3 * TURNS
