"""Record batch v2 (magic 2): a zero-copy view of the batch header.

Layout (big-endian), offsets from the start of the batch:

   0 base_offset             int64   } not covered by the CRC: the broker
   8 batch_length            int32   } rewrites base_offset and the
  12 partition_leader_epoch  int32   } partition_leader_epoch in place
  16 magic                   int8
  17 crc                     uint32  CRC-32C of bytes 21 .. end
  21 attributes              int16
  23 last_offset_delta       int32
  27 base_timestamp          int64
  35 max_timestamp           int64
  43 producer_id             int64
  51 producer_epoch          int16
  53 base_sequence           int32
  57 records_count           int32
  61 records ...             (compressed as a whole when attributes say so)

batch_length counts the bytes after itself, so a batch occupies
12 + batch_length bytes.
"""

from __future__ import annotations

import enum
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from protocol import checksum, compression
from protocol.errors import CorruptRecordError, InvalidRecordError
from protocol.primitives import DecodeError, read_varint, read_varlong

HEADER = struct.Struct(">qiiBIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_START = 21
MAGIC_OFFSET = 16

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")

ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
CRC_OFFSET = 17

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class Header(NamedTuple):
    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record; offset and timestamp are absolute (base + delta)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int


class ControlRecordType(enum.IntEnum):
    """The ``type`` in a control record's key (Kafka's ControlRecordType)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A transaction's COMMIT or ABORT marker, as read from a control batch."""

    type: ControlRecordType
    coordinator_epoch: int
    offset: int


class RecordBatch:
    """A view of one record batch inside a larger buffer; nothing is copied.

    The buffer may be bytes (read-only view) or a bytearray/writable memoryview
    (then base_offset and partition_leader_epoch can be rewritten in place).
    """

    __slots__ = (
        "buffer",
        "position",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
    )

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        available = len(buffer) - position
        if available < HEADER_SIZE:
            raise InvalidRecordError(f"record batch truncated: {available} bytes, header needs {HEADER_SIZE}")
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = HEADER.unpack_from(buffer, position)
        if self.magic != 2:
            raise InvalidRecordError(f"unsupported record batch magic {self.magic}")
        if self.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise InvalidRecordError(f"record batch length {self.batch_length} is below the header size")
        if self.batch_length > available - LOG_OVERHEAD:
            raise InvalidRecordError(
                f"record batch truncated: length says {self.batch_length + LOG_OVERHEAD} bytes, {available} present"
            )
        self.buffer = buffer
        self.position = position

    # -- derived facts -------------------------------------------------
    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id != NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # sequences wrap at 2**31 - 1, as in Kafka
        return (self.base_sequence + self.last_offset_delta) % 0x80000000

    def view(self) -> memoryview:
        """The batch's own bytes, as a view into the buffer."""
        return memoryview(self.buffer)[self.position : self.position + self.size]

    def records_view(self) -> memoryview:
        """The bytes after the header (compressed when compression != 0)."""
        return memoryview(self.buffer)[self.position + HEADER_SIZE : self.position + self.size]

    # -- integrity -----------------------------------------------------
    def compute_crc(self) -> int:
        start = self.position + CRC_START
        return checksum.crc32c(memoryview(self.buffer)[start : self.position + self.size])

    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def verify(self) -> None:
        """Raise CorruptRecordError when the stored CRC does not match."""
        actual = self.compute_crc()
        if actual != self.crc:
            raise CorruptRecordError(f"record batch CRC mismatch: stored {self.crc:#010x}, computed {actual:#010x}")

    # -- in-place rewrites (outside the CRC) ---------------------------
    def set_base_offset(self, base_offset: int) -> None:
        _INT64.pack_into(self.buffer, self.position, base_offset)  # type: ignore[arg-type]
        self.base_offset = base_offset

    def set_partition_leader_epoch(self, epoch: int) -> None:
        _INT32.pack_into(self.buffer, self.position + 12, epoch)  # type: ignore[arg-type]
        self.partition_leader_epoch = epoch

    # -- rewrites inside the CRC ---------------------------------------
    def set_log_append_time(self, timestamp: int) -> None:
        """Mark the batch LogAppendTime with ``timestamp`` as its max timestamp; rewrite the CRC.

        The buffer must be writable. Record timestamps then all read as ``timestamp``.
        """
        attributes = self.attributes | TIMESTAMP_TYPE_BIT
        _INT16.pack_into(self.buffer, self.position + ATTRIBUTES_OFFSET, attributes)  # type: ignore[arg-type]
        _INT64.pack_into(self.buffer, self.position + MAX_TIMESTAMP_OFFSET, timestamp)  # type: ignore[arg-type]
        self.attributes = attributes
        self.max_timestamp = timestamp
        self.crc = self.compute_crc()
        _UINT32.pack_into(self.buffer, self.position + CRC_OFFSET, self.crc)  # type: ignore[arg-type]

    # -- records (off the hot path) ------------------------------------
    def records(self, max_decompressed_size: int | None = None) -> Iterator[Record]:
        """Decode the batch's records, decompressing them first when needed.

        Raises InvalidRecordError (CompressionError for codec failures) on
        malformed data. A LogAppendTime batch gives every record its max timestamp.
        """
        count = self.records_count
        if count < 0:
            raise InvalidRecordError(f"negative record count {count}")
        data = self.records_data(max_decompressed_size)
        append_time = self.max_timestamp if self.is_log_append_time else None
        position = 0
        end = len(data)
        for _ in range(count):
            try:
                record, position = _read_record(data, position, end, self.base_offset, self.base_timestamp, append_time)
            except DecodeError as error:
                raise InvalidRecordError(f"malformed record: {error}") from None
            yield record
        if position != end:
            raise InvalidRecordError(f"{end - position} bytes remain after the batch's {count} records")

    def records_data(self, max_decompressed_size: int | None = None) -> bytes:
        """The records' bytes, decompressed (at most max_decompressed_size bytes)."""
        limit = compression.MAX_DECOMPRESSED_SIZE if max_decompressed_size is None else max_decompressed_size
        codec = self.compression
        if codec == compression.NONE:
            return bytes(self.records_view())
        return compression.decompress(codec, self.records_view(), limit)

    def find_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """The first record whose timestamp is >= ``timestamp``, or None (ListOffsets by time)."""
        if self.max_timestamp < timestamp:
            return None
        for record in self.records():
            if record.timestamp >= timestamp:
                return TimestampAndOffset(record.timestamp, record.offset)
        return None

    def end_transaction_marker(self) -> EndTransactionMarker:
        """The COMMIT/ABORT marker a transactional control batch carries."""
        if not self.is_control:
            raise InvalidRecordError("not a control batch")
        for record in self.records():
            _, control_type = parse_control_record_key(record.key)
            if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                raise InvalidRecordError(f"control record type {control_type} is not a transaction marker")
            _, coordinator_epoch = parse_end_transaction_value(record.value)
            return EndTransactionMarker(ControlRecordType(control_type), coordinator_epoch, record.offset)
        raise InvalidRecordError("control batch has no records")

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, size={self.size}, records={self.records_count}, "
            f"attributes={self.attributes:#x}, producer_id={self.producer_id})"
        )


