"""Sparse, derived, rebuildable indexes of one segment.

`.index`: 8-byte entries, big-endian (uint32 offset relative to the segment's
base offset, uint32 file position of the batch with that base offset).
`.timeindex`: 12-byte entries (int64 max timestamp so far, uint32 relative
offset of a batch holding it). Neither is checksummed: a crash or a failed
sanity check makes the segment rebuild them from the log.

Entries live in memory (compact arrays) and reach the file in `pending()`
chunks that the segment writes at flush, roll and close.
"""

from __future__ import annotations

import operator
import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from itertools import islice
from pathlib import Path

from kbroker.log.errors import LogError
from kbroker.log.scan import MAX_RELATIVE_OFFSET

OFFSET_ENTRY = struct.Struct(">II")
TIME_ENTRY = struct.Struct(">qI")


class IndexCorruptError(LogError):
    """An index file failed its sanity check; the segment rebuilds it."""


def _increasing(values: array, strict: bool) -> bool:
    return all(map(operator.lt if strict else operator.le, values, islice(values, 1, None)))


def write_index_file(path: Path, position: int, data: bytes, fsync: bool) -> None:
    """Write `data` at `position` and cut anything after it; runs in the loop or a flush thread."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if data:
            os.pwrite(fd, data, position)
        os.ftruncate(fd, position + len(data))
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


class _SparseIndex:
    entry: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.entry.size)
        self.written = 0  # entries already in the file

    def __len__(self) -> int:
        return len(self._relative_offsets())

    def _relative_offsets(self) -> array:
        raise NotImplementedError

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def pending(self) -> tuple[int, bytes]:
        """(file position, bytes) of the entries not yet written to the file."""
        start = self.written
        return start * self.entry.size, self._encode(start)

    def encode_all(self) -> bytes:
        """Every entry, as the whole file should read."""
        return self._encode(0)

    def mark_written(self, count: int) -> None:
        self.written = count

    def reset(self) -> None:
        """Drop every entry; the next pending() rewrites the file from its start."""
        self.written = 0
        self._clear()

    def read_file(self) -> bytes:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            raise IndexCorruptError(f"{self.path.name} is missing") from None
        if len(data) % self.entry.size:
            raise IndexCorruptError(f"{self.path.name}: size {len(data)} is not a multiple of {self.entry.size}")
        if len(data) // self.entry.size > self.max_entries + 1:  # + the entry added on roll
            raise IndexCorruptError(f"{self.path.name}: more entries than segment.index.bytes allows")
        return data

    def _encode(self, start: int) -> bytes:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError


class OffsetIndex(_SparseIndex):
    """Relative offset -> file position of the batch starting at that offset."""

    entry = OFFSET_ENTRY

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, base_offset, max_index_bytes)
        self.offsets = array("I")  # relative
        self.positions = array("I")

    def _relative_offsets(self) -> array:
        return self.offsets

    def _clear(self) -> None:
        self.offsets = array("I")
        self.positions = array("I")

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self.offsets and relative <= self.offsets[-1]:
            raise ValueError(f"offset index entry {offset} is not above the last one")
        self.offsets.append(relative)
        self.positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or below `offset`, else (base offset, 0)."""
        i = bisect_right(self.offsets, max(0, min(offset - self.base_offset, MAX_RELATIVE_OFFSET))) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self.offsets[i], self.positions[i]

    def floor_position(self, position: int) -> int:
        """The largest indexed batch position at or below `position` (0 when none)."""
        i = bisect_right(self.positions, position) - 1
        return self.positions[i] if i >= 0 else 0

    def last_entry(self) -> tuple[int, int]:
        if not self.offsets:
            return self.base_offset, 0
        return self.base_offset + self.offsets[-1], self.positions[-1]

    def load(self, log_size: int) -> None:
        """Read and sanity-check the file; raise IndexCorruptError when it cannot be trusted."""
        words = array("I", self.read_file())
        if sys.byteorder == "little":
            words.byteswap()
        offsets, positions = words[0::2], words[1::2]
        if not _increasing(offsets, strict=True) or not _increasing(positions, strict=True):
            raise IndexCorruptError(f"{self.path.name}: entries are not increasing")
        if positions and positions[-1] >= log_size:
            raise IndexCorruptError(f"{self.path.name}: position {positions[-1]} is beyond the log ({log_size} bytes)")
        self.offsets, self.positions = offsets, positions
        self.written = len(offsets)

    def _encode(self, start: int) -> bytes:
        count = len(self.offsets) - start
        words = array("I", bytes(8 * count))
        words[0::2] = self.offsets[start:]
        words[1::2] = self.positions[start:]
        if sys.byteorder == "little":
            words.byteswap()
        return words.tobytes()


class TimeIndex(_SparseIndex):
    """Max timestamp so far -> relative offset of a batch holding it; timestamps strictly increase."""

    entry = TIME_ENTRY

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(path, base_offset, max_index_bytes)
        self.timestamps = array("q")
        self.offsets = array("I")  # relative

    def _relative_offsets(self) -> array:
        return self.offsets

    def _clear(self) -> None:
        self.timestamps = array("q")
        self.offsets = array("I")

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) when the timestamp is above the last entry's."""
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        self.timestamps.append(timestamp)
        self.offsets.append(offset - self.base_offset)

    def lookup_below(self, timestamp: int) -> int:
        """Offset of the last entry whose timestamp is below `timestamp`, else the base offset.

        Every record at or before that entry's batch has a smaller timestamp, so a
        search for the first timestamp >= `timestamp` can start at that batch.
        """
        i = bisect_left(self.timestamps, timestamp) - 1
        return self.base_offset + (self.offsets[i] if i >= 0 else 0)

    def last_entry(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry, or None."""
        if not self.timestamps:
            return None
        return self.timestamps[-1], self.base_offset + self.offsets[-1]

    def load(self, next_offset_bound: int) -> None:
        """Read and sanity-check the file against the segment's offsets."""
        data = self.read_file()
        fields = struct.unpack(">" + "qI" * (len(data) // TIME_ENTRY.size), data)
        timestamps, offsets = array("q", fields[0::2]), array("I", fields[1::2])
        if not _increasing(timestamps, strict=True) or not _increasing(offsets, strict=False):
            raise IndexCorruptError(f"{self.path.name}: entries are not increasing")
        if offsets and self.base_offset + offsets[-1] >= next_offset_bound:
            raise IndexCorruptError(f"{self.path.name}: offset beyond the segment")
        self.timestamps, self.offsets = timestamps, offsets
        self.written = len(offsets)

    def _encode(self, start: int) -> bytes:
        pack = TIME_ENTRY.pack
        return b"".join(
            pack(ts, rel)
            for ts, rel in zip(islice(self.timestamps, start, None), islice(self.offsets, start, None), strict=True)
        )
