"""ShareStateStore: share-partition state kept in the internal compacted topic `__share_group_state`.

Each write is one record per changed share partition (its whole state, state_records.py),
appended through the partition's `append_as_leader` and acknowledged as an acks=all produce
(fsynced first with `kbroker.fsync.before.ack`). A share partition lives in partition
abs(javaHashCode("group:topic-id:partition")) % partitions. At start-up every partition is read
from its log start offset and the last record of each key wins. Growth is bounded as for
`__consumer_offsets`: past max(1 MiB, twice its size after the last rewrite) a partition is rewritten
as its live records in a new segment, which becomes the log start.
"""

from __future__ import annotations

import structlog

from kbroker.group.store import encode_batches, partition_for, read_partition
from kbroker.log import AppendOrigin, KafkaStorageError, LogManager, TopicExistsError, UnifiedLog
from kbroker.share.state_records import ShareState, StateKey, decode_key, decode_value, encode_key, encode_value

log = structlog.get_logger(__name__)

STATE_TOPIC = "__share_group_state"
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
REWRITE_MIN_BYTES = 1024 * 1024


class ShareStateStore:
    def __init__(self, logs: LogManager, partitions: int, *, rewrite_min_bytes: int = REWRITE_MIN_BYTES) -> None:
        self.logs = logs
        existing = logs.topic(STATE_TOPIC)
        self.partitions = existing.partitions if existing is not None else partitions
        self.rewrite_min_bytes = rewrite_min_bytes
        self._size_after_rewrite: dict[int, int] = {}

    def partition_for(self, key: StateKey) -> int:
        return partition_for(f"{key.group_id}:{key.topic_id.hex()}:{key.partition}", self.partitions)

    async def write(self, states: dict[StateKey, ShareState | None]) -> None:
        """Append the states (None: a tombstone) and wait until they are as durable as an acks=all produce."""
        if not states:
            return
        self._ensure_topic()
        by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for key, state in states.items():
            entry = (encode_key(key), None if state is None else encode_value(state))
            by_partition.setdefault(self.partition_for(key), []).append(entry)
        appended = []
        for partition, entries in by_partition.items():
            partition_log = self._log(partition)
            appended.append(
                (partition_log, partition_log.append_as_leader(encode_batches(entries), AppendOrigin.COORDINATOR))
            )
        for partition_log, info in appended:
            await partition_log.wait_for_ack(info, -1)

    def load(self) -> dict[StateKey, ShareState]:
        """Every share partition's last state, read from the log."""
        states: dict[StateKey, ShareState] = {}
        if self.logs.topic(STATE_TOPIC) is None:
            return states
        for partition in range(self.partitions):
            partition_log = self.logs.get_partition(STATE_TOPIC, partition)
            if partition_log is None:
                continue
            for record in read_partition(partition_log, partition):
                try:
                    key = decode_key(record.key)
                    if record.value is None:
                        states.pop(key, None)
                    else:
                        states[key] = decode_value(record.value)
                except ValueError as error:
                    log.warning("share_state_record_skipped", partition=partition, error=str(error))
            self._size_after_rewrite[partition] = partition_log.local.size_in_bytes
        return states

    def partitions_to_rewrite(self) -> list[int]:
        result = []
        for partition in range(self.partitions):
            partition_log = self.logs.get_partition(STATE_TOPIC, partition)
            if partition_log is None:
                continue
            base = self._size_after_rewrite.get(partition, 0)
            if partition_log.local.size_in_bytes > max(self.rewrite_min_bytes, 2 * base):
                result.append(partition)
        return result

    async def rewrite(self, partition: int, live: dict[StateKey, ShareState]) -> None:
        """Rewrite one partition as `live` (its current states, built by the caller without yielding)."""
        partition_log = self._log(partition)
        partition_log.local.roll()
        start = partition_log.log_end_offset
        entries = [(encode_key(k), encode_value(v)) for k, v in live.items() if self.partition_for(k) == partition]
        if entries:
            partition_log.append_as_leader(encode_batches(entries), AppendOrigin.COORDINATOR)
        await partition_log.local.flush()
        partition_log.local.delete_records(start)
        partition_log.local.delete_old_segments()
        self._size_after_rewrite[partition] = partition_log.local.size_in_bytes
        log.info("share_state_rewritten", partition=partition, records=len(entries), log_start_offset=start)

    def _ensure_topic(self) -> None:
        metadata = self.logs.topic(STATE_TOPIC)
        if metadata is None:
            try:
                metadata = self.logs.create_topic(STATE_TOPIC, self.partitions, configs=TOPIC_CONFIGS)
                log.info("share_state_topic_created", topic=STATE_TOPIC, partitions=self.partitions)
            except TopicExistsError:
                metadata = self.logs.topic(STATE_TOPIC)
                assert metadata is not None
        self.partitions = metadata.partitions

    def _log(self, partition: int) -> UnifiedLog:
        partition_log = self.logs.get_partition(STATE_TOPIC, partition)
        if partition_log is None:
            raise KafkaStorageError(f"{STATE_TOPIC}-{partition} has no log")
        return partition_log
