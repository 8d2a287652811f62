"""OffsetsStore: committed offsets and group records kept in the internal __consumer_offsets topic.

Each group lives in one partition, abs(java hashCode(group id)) % partitions as in
Kafka. A commit is acknowledged once its batch is in the partition's log file, and
fsynced when kbroker.fsync.before.ack is on. At startup every partition is replayed
from its log start offset: later records win, a null value is a tombstone.

Snapshots keep the replay short without a log cleaner: when a partition has grown
past max(snapshot_min_bytes (1 MiB), 2 x its size after the last snapshot), the store rolls
a new segment, writes every live record of that partition into it, fsyncs it,
moves the log start offset to the snapshot's first offset and deletes the older
segments. A crash anywhere in between leaves a log whose replay gives the same
state (the snapshot repeats values that are already current).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import structlog

from kbroker.log import AppendInfo, AppendOrigin, KafkaStorageError, LogManager, TopicExistsError, UnifiedLog
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import InvalidRecordError, iter_batches

log = structlog.get_logger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
# Never deleted by retention (offsets expire through tombstones); segments as Kafka's offsets.topic.segment.bytes.
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
SNAPSHOT_MIN_BYTES = 1024 * 1024
MAX_BATCH_BYTES = 512 * 1024
READ_CHUNK_BYTES = 4 * 1024 * 1024

Entry = tuple[bytes, bytes | None]  # (key, value); value None = tombstone
NO_PRODUCER_ID = -1
NO_MARKER = -1


class ReplayRecord(NamedTuple):
    """One record of __consumer_offsets as replayed.

    Transactional offset commits (TxnOffsetCommit) carry their producer id: they count
    only once a COMMIT marker of that producer follows in the same partition. A marker
    comes as a record with `marker` set (0 ABORT, 1 COMMIT) and an empty key.
    """

    partition: int
    key: bytes
    value: bytes | None
    producer_id: int = NO_PRODUCER_ID
    marker: int = NO_MARKER


@dataclass
class ReplayStats:
    partitions: int = 0
    records: int = 0
    skipped: int = 0
    bytes: int = 0
    duration_ms: float = 0.0


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's Utils.abs(groupId.hashCode()) % partitions, with Java's String.hashCode over UTF-16."""
    h = 0
    data = group_id.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


