"""The retention archive: what an apply removed, one JSON line per thread, restorable.

Each line is one record (see docs/retention.md, "Archive format"):

    {"format": "langgraph-otel-archive", "version": 1, "thread_id": "...", "saver": "sqlite",
     "written": "2026-12-06T15:00:00+00:00", "latest": {"": "<checkpoint id>"},
     "checkpoints": [{"ns": "", "id": "...", "parent_id": "...",
                      "checkpoint": ["msgpack", "<base64>"], "metadata": ["json", "<base64>"],
                      "writes": [{"task_id": "...", "task_path": "...", "idx": 0,
                                  "channel": "...", "value": ["msgpack", "<base64>"]}]}],
     "blobs": [{"ns": "", "channel": "...", "version": "...", "value": ["empty", null]}],
     "sha256": "<hex of the line without this field>"}

A thread with many checkpoints to remove is written as several records (see
`retention.apply.RECORD_CHECKPOINTS`), so memory holds one record at a time; restore reads
them all. Values are the saver's own serializer output (`serde.dumps_typed`), so an encrypting serde
keeps the archive encrypted. A record is appended and fsynced before anything of its thread
is removed. A line cut short (the process was killed while writing it) is ignored on read
and reported; so is a line whose checksum does not match.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FORMAT = "langgraph-otel-archive"
VERSION = 1

Typed = tuple[str, bytes | None]
"""A value as the saver's serializer writes it: (type tag, bytes)."""


