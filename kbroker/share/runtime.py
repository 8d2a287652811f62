"""ShareRuntime: the asyncio shell around share groups' pure parts.

It holds the membership coordinator, the share sessions and one SharePartition per
(group, topic, partition); one timer task calls the coordinator's `tick` and expires
acquisition locks at the next deadline, releases held records whose delivery time came
(delayed delivery), releases what removed members held, and wakes share fetches waiting on
partitions whose records became available again. Dead letters are copied to the group's
dead-letter topic before the state that archives them is written (dead_letters.py).
Everything runs on the event loop thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from kbroker.log import KafkaStorageError
from kbroker.share.coordinator import HeartbeatRequest, HeartbeatResult, ShareCoordinatorConfig, ShareGroupCoordinator
from kbroker.share.dead_letters import DeadLetterTopicMissing, copy_dead_letters
from kbroker.share.partition import SharePartition, SharePartitionConfig
from kbroker.share.sessions import ShareSessions
from kbroker.share.state_records import ShareState, StateKey
from kbroker.share.state_store import ShareStateStore
from kbroker.share.tag_filter import TagFilter, TagFilterError, parse_tag_filter

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.log import PartitionLog

log = structlog.get_logger(__name__)

EARLIEST = "earliest"
LATEST = "latest"
TAG_FILTER = "kbroker.share.tag.filter"
DEAD_LETTER_TOPIC = "errors.deadletterqueue.topic.name"

GroupPartition = tuple[str, str, int]  # (group id, topic, partition)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ShareGroupSettings:
    """A group's share.* settings: the broker's group.share.* defaults unless the group overrides them."""

    partition: SharePartitionConfig
    auto_offset_reset: str = LATEST
    read_committed: bool = False  # share.isolation.level
    dead_letter_topic: str | None = None  # errors.deadletterqueue.topic.name


class ShareRuntime:
    def __init__(
        self,
        broker: Broker,
        coordinator_config: ShareCoordinatorConfig,
        partition_config: SharePartitionConfig,
        *,
        state_partitions: int = 50,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self.broker = broker
        self.store = ShareStateStore(broker.logs, state_partitions)
        self._background: set[asyncio.Task[None]] = set()
        self.clock = clock or broker.clock.wall_ms
        self.partition_config = partition_config
        self.coordinator = ShareGroupCoordinator(coordinator_config, self._partition_count, self._coordinator_config)
        self.sessions = ShareSessions()
        self.partitions: dict[GroupPartition, SharePartition] = {}
        self._dirty: set[GroupPartition] = set()
        self._copying: dict[GroupPartition, asyncio.Event] = {}  # dead letters being copied, per share partition
        self._topic_ids: dict[GroupPartition, bytes | None] = {}  # the topic id each share partition belongs to
        self.active = False
        self._wake = asyncio.Event()
        self._sleeping_until: int | None = None  # the deadline the timer task waits for (None: none)
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ settings

    def settings(self, group_id: str) -> ShareGroupSettings:
        """The group's share.* configs (the GROUP config resource) over the broker's group.share.* defaults."""
        overrides = self.broker.dynamic_configs.group_configs(group_id)
        if not overrides:
            return ShareGroupSettings(self.partition_config)
        base = self.partition_config
        dead_letter_topic = overrides.get(DEAD_LETTER_TOPIC, "").strip() or None
        partition = SharePartitionConfig(
            record_lock_duration_ms=int(overrides.get("share.record.lock.duration.ms", base.record_lock_duration_ms)),
            delivery_count_limit=int(overrides.get("share.delivery.count.limit", base.delivery_count_limit)),
            max_record_locks=int(overrides.get("share.partition.max.record.locks", base.max_record_locks)),
            tag_filter=_tag_filter(group_id, overrides.get(TAG_FILTER, "")),
            dead_letters=dead_letter_topic is not None,
        )
        return ShareGroupSettings(
            partition,
            overrides.get("share.auto.offset.reset", LATEST).strip(),
            overrides.get("share.isolation.level", "read_uncommitted").strip() == "read_committed",
            dead_letter_topic,
        )

    def _coordinator_config(self, group_id: str) -> ShareCoordinatorConfig:
        """The group's share.session.timeout.ms and share.heartbeat.interval.ms over the broker's defaults."""
        base = self.coordinator.config
        overrides = self.broker.dynamic_configs.group_configs(group_id)
        if not overrides:
            return base
        return ShareCoordinatorConfig(
            session_timeout_ms=int(overrides.get("share.session.timeout.ms", base.session_timeout_ms)),
            heartbeat_interval_ms=int(overrides.get("share.heartbeat.interval.ms", base.heartbeat_interval_ms)),
            max_size=base.max_size,
        )

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
        if partition is not None and self._topic_ids.get(key) != self._topic_id(topic):
            partition = None  # the topic was deleted and created again under this name: start afresh
        if partition is None:
            settings = self.settings(group_id)
            self._topic_ids[key] = self._topic_id(topic)
            start = self._reset_offset(partition_log, settings.auto_offset_reset)
            partition = self.partitions[key] = SharePartition(start, settings.partition)
            partition.on_hold = self.notify_lock_added
            self.coordinator.ensure_group(group_id)
            self._dirty.add(key)  # the start offset chosen now must survive a restart
            self._persist_later()
            log.info("share_partition_initialised", group=group_id, topic=topic, partition=index, start_offset=start)
        else:
            partition.config = self.settings(group_id).partition  # group configs apply from the next use on
        partition.move_to_log_start(partition_log.log_start_offset)
        return partition

    @staticmethod
    def _reset_offset(partition_log: PartitionLog, strategy: str) -> int:
        return partition_log.log_start_offset if strategy == EARLIEST else partition_log.high_watermark

    def _topic_id(self, topic: str) -> bytes | None:
        metadata = self.broker.logs.topic(topic)
        return None if metadata is None else metadata.topic_id.bytes

    def forget_deleted_topics(self) -> None:
        """Share partitions of deleted topics go from memory and from the sessions (their persisted records are
        left out of the next rewrite of __share_group_state, and skipped at load: their topic id is unknown)."""
        gone = [key for key in self.partitions if self._topic_ids.get(key) != self._topic_id(key[1])]
        for key in gone:
            del self.partitions[key]
            self._topic_ids.pop(key, None)
        topics = {key[1] for key in gone}
        for session in self.sessions.sessions.values():
            for tp in [tp for tp in session.partitions if tp[0] in topics and self._topic_id(tp[0]) is None]:
                del session.partitions[tp]

    def group_partitions(self, group_id: str) -> dict[tuple[str, int], SharePartition]:
        self.forget_deleted_topics()
        return {(t, i): p for (g, t, i), p in self.partitions.items() if g == group_id}

    def reset_offset(self, group_id: str, topic: str, index: int, start_offset: int) -> bool:
        """AlterShareGroupOffsets on an empty group: start the share partition at `start_offset` (clamped to
        the log); False when the partition does not exist."""
        partition_log = self.broker.logs.get_log(topic, index)
        if partition_log is None:
            return False
        start = min(max(start_offset, partition_log.log_start_offset), partition_log.high_watermark)
        key = (group_id, topic, index)
        partition = self.partitions.get(key)
        if partition is None or self._topic_ids.get(key) != self._topic_id(topic):
            partition = self.partitions[key] = SharePartition(start, self.settings(group_id).partition)
            partition.on_hold = self.notify_lock_added
            self._topic_ids[key] = self._topic_id(topic)
        partition.reset(start)
        self.coordinator.ensure_group(group_id)
        self._dirty.add(key)
        return True

    def delete_offsets(self, group_id: str, topic: str) -> bool:
        """DeleteShareGroupOffsets: forget the group's state for `topic`; False when it had none."""
        keys = [key for key in self.partitions if key[0] == group_id and key[1] == topic]
        for key in keys:
            del self.partitions[key]
            self._topic_ids.pop(key, None)
            self._dirty.add(key)
        return bool(keys)

    def delete_group(self, group_id: str) -> None:
        """An empty share group and all its share-partition state go (DeleteGroups)."""
        for key in [key for key in self.partitions if key[0] == group_id]:
            del self.partitions[key]
            self._topic_ids.pop(key, None)
            self._dirty.add(key)
        self.coordinator.groups.pop(group_id, None)

    def release_member(self, group_id: str, member_id: str, keys: list[tuple[str, int]] | None = None) -> int:
        """Release what `member_id` holds (in `keys`, or in every partition of the group); wakes share fetches."""
        released = 0
        for (group, topic, index), partition in self.partitions.items():
            if group == group_id and (keys is None or (topic, index) in keys):
                count = partition.release_member(member_id)
                if count:
                    released += count
                    self._dirty.add((group, topic, index))
                    self._wake_fetches(topic, index)
        return released

    def after_acknowledge(self, group_id: str, topic: str, index: int) -> None:
        """Acknowledgements were applied: waiting share fetches may acquire what was released."""
        partition = self.partitions.get((group_id, topic, index))
        self._dirty.add((group_id, topic, index))
        if partition is not None and partition.has_available:
            self._wake_fetches(topic, index)

    async def persist(self, group_id: str | None = None) -> None:
        """Write the changed share partitions of `group_id` (None: of every group) to __share_group_state and
        wait until that is durable: acknowledgements are answered only then. Raises KafkaStorageError."""
        keys = [key for key in self._dirty if group_id is None or key[0] == group_id]
        if not keys:
            return
        await self._copy_dead_letters(keys)  # before the state that archives them: at least once
        self._dirty.difference_update(keys)
        states: dict[StateKey, ShareState | None] = {}
        for group, topic, index in keys:
            metadata = self.broker.logs.topic(topic)
            partition = self.partitions.get((group, topic, index))
            if metadata is None:
                continue
            key = StateKey(group, metadata.topic_id.bytes, index)
            states[key] = (
                None if partition is None else ShareState(partition.start_offset, tuple(partition.state_batches()))
            )
        try:
            await self.store.write(states)
        except BaseException:
            self._dirty.update(keys)  # written again with the next change
            raise

    async def _copy_dead_letters(self, keys: list[GroupPartition]) -> None:
        """Copy the dead letters of these share partitions to their groups' dead-letter topics, durably; a copy
        under way for one of them (another persist) is waited for, so no state archiving a record is written
        before its copy. On a storage failure the letters are kept for the next write, which is refused until
        they are copied."""
        for key in keys:
            while (running := self._copying.get(key)) is not None:
                await running.wait()
        for key in keys:
            partition = self.partitions.get(key)
            if partition is None or not partition.dead_letters:
                continue
            letters, partition.dead_letters = partition.dead_letters, []
            group, topic, index = key
            target = self.settings(group).dead_letter_topic
            if target is None:
                continue  # the group's dead-letter topic was unset meanwhile
            done = self._copying[key] = asyncio.Event()
            try:
                copied = await copy_dead_letters(self.broker, group, topic, index, letters, target, self.clock())
                log.info(
                    "share_dead_letters_copied", group=group, topic=topic, partition=index, to=target, records=copied
                )
            except DeadLetterTopicMissing:
                log.warning(
                    "share_dead_letters_dropped",
                    group=group,
                    topic=topic,
                    partition=index,
                    records=len(letters),
                    reason=f"{target} does not exist and auto.create.topics.enable is false",
                )
            except Exception as error:
                partition.dead_letters[:0] = letters
                self._dirty.add(key)
                raise KafkaStorageError(f"copying dead letters to {target} failed: {error}") from error
            finally:
                del self._copying[key]
                done.set()

    def load(self) -> None:
        """Rebuild every share partition from __share_group_state (before the listener opens)."""
        began = time.monotonic()
        names = {metadata.topic_id.bytes: name for name, metadata in self.broker.logs.topics().items()}
        loaded = 0
        for key, state in self.store.load().items():
            topic = names.get(key.topic_id)
            if topic is None or self.broker.logs.get_log(topic, key.partition) is None:
                continue  # the topic was deleted
            config = self.settings(key.group_id).partition
            self.partitions[(key.group_id, topic, key.partition)] = SharePartition.restore(
                state.start_offset, list(state.batches), config
            )
            self.partitions[(key.group_id, topic, key.partition)].on_hold = self.notify_lock_added
            self._topic_ids[(key.group_id, topic, key.partition)] = key.topic_id
            if self.partitions[(key.group_id, topic, key.partition)].dead_letters:
                self._dirty.add((key.group_id, topic, key.partition))  # archived at the limit while restoring
            self.coordinator.ensure_group(key.group_id)
            loaded += 1
        log.info(
            "share_state_loaded",
            share_partitions=loaded,
            groups=len(self.coordinator.groups),
            duration_ms=round((time.monotonic() - began) * 1000, 1),
        )

    def _persist_later(self) -> None:
        """Expired locks and released records are written in the background (nothing waits for them)."""
        if not self._dirty:
            return
        task = asyncio.get_running_loop().create_task(self._persist_quietly())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _persist_quietly(self) -> None:
        try:
            await self.persist()
            for partition in self.store.partitions_to_rewrite():
                live = {
                    StateKey(g, meta.topic_id.bytes, i): ShareState(p.start_offset, tuple(p.state_batches()))
                    for (g, t, i), p in self.partitions.items()
                    if (meta := self.broker.logs.topic(t)) is not None
                }
                await self.store.rewrite(partition, live)
        except Exception as error:  # noqa: BLE001 - retried with the next change
            log.error("share_state_write_failed", error=str(error))

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
        self.forget_deleted_topics()
        self.coordinator.tick(now)
        for (group, topic, index), partition in self.partitions.items():
            deadline = partition.next_deadline()
            if deadline is None or deadline > now:
                continue
            if partition.expire_locks(now):
                self._dirty.add((group, topic, index))
                self._wake_fetches(topic, index)
            if partition.release_due(now):  # (also drops stale entries: their deadlines would come back)
                self._wake_fetches(topic, index)
        self._evict_idle_sessions(now)
        self._after_change()
        self._persist_later()

    def _evict_idle_sessions(self, now: int) -> None:
        """A session of a member the group does not know (it never joined, or was removed) goes once it has been
        idle for a session timeout; what it held is released."""
        timeout = self.coordinator.config.session_timeout_ms
        for session in self.sessions.idle(now - timeout):
            if not self.coordinator.is_member(session.group_id, session.member_id):
                self.sessions.close(session.group_id, session.member_id)
                self.release_member(session.group_id, session.member_id, list(session.partitions))

    def next_deadline(self) -> int | None:
        deadlines = [d for d in (p.next_deadline() for p in self.partitions.values()) if d is not None]
        member = self.coordinator.next_deadline()
        if member is not None:
            deadlines.append(member)
        if self.sessions.sessions:  # idle sessions are looked at once per session timeout at least
            deadlines.append(self.clock() + self.coordinator.config.session_timeout_ms)
        return min(deadlines) if deadlines else None

    def notify_lock_added(self, deadline: int | None) -> None:
        """New acquisition locks or held records until `deadline` (share partitions call it for the records they
        hold, whoever acquires: ShareFetch or the HTTP gateway): the timer is woken only if it sleeps past it
        (most acquisitions lock until later than an earlier one, so a busy ShareFetch path rarely wakes it)."""
        if deadline is not None and (self._sleeping_until is None or deadline < self._sleeping_until):
            self._wake.set()

    async def _run_timers(self) -> None:
        while True:
            self._wake.clear()
            deadline = self._sleeping_until = self.next_deadline()
            timeout = None if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            await self.broker.clock.wait(self._wake, timeout)
            try:
                self.tick()
            except Exception:  # a bug here must not stop the timers
                log.exception("share_timer_failed")

    def start(self) -> None:
        self.active = True
        self._task = asyncio.get_running_loop().create_task(self._run_timers(), name="share-group-timers")
        self._persist_later()  # dead letters found while loading

    async def stop(self) -> None:
        self.active = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await asyncio.gather(*self._background, return_exceptions=True)
        try:
            await self.persist()
        except Exception as error:  # noqa: BLE001 - a restart redelivers what was not written
            log.error("share_state_write_failed", error=str(error))


def _tag_filter(group_id: str, text: str) -> TagFilter | None:
    try:
        return parse_tag_filter(text.strip())
    except TagFilterError as error:  # refused when altered; a bad stored value delivers nothing rather than all
        log.warning("share_tag_filter_invalid", group=group_id, error=str(error))
        return _NOTHING


_NOTHING = TagFilter("", ("&&", "a", ("!", "a")))  # matches no record
