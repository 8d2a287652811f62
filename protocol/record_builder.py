"""Build record batches v2 (magic 2): producer batches for tests, control batches for the broker.

The broker stores client batches as received; it builds batches itself only for
transaction markers (``build_control_batch``) and for its own internal logs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from protocol import checksum, compression
from protocol.primitives import write_varint
from protocol.records import (
    CONTROL_BIT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    ControlRecordType,
)

NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
CONTROL_RECORD_KEY_VERSION = 0
END_TRANSACTION_MARKER_VERSION = 0

_CRC = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


@dataclass(slots=True)
class SimpleRecord:
    """A record to write. ``offset_delta`` defaults to its index in the batch."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp: int = NO_TIMESTAMP
    offset_delta: int | None = None


def build_record_batch(
    records: Iterable[SimpleRecord],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression_type: int = compression.NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    log_append_time: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode ``records`` as one batch with its CRC-32C filled in.

    The base timestamp is the first record's; the max timestamp is the
    largest record timestamp, or ``log_append_time`` when given (which also sets
    the LogAppendTime attribute bit). An empty list gives an empty batch.
    """
    records = list(records)
    body = bytearray()
    base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    max_timestamp = NO_TIMESTAMP
    last_offset_delta = 0
    for index, record in enumerate(records):
        offset_delta = index if record.offset_delta is None else record.offset_delta
        encode_record(body, record, offset_delta, record.timestamp - base_timestamp)
        max_timestamp = max(max_timestamp, record.timestamp)
        last_offset_delta = max(last_offset_delta, offset_delta)
    attributes = compression_type & 0x07
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    if log_append_time is not None:
        attributes |= TIMESTAMP_TYPE_BIT
        max_timestamp = log_append_time
    payload = compression.compress(compression_type, body, compression_level)
    batch = bytearray(HEADER_SIZE)
    batch += payload
    HEADER.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    _CRC.pack_into(batch, 17, checksum.crc32c(memoryview(batch)[CRC_START:]))
    return bytes(batch)


def build_control_batch(
    marker: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker batch (COMMIT or ABORT) as a broker writes it.

    Transactional + control attributes, uncompressed, base sequence -1, one
    record: key (version 0, type), value (version 0, coordinator epoch).
    """
    if marker not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"{marker!r} is not a transaction marker")
    key = _CONTROL_KEY.pack(CONTROL_RECORD_KEY_VERSION, int(marker))
    value = _END_TXN_VALUE.pack(END_TRANSACTION_MARKER_VERSION, coordinator_epoch)
    return build_record_batch(
        [SimpleRecord(key, value, (), timestamp)],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
    )


# -- record encoding ------------------------------------------------------------


def encode_record(out: bytearray, record: SimpleRecord, offset_delta: int, timestamp_delta: int) -> None:
    """Append one record (length-prefixed, zigzag varints) to ``out``."""
    body = bytearray(b"\x00")  # attributes
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_nullable_bytes(body, record.key)
    _write_nullable_bytes(body, record.value)
    write_varint(body, len(record.headers))
    for header_key, header_value in record.headers:
        encoded_key = header_key.encode("utf-8")
        write_varint(body, len(encoded_key))
        body += encoded_key
        _write_nullable_bytes(body, header_value)
    write_varint(out, len(body))
    out += body


def _write_nullable_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(0x01)  # zigzag(-1)
        return
    write_varint(out, len(data))
    out += data
