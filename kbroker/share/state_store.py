"""ShareStateStore: share-partition state kept in the internal compacted topic `__share_group_state`.

Each write is one record per changed share partition (its whole state, state_records.py),
appended through the coordinator-log helper (kbroker/log/coordinator_log.py: the partition's
`append_as_leader`, acknowledged as an acks=all produce, fsynced first with
`kbroker.fsync.before.ack`). A share partition lives in partition
abs(javaHashCode("group:topic-id:partition")) % partitions. At start-up every partition is read
from its log start offset and the last record of each key wins. Growth is bounded as for
`__consumer_offsets`: past max(1 MiB, twice its size after the last rewrite) a partition is
rewritten as its live records in a new segment, which becomes the log start.
"""

from __future__ import annotations

import structlog

from kbroker.group.store import encode_batches, read_partition
from kbroker.log import LogManager
from kbroker.log.coordinator_log import CoordinatorLog
from kbroker.share.state_records import ShareState, StateKey, decode_key, decode_value, encode_key, encode_value

log = structlog.get_logger(__name__)

STATE_TOPIC = "__share_group_state"
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)}
REWRITE_MIN_BYTES = 1024 * 1024


def _hash_key(key: StateKey) -> str:
    return f"{key.group_id}:{key.topic_id.hex()}:{key.partition}"


class ShareStateStore:
    def __init__(self, logs: LogManager, partitions: int, *, rewrite_min_bytes: int = REWRITE_MIN_BYTES) -> None:
        self.logs = logs
        self.log = CoordinatorLog(logs, STATE_TOPIC, partitions, TOPIC_CONFIGS, snapshot_min_bytes=rewrite_min_bytes)

    @property
    def partitions(self) -> int:
        return self.log.partitions

    def partition_for(self, key: StateKey) -> int:
        return self.log.partition_for(_hash_key(key))

    async def write(self, states: dict[StateKey, ShareState | None]) -> None:
        """Append the states (None: a tombstone) and wait until they are as durable as an acks=all produce."""
        if not states:
            return
        self.log.ensure_topic()
        by_partition: dict[int, tuple[str, list[tuple[bytes, bytes | None]]]] = {}
        for key, state in states.items():
            entry = (encode_key(key), None if state is None else encode_value(state))
            by_partition.setdefault(self.partition_for(key), (_hash_key(key), []))[1].append(entry)
        appended = [
            self.log.append_to(hash_key, encode_batches(entries)) for hash_key, entries in by_partition.values()
        ]
        for unified, info in appended:
            await self.log.wait_durable(unified, info)

    def load(self) -> dict[StateKey, ShareState]:
        """Every share partition's last state, read from the log."""
        states: dict[StateKey, ShareState] = {}
        if self.logs.topic(STATE_TOPIC) is None:
            return states
        for partition in range(self.partitions):
            unified = self.logs.get_partition(STATE_TOPIC, partition)
            if unified is None:
                continue
            for record in read_partition(unified, partition):
                try:
                    key = decode_key(record.key)
                    if record.value is None:
                        states.pop(key, None)
                    else:
                        states[key] = decode_value(record.value)
                except ValueError as error:
                    log.warning("share_state_record_skipped", partition=partition, error=str(error))
            self.log.note_size(partition)
        return states

    def partitions_to_rewrite(self) -> list[int]:
        if self.logs.topic(STATE_TOPIC) is None:
            return []
        return [partition for partition in range(self.partitions) if self.log.needs_snapshot(partition)]

    async def rewrite(self, partition: int, live: dict[StateKey, ShareState]) -> None:
        """Rewrite one partition as `live` (the current states, built by the caller without yielding)."""
        entries = [(encode_key(k), encode_value(v)) for k, v in live.items() if self.partition_for(k) == partition]
        start = self.log.start_snapshot(partition, [encode_batches(entries)] if entries else [])
        await self.log.finish_snapshot(partition, start, len(entries))
