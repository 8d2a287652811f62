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
A snapshot is also the transaction index's checkpoint: the partition's .txnindex
files were fsynced before it was written and hold every ABORT marker below it.
Files are written to a temporary name and renamed without fsync: a torn file
fails its CRC and the previous snapshot (or the log itself) is used instead.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kbroker.log.offset_files import (
    list_offset_files,
    offset_path,
    read_offset_file,
    seal,
    unseal,
    write_offset_file,
)
from kbroker.log.producer_entry import BatchMetadata, ProducerStateEntry

SUFFIX = ".snapshot"
MAGIC = b"KBPS"
VERSION = 2  # 2: the .txnindex files hold every ABORT below the offset (version 1 files are rebuilt)

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
    return offset_path(directory, offset, SUFFIX)


def list_snapshots(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of the snapshot files in `directory`, newest first."""
    return list_offset_files(directory, SUFFIX)


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
    return seal(MAGIC, VERSION, b"".join(parts))


def decode_snapshot(data: bytes) -> Snapshot:
    body = unseal(data, MAGIC, VERSION, _HEAD.size, SnapshotError, "snapshot")
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
    return write_offset_file(snapshot_path(directory, snapshot.offset), encode_snapshot(snapshot), fsync=False)


def read_snapshot(path: Path) -> Snapshot:
    data = read_offset_file(path, SnapshotError)
    snapshot = decode_snapshot(data)
    if snapshot_path(path.parent, snapshot.offset).name != path.name:
        raise SnapshotError(f"{path.name} holds the snapshot of offset {snapshot.offset}")
    return snapshot


def delete_snapshots(paths: Iterable[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
