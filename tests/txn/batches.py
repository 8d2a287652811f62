"""Idempotent record batches for the producer state tests."""

from __future__ import annotations

from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch


def idempotent_batch(
    producer_id: int, epoch: int, base_sequence: int, records: int = 1, *, timestamp: int = 1_000, tag: bytes = b""
) -> bytearray:
    """One uncompressed batch of `records` records carrying the producer id, epoch and base sequence."""
    return bytearray(
        build_record_batch(
            (SimpleRecord(key=b"k%d" % i, value=tag + b"v%d" % i, timestamp=timestamp + i) for i in range(records)),
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=base_sequence,
        )
    )


def view(data: bytes | bytearray) -> RecordBatch:
    return RecordBatch(data)
