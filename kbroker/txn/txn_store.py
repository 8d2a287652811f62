"""TxnStateStore: transaction states kept in the internal __transaction_state topic.

The topic (transaction.state.log.num.partitions), the partition of an id (Kafka's hash),
appends, durability and snapshots (past max(16 MiB, 2 x the size after the last one)) are
CoordinatorLog's (kbroker/log/coordinator_log.py), shared with __consumer_offsets. Every
state change is one record, durable before the coordinator acts on it. At startup every
partition is replayed: the last record of an id wins, a null value removes it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence

import structlog

from kbroker.log import AppendInfo, LogManager, UnifiedLog
from kbroker.log.coordinator_log import CoordinatorLog
from protocol.errors import InvalidRecordError
from protocol.record_builder import SimpleRecord, build_record_batch

log = structlog.get_logger(__name__)

TXN_TOPIC = "__transaction_state"
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
SNAPSHOT_MIN_BYTES = 16 * 1024 * 1024

Entry = tuple[bytes, bytes | None]


def encode_entries(entries: Sequence[Entry]) -> bytearray:
    now = int(time.time() * 1000)
    return bytearray(build_record_batch([SimpleRecord(key, value, (), now) for key, value in entries]))


def snapshot_batches(live: Sequence[Entry]) -> list[bytearray]:
    return [encode_entries(live[i : i + 500]) for i in range(0, len(live), 500)]


class TxnStateStore(CoordinatorLog):
    """__transaction_state (CoordinatorLog) with the coordinator's records and replay."""

    def __init__(self, logs: LogManager, partitions: int, *, snapshot_min_bytes: int = SNAPSHOT_MIN_BYTES) -> None:
        super().__init__(logs, TXN_TOPIC, partitions, TOPIC_CONFIGS, snapshot_min_bytes=snapshot_min_bytes)

    def append(self, transactional_id: str, entries: Sequence[Entry]) -> tuple[UnifiedLog, AppendInfo]:
        """Write records of ids of one partition (the first id's); in the page cache on return."""
        return self.append_to(transactional_id, encode_entries(entries))

    def replay(self, partitions: Iterable[int] | None = None) -> Iterator[tuple[int, bytes, bytes | None]]:
        """Every record of the partitions (all by default), oldest first: (partition, key, value)."""
        for partition in range(self.partitions) if partitions is None else sorted(partitions):
            unified = self.logs.get_partition(TXN_TOPIC, partition)
            if unified is None:
                continue
            try:
                for batch in unified.local.batches():
                    for record in batch.records():
                        if record.offset >= unified.log_start_offset and record.key is not None:
                            value = None if record.value is None else bytes(record.value)
                            yield partition, bytes(record.key), value
            except InvalidRecordError as error:
                log.error("transaction_log_unreadable", partition=partition, error=str(error))
            self.note_size(partition)
