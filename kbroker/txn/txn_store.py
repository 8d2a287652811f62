"""TxnStateStore: transaction states kept in the internal __transaction_state topic.

Each transactional id lives in one partition, abs(java hashCode(id)) % partitions as
in Kafka (transaction.state.log.num.partitions). Every state change is one record,
appended and, when the topic's kbroker.fsync.before.ack asks for it, fsynced before
the coordinator acts on it. At startup every partition is replayed: the last record
of an id wins, a null value removes it.

Compaction without a log cleaner, as the offsets store does: once a partition grows
past max(SNAPSHOT_MIN_BYTES, 2 x its size after the last snapshot), a new segment
receives every live record of the partition, is fsynced, becomes the log start and
the older segments are deleted. A crash in between replays to the same state.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import structlog

from kbroker.log import AppendInfo, AppendOrigin, KafkaStorageError, LogManager, TopicExistsError, UnifiedLog
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import InvalidRecordError

log = structlog.get_logger(__name__)

TXN_TOPIC = "__transaction_state"
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
SNAPSHOT_MIN_BYTES = 16 * 1024 * 1024

Entry = tuple[bytes, bytes | None]


def partition_for(key: str, partitions: int) -> int:
    """Kafka's Utils.abs(key.hashCode()) % partitions (Java String.hashCode over UTF-16)."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


def encode_entries(entries: Sequence[Entry]) -> bytearray:
    now = int(time.time() * 1000)
    return bytearray(build_record_batch([SimpleRecord(key, value, (), now) for key, value in entries]))


class TxnStateStore:
    def __init__(self, logs: LogManager, partitions: int, *, snapshot_min_bytes: int = SNAPSHOT_MIN_BYTES) -> None:
        self.logs = logs
        existing = logs.topic(TXN_TOPIC)
        self.partitions = existing.partitions if existing is not None else partitions
        self.snapshot_min_bytes = snapshot_min_bytes
        self._size_after_snapshot: dict[int, int] = {}
        self.snapshotting: set[int] = set()

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partitions)

    def append(self, transactional_id: str, entries: Sequence[Entry]) -> tuple[UnifiedLog, AppendInfo]:
        """Write records of ids of one partition (the first id's); in the page cache on return."""
        self._ensure_topic()
        partition_log = self._log(self.partition_for(transactional_id))
        return partition_log, partition_log.append_as_leader(encode_entries(entries), AppendOrigin.COORDINATOR)

    @staticmethod
    async def wait_durable(partition_log: UnifiedLog, info: AppendInfo) -> None:
        await partition_log.wait_for_ack(info, -1)

    def _ensure_topic(self) -> None:
        metadata = self.logs.topic(TXN_TOPIC)
        if metadata is None:
            try:
                metadata = self.logs.create_topic(TXN_TOPIC, self.partitions, configs=TOPIC_CONFIGS)
                log.info("transaction_topic_created", topic=TXN_TOPIC, partitions=self.partitions)
            except TopicExistsError:
                metadata = self.logs.topic(TXN_TOPIC)
                assert metadata is not None
        if metadata.partitions != self.partitions:
            log.warning("transaction_topic_partitions_adopted", configured=self.partitions, found=metadata.partitions)
            self.partitions = metadata.partitions

    def _log(self, partition: int) -> UnifiedLog:
        partition_log = self.logs.get_partition(TXN_TOPIC, partition)
        if partition_log is None:
            raise KafkaStorageError(f"{TXN_TOPIC}-{partition} has no log")
        return partition_log

    # -- replay -------------------------------------------------------------------
    def replay(self) -> Iterator[tuple[int, bytes, bytes | None]]:
        """Every record of every partition, oldest first: (partition, key, value)."""
        for partition in range(self.partitions):
            partition_log = self.logs.get_partition(TXN_TOPIC, partition)
            if partition_log is None:
                continue
            try:
                for batch in partition_log.local.batches():
                    for record in batch.records():
                        if record.offset >= partition_log.log_start_offset and record.key is not None:
                            value = None if record.value is None else bytes(record.value)
                            yield partition, bytes(record.key), value
            except InvalidRecordError as error:
                log.error("transaction_log_unreadable", partition=partition, error=str(error))
            self._size_after_snapshot[partition] = partition_log.local.size_in_bytes

    # -- snapshots ------------------------------------------------------------------
    def needs_snapshot(self, partition: int) -> bool:
        partition_log = self.logs.get_partition(TXN_TOPIC, partition)
        if partition_log is None or partition in self.snapshotting:
            return False
        base = self._size_after_snapshot.get(partition, 0)
        return partition_log.local.size_in_bytes > max(self.snapshot_min_bytes, 2 * base)

    def start_snapshot(self, partition: int, live: list[Entry]) -> int:
        """Roll and write `live` (every current record of the partition) now; returns the snapshot's offset.

        Synchronous, so that no record is appended between the caller's cut and the snapshot.
        """
        partition_log = self._log(partition)
        self.snapshotting.add(partition)
        try:
            partition_log.local.roll()
            start = partition_log.log_end_offset
            for i in range(0, len(live), 500):
                partition_log.append_as_leader(encode_entries(live[i : i + 500]), AppendOrigin.COORDINATOR)
        except BaseException:
            self.snapshotting.discard(partition)
            raise
        return start

    async def finish_snapshot(self, partition: int, start: int) -> None:
        """Once the snapshot is fsynced, make it the log start and drop the older segments."""
        try:
            partition_log = self._log(partition)
            await partition_log.local.flush()
            partition_log.local.delete_records(start)
            released = partition_log.local.delete_old_segments()
            self._size_after_snapshot[partition] = partition_log.local.size_in_bytes
            log.info("transaction_log_snapshot_written", partition=partition, log_start_offset=start, released=released)
        finally:
            self.snapshotting.discard(partition)
