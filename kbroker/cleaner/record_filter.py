"""What a cleaning round keeps of each batch and record (Kafka's Cleaner.cleanInto and MemoryRecords.filterTo).

Per batch:
- a data batch of an aborted transaction loses its records;
- a transaction marker that may go (see txn_metadata.py) first gets a delete horizon
  (now + `delete.retention.ms`) and is dropped by the first round after it;
- a batch holding an active producer's last data offset (or, when the producer's last entry
  is a marker, that marker) stays, empty if need be, so its sequence and epoch survive;
  so does the last batch of the round, so the log's last offset is not lost;
- otherwise a batch left without records goes.

Per record of a data batch: records above the offset map's coverage stay; a keyless record
goes (a compacted topic needs keys); a record stays when it is its key's last one and
either has a value or is a tombstone whose batch's delete horizon has not passed. A kept
tombstone gives its batch a delete horizon when it has none yet.

A batch whose records all stay and that needs no new horizon is copied byte for byte.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kbroker.cleaner.batch_writer import build_empty, build_retained, delete_horizon_ms
from kbroker.cleaner.offset_map import GilYield, OffsetMap
from kbroker.cleaner.txn_metadata import CleanedTransactionMetadata
from protocol.records import Record, RecordBatch


class LastRecord(NamedTuple):
    """An active producer's last data offset (None when its last entry is a marker) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


class BatchRetention(enum.Enum):
    DELETE = "delete"  # the batch goes, whatever its records
    DELETE_EMPTY = "delete_empty"  # the batch goes only when no record stays
    RETAIN_EMPTY = "retain_empty"  # the batch stays, if need be as an empty header


@dataclass(slots=True)
class CleanerStats:
    messages_read: int = 0
    bytes_read: int = 0
    messages_written: int = 0
    bytes_written: int = 0
    invalid_messages: int = 0  # keyless records dropped
    map_messages_read: int = 0
    map_bytes_read: int = 0


class RecordFilter:
    """Decides, batch by batch in offset order, what one cleaning round writes."""

    def __init__(
        self,
        offset_map: OffsetMap,
        transactions: CleanedTransactionMetadata,
        *,
        now: int,
        delete_retention_ms: int,
        last_records_of_active_producers: Mapping[int, LastRecord],
        upper_bound_offset: int,
        stats: CleanerStats | None = None,
    ) -> None:
        self.offset_map = offset_map
        self.transactions = transactions
        self.now = now
        self.delete_retention_ms = delete_retention_ms
        self.active_producers = last_records_of_active_producers
        self.upper_bound_offset = upper_bound_offset
        self.stats = stats or CleanerStats()
        self.gil = GilYield()  # one count for the whole round: batches are often under 64 records

    def _is_last_of_producer(self, batch: RecordBatch) -> bool:
        last = self.active_producers.get(batch.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return batch.last_offset == last.last_data_offset
        return batch.is_control and batch.producer_epoch == last.producer_epoch

    def _retention(self, batch: RecordBatch) -> tuple[BatchRetention, bool, bool]:
        """(batch retention, discard its records, it is a marker whose transaction left no data)."""
        if batch.is_control:
            can_discard = self.transactions.on_control_batch_read(batch)
            horizon = delete_horizon_ms(batch)
            discard_records = can_discard and horizon is not None and horizon <= self.now
        else:
            can_discard = self.transactions.on_batch_read(batch)
            discard_records = can_discard
        if batch.has_producer_id and self._is_last_of_producer(batch):
            retention = BatchRetention.RETAIN_EMPTY
        elif batch.next_offset == self.upper_bound_offset:
            retention = BatchRetention.RETAIN_EMPTY
        elif discard_records:
            retention = BatchRetention.DELETE
        else:
            retention = BatchRetention.DELETE_EMPTY
        return retention, discard_records, can_discard and batch.is_control

    def _retain_record(self, batch: RecordBatch, record: Record, horizon: int | None) -> bool:
        if record.offset > self.offset_map.latest_offset:
            return True
        if record.key is None:
            self.stats.invalid_messages += 1
            return False
        if record.offset < self.offset_map.get(record.key):
            return False
        return record.value is not None or horizon is None or self.now < horizon

    def filter_batch(self, batch: RecordBatch) -> bytes | None:
        """The bytes to write for `batch` (the original, a rewrite or an empty header), or None."""
        self.stats.bytes_read += batch.size
        retention, discard_records, marker_for_empty_txn = self._retention(batch)
        if retention is BatchRetention.DELETE:
            self.stats.messages_read += max(batch.records_count, 0)
            return None
        horizon = delete_horizon_ms(batch)
        retained: list[Record] = []
        unchanged = True
        tombstones = False
        for record in batch.records():
            self.gil.record()
            self.stats.messages_read += 1
            if discard_records:
                keep = False
            elif batch.is_control:
                keep = True
            else:
                keep = self._retain_record(batch, record, horizon)
            if keep:
                retained.append(record)
                tombstones = tombstones or record.value is None
            else:
                unchanged = False
        if retained:
            needs_horizon = (tombstones or marker_for_empty_txn) and horizon is None
            if unchanged and not needs_horizon:
                data = bytes(batch.view())
            else:
                data = build_retained(
                    batch, retained, self.now + self.delete_retention_ms if needs_horizon else horizon
                )
            self.stats.messages_written += len(retained)
        elif retention is BatchRetention.RETAIN_EMPTY:
            data = build_empty(batch)
        else:
            return None
        self.stats.bytes_written += len(data)
        return data
