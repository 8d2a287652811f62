"""The follower's fetcher (Kafka's ReplicaFetcherThread / AbstractFetcherThread): one task per source broker
fetches every partition this broker follows on it, with Fetch v12 over the inter-broker channel.

Each request names this broker as `replica_id`, and per partition the leader epoch it follows
(`current_leader_epoch`), its log end offset as the fetch offset and the latest epoch in its log
(`LastFetchedEpoch`); replica.fetch.max.bytes per partition, replica.fetch.response.max.bytes in all,
replica.fetch.wait.max.ms / replica.fetch.min.bytes for the long poll. The answer per partition:
- records: appended as they are (`UnifiedLog.append_as_follower`), then the follower's high watermark is
  min(leader's high watermark, own log end offset);
- `DivergingEpoch` (the leader's log differs from ours from some offset on): truncate
  (`truncation_offset`, Kafka's rule) and fetch again from the new end;
- OFFSET_OUT_OF_RANGE (the leader's log start passed our log end: retention, DeleteRecords): ask the leader
  its log start (ListOffsets, earliest) and start again empty there; the leader's log start is followed
  too (below the high watermark);
- an error (the leader moved, an epoch the leader does not know yet): that partition is asked again
  after 100 ms (at most replica.fetch.backoff.ms); a failed append waits replica.fetch.backoff.ms, and
  an unreachable leader makes the whole fetcher wait that long.
The pure decisions are functions here; the task is a thin loop around them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.cluster.channel import BrokerChannel, BrokerUnreachableError
from kbroker.log import KafkaStorageError, LogError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import RecordBatch

if TYPE_CHECKING:
    from kbroker.log import UnifiedLog

log = structlog.get_logger(__name__)

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 7
# a partition the leader does not serve at the follower's epoch: usually one of the two has not read ZooKeeper's
# latest state yet, a matter of milliseconds (the follower's own refresh replaces the partition's state)
PARTITION_RETRY_MS = 100
UNDEFINED = -1
TopicPartition = tuple[str, int]


def truncation_offset(
    diverging_epoch: int,
    diverging_end_offset: int,
    local_end_offset_for: Callable[[int], tuple[int, int]],
    log_end: int,
) -> int:
    """Where a follower truncates when its leader answers DivergingEpoch (epoch, end offset): Kafka's
    getOffsetTruncationState. `local_end_offset_for(epoch)` is the follower's own (epoch, end offset)
    for the largest epoch at or below `epoch`. Same epoch on both sides: the smaller end; the follower
    knows only an older epoch: that epoch's end (the next fetch checks again from there)."""
    if diverging_end_offset == UNDEFINED:
        return log_end  # nothing to compare: keep the log (Kafka would fall back to its high watermark)
    if diverging_epoch == UNDEFINED:
        return min(diverging_end_offset, log_end)
    epoch, end_offset = local_end_offset_for(diverging_epoch)
    if epoch == UNDEFINED:
        return min(diverging_end_offset, log_end)
    if epoch != diverging_epoch:
        return min(end_offset, log_end)
    return min(diverging_end_offset, end_offset, log_end)


@dataclass(frozen=True)
class FetcherConfig:
    node_id: int
    max_wait_ms: int  # replica.fetch.wait.max.ms
    min_bytes: int  # replica.fetch.min.bytes
    partition_max_bytes: int  # replica.fetch.max.bytes
    response_max_bytes: int  # replica.fetch.response.max.bytes
    backoff_ms: int  # replica.fetch.backoff.ms


@dataclass
class FollowedPartition:
    log: UnifiedLog
    leader_epoch: int
    delayed_until: float = 0.0  # loop time before which it is not fetched (after an error)


