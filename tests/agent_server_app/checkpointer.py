"""Custom checkpointers for the Agent Server (`langgraph.json` key ``"checkpointer"``).

``"checkpointer": {"path": "./checkpointer.py:wrapped"}``: an `AsyncSqliteSaver` wrapped by
`instrument()`, which uses the global OpenTelemetry providers (here set up by
``opentelemetry-instrument``). ``./checkpointer.py:bare`` is the same saver unwrapped, for
comparing results. The database file is ``AGENT_APP_SQLITE`` (default ``checkpoints.sqlite``
in the working directory).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from langgraph.checkpoint.otel import instrument


def _path() -> str:
    return os.environ.get("AGENT_APP_SQLITE", "checkpoints.sqlite")


@asynccontextmanager
async def wrapped() -> AsyncIterator[BaseCheckpointSaver]:
    async with AsyncSqliteSaver.from_conn_string(_path()) as saver:
        yield instrument(saver)


@asynccontextmanager
async def bare() -> AsyncIterator[BaseCheckpointSaver]:
    async with AsyncSqliteSaver.from_conn_string(_path()) as saver:
        yield saver
