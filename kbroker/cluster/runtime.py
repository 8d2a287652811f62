"""The cluster mode's asyncio runtime: this broker's registration, its part in the controller election, the
metadata every broker serves, and the controller's work when elected.

Brokers learn of changes through ZooKeeper watches rather than controller-to-broker requests: /brokers/ids,
/controller, /brokers/topics, each topic's assignment and each partition's state znode carry a watch, and
any watch that fires makes one refresh task re-read them all (re-arming the watches) and replace the
snapshot whole. ZooKeeper already delivers every change to every broker in order, so no second channel (and
no request of our own to keep consistent with it) is needed; a cluster of a few brokers and a few hundred
partitions re-reads in milliseconds.

The controller is the broker holding the ephemeral /controller. After each refresh it runs the pure
decisions of kbroker.cluster.controller and writes each change as a fenced compare-and-set
(kbroker.cluster.store). It steps down when its session is lost or a write finds its epoch outdated; a
write that loses a race is simply decided again from a fresh read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import structlog
from kazoo.exceptions import KazooException, NoNodeError

from kbroker.cluster.assignment import InvalidReplicaAssignment, assign_replicas, check_explicit_assignment
from kbroker.cluster.controller import ControllerContext
from kbroker.cluster.metadata import ClusterMetadata
from kbroker.cluster.partition_moves import NotControllerError, PartitionMoves
from kbroker.cluster.store import (
    BrokerIdInUseError,
    ClusterStore,
    ControllerLease,
    ControllerMovedError,
    StaleStateError,
)
from kbroker.cluster.zk import SessionState, ZkClient
from kbroker.cluster.znodes import BrokerEndpoint, BrokerRegistration, TopicAssignment, ZnodeFormatError
from kbroker.config import BrokerConfig
from kbroker.log import LogManager, TopicExistsError, UnifiedLog

log = structlog.get_logger(__name__)
_T = TypeVar("_T")

RETRY_SECONDS = 0.5
PRODUCER_ID_BLOCK_SIZE = 1000  # as Kafka's controller hands them out


class InvalidPartitionCount(ValueError):
    """Kafka's INVALID_PARTITIONS."""