def iter_batches(buffer: bytes | bytearray | memoryview, position: int = 0) -> Iterator[RecordBatch]:
    """Yield each complete batch of a concatenation; raise on a malformed one.

    A trailing partial batch (shorter than its header says) raises
    InvalidRecordError, as in a Produce request it means malformed input.
    """
    end = len(buffer)
    while position < end:
        batch = RecordBatch(buffer, position)
        yield batch
        position += batch.size


# -- control records ----------------------------------------------------------


def parse_control_record_key(key: bytes | None) -> tuple[int, int]:
    """(version, type) of a control record's key: int16 version, int16 type."""
    if key is None or len(key) < _CONTROL_KEY.size:
        raise InvalidRecordError(f"control record key too short: {key!r}")
    version, control_type = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(f"invalid control record key version {version}")
    return version, control_type


def parse_end_transaction_value(value: bytes | None) -> tuple[int, int]:
    """(version, coordinator_epoch) of an end-transaction marker's value.

    Version 0 is int16 version + int32 coordinator epoch; later bytes (from a
    newer version) are ignored, as Kafka does.
    """
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise InvalidRecordError(f"end transaction marker value too short: {value!r}")
    version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(f"invalid end transaction marker version {version}")
    return version, coordinator_epoch


# -- record decoding ----------------------------------------------------------
#
# A record: length varint, attributes int8, timestampDelta varlong, offsetDelta
# varint, key (varint length, negative = null), value (same), header count
# varint, then each header: key (varint length, never negative), value (varint
# length, negative = null). Varints are zigzag-encoded (protocol.primitives).
# As Kafka's DefaultRecord.readFrom: any negative key or value length is null,
# header keys are not checked for UTF-8 (Java replaces malformed bytes), and
# the fields must end exactly where the record's length says.


