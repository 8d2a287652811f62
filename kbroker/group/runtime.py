"""GroupRuntime: the asyncio shell around the pure coordinator and the offsets store.

It turns deferred JoinGroup/SyncGroup answers into futures, runs one timer task
that calls `tick()` at the coordinator's next deadline, writes group records and
offset commits to __consumer_offsets, expires offsets and snapshots the log.
Everything runs on the event loop thread; the coordinator is never awaited inside.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import structlog

from kbroker.clock import REAL_CLOCK, Clock
from kbroker.group import consumer_records, records
from kbroker.group.assignors import ASSIGNORS
from kbroker.group.classic_members import ClassicMembers
from kbroker.group.config import GroupConfig
from kbroker.group.consumer_coordinator import (
    ConsumerCoordinatorConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
    ConsumerHeartbeat,
    ConsumerHeartbeatResult,
)
from kbroker.group.consumer_group import ConsumerGroup
from kbroker.group.coordinator import GroupCoordinator, JoinRequest, JoinResult, SyncRequest, SyncResult
from kbroker.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup, CommittedOffset, TopicPartition
from kbroker.group.migration import MigrationPolicy
from kbroker.group.offsets import GroupOffsets
from kbroker.group.store import NO_MARKER, NO_PRODUCER_ID, Entry, OffsetsStore
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import LogError, RecordTooLargeError
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kbroker.log import LogManager

log = structlog.get_logger(__name__)

COMMIT_MARKER = 1  # ControlRecordType.COMMIT


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class GroupRuntime:
    def __init__(
        self,
        config: GroupConfig,
        logs: LogManager,
        *,
        clock: Callable[[], int] = wall_clock_ms,
        snapshot_min_bytes: int | None = None,
        consumer_settings: Callable[[str], ConsumerGroupSettings] | None = None,
        timers: Clock = REAL_CLOCK,  # what the timer tasks wait on (a test's virtual clock)
    ) -> None:
        self.config = config
        self.clock = clock
        self.timers = timers
        self.groups: dict[str, ClassicGroup] = {}
        self.coordinator = GroupCoordinator(config, clock, self.groups)
        self.offsets = GroupOffsets(config, clock, self.groups)
        assignors = tuple(name for name in config.consumer_assignors if name in ASSIGNORS)
        if assignors != config.consumer_assignors:
            log.warning("group_consumer_assignors_unknown", configured=config.consumer_assignors, used=assignors)
        defaults = ConsumerGroupSettings(config.consumer_session_timeout_ms, config.consumer_heartbeat_interval_ms)
        self.migration_policy = MigrationPolicy.parse(config.consumer_migration_policy)
        self.consumers = ConsumerGroupCoordinator(
            ConsumerCoordinatorConfig(
                assignors or ("uniform",), config.consumer_max_size, defaults, self.migration_policy, config.max_size
            ),
            clock,
            self.groups,
            self._topic_partitions,
            consumer_settings,
        )
        self.classic_members = ClassicMembers(self.consumers)  # classic requests to consumer groups
        self._consumer_persisted: set[str] = set()  # groups with a consumer-group record in the log
        extra = {} if snapshot_min_bytes is None else {"snapshot_min_bytes": snapshot_min_bytes}
        self.store = OffsetsStore(logs, config.offsets_topic_partitions, **extra)
        self.active = False
        # cluster mode: the cluster's topics and partition counts (a broker holds logs only of its replicas)
        self.topic_catalog: Callable[[], Mapping[str, int]] | None = None
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        # TxnOffsetCommit: producer id -> group id -> offsets written but not yet decided by a marker
        self.pending_txn_offsets: dict[int, dict[str, dict[TopicPartition, CommittedOffset]]] = {}

    # -- lifecycle ---------------------------------------------------------------
    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NOT_COORDINATOR for a group whose __consumer_offsets partition this broker does not lead."""
        owned = self.store.owned  # cluster mode: the partitions led here; None: a broker alone has every group
        if owned is None or self.store.partition_for(group_id) in owned:
            return ErrorCode.NONE
        return ErrorCode.NOT_COORDINATOR

    def load(self, partitions: Iterable[int] | None = None) -> None:
        """Replay __consumer_offsets (the given partitions; all of them by default) into memory, before
        serving their groups. In cluster mode the partitions then count as this broker's."""
        started = time.perf_counter()
        partitions = None if partitions is None else set(partitions)
        loaded = skipped = 0
        replayed = list(self.store.replay(partitions))
        # A plain record followed later by another plain record of the same key changes nothing
        # (our writers tombstone every offset before a group's own tombstone), so only each key's
        # last plain record is parsed and applied, in log order; transactional ones all are.
        last = {r.key: i for i, r in enumerate(replayed) if r.marker == NO_MARKER and r.producer_id == NO_PRODUCER_ID}
        for i, (partition, key, value, producer_id, marker) in enumerate(replayed):
            if marker == NO_MARKER and producer_id == NO_PRODUCER_ID and last[key] != i:
                continue
            try:
                if marker != NO_MARKER:
                    self.complete_txn(producer_id, partition, marker == COMMIT_MARKER)
                elif producer_id != NO_PRODUCER_ID:
                    self._load_txn_record(producer_id, key, value)
                else:
                    self._load_record(key, value)
                loaded += 1
            except (records.RecordFormatError, UnicodeDecodeError) as error:
                skipped += 1
                log.warning("offsets_record_skipped", partition=partition, error=str(error))
        if partitions is None:
            self.consumers.restart_timers()
        else:  # the groups of these partitions only: the others' members keep their deadlines
            self.consumers.restart_timers(g for g in self.groups if self.store.partition_for(g) in partitions)
        if partitions is not None and self.store.owned is not None:
            self.store.owned.update(partitions)
        log.info(
            "group_coordinator_loaded",
            partitions="all" if partitions is None else sorted(partitions),
            groups=len(self.groups),
            consumer_groups=len(self._consumer_persisted),
            records=len(replayed),
            applied=loaded,
            skipped=skipped,
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    def unload(self, partitions: Iterable[int]) -> None:
        """Leadership of these __consumer_offsets partitions moved to another broker: their groups leave
        memory (waiting JoinGroup/SyncGroup answers get NOT_COORDINATOR, pending transactional offsets go:
        the new coordinator replays them with their markers)."""
        lost = set(partitions)
        if self.store.owned is not None:
            self.store.owned -= lost
        gone = [g for g in self.groups if self.store.partition_for(g) in lost]
        self.coordinator.unload(gone)
        for group_id in gone:
            del self.groups[group_id]
            self._consumer_persisted.discard(group_id)
            self.coordinator.dirty.discard(group_id)
            self.consumers.dirty.discard(group_id)
        for producer_id, by_group in list(self.pending_txn_offsets.items()):
            for group_id in [g for g in by_group if self.store.partition_for(g) in lost]:
                del by_group[group_id]
            if not by_group:
                del self.pending_txn_offsets[producer_id]
        self._dispatch()
        log.info("group_coordinator_unloaded", partitions=sorted(lost), groups=len(gone))

    def _load_record(self, key: bytes, value: bytes | None) -> None:
        parsed = records.parse_key(key)
        if isinstance(parsed, records.OffsetKey):
            committed = None if value is None else records.parse_offset_value(value)
            self.offsets.load_offset(parsed.group_id, parsed.tp, committed)
        elif isinstance(parsed, records.ConsumerGroupKey):
            self._load_consumer_group(parsed.group_id, value)
        else:
            group = None if value is None else records.parse_group_value(value)
            self.offsets.load_group(parsed.group_id, group)

    def _load_consumer_group(self, group_id: str, value: bytes | None) -> None:
        holder = self.groups.get(group_id)
        if value is None:
            self._consumer_persisted.discard(group_id)
            if holder is not None:
                holder.consumer = None
            return
        try:
            consumer = consumer_records.parse_consumer_group_value(group_id, value)
        except (ValueError, KeyError, TypeError) as error:
            raise records.RecordFormatError(f"consumer group {group_id!r}: {error}") from error
        if holder is None:
            holder = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=self.clock())
        holder.consumer = consumer
        holder.protocol_type = CONSUMER_PROTOCOL_TYPE
        self._consumer_persisted.add(group_id)

    def _topic_partitions(self) -> dict[str, int]:
        """Topics a consumer group may subscribe to (internal ones excluded) and their partition counts."""
        if self.topic_catalog is not None:
            return {name: count for name, count in self.topic_catalog().items() if name not in INTERNAL_TOPICS}
        return {name: meta.partitions for name, meta in self.store.logs.topics().items() if name not in INTERNAL_TOPICS}

    def _load_txn_record(self, producer_id: int, key: bytes, value: bytes | None) -> None:
        parsed = records.parse_key(key)
        if isinstance(parsed, records.OffsetKey) and value is not None:
            self._add_pending(producer_id, parsed.group_id, {parsed.tp: records.parse_offset_value(value)})

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.active = True
        self._tasks = [
            loop.create_task(self._run_timers(), name="group-timers"),
            loop.create_task(self._run_expiry(), name="offsets-expiry"),
        ]

    async def stop(self) -> None:
        """Answer every waiting JoinGroup/SyncGroup with NOT_COORDINATOR and stop the timers."""
        self.active = False
        self.coordinator.unload()
        self._dispatch()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._background, return_exceptions=True)
        log.info("group_coordinator_stopped", groups=len(self.groups))

    # -- membership ------------------------------------------------------------------
    def _live_consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The group's consumer group when it has members: classic requests then go to it (migration)."""
        holder = self.groups.get(group_id)
        if holder is None or holder.consumer is None or not holder.consumer.members:
            return None
        return holder.consumer

    async def join(self, request: JoinRequest) -> JoinResult:
        consumer = self._live_consumer_group(request.group_id)
        if consumer is not None:
            error = self.coordinator.validate_join(request)
            if error is not ErrorCode.NONE:
                return JoinResult(error, request.member_id)
            result = self.classic_members.join(consumer, request)
            self._dispatch()
            return result
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self.coordinator.join(future, request)
        self._dispatch()
        return await future

    async def sync(self, request: SyncRequest) -> SyncResult:
        consumer = self._live_consumer_group(request.group_id)
        if consumer is not None:
            return self.classic_members.sync(consumer, request)
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self.coordinator.sync(future, request)
        self._dispatch()
        return await future

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        # A heartbeat only postpones deadlines and answers no one else: the timer need not wake
        # (the most frequent request of a group stays O(1)).
        consumer = self._live_consumer_group(group_id)
        if consumer is not None:
            error = self.classic_members.heartbeat(consumer, member_id, instance_id, generation_id)
            if error is ErrorCode.REBALANCE_IN_PROGRESS:
                self._wake.set()  # the member now has a rejoin deadline
            return error
        return self.coordinator.heartbeat(group_id, member_id, instance_id, generation_id)

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        consumer = self._live_consumer_group(group_id)
        if consumer is not None:
            errors = self.classic_members.leave(consumer, leaving)
            self._dispatch()
            return ErrorCode.NONE, errors
        result = self.coordinator.leave(group_id, leaving)
        self._dispatch()
        return result

    def consumer_heartbeat(self, request: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat: answered at once; a changed group is written to the log first."""
        result = self.consumers.heartbeat(request)
        self._dispatch()
        return result

    def _dispatch(self) -> None:
        """Move groups between the protocols, deliver the coordinators' answers, persist changed group
        records, re-arm the timer."""
        self._downgrade()
        replies, self.consumers.replies = [*self.coordinator.take_replies(), *self.consumers.replies], []
        for token, result in replies:
            if isinstance(token, asyncio.Future) and not token.done():
                token.set_result(result)
        dirty, self.coordinator.dirty = self.coordinator.dirty, set()
        for group_id in dirty:
            record = self.offsets.group_record(group_id)
            if record is not None:
                self._append_quietly(group_id, [(records.group_key(group_id), records.group_value(record))])
        fenced, self.consumers.fenced = self.consumers.fenced, []
        if fenced:
            log.info("consumer_group_members_fenced", members=[f"{g}/{m}: {why}" for g, m, why in fenced[:20]])
        consumer_dirty, self.consumers.dirty = self.consumers.dirty, set()
        for group_id in consumer_dirty | dirty:
            entry = self._consumer_entry(group_id)
            if entry is not None:
                self._append_quietly(group_id, [entry])
        self._wake.set()

    def _downgrade(self) -> None:
        """Groups that became classic groups again (their last consumer-protocol member left) rebalance."""
        upgraded, self.consumers.upgraded = self.consumers.upgraded, []
        for group_id, members in upgraded:
            log.info("group_upgraded_to_consumer", group=group_id, classic_members=members)
        downgraded, self.consumers.downgraded = self.consumers.downgraded, set()
        for group_id in downgraded:
            holder = self.groups.get(group_id)
            if holder is not None and holder.consumer is None:
                log.info("group_downgraded_to_classic", group=group_id, members=len(holder.members))
                self.coordinator.rebalance(holder, "the last member with the consumer protocol left")

    def _consumer_entry(self, group_id: str) -> Entry | None:
        """The group's consumer-group record, a tombstone if it no longer is one, None if nothing to write."""
        holder = self.groups.get(group_id)
        key = consumer_records.consumer_group_key(group_id)
        if holder is not None and holder.consumer is not None:
            self._consumer_persisted.add(group_id)
            return key, consumer_records.consumer_group_value(holder.consumer)
        if group_id in self._consumer_persisted:
            self._consumer_persisted.discard(group_id)
            return key, None
        return None

    # -- offsets -----------------------------------------------------------------------
    async def commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, CommittedOffset],
        api_version: int = 9,
    ) -> ErrorCode:
        """Validate, append to __consumer_offsets, apply in memory, and return once durable."""
        error = self.offsets.validate_commit(group_id, generation_id, member_id, instance_id, api_version=api_version)
        if error is not ErrorCode.NONE or not offsets:
            return error
        entries = [(records.offset_key(group_id, tp), records.offset_value(c)) for tp, c in offsets.items()]
        try:
            partition_log, info = self.store.append(group_id, entries)
        except RecordTooLargeError:
            return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        except LogError as failure:
            log.error("offset_commit_write_failed", group=group_id, error=str(failure))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self.offsets.apply_commit(group_id, offsets)
        self._maybe_snapshot(group_id)
        try:
            await self.store.wait_durable(partition_log, info)
        except LogError as failure:
            log.error("offset_commit_flush_failed", group=group_id, error=str(failure))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    def fetch(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        return self.offsets.fetch(group_id, partitions)

    # -- transactional offsets (TxnOffsetCommit, then a marker from the transaction coordinator) --------
    async def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, CommittedOffset],
    ) -> ErrorCode:
        """Write offsets as a transactional batch of the producer; they stay pending until its marker."""
        error = self.offsets.validate_commit(group_id, generation_id, member_id, instance_id, transactional=True)
        if error is not ErrorCode.NONE or not offsets:
            return error
        entries = [(records.offset_key(group_id, tp), records.offset_value(c)) for tp, c in offsets.items()]
        try:
            partition_log, info = self.store.append(
                group_id, entries, producer_id=producer_id, producer_epoch=producer_epoch
            )
        except RecordTooLargeError:
            return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        except LogError as failure:
            log.error("txn_offset_commit_write_failed", group=group_id, error=str(failure))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        self._add_pending(producer_id, group_id, offsets)
        try:
            await self.store.wait_durable(partition_log, info)
        except LogError as failure:
            log.error("txn_offset_commit_flush_failed", group=group_id, error=str(failure))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    def _add_pending(self, producer_id: int, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def complete_txn(self, producer_id: int, partition: int, commit: bool) -> int:
        """A marker of `producer_id` in __consumer_offsets-`partition`: publish (commit) or drop (abort)
        the producer's pending offsets of the groups stored there; returns how many offsets."""
        by_group = self.pending_txn_offsets.get(producer_id)
        if not by_group:
            return 0
        count = 0
        for group_id in [g for g in by_group if self.store.partition_for(g) == partition]:
            offsets = by_group.pop(group_id)
            count += len(offsets)
            if commit:
                self.offsets.apply_commit(group_id, offsets)
        if not by_group:
            del self.pending_txn_offsets[producer_id]
        return count

    def on_txn_marker(self, producer_id: int, partition: int, commit: bool) -> None:
        """A marker was just written (live, not replay): complete_txn, then snapshot the partition if due."""
        groups = [g for g in self.pending_txn_offsets.get(producer_id, {}) if self.store.partition_for(g) == partition]
        if self.complete_txn(producer_id, partition, commit) and groups:
            self._maybe_snapshot(groups[0])

    def has_pending_txn_offset(self, group_id: str, tp: TopicPartition | None = None) -> bool:
        """Whether an open transaction holds offsets of the group (of `tp`, if given): OffsetFetch RequireStable."""
        for by_group in self.pending_txn_offsets.values():
            offsets = by_group.get(group_id)
            if offsets and (tp is None or tp in offsets):
                return True
        return False

    def _has_pending_in(self, partition: int) -> bool:
        return any(
            self.store.partition_for(group_id) == partition
            for by_group in self.pending_txn_offsets.values()
            for group_id in by_group
        )

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        writes: dict[str, Awaitable[ErrorCode]] = {}
        for group_id in group_ids:
            error, group = self.offsets.delete_group(group_id)
            results[group_id] = error
            if group is not None:
                entries: list[Entry] = [(records.offset_key(group_id, tp), None) for tp in group.offsets]
                entries.append((records.group_key(group_id), None))
                consumer = self._consumer_entry(group_id)
                if consumer is not None:
                    entries.append(consumer)
                writes[group_id] = self._append_tombstones(group_id, entries)
                log.info("group_deleted", group=group_id, offsets=len(group.offsets))
        for group_id, outcome in zip(writes, await asyncio.gather(*writes.values()), strict=True):
            results[group_id] = outcome
        return results

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        error, errors = self.offsets.delete_offsets(group_id, partitions)
        deleted = [tp for tp, e in errors.items() if e is ErrorCode.NONE]
        if deleted:
            outcome = await self._append_tombstones(
                group_id, [(records.offset_key(group_id, tp), None) for tp in deleted]
            )
            if outcome is not ErrorCode.NONE:
                return outcome, {}
        return error, errors

    async def _append_tombstones(self, group_id: str, entries: list[Entry]) -> ErrorCode:
        try:
            partition_log, info = self.store.append(group_id, entries)
            await self.store.wait_durable(partition_log, info)
        except LogError as failure:
            log.error("offsets_tombstone_write_failed", group=group_id, error=str(failure))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    def _append_quietly(self, group_id: str, entries: list[Entry]) -> None:
        """Group records and expiry tombstones: no client waits for them; a failure is logged."""
        try:
            self.store.append(group_id, entries)
        except LogError as failure:
            log.error("group_record_write_failed", group=group_id, error=str(failure))
            return
        self._maybe_snapshot(group_id)

    # -- expiry and snapshots ------------------------------------------------------------
    def expire_offsets(self) -> int:
        """One expiry pass (also dropping offsets of deleted topics); returns how many offsets went."""
        catalog = self.topic_catalog
        if catalog is not None:
            topics = catalog()
            expired, dead = self.offsets.expire(lambda topic: topic in topics)
        else:
            expired, dead = self.offsets.expire(lambda topic: self.store.logs.topic(topic) is not None)
        by_group: dict[str, list[Entry]] = {}
        for group_id, tp in expired:
            by_group.setdefault(group_id, []).append((records.offset_key(group_id, tp), None))
        for group in dead:
            by_group.setdefault(group.group_id, []).append((records.group_key(group.group_id), None))
            consumer = self._consumer_entry(group.group_id)
            if consumer is not None:
                by_group[group.group_id].append(consumer)
        for group_id, entries in by_group.items():
            self._append_quietly(group_id, entries)
        if expired or dead:
            log.info("offsets_expired", offsets=len(expired), groups_removed=len(dead))
        return len(expired)

    def _maybe_snapshot(self, group_id: str) -> None:
        partition = self.store.partition_for(group_id)
        if not self.store.needs_snapshot(partition) or self._has_pending_in(partition):
            return  # a snapshot would drop the pending transactional records: wait for their markers
        task = asyncio.get_running_loop().create_task(self.store.snapshot(partition, self.live_entries(partition)))
        self._background.add(task)
        task.add_done_callback(self._snapshot_done)

    def _snapshot_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("offsets_snapshot_failed", error=str(task.exception()))

    def live_entries(self, partition: int) -> list[Entry]:
        """Every current record of the groups stored in `partition`."""
        entries: list[Entry] = []
        for group_id, group in self.groups.items():
            if self.store.partition_for(group_id) != partition:
                continue
            record = self.offsets.group_record(group_id)
            if record is not None:
                entries.append((records.group_key(group_id), records.group_value(record)))
            if group.consumer is not None:
                key = consumer_records.consumer_group_key(group_id)
                entries.append((key, consumer_records.consumer_group_value(group.consumer)))
            entries += [(records.offset_key(group_id, tp), records.offset_value(c)) for tp, c in group.offsets.items()]
        return entries

    # -- tasks -------------------------------------------------------------------------
    async def _run_timers(self) -> None:
        """Tick at the coordinator's next deadline, or sooner when an event re-arms the timer.

        (A timer handle sets the wake event: asyncio.wait_for could swallow the cancellation
        at shutdown when the event is set at the same moment, bpo-42130.)
        """
        while self.active:
            self._wake.clear()
            deadlines = [d for d in (self.coordinator.next_deadline(), self.consumers.next_deadline()) if d is not None]
            deadline = min(deadlines, default=None)
            await self.timers.wait(
                self._wake, None if deadline is None else max(0.005, (deadline - self.clock()) / 1000)
            )
            try:
                self.coordinator.tick()
                self.consumers.tick()
            except Exception:  # noqa: BLE001 - a bug in one tick must not stop every group's timers
                log.exception("group_timer_failed")
            self._dispatch()

    async def _run_expiry(self) -> None:
        while True:
            await self.timers.sleep(self.config.offsets_retention_check_interval_ms / 1000)
            try:
                self.expire_offsets()
            except Exception:  # noqa: BLE001
                log.exception("offsets_expiry_failed")
