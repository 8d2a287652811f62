"""Idempotent record batches for the producer state tests, and applying one as UnifiedLog does."""

from __future__ import annotations

from kbroker.log.producer_state import ProducerStateManager
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


def record(state: ProducerStateManager, batch: RecordBatch, base_offset: int, max_timestamp: int | None = None) -> None:
    """Apply a batch appended at `base_offset` to `state`, as UnifiedLog does after an append."""
    if batch.producer_id < 0:
        return
    state.apply(
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.last_offset_delta,
        base_offset,
        batch.max_timestamp if max_timestamp is None else max_timestamp,
        batch.is_transactional,
        batch.is_control,
    )