class ReplicaFetcher:
    """Fetches the partitions this broker follows on one source broker."""

    def __init__(self, source: int, channel: BrokerChannel, config: FetcherConfig) -> None:
        self.source = source
        self.channel = channel
        self.config = config
        self.partitions: dict[TopicPartition, FollowedPartition] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.fetches = 0
        self.failing = False
        self._last_errors: Counter[str] = Counter()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"replica-fetcher-{self.source}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def follow(self, key: TopicPartition, partition_log: UnifiedLog, leader_epoch: int) -> None:
        current = self.partitions.get(key)
        if current is None or current.leader_epoch != leader_epoch or current.log is not partition_log:
            self.partitions[key] = FollowedPartition(partition_log, leader_epoch)
            self._changed.set()

    def unfollow(self, key: TopicPartition) -> None:
        if self.partitions.pop(key, None) is not None:
            self._changed.set()

    # ----- the loop

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            ready = {k: p for k, p in self.partitions.items() if p.delayed_until <= now}
            if not ready:
                self._changed.clear()
                wake = min((p.delayed_until for p in self.partitions.values()), default=None)
                timeout = None if wake is None else max(0.0, wake - now)
                try:
                    async with asyncio.timeout(timeout):
                        await self._changed.wait()
                except TimeoutError:
                    pass
                continue
            try:
                response = await self.channel.call(
                    self.source,
                    ApiKey.FETCH,
                    FETCH_VERSION,
                    self._request(ready),
                    timeout_s=self.config.max_wait_ms / 1000 + 10,
                )
            except (BrokerUnreachableError, TimeoutError) as error:
                if not self.failing:  # once per outage, not per attempt
                    log.info("replica_fetch_failed", source=self.source, error=str(error)[:200] or "timeout")
                self.failing = True
                await asyncio.sleep(self.config.backoff_ms / 1000)
                continue
            if self.failing:
                log.info("replica_fetch_resumed", source=self.source)
                self.failing = False
            self.fetches += 1
            await self._process(ready, response)

    def _request(self, ready: dict[TopicPartition, FollowedPartition]) -> dict[str, Any]:
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, index), followed in ready.items():
            partition_log = followed.log
            topics.setdefault(topic, []).append(
                {
                    "partition": index,
                    "current_leader_epoch": followed.leader_epoch,
                    "fetch_offset": partition_log.log_end_offset,
                    "last_fetched_epoch": partition_log.leader_epochs.latest_epoch,
                    "log_start_offset": partition_log.log_start_offset,
                    "partition_max_bytes": self.config.partition_max_bytes,
                }
            )
        return {
            "replica_id": self.config.node_id,
            "max_wait_ms": self.config.max_wait_ms,
            "min_bytes": self.config.min_bytes,
            "max_bytes": self.config.response_max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    async def _process(self, asked: dict[TopicPartition, FollowedPartition], response: dict[str, Any]) -> None:
        errors: Counter[str] = Counter()
        for topic in response["responses"]:
            for data in topic["partitions"]:
                key = (topic["topic"], data["partition_index"])
                followed = asked.get(key)
                if followed is None or self.partitions.get(key) is not followed:
                    continue  # no longer followed at that epoch (became leader, another leader): drop the answer
                code = data["error_code"]
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    await self._out_of_range(key, followed)
                    continue
                if code != ErrorCode.NONE:  # the leader moved, or has not seen this epoch yet: ask again soon
                    errors[ErrorCode(code).name] += 1
                    retry_ms = min(self.config.backoff_ms, PARTITION_RETRY_MS)
                    followed.delayed_until = asyncio.get_running_loop().time() + retry_ms / 1000
                    continue
                try:
                    await self._process_partition(key, followed, data)
                except (LogError, ValueError) as error:  # a bad batch or a storage failure: this partition waits
                    level = log.error if isinstance(error, KafkaStorageError) else log.warning
                    level("replica_fetch_append_failed", topic=key[0], partition=key[1], error=str(error)[:300])
                    followed.delayed_until = asyncio.get_running_loop().time() + self.config.backoff_ms / 1000
        if errors and errors != self._last_errors:  # once per change, not every retry of a lasting refusal
            log.info("replica_fetch_partition_errors", source=self.source, **errors)
        self._last_errors = errors

    async def _process_partition(self, key: TopicPartition, followed: FollowedPartition, data: dict[str, Any]) -> None:
        partition_log = followed.log
        diverging = data.get("diverging_epoch")
        if diverging is not None and (diverging["epoch"] != UNDEFINED or diverging["end_offset"] != UNDEFINED):
            await self._truncate(key, followed, diverging["epoch"], diverging["end_offset"])
            return
        records = data["records"]
        local = partition_log.local
        if records:
            view = memoryview(records)
            first = RecordBatch(view)
            end = local.log_end_offset
            if end == local.log_start_offset and first.base_offset < end <= first.last_offset:
                # the leader's log start is inside its first batch (DeleteRecords): as Kafka's follower, start
                # the empty log at the batch's base offset; the leader's log start follows below
                await local.idle()
                if self.partitions.get(key) is not followed:
                    return
                partition_log.truncate_fully_and_start_at(first.base_offset)
            partition_log.append_as_follower(view)
        local.update_high_watermark(min(data["high_watermark"], local.log_end_offset), only_forward=False)
        leader_start = min(data["log_start_offset"], local.high_watermark)
        if leader_start > local.log_start_offset:  # DeleteRecords or retention on the leader: here too
            local.delete_records(leader_start)

    async def _out_of_range(self, key: TopicPartition, followed: FollowedPartition) -> None:
        """The leader no longer has our log end offset (Kafka's handleOutOfRangeError): when its log start
        passed it, start again empty there; otherwise (not expected with epochs) wait and ask again."""
        partition_log = followed.log
        request = {
            "replica_id": self.config.node_id,
            "isolation_level": 0,
            "topics": [
                {
                    "name": key[0],
                    "partitions": [
                        {"partition_index": key[1], "current_leader_epoch": followed.leader_epoch, "timestamp": -2}
                    ],
                }
            ],
        }
        delay = self.config.backoff_ms / 1000
        try:
            response = await self.channel.call(self.source, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, request, 10.0)
            answer = response["topics"][0]["partitions"][0]
        except (BrokerUnreachableError, TimeoutError, LookupError) as error:
            log.info("replica_log_start_unknown", topic=key[0], partition=key[1], error=str(error)[:200])
            followed.delayed_until = asyncio.get_running_loop().time() + delay
            return
        leader_start = answer["offset"]
        await partition_log.local.idle()  # no flush may be in flight during a truncation
        if self.partitions.get(key) is not followed:
            return
        if answer["error_code"] == ErrorCode.NONE and leader_start > partition_log.log_end_offset:
            before = partition_log.log_end_offset
            partition_log.truncate_fully_and_start_at(leader_start)
            log.info(
                "replica_log_restarted", topic=key[0], partition=key[1], leader=self.source,
                log_end_offset_before=before, log_start_offset=leader_start,
            )  # fmt: skip
            return
        log.info("replica_fetch_out_of_range", topic=key[0], partition=key[1], leader_log_start=leader_start)
        followed.delayed_until = asyncio.get_running_loop().time() + delay

    async def _truncate(self, key: TopicPartition, followed: FollowedPartition, epoch: int, end_offset: int) -> None:
        partition_log = followed.log
        await partition_log.local.idle()  # no flush may be in flight during a truncation
        if self.partitions.get(key) is not followed:
            return
        before = partition_log.log_end_offset
        offset = truncation_offset(epoch, end_offset, partition_log.end_offset_for_epoch, before)
        partition_log.truncate_to(offset)
        log.info(
            "replica_log_truncated",
            topic=key[0],
            partition=key[1],
            leader=self.source,
            diverging_epoch=epoch,
            diverging_end_offset=end_offset,
            log_end_offset_before=before,
            log_end_offset=partition_log.log_end_offset,
        )
