"""OffsetsStore: committed offsets and group records kept in the internal __consumer_offsets topic.

The topic, the partition of a group (Kafka's hash), appends, durability and snapshots
(past max(1 MiB, 2 x the size after the last one)) are CoordinatorLog's
(kbroker/log/coordinator_log.py), shared with __transaction_state. This module adds
the records' batches and the replay: at startup every partition is read from its log
start offset; later records win, a null value is a tombstone.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import structlog

from kbroker.log import AppendInfo, LogManager, UnifiedLog
from kbroker.log.coordinator_log import CoordinatorLog
from protocol.errors import InvalidRecordError
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import iter_batches

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


class OffsetsStore(CoordinatorLog):
    """__consumer_offsets (CoordinatorLog) with the group coordinator's records and replay."""

    def __init__(self, logs: LogManager, partitions: int, *, snapshot_min_bytes: int = SNAPSHOT_MIN_BYTES) -> None:
        super().__init__(logs, OFFSETS_TOPIC, partitions, TOPIC_CONFIGS, snapshot_min_bytes=snapshot_min_bytes)

    def append(
        self, group_id: str, entries: Sequence[Entry], *, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1
    ) -> tuple[UnifiedLog, AppendInfo]:
        """Write the entries of one group into its partition's log (page cache on return).

        With a producer id the batch is transactional (TxnOffsetCommit): pending until a marker.
        AddOffsetsToTxn calls ensure_topic() first, so the partition it names stays the group's.
        """
        return self.append_to(group_id, encode_batches(entries, producer_id, producer_epoch))

    async def snapshot(self, partition: int, live: list[Entry]) -> None:
        """Rewrite the partition as `live` (every current record of its groups) and drop older segments.

        The caller builds `live` and calls this without yielding in between, so the
        snapshot is a consistent cut; records appended afterwards follow it in the log.
        """
        start = self.start_snapshot(partition, [encode_batches(live)] if live else [])
        await self.finish_snapshot(partition, start, len(live))

    def replay(self, partitions: Iterable[int] | None = None) -> Iterator[ReplayRecord]:
        """Every record and transaction marker of the partitions (all by default), oldest first."""
        for partition in range(self.partitions) if partitions is None else sorted(partitions):
            unified = self.logs.get_partition(OFFSETS_TOPIC, partition)
            if unified is not None:
                yield from read_partition(unified, partition)
                self.note_size(partition)


def read_partition(partition_log: UnifiedLog, partition: int) -> Iterator[ReplayRecord]:
    offset = partition_log.log_start_offset
    while offset < partition_log.log_end_offset:
        data = partition_log.read(offset, READ_CHUNK_BYTES, to_log_end=True).read()  # a state rebuild: to the end
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
