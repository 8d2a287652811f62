"""Aborted-transaction index files, `<segment base offset>.txnindex` (Kafka's TransactionIndex format).

Each segment that holds ABORT markers has one file; an entry is appended when the
marker is, in offset order, and the file goes away with its segment. An entry is
34 bytes, big-endian, as Kafka writes it:

    version int16 (0), producer_id int64, first_offset int64, last_offset int64 (the marker),
    last_stable_offset int64 (the LSO just after the marker: lets a lookup stop early)

The files are derived data: whatever a crash loses is rebuilt from the log (see
transaction_index.py, which fsyncs them before each checkpoint).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

SUFFIX = ".txnindex"
VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int


def index_path(directory: Path, base_offset: int) -> Path:
    return directory / f"{base_offset:020d}{SUFFIX}"


def list_index_files(directory: Path) -> list[tuple[int, Path]]:
    """(segment base offset, path) of every .txnindex file of `directory`, oldest first."""
    found = []
    for name in os.listdir(directory):
        stem = name[: -len(SUFFIX)]
        if name.endswith(SUFFIX) and len(stem) == 20 and stem.isdigit():
            found.append((int(stem), directory / name))
    return sorted(found)


def encode_entries(entries: Iterable[AbortedTxn]) -> bytes:
    return b"".join(
        _ENTRY.pack(VERSION, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries
    )


def append_entries(path: Path, entries: Iterable[AbortedTxn]) -> None:
    data = encode_entries(entries)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_entries(path: Path, below_offset: int) -> list[AbortedTxn]:
    """The file's entries whose marker is below `below_offset`; the file is cut after them.

    Entries at or past `below_offset` (the log is rescanned from there), a torn last
    entry and anything after an unreadable one are dropped from the file too.
    """
    data = path.read_bytes()
    entries: list[AbortedTxn] = []
    position = 0
    while position + ENTRY_SIZE <= len(data):
        version, producer_id, first, last, lso = _ENTRY.unpack_from(data, position)
        if version != VERSION or last >= below_offset or first > last:
            break
        entries.append(AbortedTxn(producer_id, first, last, lso))
        position += ENTRY_SIZE
    if position != len(data):
        if position == 0:
            path.unlink(missing_ok=True)
        else:
            os.truncate(path, position)
    return entries


def fsync_file(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
