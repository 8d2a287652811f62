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

import struct
from collections.abc import Iterator

import crc32c

HEADER = struct.Struct(">qiiBIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_START = 21
MAGIC_OFFSET = 16

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class InvalidRecordError(ValueError):
    """A batch is malformed: wrong magic, bad length, or a failed CRC."""


class CorruptRecordError(InvalidRecordError):
    """The batch's CRC-32C does not match its contents."""


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
        return crc32c.crc32c(memoryview(self.buffer)[start : self.position + self.size])

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
