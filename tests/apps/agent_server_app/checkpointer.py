"""Custom checkpointers for the Agent Server (`langgraph.json` key ``"checkpointer"``).

``"checkpointer": {"path": "./checkpointer.py:wrapped"}``: an `AsyncSqliteSaver` wrapped by
`instrument()`, which uses the global OpenTelemetry providers (here set up by
``opentelemetry-instrument``). ``./checkpointer.py:bare`` is the same saver unwrapped, for
comparing results. The database file is ``AGENT_APP_SQLITE`` (default ``checkpoints.sqlite``
in the working directory).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from opentelemetry import metrics, trace

from langgraph.checkpoint.otel import instrument


def _path() -> str:
    return os.environ.get("AGENT_APP_SQLITE", "checkpoints.sqlite")


@asynccontextmanager
async def wrapped() -> AsyncIterator[BaseCheckpointSaver]:
    async with AsyncSqliteSaver.from_conn_string(_path()) as saver:
        try:
            yield instrument(saver)
        finally:
            # The server closes this context when it shuts down. Flush here: uvicorn re-raises
            # SIGTERM once it has shut down, so the process dies of the signal and the SDK's own
            # flush at exit never runs (batched spans and metrics would be lost).
            await asyncio.to_thread(_flush)


def _flush() -> None:
    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        force_flush = getattr(provider, "force_flush", None)
        if force_flush is not None:
            force_flush(5_000)


@asynccontextmanager
async def bare() -> AsyncIterator[BaseCheckpointSaver]:
    async with AsyncSqliteSaver.from_conn_string(_path()) as saver:
        yield saver