class OffsetsStore:
    def __init__(self, logs: LogManager, partitions: int, *, snapshot_min_bytes: int = SNAPSHOT_MIN_BYTES) -> None:
        self.logs = logs
        existing = logs.topic(OFFSETS_TOPIC)
        self.partitions = existing.partitions if existing is not None else partitions
        self.snapshot_min_bytes = snapshot_min_bytes
        self._size_after_snapshot: dict[int, int] = {}
        self.snapshotting: set[int] = set()

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partitions)

    # -- writes ------------------------------------------------------------------
    def append(
        self, group_id: str, entries: Sequence[Entry], *, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1
    ) -> tuple[UnifiedLog, AppendInfo]:
        """Write the entries of one group into its partition's log (page cache on return).

        With a producer id the batch is transactional (TxnOffsetCommit): pending until a marker.
        """
        self._ensure_topic()
        partition_log = self._log(self.partition_for(group_id))
        batch = encode_batches(entries, producer_id, producer_epoch)
        return partition_log, partition_log.append_as_leader(batch, AppendOrigin.COORDINATOR)

    @staticmethod
    async def wait_durable(partition_log: UnifiedLog, info: AppendInfo) -> None:
        """As an acks=all produce: fsynced first when the topic's kbroker.fsync.before.ack asks for it."""
        await partition_log.wait_for_ack(info, -1)

    def ensure_topic(self) -> None:
        """Create (or adopt) the topic now: its partition count is final once this returns.
        AddOffsetsToTxn calls it before naming the group's partition to the transaction."""
        self._ensure_topic()

    def _ensure_topic(self) -> None:
        """Create the topic on the first write; if something else created it first (a client's
        Metadata auto-creation), adopt its partition count: nothing was written yet."""
        metadata = self.logs.topic(OFFSETS_TOPIC)
        if metadata is None:
            try:
                metadata = self.logs.create_topic(OFFSETS_TOPIC, self.partitions, configs=TOPIC_CONFIGS)
                log.info("offsets_topic_created", topic=OFFSETS_TOPIC, partitions=self.partitions)
            except TopicExistsError:
                metadata = self.logs.topic(OFFSETS_TOPIC)
                assert metadata is not None
        if metadata.partitions != self.partitions:
            log.warning("offsets_topic_partitions_adopted", configured=self.partitions, found=metadata.partitions)
            self.partitions = metadata.partitions

    def _log(self, partition: int) -> UnifiedLog:
        partition_log = self.logs.get_partition(OFFSETS_TOPIC, partition)
        if partition_log is None:
            raise KafkaStorageError(f"{OFFSETS_TOPIC}-{partition} has no log")
        return partition_log

    # -- snapshots ------------------------------------------------------------------
    def needs_snapshot(self, partition: int) -> bool:
        partition_log = self.logs.get_partition(OFFSETS_TOPIC, partition)
        if partition_log is None or partition in self.snapshotting:
            return False
        base = self._size_after_snapshot.get(partition, 0)
        return partition_log.local.size_in_bytes > max(self.snapshot_min_bytes, 2 * base)

    async def snapshot(self, partition: int, live: list[Entry]) -> None:
        """Rewrite the partition as `live` (every current record of its groups) and drop older segments.

        The caller builds `live` and calls this without yielding in between, so the
        snapshot is a consistent cut; records appended afterwards follow it in the log.
        """
        partition_log = self._log(partition)
        self.snapshotting.add(partition)
        try:
            partition_log.local.roll()
            start = partition_log.log_end_offset
            if live:
                partition_log.append_as_leader(encode_batches(live), AppendOrigin.COORDINATOR)
            await partition_log.local.flush()
            partition_log.local.delete_records(start)
            released = partition_log.local.delete_old_segments()
            self._size_after_snapshot[partition] = partition_log.local.size_in_bytes
            log.info(
                "offsets_snapshot_written",
                partition=partition,
                records=len(live),
                log_start_offset=start,
                released_bytes=released,
            )
        finally:
            self.snapshotting.discard(partition)

    # -- replay ----------------------------------------------------------------------
    def replay(self) -> Iterator[ReplayRecord]:
        """Every record and transaction marker of every partition, oldest first."""
        for partition in range(self.partitions):
            partition_log = self.logs.get_partition(OFFSETS_TOPIC, partition)
            if partition_log is not None:
                yield from read_partition(partition_log, partition)
                self._size_after_snapshot[partition] = partition_log.local.size_in_bytes


def read_partition(partition_log: UnifiedLog, partition: int) -> Iterator[ReplayRecord]:
    offset = partition_log.log_start_offset
    while offset < partition_log.log_end_offset:
        data = partition_log.read(offset, READ_CHUNK_BYTES).read()
        if not data:
            break
        try:
            for batch in iter_batches(data):
                if batch.is_control:
                    if batch.is_transactional and batch.base_offset >= offset:
                        marker = batch.end_transaction_marker()
                        yield ReplayRecord(partition, b"", None, batch.producer_id, int(marker.type))
                else:
                    producer_id = batch.producer_id if batch.is_transactional else NO_PRODUCER_ID
                    for record in batch.records():
                        if record.offset >= offset and record.key is not None:
                            value = None if record.value is None else bytes(record.value)
                            yield ReplayRecord(partition, bytes(record.key), value, producer_id)
                offset = batch.next_offset
        except InvalidRecordError as error:  # recovery already cut torn tails; this is real corruption
            log.error("offsets_log_unreadable", partition=partition_log.partition, offset=offset, error=str(error))
            return


def encode_batches(entries: Iterable[Entry], producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1) -> bytearray:
    """Entries as uncompressed record batches of at most about MAX_BATCH_BYTES each
    (transactional ones, with no sequence as Kafka writes them, when a producer id is given)."""
    batch_args = {}
    if producer_id != NO_PRODUCER_ID:
        batch_args = {"producer_id": producer_id, "producer_epoch": producer_epoch, "is_transactional": True}
    now = int(time.time() * 1000)
    out = bytearray()
    pending: list[SimpleRecord] = []
    size = 0
    for key, value in entries:
        pending.append(SimpleRecord(key, value, (), now))
        size += len(key) + (len(value) if value else 0) + 16
        if size >= MAX_BATCH_BYTES:
            out += build_record_batch(pending, **batch_args)  # type: ignore[arg-type]
            pending, size = [], 0
    if pending:
        out += build_record_batch(pending, **batch_args)  # type: ignore[arg-type]
    return out
