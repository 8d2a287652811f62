"""Reading a partition log's batch headers for producer state: never the records.

Used to rebuild producer state from a snapshot offset to the log end offset, and
to find the batch a snapshot is anchored to. Headers are read in large chunks so
that small batches cost a few Python operations each.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from kbroker.log.errors import KafkaStorageError
from kbroker.log.partition_log import PartitionLog
from kbroker.log.segment import LogSegment
from protocol.records import CONTROL_BIT, HEADER, HEADER_SIZE, LOG_OVERHEAD, TRANSACTIONAL_BIT

CHUNK = 256 * 1024
NO_CONTROL_TYPE = -1
CONTROL_KEY_BYTES = 32  # a control record's length, attributes, deltas, key length and 4-byte key fit in this


class ProducerBatchHeader(NamedTuple):
    """The header fields producer state needs."""

    base_offset: int
    last_offset_delta: int
    attributes: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    crc: int
    control_type: int = NO_CONTROL_TYPE  # a control batch's ControlRecordType (0 ABORT, 1 COMMIT), from its record key

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return self.base_sequence
        return (self.base_sequence + self.last_offset_delta) % 0x80000000

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


def segment_headers(segment: LogSegment, start: int, end: int | None = None) -> Iterator[ProducerBatchHeader]:
    """Headers of the batches of `segment` from file position `start` (a batch boundary) to `end` (its size)."""
    end = segment.size if end is None else min(end, segment.size)
    position = start
    buffer = b""
    buffer_start = start
    unpack = HEADER.unpack_from
    while position < end:
        relative = position - buffer_start
        if relative + HEADER_SIZE > len(buffer):
            buffer = os.pread(segment.fd, min(CHUNK, end - position), position)
            buffer_start, relative = position, 0
            if len(buffer) < HEADER_SIZE:
                raise KafkaStorageError(f"{segment.log_path}: truncated batch header at {position}")
        base, length, _ple, magic, crc, attributes, delta, _bts, max_ts, pid, epoch, seq, _count = unpack(
            buffer, relative
        )
        if magic != 2 or length < HEADER_SIZE - LOG_OVERHEAD or delta < 0:
            raise KafkaStorageError(f"{segment.log_path}: invalid batch header at {position}")
        if attributes & CONTROL_BIT:
            records_at = relative + HEADER_SIZE
            record = buffer[records_at : records_at + CONTROL_KEY_BYTES]
            if len(record) < CONTROL_KEY_BYTES:
                record = os.pread(segment.fd, CONTROL_KEY_BYTES, position + HEADER_SIZE)
            control = control_record_type(record)
            yield ProducerBatchHeader(base, delta, attributes, max_ts, pid, epoch, seq, crc, control)
        else:
            yield ProducerBatchHeader(base, delta, attributes, max_ts, pid, epoch, seq, crc)
        position += LOG_OVERHEAD + length


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint at `position`: (value, next position)."""
    shift = raw = 0
    while True:
        byte = data[position]
        position += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position
        shift += 7


def control_record_type(record: bytes) -> int:
    """The type in the key of a control batch's first record (NO_CONTROL_TYPE if it cannot be read)."""
    try:
        _length, position = _varint(record, 0)
        position += 1  # attributes
        _ts_delta, position = _varint(record, position)
        _offset_delta, position = _varint(record, position)
        key_length, position = _varint(record, position)
        if key_length < 4 or position + 4 > len(record):
            return NO_CONTROL_TYPE
        return int.from_bytes(record[position + 2 : position + 4], "big", signed=True)
    except IndexError:
        return NO_CONTROL_TYPE


def log_headers(log: PartitionLog, from_offset: int) -> Iterator[ProducerBatchHeader]:
    """Headers of every batch holding an offset >= `from_offset`, up to the log end offset."""
    segments = log.segments
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= from_offset:
            first = i
    for i in range(first, len(segments)):
        segment = segments[i]
        start = 0
        if i == first and from_offset > segment.base_offset:
            header = segment.find_batch(from_offset)
            if header is None:
                continue
            start = header.position
        yield from segment_headers(segment, start)


def batch_ending_at(log: PartitionLog, last_offset: int) -> ProducerBatchHeader | None:
    """The header of the batch whose last offset is exactly `last_offset`, if the log holds it."""
    holder = None
    for segment in log.segments:
        if segment.base_offset <= last_offset:
            holder = segment
    if holder is None:
        return None
    found = holder.find_batch(last_offset)
    if found is None or found.last_offset != last_offset:
        return None
    for header in segment_headers(holder, found.position, found.end):
        return header
    return None
