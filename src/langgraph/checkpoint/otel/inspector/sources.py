"""Where the inspector reads from: a saver by URL (read only) and/or exported span files.

    sqlite:///path/to/db.sqlite        SqliteSaver on a read-only connection
    postgresql://user@host/db           PostgresSaver in a read-only session
    redis://host:6379                   RedisSaver (needs langgraph-checkpoint-redis)
    package.module:factory              any saver: ``factory()`` returns it (or a context manager)
    path/to/spans.jsonl | path/to/dir   OTLP JSON lines (a directory: every ``spans*.jsonl``)

The saver is always the inner (bare) saver, so the wrapper's stored telemetry is visible.
"""

from __future__ import annotations

import contextlib
import importlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from langgraph.checkpoint.otel.analysis.records import unseen_delta_channels
from langgraph.checkpoint.otel.export.otlp_json import OtlpJsonError, SpanRecord, read_spans
from langgraph.checkpoint.otel.inspector.model import SourceInfo


class SourceError(Exception):
    """A source that cannot be read; the message is one line for the user."""


@dataclass
class Sources:
    """The saver and span files one inspector command reads."""

    saver: BaseCheckpointSaver[Any] | None = None
    saver_url: str | None = None
    span_files: list[Path] = field(default_factory=list)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)
    _unseen_delta: set[str] = field(default_factory=set, repr=False)
    """Delta channels read without a value or a stored hash (see `info`)."""

    @cached_property
    def spans(self) -> list[SpanRecord]:
        """Every span of the span files (read once)."""
        spans: list[SpanRecord] = []
        for path in self.span_files:
            try:
                spans.extend(read_spans(path))
            except (OtlpJsonError, OSError, ValueError) as exc:
                raise SourceError(f"{path}: not OTLP JSON spans ({exc})") from None
        return spans

    def info(self) -> SourceInfo:
        """What was read, and what these sources cannot show."""
        missing = []
        if self.saver is None:
            missing.append(
                "no saver: spans carry hashes, sizes and nodes, but no channel values, "
                "no tool-call arguments and only the channels each put changed"
            )
        if not self.span_files:
            missing.append(
                "no span file: a saver carries no timings and no divergences flagged online "
                "(of the traces, only each checkpoint's writer)"
            )
        if self._unseen_delta:
            unseen = ", ".join(sorted(self._unseen_delta))
            missing.append(
                "delta channels stored as deltas without this library's hashes (written with "
                f"telemetry off, or before it was installed): {unseen}; their values, sizes "
                "and tool calls are not shown"
            )
        return SourceInfo(
            saver=self.saver_url,
            spans=", ".join(str(p) for p in self.span_files) or None,
            cannot_show=missing,
        )

    def checkpoints(self, thread_id: str | None = None) -> list[CheckpointTuple]:
        """The saver's checkpoints of a thread (all namespaces), or of every thread."""
        if self.saver is None:
            raise SourceError("this command needs a saver source (-s sqlite:///... or another)")
        config = {"configurable": {"thread_id": thread_id}} if thread_id is not None else None
        try:
            tuples = list(self.saver.list(config))  # type: ignore[arg-type]
        except Exception as exc:
            raise SourceError(f"{self.saver_url}: cannot read checkpoints ({_why(exc)})") from None
        self._unseen_delta |= unseen_delta_channels(tuples)
        return tuples

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Sources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_sources(arguments: Sequence[str], writable: bool = False) -> Sources:
    """Open the sources named by `arguments` (at most one saver, any number of span files).

    `writable` (for `retention --apply` and `restore`) opens a SQLite file read-write and
    PostgreSQL without the read-only session; a Redis or factory saver is opened as it is.
    Tables and indexes are never created or migrated either way.
    """
    if not arguments:
        raise SourceError("no source given: pass -s sqlite:///path.db and/or -s spans.jsonl")
    sources = Sources()
    try:
        for argument in arguments:
            path = Path(argument)
            if "://" not in argument and (path.is_dir() or _looks_like_spans(path)):
                sources.span_files.extend(_span_files(path))
                continue
            if sources.saver is not None:
                raise SourceError(f"more than one saver given ({sources.saver_url}, {argument})")
            sources.saver = _open_saver(argument, sources._stack, writable=writable)
            sources.saver_url = _public_url(argument)
    except BaseException:
        sources.close()
        raise
    return sources


