"""Producer state snapshot files, `<offset>.snapshot` in the partition directory (as Kafka names them).

A snapshot holds the producer state of every batch below its offset, so that a
restart only scans the log from there. Our format (big-endian):

    magic "KBPS", version int16, crc uint32 (CRC-32C of all that follows)
    offset int64, anchor_base int64, anchor_crc uint32, entry count int32
    per entry: producer_id int64, epoch int16, coordinator_epoch int32, last_timestamp int64,
               txn_first_offset int64, batch count int8,
               per batch: last_seq int32, last_offset int64, offset_delta int32, timestamp int64

The anchor is the base offset and CRC of the log's batch that ends at offset - 1:
a snapshot is only used when the log still holds that very batch, so a log cut
by recovery (and maybe refilled since) never meets a snapshot of data it lost.
Files are written to a temporary name and renamed without fsync: a torn file
fails its CRC and the previous snapshot (or the log itself) is used instead.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from kbroker.txn.entry import BatchMetadata, ProducerStateEntry

SUFFIX = ".snapshot"
MAGIC = b"KBPS"
VERSION = 1

_PREFIX = struct.Struct(">4shI")
_HEAD = struct.Struct(">qqIi")
_ENTRY = struct.Struct(">qhiqqb")
_BATCH = struct.Struct(">iqiq")


class SnapshotError(ValueError):
    """A snapshot file that cannot be trusted."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    offset: int
    anchor_base: int  # -1: no anchor (offset 0)
    anchor_crc: int
    entries: list[ProducerStateEntry]


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def list_snapshots(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of the snapshot files in `directory`, newest first."""
    found = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        stem = name[: -len(SUFFIX)]
        if name.endswith(SUFFIX) and len(stem) == 20 and stem.isdigit():
            found.append((int(stem), directory / name))
    return sorted(found, reverse=True)


def encode_snapshot(snapshot: Snapshot) -> bytes:
    parts = [_HEAD.pack(snapshot.offset, snapshot.anchor_base, snapshot.anchor_crc, len(snapshot.entries))]
    for entry in snapshot.entries:
        parts.append(
            _ENTRY.pack(
                entry.producer_id,
                entry.producer_epoch,
                entry.coordinator_epoch,
                entry.last_timestamp,
                entry.txn_first_offset,
                len(entry.batches),
            )
        )
        parts.extend(_BATCH.pack(b.last_seq, b.last_offset, b.offset_delta, b.timestamp) for b in entry.batches)
    body = b"".join(parts)
    return _PREFIX.pack(MAGIC, VERSION, crc32c.crc32c(body)) + body


def decode_snapshot(data: bytes) -> Snapshot:
    if len(data) < _PREFIX.size + _HEAD.size:
        raise SnapshotError(f"snapshot of {len(data)} bytes is truncated")
    magic, version, crc = _PREFIX.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise SnapshotError(f"not a version {VERSION} snapshot (magic {magic!r}, version {version})")
    body = memoryview(data)[_PREFIX.size :]
    if crc32c.crc32c(body) != crc:
        raise SnapshotError("snapshot CRC mismatch")
    try:
        offset, anchor_base, anchor_crc, count = _HEAD.unpack_from(body)
        position = _HEAD.size
        entries = []
        for _ in range(count):
            pid, epoch, coordinator_epoch, last_timestamp, txn_first, nbatches = _ENTRY.unpack_from(body, position)
            position += _ENTRY.size
            batches = []
            for _ in range(nbatches):
                batches.append(BatchMetadata(*_BATCH.unpack_from(body, position)))
                position += _BATCH.size
            entries.append(
                ProducerStateEntry(
                    pid,
                    epoch,
                    coordinator_epoch=coordinator_epoch,
                    last_timestamp=last_timestamp,
                    txn_first_offset=txn_first,
                    batches=batches,
                )
            )
    except struct.error as error:
        raise SnapshotError(f"snapshot body malformed: {error}") from error
    if position != len(body):
        raise SnapshotError(f"{len(body) - position} bytes after the last snapshot entry")
    return Snapshot(offset, anchor_base, anchor_crc, entries)


def write_snapshot(directory: Path, snapshot: Snapshot) -> Path:
    """Write (temp file + rename, no fsync) and return the path."""
    path = snapshot_path(directory, snapshot.offset)
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "wb") as file:
        file.write(encode_snapshot(snapshot))
    os.replace(temp, path)
    return path


def read_snapshot(path: Path) -> Snapshot:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SnapshotError(f"{path}: {error}") from error
    snapshot = decode_snapshot(data)
    if snapshot_path(path.parent, snapshot.offset).name != path.name:
        raise SnapshotError(f"{path.name} holds the snapshot of offset {snapshot.offset}")
    return snapshot


def delete_snapshots(paths: Iterable[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
