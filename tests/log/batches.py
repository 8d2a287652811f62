"""Record batches for the log tests, built with protocol.record_builder."""

from __future__ import annotations

from typing import TypeVar

from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch, iter_batches

T = TypeVar("T")


def make_batch(records: int = 1, value_size: int = 10, timestamp: int = 1_000, *, seed: int = 0) -> bytearray:
    """One uncompressed batch of `records` records with increasing timestamps from `timestamp`."""
    body = bytes((seed + i) % 251 for i in range(value_size))
    return bytearray(
        build_record_batch(SimpleRecord(key=b"k%d" % i, value=body, timestamp=timestamp + i) for i in range(records))
    )


def batches_of(data: bytes) -> list[RecordBatch]:
    return list(iter_batches(data))


def payload(batch: RecordBatch) -> bytes:
    """The batch's bytes from the CRC on: what the broker must keep exactly."""
    return bytes(batch.view()[17:])


def some(value: T | None) -> T:
    """The value, which the test expects to be there."""
    assert value is not None
    return value
