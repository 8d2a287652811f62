"""Walking the batches of a segment file without decoding records.

`iter_headers` reads batch headers only (reads, lookups, clean loads);
`RecoveryScan` also checks each batch's CRC-32C and offsets (recovery).
Both read the file in large chunks so the per-batch cost stays a few
Python operations.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

import crc32c

from protocol.records import CRC_START, HEADER, HEADER_SIZE, LOG_OVERHEAD

HEADER_CHUNK = 16 * 1024
RECOVERY_CHUNK = 8 * 1024 * 1024
_MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD


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


class RecoveryScan:
    """Validate batches from `start`: header, CRC-32C, offsets dense (the first batch
    starts at `first_offset`, each next one where the previous ended).

    Iterate to get each valid batch; afterwards `valid_end` is the position of
    the first invalid byte (or `end`) and `error` says why the scan stopped.
    An OSError propagates: a failing disk is not a reason to cut the log.
    """

    def __init__(self, fd: int, start: int, end: int, first_offset: int, chunk_size: int = RECOVERY_CHUNK) -> None:
        self.fd = fd
        self.start = start
        self.end = end
        self.first_offset = first_offset
        self.valid_end = start
        self.error: InvalidBatchError | None = None
        self._buffer = bytearray(max(chunk_size, HEADER_SIZE))
        self._view = memoryview(self._buffer)
        self._buffer_start = start
        self._buffer_len = 0

    def _fill(self, position: int, size: int) -> int:
        """Read at least `size` bytes at `position` into the buffer; return how many were read."""
        if size > len(self._buffer):
            self._buffer = bytearray(size)
            self._view = memoryview(self._buffer)
        want = min(len(self._buffer), self.end - position)
        read = os.preadv(self.fd, [self._view[:want]], position)
        self._buffer_start, self._buffer_len = position, read
        return read

    def __iter__(self) -> Iterator[BatchHeader]:
        position = self.start
        next_offset = self.first_offset
        unpack = HEADER.unpack_from
        try:
            while position < self.end:
                relative = position - self._buffer_start
                if relative + HEADER_SIZE > self._buffer_len:
                    if self._fill(position, HEADER_SIZE) < HEADER_SIZE:
                        raise InvalidBatchError(position, "truncated header")
                    relative = 0
                base, length, _epoch, magic, crc, _attrs, delta, _bts, max_ts, *_ = unpack(self._buffer, relative)
                _check_header(position, self.end, magic, length, delta)
                size = LOG_OVERHEAD + length
                if relative + size > self._buffer_len:
                    if self._fill(position, size) < size:
                        raise InvalidBatchError(position, "truncated batch")
                    relative = 0
                if crc32c.crc32c(self._view[relative + CRC_START : relative + size]) != crc:
                    raise InvalidBatchError(position, "CRC-32C mismatch")
                if base != next_offset:
                    raise InvalidBatchError(position, f"base offset {base}, expected {next_offset}")
                yield BatchHeader(position, size, base, base + delta, max_ts)
                next_offset = base + delta + 1
                position += size
                self.valid_end = position
        except InvalidBatchError as error:
            self.error = error
