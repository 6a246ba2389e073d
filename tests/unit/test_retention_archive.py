"""The retention archive's format (retention/archive.py, docs/retention.md "Archive format"):
records round-trip byte for byte, a line cut short is skipped as torn and the next record
starts on its own line, a changed byte fails the checksum, another version is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langgraph.checkpoint.otel.retention.archive import (
    FORMAT,
    ArchivedBlob,
    ArchivedCheckpoint,
    ArchivedWrite,
    ArchiveWriter,
    ThreadRecord,
    decode_record,
    encode_record,
    read_archive,
)


def record(thread_id: str, n: int = 2) -> ThreadRecord:
    return ThreadRecord(
        thread_id=thread_id,
        saver="postgres",
        latest={"": f"{thread_id}-latest", "tools:1": "x"},
        checkpoints=tuple(
            ArchivedCheckpoint(
                ns="",
                id=f"{thread_id}-{i}",
                parent_id=None if i == 0 else f"{thread_id}-{i - 1}",
                checkpoint=("msgpack", bytes(range(i, i + 40))),
                metadata=("json", b'{"source": "loop", "step": %d}' % i),
                writes=(
                    ArchivedWrite(
                        "task", "~__pregel_pull, model", 0, "messages", ("msgpack", b"\x00\xff")
                    ),
                    ArchivedWrite(
                        "task", "~__pregel_pull, model", -3, "__interrupt__", ("null", None)
                    ),
                ),
            )
            for i in range(n)
        ),
        blobs=(ArchivedBlob("", "messages", "0001.0.5", ("empty", None)),),
    )


def test_a_record_round_trips() -> None:
    original = record("t1")
    line = encode_record(original)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_record(line) == original
    data = json.loads(line)
    assert (data["format"], data["version"]) == (FORMAT, 1)
    assert data["checkpoints"][1]["parent_id"] == "t1-0"


def test_a_changed_byte_fails_the_checksum_and_another_version_is_refused() -> None:
    data = json.loads(encode_record(record("t1")))
    data["checkpoints"][0]["id"] = "t1-other"
    with pytest.raises(ValueError, match="checksum"):
        decode_record(json.dumps(data))
    data = json.loads(encode_record(record("t1")))
    data["version"] = 2
    with pytest.raises(ValueError, match="version"):
        decode_record(json.dumps(data))


def test_a_torn_last_line_is_skipped_and_the_next_record_starts_a_line(tmp_path: Path) -> None:
    path = tmp_path / "new" / "archive.jsonl"
    with ArchiveWriter(path) as writer:
        writer.append(record("t1"))
        writer.append(record("t2"))
    with path.open("ab") as f:  # killed while writing the third
        f.write(encode_record(record("t3"))[:57])
    contents = read_archive(path)
    assert [r.thread_id for r in contents.records] == ["t1", "t2"]
    assert (contents.torn, contents.corrupt, contents.incomplete) == (1, [], 1)

    with ArchiveWriter(path) as writer:  # the next apply appends after the cut line
        writer.append(record("t3"))
    contents = read_archive(path)
    assert [r.thread_id for r in contents.records] == ["t1", "t2", "t3"]
    assert contents.torn == 1


def test_a_corrupt_line_is_named_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "archive.jsonl"
    bad = json.loads(encode_record(record("t2")))
    bad["thread_id"] = "t2-edited"
    path.write_bytes(
        encode_record(record("t1"))
        + (json.dumps(bad) + "\n").encode()
        + encode_record(record("t3"))
    )
    contents = read_archive(path)
    assert [r.thread_id for r in contents.records] == ["t1", "t3"]
    assert contents.corrupt == [2] and contents.torn == 0
