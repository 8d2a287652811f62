"""ShareRuntime: the asyncio shell around share groups' pure parts.

It holds the membership coordinator, the share sessions and one SharePartition per
(group, topic, partition); one timer task calls the coordinator's `tick` and expires
acquisition locks at the next deadline, releases what removed members held, and wakes
share fetches waiting on partitions whose records became available again.
Everything runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from kbroker.share.coordinator import HeartbeatRequest, HeartbeatResult, ShareCoordinatorConfig, ShareGroupCoordinator
from kbroker.share.partition import SharePartition, SharePartitionConfig
from kbroker.share.sessions import ShareSessions

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.log import PartitionLog

log = structlog.get_logger(__name__)

EARLIEST = "earliest"
LATEST = "latest"

GroupPartition = tuple[str, str, int]  # (group id, topic, partition)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ShareGroupSettings:
    """A group's share.* settings: the broker's group.share.* defaults unless the group overrides them."""

    partition: SharePartitionConfig
    auto_offset_reset: str = LATEST


class ShareRuntime:
    def __init__(
        self,
        broker: Broker,
        coordinator_config: ShareCoordinatorConfig,
        partition_config: SharePartitionConfig,
        *,
        clock: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.broker = broker
        self.clock = clock
        self.partition_config = partition_config
        self.coordinator = ShareGroupCoordinator(coordinator_config, self._partition_count)
        self.sessions = ShareSessions()
        self.partitions: dict[GroupPartition, SharePartition] = {}
        self._dirty: set[GroupPartition] = set()
        self.active = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ settings

    def settings(self, group_id: str) -> ShareGroupSettings:
        return ShareGroupSettings(self.partition_config)

    def _partition_count(self, topic: str) -> int:
        metadata = self.broker.logs.topic(topic)
        return 0 if metadata is None else metadata.partitions

    # ------------------------------------------------------------------ membership

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        result = self.coordinator.heartbeat(request, self.clock())
        if result.assignment:
            for topic, partitions in result.assignment.items():
                for index in partitions:
                    self.share_partition(request.group_id, topic, index)
        self._after_change()
        return result

    # ------------------------------------------------------------------ share partitions

    def share_partition(self, group_id: str, topic: str, index: int) -> SharePartition | None:
        """The share partition, initialised from `share.auto.offset.reset` on first use; None without a log."""
        partition_log = self.broker.logs.get_log(topic, index)
        if partition_log is None:
            return None
        key = (group_id, topic, index)
        partition = self.partitions.get(key)
        if partition is None:
            settings = self.settings(group_id)
            start = self._reset_offset(partition_log, settings.auto_offset_reset)
            partition = self.partitions[key] = SharePartition(start, settings.partition)
            self.coordinator.ensure_group(group_id)
            log.info("share_partition_initialised", group=group_id, topic=topic, partition=index, start_offset=start)
        partition.move_to_log_start(partition_log.log_start_offset)
        return partition

    @staticmethod
    def _reset_offset(partition_log: PartitionLog, strategy: str) -> int:
        return partition_log.log_start_offset if strategy == EARLIEST else partition_log.high_watermark

    def release_member(self, group_id: str, member_id: str, keys: list[tuple[str, int]] | None = None) -> int:
        """Release what `member_id` holds (in `keys`, or in every partition of the group); wakes share fetches."""
        released = 0
        for (group, topic, index), partition in self.partitions.items():
            if group == group_id and (keys is None or (topic, index) in keys):
                count = partition.release_member(member_id)
                if count:
                    released += count
                    self._wake_fetches(topic, index)
        return released

    def after_acknowledge(self, group_id: str, topic: str, index: int) -> None:
        """Acknowledgements were applied: waiting share fetches may acquire what was released."""
        partition = self.partitions.get((group_id, topic, index))
        self._dirty.add((group_id, topic, index))
        if partition is not None and partition.has_available:
            self._wake_fetches(topic, index)

    async def persist(self, group_id: str) -> None:
        """Make the group's changed share-partition state durable before acknowledgements are answered."""
        self._dirty = {key for key in self._dirty if key[0] != group_id}

    def _wake_fetches(self, topic: str, index: int) -> None:
        self.broker.fetch_waiters.wake((topic, index))

    # ------------------------------------------------------------------ timers

    def _after_change(self) -> None:
        for group_id, member_id in self.coordinator.take_removed():
            released = self.release_member(group_id, member_id)
            self.sessions.close(group_id, member_id)
            log.info("share_member_removed", group=group_id, member=member_id, released=released)
        self._wake.set()

    def tick(self) -> None:
        now = self.clock()
        self.coordinator.tick(now)
        for (_, topic, index), partition in self.partitions.items():
            deadline = partition.next_deadline()
            if deadline is not None and deadline <= now and partition.expire_locks(now):
                self._wake_fetches(topic, index)
        self._after_change()

    def next_deadline(self) -> int | None:
        deadlines = [d for d in (p.next_deadline() for p in self.partitions.values()) if d is not None]
        member = self.coordinator.next_deadline()
        if member is not None:
            deadlines.append(member)
        return min(deadlines) if deadlines else None

    def notify_lock_added(self) -> None:
        """New acquisition locks: the timer may need to fire earlier."""
        self._wake.set()

    async def _run_timers(self) -> None:
        while True:
            self._wake.clear()
            deadline = self.next_deadline()
            timeout = None if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass
            try:
                self.tick()
            except Exception:  # a bug here must not stop the timers
                log.exception("share_timer_failed")

    def start(self) -> None:
        self.active = True
        self._task = asyncio.get_running_loop().create_task(self._run_timers(), name="share-group-timers")

    async def stop(self) -> None:
        self.active = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
