"""What the process knows of the tool calls its graphs requested, for the spans of the tools.

The observer notes each tool call it sees requested (model-issued call id -> name and
idempotency key) and, when a run resumes after a crash, an error or an interrupt, the calls
the loaded checkpoint requested but never answered (their side effects may have run). Tool
spans (GenAI `execute_tool`, OpenInference `TOOL`, `record_tool_start`) read them back. Bounded:
a fixed number of entries of bounded strings (ids and keys are cut to `names.MAX_ID_LENGTH`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from langgraph.checkpoint.otel.analysis.tool_calls import ToolCall
from langgraph.checkpoint.otel.bounded import BoundedDict

MAX_CALLS = 4096
"""Requested calls remembered (oldest forgotten first): at most ~2 KB each."""
MAX_IN_FLIGHT_THREADS = 1024
"""Threads whose unanswered calls are remembered after a resume."""
MAX_IN_FLIGHT_PER_THREAD = 64


class RequestedTools:
    """Tool calls by call id, and calls in flight when a thread's last run stopped."""

    def __init__(
        self, max_calls: int = MAX_CALLS, max_threads: int = MAX_IN_FLIGHT_THREADS
    ) -> None:
        self._lock = threading.Lock()
        self._calls: BoundedDict[str, ToolCall] = BoundedDict(max_calls)
        self._in_flight: BoundedDict[str, frozenset[str]] = BoundedDict(max_threads)

    def note(self, calls: Iterable[tuple[str, ToolCall]]) -> None:
        """Remember requested calls, as (call id, call); calls without an id are skipped."""
        with self._lock:
            for call_id, call in calls:
                if call_id:
                    self._calls[call_id] = call

    def call(self, call_id: str) -> ToolCall | None:
        """The call requested under `call_id`, if noted."""
        with self._lock:
            return self._calls.get(call_id)

    def note_in_flight(self, thread_id: str, keys: Iterable[str], *, add: bool = False) -> None:
        """A run of `thread_id` resumes a checkpoint whose calls `keys` were never answered
        (replacing what was noted for the thread before, no keys forgetting the thread; with
        `add`, a subgraph's resume within the thread's run, added to it)."""
        in_flight = frozenset(list(keys)[:MAX_IN_FLIGHT_PER_THREAD])
        with self._lock:
            if add:
                in_flight |= self._in_flight.get(thread_id, frozenset())
            if in_flight:
                self._in_flight[thread_id] = in_flight
            else:
                self._in_flight.pop(thread_id, None)

    def was_in_flight(self, thread_id: str | None, key: str) -> bool:
        """Whether the call `key` was requested and unanswered when `thread_id` resumed."""
        if thread_id is None:
            return False
        with self._lock:
            return key in self._in_flight.get(thread_id, frozenset())

    def clear(self) -> None:
        """Forget everything (tests)."""
        with self._lock:
            self._calls.clear()
            self._in_flight.clear()


TOOL_CALLS = RequestedTools()
"""The process's registry, shared by every instrumented saver."""
