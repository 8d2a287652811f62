"""Replication in cluster mode (Kafka's ReplicaManager, in ZooKeeper mode's shape), the asyncio half around
the pure kbroker.cluster.replica_state and kbroker.cluster.fetcher decisions.

After each metadata refresh (a ClusterRuntime metadata listener), for every partition with more than one
replica that this broker holds:
- the log's high watermark is held apart from its log end offset (`start_replication`, from the
  replication-offset-checkpoint);
- leader: the new leader epoch starts at the log end offset in the epoch cache, and a LeaderState tracks the
  followers' fetches (Fetch with a replica id: `follower_fetch`), moves the high watermark, and proposes ISR
  shrinks (a periodic check, every replica.lag.time.max.ms / 2) and expansions, written as a compare-and-set
  on the partition's state znode (a lost race re-reads: another leader epoch means this broker no longer
  leads, the same epoch takes the ISR found);
- follower: the partition is fetched by the ReplicaFetcher of its leader's broker.
acks=all (Kafka's DelayedProduce): `wait_for_replication` returns once the high watermark covers the write,
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR was smaller than min.insync.replicas by then,
REQUEST_TIMED_OUT after the request's timeout, NOT_LEADER_OR_FOLLOWER when leadership moved.
Consumers' long polls wake when the high watermark moves (appends above it show them nothing).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING

import structlog
from kazoo.exceptions import KazooException

from kbroker.cluster.channel import BrokerChannel
from kbroker.cluster.channel_security import ChannelSecurity
from kbroker.cluster.controller import InvalidIsrUpdate, leader_isr_update
from kbroker.cluster.fetcher import FetcherConfig, ReplicaFetcher
from kbroker.cluster.metadata import ClusterMetadata
from kbroker.cluster.replica_state import ISR_LOG_INTERVAL_S, IsrChange, LeaderState, isr_summary
from kbroker.cluster.store import StaleStateError
from kbroker.cluster.znodes import BrokerEndpoint
from kbroker.log import AppendInfo, NotEnoughReplicasError, UnifiedLog
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.cluster.runtime import ClusterRuntime

log = structlog.get_logger(__name__)

TopicPartition = tuple[str, int]
COORDINATOR_ACK_TIMEOUT_MS = 5000  # offsets.commit.timeout.ms: how long a coordinator's write waits for its ISR


class _DelayedProduce:
    __slots__ = ("future", "required_offset")

    def __init__(self, future: asyncio.Future[ErrorCode], required_offset: int) -> None:
        self.future = future
        self.required_offset = required_offset


class ReplicaManager:
    def __init__(self, broker: Broker, cluster: ClusterRuntime) -> None:
        self.broker = broker
        self.cluster = cluster
        self.node_id = broker.node_id
        config = broker.config
        self.lag_time_max_ms = config.get_int("replica.lag.time.max.ms")
        self.fetcher_config = FetcherConfig(
            node_id=self.node_id,
            max_wait_ms=config.get_int("replica.fetch.wait.max.ms"),
            min_bytes=config.get_int("replica.fetch.min.bytes"),
            partition_max_bytes=config.get_int("replica.fetch.max.bytes"),
            response_max_bytes=config.get_int("replica.fetch.response.max.bytes"),
            backoff_ms=config.get_int("replica.fetch.backoff.ms"),
        )
        self.channel = BrokerChannel(
            f"replica-fetcher-{self.node_id}", self._inter_broker_endpoint, ChannelSecurity.from_config(config)
        )
        self.leaders: dict[TopicPartition, LeaderState] = {}
        self._led_logs: dict[TopicPartition, UnifiedLog] = {}  # the log each LeaderState is about
        self.followed: dict[TopicPartition, int] = {}  # partition -> the broker it is fetched from
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._waits: dict[TopicPartition, list[_DelayedProduce]] = {}
        self._isr_writes: set[asyncio.Task[None]] = set()  # and fetchers stopping
        self._expiry: asyncio.Task[None] | None = None
        self._isr_changes: list[IsrChange] = []  # written (or refused) since the last summary
        self._isr_log_timer: asyncio.TimerHandle | None = None
        self.shutting_down = False

    def start(self) -> None:
        self.broker.logs.on_append.append(self._on_append)
        self.cluster.metadata_listeners.append(self.on_metadata)
        self._expiry = asyncio.get_running_loop().create_task(self._expire_isr(), name="isr-expiration")
        self.on_metadata(self.cluster.metadata)

    def begin_shutdown(self) -> None:
        """The broker is stopping: followers' fetches are refused from now on (NOT_LEADER_OR_FOLLOWER: they
        back off, and their long polls do not hold the connection drain), waiting acks=all writes are answered
        NOT_LEADER_OR_FOLLOWER (their producers retry with the next leader)."""
        self.shutting_down = True
        for key in list(self._waits):
            self._complete_waits(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        for key in list(self.leaders):
            self.broker.fetch_waiters.wake(key)

    async def stop(self) -> None:
        if self._on_append in self.broker.logs.on_append:
            self.broker.logs.on_append.remove(self._on_append)
        if self.on_metadata in self.cluster.metadata_listeners:
            self.cluster.metadata_listeners.remove(self.on_metadata)
        tasks = [t for t in (self._expiry, *self._isr_writes) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._isr_log_timer is not None:
            self._isr_log_timer.cancel()
        self._log_isr_changes()
        await asyncio.gather(*(f.stop() for f in self.fetchers.values()))
        self.fetchers.clear()
        self.channel.close()
        for key in list(self._waits):
            self._complete_waits(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def _inter_broker_endpoint(self, broker_id: int) -> BrokerEndpoint | None:
        registration = self.cluster.metadata.brokers.get(broker_id)
        listener = self.broker.config.inter_broker_listener.name
        return None if registration is None else registration.endpoint(listener)

    def _now_ms(self) -> int:
        return int(asyncio.get_running_loop().time() * 1000)

    # ----- following ZooKeeper's metadata

    def on_metadata(self, metadata: ClusterMetadata) -> None:
        """Lead, follow or leave each replicated partition as the snapshot says."""
        led: set[TopicPartition] = set()
        follow: dict[TopicPartition, tuple[int, int, UnifiedLog]] = {}
        became: Counter[str] = Counter()
        for (topic, index), state in metadata.states.items():
            assignment = metadata.topics.get(topic)
            replicas = None if assignment is None else assignment.partitions.get(index)
            if replicas is None or self.node_id not in replicas:
                continue
            partition_log = self.broker.logs.get_partition(topic, index)
            if partition_log is None:
                continue
            if len(replicas) < 2:
                self._stop_replication((topic, index), partition_log)
                continue
            key = (topic, index)
            self._start_replication(key, partition_log)
            if state.leader == self.node_id:
                led.add(key)
                became[self._lead(key, partition_log, state.leader_epoch, replicas, state.isr)] += 1
            elif state.has_leader:
                follow[key] = (state.leader, state.leader_epoch, partition_log)
        for key in [k for k in self.leaders if k not in led]:
            del self.leaders[key]
            del self._led_logs[key]
            self._complete_waits(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            became["resigned"] += 1
        self._follow(follow)
        became.pop("", None)
        if became:
            log.info("replica_roles_changed", broker_id=self.node_id, followed=len(follow), **became)

    def _start_replication(self, key: TopicPartition, partition_log: UnifiedLog) -> None:
        if partition_log.local.replicated:
            return
        checkpointed = self.broker.logs.checkpointed_high_watermarks.get(key)
        partition_log.local.start_replication(checkpointed)
        partition_log.replication_wait = self._wait_as_coordinator

    def _stop_replication(self, key: TopicPartition, partition_log: UnifiedLog) -> None:
        """A reassignment left this broker the partition's only replica: its high watermark is its log end
        again, and writes wait for nobody."""
        if not partition_log.local.replicated:
            return
        partition_log.local.stop_replication()
        partition_log.replication_wait = None
        self.broker.fetch_waiters.high_watermark_moved(key)

    def _lead(
        self,
        key: TopicPartition,
        partition_log: UnifiedLog,
        epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
    ) -> str:
        current = self.leaders.get(key)
        same_log = self._led_logs.get(key) is partition_log  # (not a topic deleted and created again)
        if current is not None and same_log and current.leader_epoch == epoch and current.replicas == replicas:
            if current.isr != isr:  # the controller changed it (a dead follower left); a write of ours in
                current.isr_failed()  # flight fails its compare-and-set against this version
                current.isr_written(isr)
                self._advance(key, partition_log, current)
                self._check_waits(key, partition_log)
            return ""
        partition_log.assign_leader_epoch(epoch)
        self._led_logs[key] = partition_log
        self.leaders[key] = state = LeaderState(
            leader_id=self.node_id,
            leader_epoch=epoch,
            replicas=replicas,
            isr=isr,
            epoch_start_offset=partition_log.log_end_offset,
            lag_time_max_ms=self.lag_time_max_ms,
            now_ms=self._now_ms(),
        )
        self._advance(key, partition_log, state)
        return "leader"

    def _follow(self, follow: dict[TopicPartition, tuple[int, int, UnifiedLog]]) -> None:
        for key, source in list(self.followed.items()):
            wanted = follow.get(key)
            if wanted is None or wanted[0] != source:
                self.fetchers[source].unfollow(key)
                del self.followed[key]
        for source, idle in [(s, f) for s, f in self.fetchers.items() if not f.partitions]:
            del self.fetchers[source]  # nothing left to fetch there
            task = asyncio.get_running_loop().create_task(idle.stop())
            self._isr_writes.add(task)
            task.add_done_callback(self._isr_writes.discard)
        for key, (source, epoch, partition_log) in follow.items():
            fetcher = self.fetchers.get(source)
            if fetcher is None:
                fetcher = self.fetchers[source] = ReplicaFetcher(source, self.channel, self.fetcher_config)
                fetcher.start()
            fetcher.follow(key, partition_log, epoch)
            self.followed[key] = source

    # ----- the leader's side of a follower's fetch

    def follower_fetch(
        self, partition_log: UnifiedLog, replica_id: int, fetch_offset: int, leader_log_end: int
    ) -> None:
        """A follower's fetch from `fetch_offset` was read (the leader's log then ending at `leader_log_end`):
        its state, maybe the high watermark and the ISR."""
        key = (partition_log.topic, partition_log.partition)
        state = self.leaders.get(key)
        if state is None or not state.follower_fetched(replica_id, fetch_offset, leader_log_end, self._now_ms()):
            return
        self._advance(key, partition_log, state)
        if replica_id not in state.isr and state.may_join(replica_id, partition_log.high_watermark):
            self._maybe_change_isr(key, partition_log, state)

    def _on_append(self, partition_log: UnifiedLog, _info: AppendInfo, _size: int) -> None:
        """A leader alone in its ISR moves its high watermark with each append."""
        key = (partition_log.topic, partition_log.partition)
        state = self.leaders.get(key)
        if state is not None and len(state.maximal_isr) == 1:
            self._advance(key, partition_log, state)

    def _advance(self, key: TopicPartition, partition_log: UnifiedLog, state: LeaderState) -> None:
        if partition_log.local.update_high_watermark(state.high_watermark(partition_log.log_end_offset)):
            self.broker.fetch_waiters.high_watermark_moved(key)
            self._check_waits(key, partition_log)

    # ----- acks=all

    def min_insync_replicas(self, topic: str) -> int:
        metadata = self.broker.logs.topic(topic)
        value = None if metadata is None else metadata.configs.get("min.insync.replicas")
        return int(value) if value is not None else self.broker.config.get_int("min.insync.replicas")

    def isr_too_small(self, topic: str, partition: int) -> bool:
        """acks=all refused before the append (NOT_ENOUGH_REPLICAS): fewer in-sync replicas than
        min.insync.replicas. A partition with one replica, or not led here, is not this check's business."""
        state = self.leaders.get((topic, partition))
        return state is not None and len(state.isr) < self.min_insync_replicas(topic)

    def high_watermark_lags_epoch(self, partition_log: UnifiedLog) -> bool:
        """A leader whose high watermark is still below the start of its epoch (its followers have not fetched
        from it yet): ListOffsets answers OFFSET_NOT_AVAILABLE rather than an offset that could go back."""
        state = self.leaders.get((partition_log.topic, partition_log.partition))
        return state is not None and partition_log.high_watermark < state.epoch_start_offset

    def replicated(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self.leaders

    async def wait_for_replication(self, partition_log: UnifiedLog, required_offset: int, timeout_ms: int) -> ErrorCode:
        """Kafka's DelayedProduce for one partition: until the high watermark reaches `required_offset`."""
        key = (partition_log.topic, partition_log.partition)
        decided = self._decide(key, partition_log, required_offset)
        if decided is not None:
            return decided
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        wait = _DelayedProduce(future, required_offset)
        self._waits.setdefault(key, []).append(wait)
        try:
            async with asyncio.timeout(max(timeout_ms, 0) / 1000):
                return await future
        except TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT
        finally:
            waits = self._waits.get(key)
            if waits is not None and wait in waits:
                waits.remove(wait)
                if not waits:
                    del self._waits[key]

    async def _wait_as_coordinator(self, partition_log: UnifiedLog, required_offset: int) -> None:
        """UnifiedLog.replication_wait: a coordinator's write (acks=all) waits for its ISR too."""
        code = await self.wait_for_replication(partition_log, required_offset, COORDINATOR_ACK_TIMEOUT_MS)
        if code is not ErrorCode.NONE:
            raise NotEnoughReplicasError(f"{partition_log.topic}-{partition_log.partition}: {code.name}")

    def _decide(self, key: TopicPartition, partition_log: UnifiedLog, required_offset: int) -> ErrorCode | None:
        state = self.leaders.get(key)
        if state is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if partition_log.high_watermark < required_offset:
            return None
        if len(state.isr) < self.min_insync_replicas(key[0]):
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE

    def _check_waits(self, key: TopicPartition, partition_log: UnifiedLog) -> None:
        for wait in self._waits.get(key, ()):
            if not wait.future.done():
                decided = self._decide(key, partition_log, wait.required_offset)
                if decided is not None:
                    wait.future.set_result(decided)

    def _complete_waits(self, key: TopicPartition, code: ErrorCode) -> None:
        for wait in self._waits.get(key, ()):
            if not wait.future.done():
                wait.future.set_result(code)

    # ----- the ISR

    def _note_isr(self, change: IsrChange) -> None:
        """ISR changes are logged as one summary a second at most, however many partitions change together."""
        self._isr_changes.append(change)
        if self._isr_log_timer is None:
            self._isr_log_timer = asyncio.get_running_loop().call_later(ISR_LOG_INTERVAL_S, self._log_isr_changes)

    def _log_isr_changes(self) -> None:
        self._isr_log_timer = None
        changes, self._isr_changes = self._isr_changes, []
        if changes:
            log.info("isr_changed", broker_id=self.node_id, **isr_summary(changes))

    async def _expire_isr(self) -> None:
        """Kafka's isr-expiration task: every replica.lag.time.max.ms / 2, shrink the ISRs of lagging followers."""
        interval = max(self.lag_time_max_ms / 2000, 0.05)
        while True:
            await asyncio.sleep(interval)
            for key, state in list(self.leaders.items()):
                partition_log = self.broker.logs.get_partition(*key)
                if partition_log is not None:
                    self._maybe_change_isr(key, partition_log, state)

    def _maybe_change_isr(self, key: TopicPartition, partition_log: UnifiedLog, state: LeaderState) -> None:
        change = state.isr_change(partition_log.log_end_offset, partition_log.high_watermark, self._now_ms())
        if change is None:
            return
        isr, reason = change
        state.isr_proposed(isr)
        task = asyncio.get_running_loop().create_task(self._write_isr(key, partition_log, state, isr, reason))
        self._isr_writes.add(task)
        task.add_done_callback(self._isr_writes.discard)

    async def _write_isr(
        self, key: TopicPartition, partition_log: UnifiedLog, state: LeaderState, isr: tuple[int, ...], reason: str
    ) -> None:
        topic, index = key
        store = self.cluster.store
        try:
            current = await store.partition_state(topic, index)
            if current is None or current.leader != self.node_id or current.leader_epoch != state.leader_epoch:
                state.isr_failed()  # another leader or epoch: the next refresh moves this broker's role
                return
            if current.isr != state.isr:  # the controller changed it meanwhile: decide again from what it wrote
                state.isr_failed()
                state.isr_written(current.isr)
                return
            after = leader_isr_update(current, state.replicas, self.node_id, state.leader_epoch, isr)
            await store.update_isr_as_leader(topic, index, after)
        except (StaleStateError, InvalidIsrUpdate, KazooException) as error:
            state.isr_failed()  # (the refresh the controller's write brings sets the ISR it wrote)
            self._note_isr(IsrChange(key, "isr_update_failed", state.isr, isr, type(error).__name__))
            return
        before = state.isr
        state.isr_written(isr)
        self._note_isr(IsrChange(key, reason, before, isr))
        if self.leaders.get(key) is state:
            self._advance(key, partition_log, state)
            self._check_waits(key, partition_log)  # a shrink below min.insync.replicas fails waiting writes