def _looks_like_spans(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as f:
        head = f.read(16)
    return not head.startswith(b"SQLite format 3")


def _span_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(path.glob("spans*.jsonl"))
    if not files:
        raise SourceError(f"{path}: no spans*.jsonl file in this directory")
    return files


def _open_saver(
    argument: str, stack: contextlib.ExitStack, *, writable: bool = False
) -> BaseCheckpointSaver[Any]:
    scheme = argument.split("://", 1)[0].lower() if "://" in argument else ""
    if scheme == "sqlite":
        return _sqlite(argument[len("sqlite://") :].removeprefix("/") or "", stack, writable)
    if scheme in ("postgres", "postgresql"):
        return _postgres(argument, stack, writable)
    if scheme in ("redis", "rediss"):
        return _redis(argument, stack)
    if not scheme and Path(argument).is_file():  # a SQLite file given as a plain path
        return _sqlite(argument, stack, writable)
    if not scheme and ":" in argument:
        return _factory(argument, stack)
    raise SourceError(
        f"{argument}: not a source (sqlite:///path, postgresql://..., redis://..., "
        "module:factory, or a span file or directory)"
    )


def _sqlite(
    path_text: str, stack: contextlib.ExitStack, writable: bool = False
) -> BaseCheckpointSaver[Any]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise SourceError("sqlite:// needs langgraph-checkpoint-sqlite installed") from None
    path = Path("/" + path_text if not Path(path_text).exists() else path_text)
    if not path.is_file():
        raise SourceError(f"{path_text}: no such SQLite file")
    try:
        mode = "rw" if writable else "ro"
        conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, check_same_thread=False)
        stack.callback(conn.close)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.Error as exc:
        raise SourceError(f"{path}: not a readable SQLite database ({exc})") from None
    if "checkpoints" not in tables:
        raise SourceError(f"{path}: no LangGraph checkpoints table in this database")
    saver = SqliteSaver(conn)
    saver.is_setup = True  # never create or migrate tables
    if writable:  # what setup() would find: a database from before `writes.task_path`
        columns = {r[1] for r in conn.execute("PRAGMA table_info(writes)")}
        saver._has_task_path = "task_path" in columns
    return saver


def _postgres(
    url: str, stack: contextlib.ExitStack, writable: bool = False
) -> BaseCheckpointSaver[Any]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
    except ImportError:
        raise SourceError("postgresql:// needs langgraph-checkpoint-postgres installed") from None
    try:
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    except psycopg.Error as exc:
        raise SourceError(f"{_public_url(url)}: cannot connect ({_why(exc)})") from None
    stack.callback(conn.close)
    if not writable:
        conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    return PostgresSaver(conn)


def _redis(url: str, stack: contextlib.ExitStack) -> BaseCheckpointSaver[Any]:
    try:
        # an optional package, typed or not depending on its version: imported by name
        saver_class: Any = importlib.import_module("langgraph.checkpoint.redis").RedisSaver
    except ImportError:
        raise SourceError("redis:// needs langgraph-checkpoint-redis installed") from None
    # Read only: never `setup()`, which creates the search indexes (and a key registry, which
    # reading does not need). The indexes' handles exist once the saver is made; only whether
    # the server has them is asked (FT._LIST), to tell an empty server from a broken one.
    try:
        saver: Any = stack.enter_context(saver_class.from_conn_string(url))
        detect_cluster_mode = getattr(saver, "_detect_cluster_mode", None)
        if callable(detect_cluster_mode):  # what setup() would detect, from the client's class
            detect_cluster_mode()
        has_checkpoints = bool(saver.checkpoints_index.exists())
    except Exception as exc:
        raise SourceError(f"{_public_url(url)}: cannot connect ({_why(exc)})") from None
    if not has_checkpoints:
        raise SourceError(
            f"{_public_url(url)}: no LangGraph checkpoints on this server "
            f"(no {saver.checkpoints_index.name!r} search index: never set up by RedisSaver)"
        )
    if not isinstance(saver, BaseCheckpointSaver):  # pragma: no cover - a foreign package
        raise SourceError(f"{_public_url(url)}: RedisSaver is not a checkpoint saver")
    return saver


def _factory(argument: str, stack: contextlib.ExitStack) -> BaseCheckpointSaver[Any]:
    module_name, _, attribute = argument.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
        made = factory()
    except Exception as exc:
        raise SourceError(f"{argument}: cannot make a saver ({_why(exc)})") from None
    if not isinstance(made, BaseCheckpointSaver) and hasattr(made, "__enter__"):
        made = stack.enter_context(made)
    inner = getattr(made, "inner", None)  # an instrumented saver: read its inner saver
    if isinstance(inner, BaseCheckpointSaver):
        made = inner
    if not isinstance(made, BaseCheckpointSaver):
        raise SourceError(f"{argument}: returned {type(made).__name__}, not a checkpoint saver")
    return made


def _public_url(url: str) -> str:
    """`url` without its password."""
    if "://" not in url:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
