"""Walking the batches of a segment file without decoding records.

`iter_headers` reads batch headers only (reads, lookups, clean loads);
`scan_and_index` walks a whole segment, checking each batch's CRC-32C and
offsets and rebuilding its indexes (recovery, index rebuilds).

Offsets strictly increase but need not be dense: compaction, aborted
transactions and a follower's truncation leave gaps, so a batch may start
anywhere above the previous batch's last offset, and a segment's first batch
anywhere at or above the segment's base offset. A lookup for an offset inside
a gap finds the next batch, as Kafka's does.
Both read the file in large chunks so the per-batch cost stays a few
Python operations.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from protocol import checksum
from protocol.records import CRC_START, HEADER, HEADER_SIZE, LOG_OVERHEAD

HEADER_CHUNK = 16 * 1024
MAX_RELATIVE_OFFSET = 0xFFFFFFFF  # a segment's offsets lie in [base offset, base offset + this]
RECOVERY_CHUNK = 8 * 1024 * 1024
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAGIC_OFFSET = 16


class BatchHeader(NamedTuple):
    """Where a batch sits in its segment file and what the log needs of its header."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def end(self) -> int:
        return self.position + self.size


class InvalidBatchError(Exception):
    """A header that cannot be a valid batch at this position."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"invalid batch at position {position}: {reason}")
        self.position = position
        self.reason = reason


def _check_header(position: int, end: int, magic: int, batch_length: int, last_offset_delta: int) -> None:
    if magic != 2:
        raise InvalidBatchError(position, f"magic {magic}")
    if batch_length < _MIN_BATCH_LENGTH:
        raise InvalidBatchError(position, f"batch length {batch_length}")
    if position + LOG_OVERHEAD + batch_length > end:
        raise InvalidBatchError(position, "batch extends past the end of the file")
    if last_offset_delta < 0:
        raise InvalidBatchError(position, f"last offset delta {last_offset_delta}")


# the header fields a scan needs: base offset, length, magic, CRC, last offset delta, max timestamp
_SCAN_HEADER = struct.Struct(">qi4xbI2xi8xq")


def find_batch_from(fd: int, start: int, end: int, offset: int, start_base: int | None = None) -> BatchHeader | None:
    """The first batch in [start, end) whose last offset is >= `offset` (None: none is).

    `start` must be a batch boundary; with `start_base`, the batch there must have that
    base offset (an index entry is checked this way). The read path's hot loop.
    """
    position = start
    buffer = b""
    buffer_start = start
    unpack = _SCAN_HEADER.unpack_from
    while position < end:
        relative = position - buffer_start
        if relative + HEADER_SIZE > len(buffer):
            buffer = os.pread(fd, min(HEADER_CHUNK, end - position), position)
            buffer_start, relative = position, 0
            if len(buffer) < HEADER_SIZE:
                raise InvalidBatchError(position, "truncated header")
        base, length, magic, _crc, delta, max_timestamp = unpack(buffer, relative)
        size = LOG_OVERHEAD + length
        if magic != 2 or length < _MIN_BATCH_LENGTH or position + size > end or delta < 0:
            _check_header(position, end, magic, length, delta)
        if start_base is not None and position == start and base != start_base:
            raise InvalidBatchError(position, f"base offset {base}, the index says {start_base}")
        if base + delta >= offset:
            return BatchHeader(position, size, base, base + delta, max_timestamp)
        position += size
    return None


def last_batch_end(fd: int, start: int, end: int, wanted_end: int) -> int:
    """Walking whole batches from boundary `start`, the last batch end at or before `wanted_end`."""
    position = start
    buffer = b""
    buffer_start = start
    unpack = _SCAN_HEADER.unpack_from
    while position + HEADER_SIZE <= min(end, wanted_end):
        relative = position - buffer_start
        if relative + HEADER_SIZE > len(buffer):
            buffer = os.pread(fd, min(HEADER_CHUNK, end - position), position)
            buffer_start, relative = position, 0
            if len(buffer) < HEADER_SIZE:
                raise InvalidBatchError(position, "truncated header")
        _base, length, magic, _crc, delta, _max_timestamp = unpack(buffer, relative)
        size = LOG_OVERHEAD + length
        if magic != 2 or length < _MIN_BATCH_LENGTH or position + size > end or delta < 0:
            _check_header(position, end, magic, length, delta)
        if position + size > wanted_end:
            break
        position += size
    return position


def iter_headers(fd: int, start: int, end: int, chunk_size: int = HEADER_CHUNK) -> Iterator[BatchHeader]:
    """Yield the header of each batch in [start, end); raise InvalidBatchError on a bad one."""
    position = start
    buffer = b""
    buffer_start = start
    unpack = HEADER.unpack_from
    while position < end:
        relative = position - buffer_start
        if relative < 0 or relative + HEADER_SIZE > len(buffer):
            buffer = os.pread(fd, min(chunk_size, end - position), position)
            buffer_start, relative = position, 0
            if len(buffer) < HEADER_SIZE:
                raise InvalidBatchError(position, "truncated header")
        base, length, _epoch, magic, _crc, _attrs, delta, _base_ts, max_ts, *_ = unpack(buffer, relative)
        _check_header(position, end, magic, length, delta)
        size = LOG_OVERHEAD + length
        yield BatchHeader(position, size, base, base + delta, max_ts)
        position += size


class _Indexes(Protocol):
    def append(self, offset: int, position: int) -> None: ...


class _TimeIndexes(Protocol):
    def maybe_append(self, timestamp: int, offset: int) -> None: ...


@dataclass(slots=True)
class ScanResult:
    """Where a scan stopped and the segment state it learned."""

    valid_end: int  # position of the first invalid byte, or the end
    next_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    bytes_since_index_entry: int
    error: InvalidBatchError | None


def scan_and_index(
    fd: int,
    end: int,
    base_offset: int,
    index_interval: int,
    offset_index: _Indexes,
    time_index: _TimeIndexes,
    verify_crc: bool = True,
    chunk_size: int = RECOVERY_CHUNK,
) -> ScanResult:
    """Walk a whole segment, checking every batch (header, CRC-32C when `verify_crc`,
    base offsets strictly increasing from `base_offset`, gaps allowed) and filling
    empty indexes as appends would.

    One tight loop, large preads: recovery's cost per batch is a few Python operations.
    An OSError propagates: a failing disk is not a reason to cut the log.
    """
    buffer = bytearray(max(chunk_size, HEADER_SIZE))
    view = memoryview(buffer)
    buffer_start = buffer_len = 0
    position = since = 0
    next_offset = offset_of_max = base_offset
    max_timestamp = -1
    max_offset = base_offset + MAX_RELATIVE_OFFSET  # what the segment's indexes can hold
    unpack = _SCAN_HEADER.unpack_from
    crc_of = checksum.crc32c
    error = None

    def refill(at: int, need: int) -> int:
        nonlocal buffer, view, buffer_start, buffer_len
        if need > len(buffer):
            buffer = bytearray(need)
            view = memoryview(buffer)
        buffer_start = at
        buffer_len = os.preadv(fd, [view[: min(len(buffer), end - at)]], at)
        return buffer_len

    try:
        while position < end:
            relative = position - buffer_start
            if relative + HEADER_SIZE > buffer_len:
                if refill(position, HEADER_SIZE) < HEADER_SIZE:
                    raise InvalidBatchError(position, "truncated header")
                relative = 0
            base, length, magic, crc, delta, batch_max_timestamp = unpack(buffer, relative)
            size = LOG_OVERHEAD + length
            if magic != 2 or length < _MIN_BATCH_LENGTH or position + size > end or delta < 0:
                _check_header(position, end, magic, length, delta)
            if relative + size > buffer_len:
                if refill(position, size) < size:
                    raise InvalidBatchError(position, "truncated batch")
                relative = 0
            if verify_crc and crc_of(view[relative + CRC_START : relative + size]) != crc:
                raise InvalidBatchError(position, "CRC-32C mismatch")
            if base < next_offset or base + delta > max_offset:
                raise InvalidBatchError(position, f"base offset {base}, expected {next_offset} to {max_offset}")
            if batch_max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = batch_max_timestamp, base
            if since >= index_interval:
                offset_index.append(base, position)
                if max_timestamp >= 0:
                    time_index.maybe_append(max_timestamp, offset_of_max)
                since = 0
            since += size
            next_offset = base + delta + 1
            position += size
    except InvalidBatchError as invalid:
        error = invalid
    return ScanResult(position, next_offset, max_timestamp, offset_of_max, since, error)


def find_next_batch(fd: int, start: int, end: int, min_base: int, max_last: int) -> tuple[int, int] | None:
    """(position, base offset) of the first whole, CRC-valid batch in [start, end) whose offsets
    lie in [min_base, max_last], or None: where intact data resumes after a damaged range.

    Every 0x02 byte is a candidate magic; cheap header checks reject nearly all of them
    before a CRC-32C is computed. The file is mapped, not read.
    """
    if end - start < HEADER_SIZE:
        return None
    with mmap.mmap(fd, end, prot=mmap.PROT_READ) as mapped:
        view = memoryview(mapped)
        try:
            unpack = _SCAN_HEADER.unpack_from
            magic_at = start + MAGIC_OFFSET
            while (magic_at := mapped.find(b"\x02", magic_at, end)) >= 0:
                position = magic_at - MAGIC_OFFSET
                magic_at += 1
                if position + HEADER_SIZE > end:
                    return None
                base, length, _magic, crc, delta, _max_timestamp = unpack(mapped, position)
                size = LOG_OVERHEAD + length
                if length < _MIN_BATCH_LENGTH or position + size > end or delta < 0:
                    continue
                if base < min_base or base + delta > max_last:
                    continue
                if checksum.crc32c(view[position + CRC_START : position + size]) == crc:
                    return position, base
            return None
        finally:
            view.release()