class ClusterRuntime:
    def __init__(self, config: BrokerConfig, logs: LogManager, zk: ZkClient) -> None:
        self.config = config
        self.logs = logs
        self.zk = zk
        self.store = ClusterStore(zk)
        self.node_id = config.node_id
        self.cluster_id = ""
        self.metadata = ClusterMetadata()
        self.lease: ControllerLease | None = None
        self._dirty = asyncio.Event()
        self._changed = asyncio.Condition()
        self._register_again = False
        self._task: asyncio.Task[None] | None = None
        self._spare_ids: tuple[int, int] | None = None  # the next producer id block, taken from ZooKeeper ahead
        self._refill: asyncio.Task[None] | None = None
        self._imbalance_task: asyncio.Task[None] | None = None
        self._emptying: dict[tuple[str, int], asyncio.Task[None]] = {}  # partitions whose records are going
        self.moves = PartitionMoves(self)  # ElectLeaders, reassignments, the leader imbalance check
        # called with each new snapshot, after the local logs follow it (replication: who leads, who follows)
        self.metadata_listeners: list[Callable[[ClusterMetadata], None]] = []

    @property
    def is_controller(self) -> bool:
        return self.lease is not None

    # ----- lifecycle

    async def start(self, proposed_cluster_id: str) -> None:
        timeout_ms = self.config.get("zookeeper.connection.timeout.ms") or self.zk.session_timeout_ms
        assert isinstance(timeout_ms, int)
        await self.zk.start(timeout_ms / 1000)
        self.zk.on_state(self._on_session)
        await self.store.ensure_paths()
        self.cluster_id = await self.store.get_or_create_cluster_id(proposed_cluster_id)
        self._spare_ids = await self.store.allocate_producer_ids(self.node_id, PRODUCER_ID_BLOCK_SIZE)
        await self._register(wait_s=self.zk.session_timeout_ms * 1.5 / 1000)
        log.info("broker_registered", broker_id=self.node_id, cluster_id=self.cluster_id, zookeeper=self.zk.hosts)
        await self._refresh()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="cluster-metadata")
        if self.config.get_bool("auto.leader.rebalance.enable"):
            self._imbalance_task = asyncio.get_running_loop().create_task(
                self.moves.check_imbalance(), name="leader-balance"
            )

    async def _register(self, wait_s: float) -> None:
        """Register /brokers/ids/N. The registration of this broker's previous process (killed, its session
        not yet expired) is waited out for up to `wait_s`; BrokerIdInUseError after that."""
        deadline = asyncio.get_running_loop().time() + wait_s
        waited = False
        while True:
            try:
                await self.store.register_broker(self.registration())
                return
            except BrokerIdInUseError:
                if asyncio.get_running_loop().time() >= deadline:
                    raise
                if not waited:
                    log.info("broker_id_still_registered", broker_id=self.node_id, waiting_s=round(wait_s, 1))
                    waited = True
                await asyncio.sleep(RETRY_SECONDS)

    async def stop(self) -> None:
        for task in (self._task, self._refill, self._imbalance_task, *self._emptying.values()):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.lease is not None:
            try:
                await self.store.resign(self.lease)
            except KazooException as exc:
                log.warning("controller_resign_failed", error=str(exc))
            self.lease = None
        await self.zk.stop()  # the registration goes with the session

    def registration(self) -> BrokerRegistration:
        endpoints = tuple(
            BrokerEndpoint(x.name, x.protocol, x.advertised.host, x.advertised.port) for x in self.config.listeners
        )
        rack = self.config.get("broker.rack")
        return BrokerRegistration(self.node_id, endpoints, rack if isinstance(rack, str) else None, _now_ms())

    # ----- events from ZooKeeper (on the loop)

    def _on_watch(self, event: Any) -> None:
        self._dirty.set()

    def _on_session(self, state: SessionState) -> None:
        if state is SessionState.LOST:
            self._step_down("session_lost")
            self._register_again = True  # the ephemeral registration went with the session
        elif state is SessionState.CONNECTED:
            self._dirty.set()  # watches may have been lost with the session: read everything again

    def _step_down(self, reason: str) -> None:
        if self.lease is not None:
            log.warning("controller_resigned", broker_id=self.node_id, epoch=self.lease.epoch, reason=reason)
            self.lease = None

    def refresh_soon(self) -> None:
        """Read the cluster again (and act on it as controller) without waiting for a watch."""
        self._dirty.set()

    async def fenced(self, lease: ControllerLease) -> None:
        await self._fenced(lease)

    async def _fenced(self, lease: ControllerLease) -> None:
        """A write found /controller_epoch moved on: step down, and give up /controller if this session still
        holds it (so that an election takes place rather than nobody acting), then look again."""
        self._step_down("epoch_moved")
        try:
            await self.store.resign(lease)
        except KazooException as exc:
            log.warning("controller_resign_failed", error=type(exc).__name__)
        self._dirty.set()

    # ----- the refresh task

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self._refresh()
            except KazooException as exc:  # connection loss, session expiry: try again once reconnected
                log.info("cluster_refresh_failed", error=type(exc).__name__)
                await asyncio.sleep(RETRY_SECONDS)
                self._dirty.set()
            except Exception as exc:  # noqa: BLE001 - a bad znode or a log error must not stop following the cluster
                log.error("cluster_refresh_failed", error=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(RETRY_SECONDS * 4)
                self._dirty.set()

    async def _refresh(self) -> None:
        if self._register_again:
            await self.store.register_broker(self.registration())
            self._register_again = False
            log.info("broker_registered_again", broker_id=self.node_id)
        watch = self._on_watch
        brokers = await self.store.live_brokers(watch=watch)
        controller = await self.store.controller_id(watch=watch)
        if controller is None:
            self.lease = await self.store.try_elect(self.node_id)
            if self.lease is not None:
                controller = self.node_id
                log.info("controller_elected", broker_id=self.node_id, epoch=self.lease.epoch)
            else:
                controller = await self.store.controller_id(watch=watch)
        elif controller != self.node_id:
            self._step_down("another_controller")
        names = await self.store.topics(watch=watch)
        found = await asyncio.gather(*(_readable(self.store.topic_assignment(name, watch=watch)) for name in names))
        topics = {a.topic: a for a in found if a is not None}
        keys = [(t, p) for t, a in topics.items() for p in sorted(a.partitions)]
        read = await asyncio.gather(*(_readable(self.store.partition_state(t, p, watch=watch)) for t, p in keys))
        states = {key: state for key, state in zip(keys, read, strict=True) if state is not None}
        removed = set(self.metadata.topics) - set(topics)
        self.metadata = ClusterMetadata(brokers, controller, topics, states)
        self._delete_local_logs(removed)
        if self.lease is not None:
            await self._act_as_controller()
        if self.lease is not None:
            await self.moves.complete_reassignments()
        await self._create_local_logs()
        for listener in self.metadata_listeners:
            try:
                listener(self.metadata)
            except Exception:  # noqa: BLE001 - one listener must not stop following the cluster
                log.exception("metadata_listener_failed")
        self._delete_unassigned_logs()  # after the listeners: replication has stopped following them
        async with self._changed:
            self._changed.notify_all()

    async def _act_as_controller(self) -> None:
        lease, metadata = self.lease, self.metadata
        assert lease is not None
        context = ControllerContext(
            epoch=lease.epoch,
            unclean_leader_election=self.config.get_bool("unclean.leader.election.enable"),
            live_brokers=set(metadata.brokers),
            topics=dict(metadata.topics),
            states=dict(metadata.states),
        )
        reasons: Counter[str] = Counter()
        for change in context.decide():
            try:
                version = await self.store.write_partition_state(
                    lease, change.topic, change.partition, change.before, change.after
                )
            except ControllerMovedError:
                await self._fenced(lease)
                return
            except StaleStateError:
                reasons["stale"] += 1
                # someone wrote in between (its watch brings a fresh read); decide again after a pause at the
                # latest, so that a znode that cannot be written is not retried in a tight loop
                asyncio.get_running_loop().call_later(RETRY_SECONDS, self._dirty.set)
                continue
            context.applied(change, version)
            reasons[change.reason] += 1
        if reasons:
            self.metadata = ClusterMetadata(metadata.brokers, metadata.controller_id, metadata.topics, context.states)
            log.info("partition_states_written", epoch=lease.epoch, live=sorted(metadata.brokers), **reasons)

    def _delete_local_logs(self, names: set[str]) -> None:
        """Topics deleted from the cluster go from this broker's logs too."""
        for name in sorted(names):
            if self.logs.topic(name) is not None:
                self.logs.delete_topic(name)
                log.info("topic_log_deleted", topic=name, reason="deleted_from_cluster")

    def _delete_unassigned_logs(self) -> None:
        """The replicas a reassignment moved away from this broker go: the topic's log when it holds none of
        the topic's partitions any more, else the moved partition's records (its log, which every broker
        holding a partition of the topic keeps, starts again empty at 0). Only the cluster's own topic (same
        topic id) is touched."""
        for name, assignment in self.metadata.topics.items():
            local = self.logs.topic(name)
            if local is None or local.topic_id != assignment.topic_id:
                continue
            if not any(self.node_id in replicas for replicas in assignment.partitions.values()):
                self.logs.delete_topic(name)
                log.info("topic_log_deleted", topic=name, reason="no_replica_assigned")
                continue
            for partition, replicas in assignment.partitions.items():
                unified = self.logs.get_partition(name, partition)
                key = (name, partition)
                if self.node_id in replicas or unified is None or unified.log_end_offset == 0 or key in self._emptying:
                    continue
                self._emptying[key] = asyncio.get_running_loop().create_task(
                    self._empty_replica(key, unified), name="replica-removal"
                )

    async def _empty_replica(self, key: tuple[str, int], unified: UnifiedLog) -> None:
        await unified.local.idle()  # no flush may be in flight while the log is cut
        assignment = self.metadata.topics.get(key[0])
        replicas = None if assignment is None else assignment.partitions.get(key[1])
        if replicas is None or self.node_id in replicas or unified.deleted:
            self._emptying.pop(key, None)
            return  # deleted meanwhile, or assigned here again
        try:
            unified.truncate_to(0)
            log.info("replica_log_emptied", topic=key[0], partition=key[1], reason="no_replica_assigned")
        except Exception as exc:  # noqa: BLE001 - a storage error leaves the records; the next refresh retries
            log.error("replica_log_empty_failed", topic=key[0], partition=key[1], error=f"{type(exc).__name__}: {exc}")
        finally:
            self._emptying.pop(key, None)

    async def _create_local_logs(self) -> None:
        """A log for each topic in which this broker holds a replica (with the cluster's topic id and configs)."""
        for name, assignment in self.metadata.topics.items():
            local = self.logs.topic(name)
            if local is not None and local.topic_id == assignment.topic_id:
                if local.partitions < len(assignment.partitions):  # CreatePartitions
                    self.logs.create_partitions(name, len(assignment.partitions))
                continue
            if local is not None:  # a topic of that name deleted while this broker was away: not this one
                self.logs.delete_topic(name)
                log.info("topic_log_deleted", topic=name, reason="another_topic_id_in_cluster")
            if not any(self.node_id in replicas for replicas in assignment.partitions.values()):
                continue
            configs = await self.store.topic_config(name)
            try:
                self.logs.create_topic(name, len(assignment.partitions), configs=configs, topic_id=assignment.topic_id)
            except TopicExistsError:
                pass

    # ----- producer ids

    def take_producer_id_block(self) -> tuple[int, int] | None:
        """A block of producer ids no other broker has (ProducerIdManager's source in cluster mode), and the
        next one fetched from ZooKeeper in the background; None while that is still under way."""
        block, self._spare_ids = self._spare_ids, None
        if self._refill is None or self._refill.done():
            self._refill = asyncio.get_running_loop().create_task(self._refill_ids(), name="producer-id-block")
        if block is not None:
            log.info("producer_id_block_taken", block_start=block[0], block_end=block[1])
        return block

    async def _refill_ids(self) -> None:
        while self._spare_ids is None:
            try:
                self._spare_ids = await self.store.allocate_producer_ids(self.node_id, PRODUCER_ID_BLOCK_SIZE)
            except KazooException as exc:
                log.warning("producer_id_block_failed", error=type(exc).__name__)
                await asyncio.sleep(RETRY_SECONDS)

    # ----- requests

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch at which this broker leads the partition, None when it does not lead it. The
        coordinators' internal topics (kept by each broker, outside the cluster's metadata) are its own, at
        epoch 0; a user topic not in the cluster's metadata is led by nobody."""
        if topic not in self.metadata.topics:
            return 0 if topic.startswith("__") else None  # a user topic is the cluster's, or nobody's
        state = self.metadata.state(topic, partition)
        if state is None or state.leader != self.node_id:
            return None
        return state.leader_epoch

    async def wait_for(self, predicate: Any, timeout_s: float) -> bool:
        """Until predicate(self.metadata) holds or the timeout passes."""
        try:
            async with asyncio.timeout(timeout_s), self._changed:
                await self._changed.wait_for(lambda: predicate(self.metadata))
            return True
        except TimeoutError:
            return False

    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str],
        assignment: dict[int, tuple[int, ...]] | None = None,
        *,
        validate_only: bool = False,
        by_controller: bool = True,
    ) -> TopicAssignment:
        """Write the topic's assignment and configs (the controller then elects its leaders). CreateTopics is
        the controller's (`by_controller`), as in Kafka's ZooKeeper mode; auto-creation may happen on any
        broker (the ZooKeeper transaction makes concurrent creations safe). Replicas are assigned round
        robin over the live brokers unless the client gave them. Raises NotControllerError,
        InvalidReplicationFactor, InvalidReplicaAssignment or TopicExistsInZkError."""
        if by_controller and not self.is_controller:
            raise NotControllerError(f"broker {self.node_id} is not the controller")
        live = await self.store.live_brokers()
        if assignment is None:
            assignment = assign_replicas(live, partitions, replication_factor)
        else:
            check_explicit_assignment(assignment, live)
        topic = TopicAssignment(name, uuid.uuid4(), assignment)
        if not validate_only:
            await self.store.create_topic(topic, configs)
            log.info("topic_assigned", topic=name, partitions=len(assignment), replicas=len(assignment[0]))
        return topic

    async def add_partitions(
        self, name: str, total: int, assignment: list[tuple[int, ...]] | None = None, *, validate_only: bool = False
    ) -> TopicAssignment:
        """The controller raises the topic's partition count to `total` (the new partitions assigned round
        robin from the first replica of partition 0, or as given). Raises NotControllerError, NoNodeError,
        InvalidPartitionCount, InvalidReplicaAssignment or InvalidReplicationFactor; StaleStateError when the
        topic's znode kept changing under it."""
        for _ in range(4):
            try:
                return await self._add_partitions(name, total, assignment, validate_only)
            except StaleStateError:
                continue  # the assignment changed since it was read: read it again
        raise StaleStateError(name)

    async def _add_partitions(
        self, name: str, total: int, assignment: list[tuple[int, ...]] | None, validate_only: bool
    ) -> TopicAssignment:
        lease = self.lease
        if lease is None:
            raise NotControllerError(f"broker {self.node_id} is not the controller")
        found = await self.store.topic_assignment_versioned(name)
        if found is None:
            raise NoNodeError(name)
        current, version = found
        count = len(current.partitions)
        if total <= count:
            raise InvalidPartitionCount(
                f"Topic already has {count} partition(s)."
                if total == count
                else f"The topic {name} currently has {count} partition(s); {total} would not be an increase."
            )
        live = sorted(await self.store.live_brokers())
        factor = len(current.partitions[0])
        if assignment is None:
            first = current.partitions[0][0]
            start = next((i for i, b in enumerate(live) if b >= first), 0)
            added = assign_replicas(live, total - count, factor, first_partition=count, start=start)
        else:
            if len(assignment) != total - count:
                raise InvalidReplicaAssignment(
                    f"Attempted to add {total - count} additional partition(s), but only {len(assignment)} "
                    "assignment(s) were specified."
                )
            added = {count + i: tuple(r) for i, r in enumerate(assignment)}
            check_explicit_assignment(added, live, first_partition=count)
            if len(added[count]) != factor:
                raise InvalidReplicaAssignment(
                    f"Inconsistent replication factor between partitions, partition 0 has {factor} "
                    f"while partitions [{count}] has replication factor {len(added[count])}, respectively."
                )
        grown = dataclasses.replace(current, partitions={**current.partitions, **added})  # reassignments stay
        if validate_only:
            return grown
        try:
            await self.store.update_topic(lease, grown, version)
        except ControllerMovedError:
            await self._fenced(lease)
            raise NotControllerError(f"broker {self.node_id} is no longer the controller") from None
        log.info("partitions_assigned", topic=name, partitions=total)
        return grown

    async def delete_topic(self, name: str) -> TopicAssignment:
        """The controller removes the topic from ZooKeeper; every broker then deletes its replicas' logs.
        Raises NotControllerError, or NoNodeError for a topic that does not exist."""
        for _ in range(5):
            lease = self.lease
            if lease is None:
                raise NotControllerError(f"broker {self.node_id} is not the controller")
            assignment = self.metadata.topics.get(name) or await self.store.topic_assignment(name)
            if assignment is None:
                raise NoNodeError(name)
            try:
                await self.store.delete_topic(lease, name)
            except ControllerMovedError:
                await self._fenced(lease)
                raise NotControllerError(f"broker {self.node_id} is no longer the controller") from None
            except StaleStateError:
                continue  # a partition state was written meanwhile: list the znodes again
            log.info("topic_deleted_from_cluster", topic=name)
            return assignment
        raise StaleStateError(name)


async def start_cluster(config: BrokerConfig, logs: LogManager, proposed_cluster_id: str) -> ClusterRuntime:
    connect = config.zookeeper_connect
    assert connect is not None
    zk = ZkClient(connect, session_timeout_ms=config.get_int("zookeeper.session.timeout.ms"))
    runtime = ClusterRuntime(config, logs, zk)
    try:
        await runtime.start(proposed_cluster_id)
    except BaseException:
        await zk.stop()
        raise
    return runtime


async def _readable(read: Awaitable[_T | None]) -> _T | None:
    """A znode's decoded content, or None (logged) when it is not what Kafka's ZooKeeper mode writes: one bad
    znode must not keep a broker from following the rest of the cluster."""
    try:
        return await read
    except ZnodeFormatError as exc:
        log.warning("znode_malformed", error=str(exc))
        return None


def _now_ms() -> int:
    return int(time.time() * 1000)
