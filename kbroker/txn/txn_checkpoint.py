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

import struct
from dataclasses import dataclass
from pathlib import Path

from kbroker.txn.offset_files import (
    list_offset_files,
    offset_path,
    read_offset_file,
    seal,
    unseal,
    write_offset_file,
)

SUFFIX = ".txncheckpoint"
MAGIC = b"KBTI"
VERSION = 1

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
    return offset_path(directory, offset, SUFFIX)


def list_checkpoints(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of the checkpoint files in `directory`, newest first."""
    return list_offset_files(directory, SUFFIX)


def encode_checkpoint(checkpoint: TxnCheckpoint) -> bytes:
    head = _HEAD.pack(checkpoint.offset, checkpoint.anchor_base, checkpoint.anchor_crc, len(checkpoint.ongoing))
    body = head + b"".join(_ENTRY.pack(pid, first) for pid, first in checkpoint.ongoing.items())
    return seal(MAGIC, VERSION, body)


def decode_checkpoint(data: bytes) -> TxnCheckpoint:
    body = unseal(data, MAGIC, VERSION, _HEAD.size, CheckpointError, "checkpoint")
    offset, anchor_base, anchor_crc, count = _HEAD.unpack_from(body)
    if len(body) != _HEAD.size + count * _ENTRY.size:
        raise CheckpointError(f"checkpoint of {count} entries has {len(body)} bytes")
    ongoing = dict(_ENTRY.iter_unpack(body[_HEAD.size :]))
    return TxnCheckpoint(offset, anchor_base, anchor_crc, ongoing)


def write_checkpoint(directory: Path, checkpoint: TxnCheckpoint) -> Path:
    """Write durably (temp file, fsync, rename) and return the path."""
    return write_offset_file(checkpoint_path(directory, checkpoint.offset), encode_checkpoint(checkpoint), fsync=True)


def read_checkpoint(path: Path) -> TxnCheckpoint:
    data = read_offset_file(path, CheckpointError)
    checkpoint = decode_checkpoint(data)
    if checkpoint_path(path.parent, checkpoint.offset).name != path.name:
        raise CheckpointError(f"{path.name} holds the checkpoint of offset {checkpoint.offset}")
    return checkpoint