def record_positions(data: bytes, count: int) -> array[int]:
    """Where each of a records section's `count` records starts, then where the last ends (count + 1
    positions), from the records' length prefixes alone (no field is decoded). Raises
    InvalidRecordError unless the prefixes frame `data` exactly."""
    if count < 0:
        raise InvalidRecordError(f"negative record count {count}")
    positions = array("I", bytes(4 * (count + 1)))  # a records section is below 4 GiB (MAX_DECOMPRESSED_SIZE)
    position, end = 0, len(data)
    for i in range(count):
        positions[i] = position
        if position >= end:
            raise InvalidRecordError(f"the batch says {count} records, the data ends after {i}")
        first = data[position]
        if first < 0x80:  # a record under 64 bytes: a one-byte length
            length = (first >> 1) ^ -(first & 1)
            position += 1
        else:
            try:
                length, position = read_varint(data, position)
            except DecodeError as error:
                raise InvalidRecordError(f"malformed record length: {error}") from None
        if length < 1 or length > end - position:
            raise InvalidRecordError(f"invalid record length {length} with {end - position} bytes left")
        position += length
    positions[count] = position
    if position != end:
        raise InvalidRecordError(f"{end - position} bytes remain after the batch's {count} records")
    return positions


def read_record(
    data: bytes, position: int, end: int, base_offset: int, base_timestamp: int, append_time: int | None
) -> Record:
    """The one record at `position` of a records section, which must end at `end` (a position from
    record_positions); `append_time`: the batch's max timestamp when it is LogAppendTime, else None."""
    try:
        record, record_end = _read_record(data, position, end, base_offset, base_timestamp, append_time)
    except DecodeError as error:
        raise InvalidRecordError(f"malformed record: {error}") from None
    if record_end != end:
        raise InvalidRecordError(f"record at {position} ends at {record_end}, not {end}")
    return record


def _read_nullable_bytes(data: bytes, position: int, end: int) -> tuple[bytes | None, int]:
    length, position = read_varint(data, position)
    if length < 0:
        return None, position
    if length > end - position:
        raise InvalidRecordError(f"length {length} runs past the end of the record")
    return data[position : position + length], position + length


def _read_headers(data: bytes, position: int, end: int) -> tuple[list[Header], int]:
    count, position = read_varint(data, position)
    # every header takes at least two bytes (two varint lengths)
    if count < 0 or 2 * count > end - position:
        raise InvalidRecordError(f"invalid header count {count}")
    headers = []
    for _ in range(count):
        length, position = read_varint(data, position)
        if length < 0 or length > end - position:
            raise InvalidRecordError(f"invalid header key length {length}")
        key = data[position : position + length].decode("utf-8", "replace")
        value, position = _read_nullable_bytes(data, position + length, end)
        headers.append(Header(key, value))
    return headers, position


def _read_record(
    data: bytes, position: int, end: int, base_offset: int, base_timestamp: int, append_time: int | None
) -> tuple[Record, int]:
    """Decode the record at position; return it and the position after it."""
    length, position = read_varint(data, position)
    if length < 1 or length > end - position:
        raise InvalidRecordError(f"invalid record length {length} with {end - position} bytes left")
    record_end = position + length
    position += 1  # attributes: unused in magic 2
    timestamp_delta, position = read_varlong(data, position)
    offset_delta, position = read_varint(data, position)
    if position > record_end:
        raise InvalidRecordError(f"record fields run past its length {length}")
    key, position = _read_nullable_bytes(data, position, record_end)
    value, position = _read_nullable_bytes(data, position, record_end)
    headers, position = _read_headers(data, position, record_end)
    if position != record_end:
        raise InvalidRecordError(f"record declares {length} bytes but its fields end {record_end - position} early")
    timestamp = base_timestamp + timestamp_delta if append_time is None else append_time
    return Record(base_offset + offset_delta, timestamp, key, value, headers), record_end
