"""Re-encode a cleaned batch (Kafka's MemoryRecords.buildRetainedRecordsInto / writeEmptyHeader).

A rewritten batch keeps the original's base offset and last offset delta (so the producer's
last sequence stays what it was), producer id, epoch, base sequence, transactional and
control bits, partition leader epoch, timestamp type and codec; each retained record keeps
its offset and timestamp. When the batch gets a delete horizon, the horizon becomes the base
timestamp, the delete-horizon attribute bit is set and record timestamps are deltas from it.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from protocol import checksum, compression
from protocol.record_builder import SimpleRecord, encode_record
from protocol.records import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    CRC_START,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Record,
    RecordBatch,
)

NO_TIMESTAMP = -1
_CRC = struct.Struct(">I")


def delete_horizon_ms(batch: RecordBatch) -> int | None:
    """The batch's delete horizon (its base timestamp when the attribute bit says so), or None."""
    return batch.base_timestamp if batch.attributes & DELETE_HORIZON_BIT else None


def _header(
    batch: RecordBatch,
    payload: bytes,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    count: int,
) -> bytes:
    out = bytearray(HEADER_SIZE)
    out += payload
    HEADER.pack_into(
        out,
        0,
        batch.base_offset,
        len(out) - LOG_OVERHEAD,
        batch.partition_leader_epoch,
        2,
        0,
        attributes,
        batch.last_offset_delta,
        base_timestamp,
        max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        count,
    )
    _CRC.pack_into(out, 17, checksum.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def build_retained(batch: RecordBatch, records: Sequence[Record], delete_horizon: int | None) -> bytes:
    """The batch with only `records` (non-empty), in the original codec."""
    codec = batch.compression
    attributes = batch.attributes & (COMPRESSION_MASK | TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    if delete_horizon is not None:
        attributes |= DELETE_HORIZON_BIT
        base_timestamp = delete_horizon
    else:
        base_timestamp = records[0].timestamp
    body = bytearray()
    max_timestamp = NO_TIMESTAMP
    for record in records:
        simple = SimpleRecord(record.key, record.value, record.headers, record.timestamp)
        encode_record(body, simple, record.offset - batch.base_offset, record.timestamp - base_timestamp)
        max_timestamp = max(max_timestamp, record.timestamp)
    if batch.is_log_append_time:
        max_timestamp = batch.max_timestamp
    payload = compression.compress(codec, body) if codec != compression.NONE else bytes(body)
    return _header(batch, payload, attributes, base_timestamp, max_timestamp, len(records))


def build_empty(batch: RecordBatch) -> bytes:
    """A header-only batch keeping the producer's id, epoch, sequence range and the offsets."""
    attributes = batch.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT)
    return _header(batch, b"", attributes, NO_TIMESTAMP, batch.max_timestamp, 0)