@dataclass(frozen=True)
class ArchivedWrite:
    """One pending write of an archived checkpoint."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Typed


@dataclass(frozen=True)
class ArchivedCheckpoint:
    """One removed checkpoint, with its metadata, parent and pending writes."""

    ns: str
    id: str
    parent_id: str | None
    checkpoint: Typed
    metadata: Typed
    writes: tuple[ArchivedWrite, ...] = ()
    stored: Mapping[str, Any] = field(default_factory=dict)
    """Store fields the saver's API does not carry (Redis: `checkpoint_ts`), set back after
    `put`."""


@dataclass(frozen=True)
class ArchivedBlob:
    """A separately stored channel value (PostgreSQL `checkpoint_blobs`) that was removed."""

    ns: str
    channel: str
    version: str
    value: Typed


@dataclass(frozen=True)
class ThreadRecord:
    """Everything one apply removed from one thread."""

    thread_id: str
    saver: str
    latest: Mapping[str, str]
    """The latest checkpoint id of each namespace when archived (kept by the apply)."""
    checkpoints: tuple[ArchivedCheckpoint, ...]
    blobs: tuple[ArchivedBlob, ...] = ()
    written: str = field(default_factory=lambda: datetime.now(UTC).isoformat())


@dataclass
class ArchiveContents:
    """The records of an archive file, and the lines that could not be read."""

    records: list[ThreadRecord] = field(default_factory=list)
    torn: int = 0
    """A last line cut short (killed while writing): ignored."""
    corrupt: list[int] = field(default_factory=list)
    """Line numbers (1-based) that are not valid records (bad JSON or checksum)."""

    @property
    def incomplete(self) -> int:
        """Lines ignored: torn or corrupt."""
        return self.torn + len(self.corrupt)


class ArchiveError(Exception):
    """An archive that cannot be written or read (the message is one line for the user)."""


def _typed(value: Typed) -> list[Any]:
    tag, data = value
    return [tag, None if data is None else base64.b64encode(data).decode("ascii")]


def _untyped(value: Any) -> Typed:
    tag, data = value
    return (str(tag), None if data is None else base64.b64decode(data))


def _body(record: ThreadRecord) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "thread_id": record.thread_id,
        "saver": record.saver,
        "written": record.written,
        "latest": dict(record.latest),
        "checkpoints": [
            {
                "ns": c.ns,
                "id": c.id,
                "parent_id": c.parent_id,
                "checkpoint": _typed(c.checkpoint),
                "metadata": _typed(c.metadata),
                **({"stored": dict(c.stored)} if c.stored else {}),
                "writes": [
                    {
                        "task_id": w.task_id,
                        "task_path": w.task_path,
                        "idx": w.idx,
                        "channel": w.channel,
                        "value": _typed(w.value),
                    }
                    for w in c.writes
                ],
            }
            for c in record.checkpoints
        ],
        "blobs": [
            {"ns": b.ns, "channel": b.channel, "version": b.version, "value": _typed(b.value)}
            for b in record.blobs
        ],
    }


def _checksum(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def encode_record(record: ThreadRecord) -> bytes:
    """One archive line (with its trailing newline)."""
    body = _body(record)
    body["sha256"] = _checksum(body)
    return (json.dumps(body, separators=(",", ":"), ensure_ascii=True) + "\n").encode("ascii")


def decode_record(line: bytes | str) -> ThreadRecord:
    """A record from one archive line; ValueError if it is not one (or its checksum is off)."""
    data = json.loads(line)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a retention archive record")
    if data.get("version") != VERSION:
        raise ValueError(f"archive format version {data.get('version')!r} is not supported")
    checksum = data.pop("sha256", None)
    if checksum != _checksum(data):
        raise ValueError("checksum mismatch")
    return ThreadRecord(
        thread_id=str(data["thread_id"]),
        saver=str(data["saver"]),
        written=str(data["written"]),
        latest={str(k): str(v) for k, v in data["latest"].items()},
        checkpoints=tuple(
            ArchivedCheckpoint(
                ns=str(c["ns"]),
                id=str(c["id"]),
                parent_id=None if c["parent_id"] is None else str(c["parent_id"]),
                checkpoint=_untyped(c["checkpoint"]),
                metadata=_untyped(c["metadata"]),
                stored=dict(c.get("stored") or {}),
                writes=tuple(
                    ArchivedWrite(
                        task_id=str(w["task_id"]),
                        task_path=str(w["task_path"]),
                        idx=int(w["idx"]),
                        channel=str(w["channel"]),
                        value=_untyped(w["value"]),
                    )
                    for w in c["writes"]
                ),
            )
            for c in data["checkpoints"]
        ),
        blobs=tuple(
            ArchivedBlob(
                ns=str(b["ns"]),
                channel=str(b["channel"]),
                version=str(b["version"]),
                value=_untyped(b["value"]),
            )
            for b in data["blobs"]
        ),
    )


class ArchiveWriter:
    """Appends records to an archive file, each flushed and fsynced before `append` returns.

    A missing file is created (and its directory fsynced, so the new name survives a crash);
    an existing one is appended to. A last line cut short by an earlier kill is ended first, so
    the next record starts on its own line.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        created = not self.path.exists()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab")
        except OSError as exc:
            raise ArchiveError(f"{self.path}: cannot write the archive ({exc})") from None
        if created:
            _fsync_directory(self.path.parent)
        elif self.path.stat().st_size > 0:
            with self.path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    self._write(b"\n")

    def append(self, record: ThreadRecord) -> int:
        """Write one record durably; returns its offset in the file (see `read_record`)."""
        line = encode_record(record)
        offset = self._file.tell()
        self._write(line)
        return offset

    def _write(self, data: bytes) -> None:
        try:
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise ArchiveError(f"{self.path}: cannot write the archive ({exc})") from None

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fsync_directory(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def read_archive(path: Path) -> ArchiveContents:
    """Every valid record of an archive file, in order; torn and corrupt lines counted."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot read the archive ({exc})") from None
    contents = ArchiveContents()
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            contents.records.append(decode_record(line))
        except (ValueError, KeyError, TypeError):
            if _is_cut(line):
                contents.torn += 1  # a write cut short by a kill: nothing was removed after it
            else:
                contents.corrupt.append(number)
    return contents


def read_record(path: Path, offset: int) -> ThreadRecord:
    """The record written at `offset` (as `ArchiveWriter.append` returned it)."""
    with Path(path).open("rb") as f:
        f.seek(offset)
        return decode_record(f.readline())


def _is_cut(line: bytes) -> bool:
    """A line that is not JSON at all (a write cut short), as opposed to a wrong record."""
    try:
        json.loads(line)
    except ValueError:
        return True
    return False


def iter_checkpoints(records: Sequence[ThreadRecord]) -> Iterator[tuple[str, ArchivedCheckpoint]]:
    """(thread id, checkpoint) of every archived checkpoint."""
    for record in records:
        for checkpoint in record.checkpoints:
            yield record.thread_id, checkpoint


__all__ = [
    "FORMAT",
    "VERSION",
    "ArchiveContents",
    "ArchiveError",
    "ArchiveWriter",
    "ArchivedBlob",
    "ArchivedCheckpoint",
    "ArchivedWrite",
    "ThreadRecord",
    "decode_record",
    "encode_record",
    "iter_checkpoints",
    "read_archive",
    "read_record",
]
