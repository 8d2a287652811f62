"""Transaction index checkpoints, `<offset>.txncheckpoint` in the partition directory.

A checkpoint holds the open transactions of every batch below its offset and
promises that the .txnindex files hold every ABORT marker below it, so a load only
scans the log from there. Format (big-endian):

    magic "KBTI", version int16, crc uint32 (CRC-32C of all that follows)
    offset int64, anchor_base int64, anchor_crc uint32, count int32
    per open transaction: producer_id int64, first_offset int64

The anchor (base offset and CRC of the batch ending at offset - 1, as in producer
state snapshots) ties the checkpoint to the data it was taken of: a log cut by
recovery, and maybe refilled since, never meets a checkpoint of data it lost.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import crc32c

SUFFIX = ".txncheckpoint"
MAGIC = b"KBTI"
VERSION = 1

_PREFIX = struct.Struct(">4shI")
_HEAD = struct.Struct(">qqIi")
_ENTRY = struct.Struct(">qq")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be trusted."""


@dataclass(frozen=True, slots=True)
class TxnCheckpoint:
    offset: int
    anchor_base: int  # -1: no anchor (offset 0, or nothing ends at offset - 1)
    anchor_crc: int
    ongoing: dict[int, int]  # producer id -> first offset of its open transaction


def checkpoint_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SUFFIX}"


def list_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of the checkpoint files in `directory`, newest first."""
    found = []
    for name in os.listdir(directory):
        stem = name[: -len(SUFFIX)]
        if name.endswith(SUFFIX) and len(stem) == 20 and stem.isdigit():
            found.append((int(stem), directory / name))
    return sorted(found, reverse=True)


def encode_checkpoint(checkpoint: TxnCheckpoint) -> bytes:
    head = _HEAD.pack(checkpoint.offset, checkpoint.anchor_base, checkpoint.anchor_crc, len(checkpoint.ongoing))
    body = head + b"".join(_ENTRY.pack(pid, first) for pid, first in checkpoint.ongoing.items())
    return _PREFIX.pack(MAGIC, VERSION, crc32c.crc32c(body)) + body


def decode_checkpoint(data: bytes) -> TxnCheckpoint:
    if len(data) < _PREFIX.size + _HEAD.size:
        raise CheckpointError(f"checkpoint of {len(data)} bytes is truncated")
    magic, version, crc = _PREFIX.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise CheckpointError(f"not a version {VERSION} checkpoint (magic {magic!r}, version {version})")
    body = memoryview(data)[_PREFIX.size :]
    if crc32c.crc32c(body) != crc:
        raise CheckpointError("checkpoint CRC mismatch")
    offset, anchor_base, anchor_crc, count = _HEAD.unpack_from(body)
    if len(body) != _HEAD.size + count * _ENTRY.size:
        raise CheckpointError(f"checkpoint of {count} entries has {len(body)} bytes")
    ongoing = dict(_ENTRY.iter_unpack(body[_HEAD.size :]))
    return TxnCheckpoint(offset, anchor_base, anchor_crc, ongoing)


def write_checkpoint(directory: Path, checkpoint: TxnCheckpoint) -> Path:
    """Write durably (temp file, fsync, rename) and return the path."""
    path = checkpoint_path(directory, checkpoint.offset)
    temp = path.with_name(path.name + ".tmp")
    with open(temp, "wb") as file:
        file.write(encode_checkpoint(checkpoint))
        file.flush()
        os.fsync(file.fileno())
    os.replace(temp, path)
    return path


def read_checkpoint(path: Path) -> TxnCheckpoint:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"{path}: {error}") from error
    checkpoint = decode_checkpoint(data)
    if checkpoint_path(path.parent, checkpoint.offset).name != path.name:
        raise CheckpointError(f"{path.name} holds the checkpoint of offset {checkpoint.offset}")
    return checkpoint
