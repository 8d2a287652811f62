"""CoordinatorLog: an internal topic a coordinator keeps its state in (__consumer_offsets, __transaction_state).

A key (group id, transactional id) lives in partition abs(java hashCode(key)) % partitions, as in
Kafka. The topic is created on the first write; one created by someone else first (a client's
Metadata auto-creation) is adopted with its partition count, as nothing was written yet. Records
are appended through the partition's UnifiedLog (origin COORDINATOR) and acknowledged as an
acks=all produce: fsynced first when the topic's kbroker.fsync.before.ack asks for it.

In cluster mode (`in_cluster`) the topic is created in ZooKeeper by whoever first needs it (see
kbroker/coordinator_placement.py), its partition count comes from there, and a coordinator writes only the
partitions whose leader this broker is.

Compaction without a log cleaner: once a partition grows past max(snapshot_min_bytes, 2 x its
size after the last snapshot), the coordinator rewrites it: `start_snapshot` rolls a new segment
and appends every live record (synchronously: a consistent cut, later records follow it),
`finish_snapshot` fsyncs it, makes it the log start and deletes the older segments. A crash in
between replays to the same state, as the snapshot only repeats values that are current.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog

from kbroker.log.errors import KafkaStorageError, NotCoordinatorError, TopicExistsError
from kbroker.log.manager import LogManager
from kbroker.log.partition_log import AppendInfo
from kbroker.log.unified_log import AppendOrigin, UnifiedLog

log = structlog.get_logger(__name__)


def partition_for(key: str, partitions: int) -> int:
    """Kafka's Utils.abs(key.hashCode()) % partitions (Java String.hashCode over UTF-16)."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


class CoordinatorLog:
    def __init__(
        self, logs: LogManager, topic: str, partitions: int, configs: Mapping[str, str], *, snapshot_min_bytes: int
    ) -> None:
        self.logs = logs
        self.topic = topic
        self.configs = dict(configs)
        existing = logs.topic(topic)
        self.partitions = existing.partitions if existing is not None else partitions
        self.snapshot_min_bytes = snapshot_min_bytes
        # cluster mode: the topic is the cluster's (created in ZooKeeper, its partition count set from there);
        # nothing is created locally and only partitions this broker leads are written
        self.in_cluster = False
        self.owned: set[int] | None = None  # cluster mode: the partitions this broker leads (None: all)
        self.snapshotting: set[int] = set()
        self._size_after_snapshot: dict[int, int] = {}

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.partitions)

    # -- writes ----------------------------------------------------------------------
    def ensure_topic(self) -> None:
        """Create (or adopt) the topic now: its partition count is final once this returns."""
        if self.in_cluster:
            return
        metadata = self.logs.topic(self.topic)
        if metadata is None:
            try:
                metadata = self.logs.create_topic(self.topic, self.partitions, configs=self.configs)
                log.info("coordinator_topic_created", topic=self.topic, partitions=self.partitions)
            except TopicExistsError:
                metadata = self.logs.topic(self.topic)
                assert metadata is not None
        if metadata.partitions != self.partitions:
            log.warning(
                "coordinator_topic_partitions_adopted",
                topic=self.topic,
                configured=self.partitions,
                found=metadata.partitions,
            )
            self.partitions = metadata.partitions

    def partition_log(self, partition: int) -> UnifiedLog:
        unified = self.logs.get_partition(self.topic, partition)
        if unified is None:
            raise KafkaStorageError(f"{self.topic}-{partition} has no log")
        return unified

    def append_to(self, key: str, buffer: bytearray) -> tuple[UnifiedLog, AppendInfo]:
        """Append record batches to `key`'s partition (in the page cache on return)."""
        self.ensure_topic()
        partition = self.partition_for(key)
        if self.owned is not None and partition not in self.owned:
            raise NotCoordinatorError(f"{self.topic}-{partition} is not led by this broker")
        unified = self.partition_log(partition)
        return unified, unified.append_as_leader(buffer, AppendOrigin.COORDINATOR)

    @staticmethod
    async def wait_durable(unified: UnifiedLog, info: AppendInfo) -> None:
        """As an acks=all produce: fsynced first when the topic's kbroker.fsync.before.ack asks for it."""
        await unified.wait_for_ack(info, -1)

    # -- snapshots ----------------------------------------------------------------------
    def needs_snapshot(self, partition: int) -> bool:
        unified = self.logs.get_partition(self.topic, partition)
        if unified is None or partition in self.snapshotting:
            return False
        base = self._size_after_snapshot.get(partition, 0)
        return unified.local.size_in_bytes > max(self.snapshot_min_bytes, 2 * base)

    def note_size(self, partition: int) -> None:
        """The partition's size now counts as its size after a snapshot (after a replay, or a snapshot)."""
        unified = self.logs.get_partition(self.topic, partition)
        if unified is not None:
            self._size_after_snapshot[partition] = unified.local.size_in_bytes

    def start_snapshot(self, partition: int, batches: Iterable[bytearray]) -> int:
        """Roll and append `batches` (every live record of the partition) now; returns the snapshot's offset."""
        unified = self.partition_log(partition)
        self.snapshotting.add(partition)
        try:
            unified.local.roll()
            start = unified.log_end_offset
            for buffer in batches:
                unified.append_as_leader(buffer, AppendOrigin.COORDINATOR)
        except BaseException:
            self.snapshotting.discard(partition)
            raise
        return start

    async def finish_snapshot(self, partition: int, start: int, records: int) -> None:
        """Once the snapshot is fsynced, make it the log start and drop the older segments."""
        try:
            local = self.partition_log(partition).local
            await local.flush()
            local.delete_records(start)
            released = local.delete_old_segments()
            self._size_after_snapshot[partition] = local.size_in_bytes
            log.info(
                "coordinator_log_snapshot_written",
                topic=self.topic,
                partition=partition,
                records=records,
                log_start_offset=start,
                released_bytes=released,
            )
        finally:
            self.snapshotting.discard(partition)
