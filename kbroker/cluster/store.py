"""The cluster's metadata in ZooKeeper (Kafka's KafkaZkClient): reads and compare-and-set writes of the
znodes in kbroker.cluster.znodes, on a ZkClient.

Fencing: the controller's writes are ZooKeeper transactions that first check /controller_epoch's version
as read when it was elected; once another broker has been elected (the epoch znode moved on) or the state
znode changed since it was read, the whole write fails with ControllerMovedError or StaleStateError, and
the writer must step down or re-read. Nothing is ever overwritten blindly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from kazoo.protocol.states import WatchedEvent

from kbroker.cluster import znodes
from kbroker.cluster.zk import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    TransactionFailed,
    ZkClient,
    ZkOp,
    ZnodeStat,
)
from kbroker.cluster.znodes import BrokerRegistration, PartitionState, TopicAssignment

Watch = Callable[[WatchedEvent], None]
log = structlog.get_logger(__name__)


class ControllerMovedError(Exception):
    """/controller_epoch moved on: another broker is controller now; this one must step down."""


class StaleStateError(Exception):
    """The partition state znode changed since it was read: re-read before deciding again."""


class BrokerIdInUseError(Exception):
    """Another live session has registered this broker id."""


class TopicExistsInZkError(Exception):
    """/brokers/topics/T exists already."""


@dataclass(frozen=True)
class ControllerLease:
    """This broker won the election: its controller epoch and /controller_epoch's version after the win."""

    broker_id: int
    epoch: int
    epoch_zk_version: int


class ClusterStore:
    def __init__(self, zk: ZkClient) -> None:
        self.zk = zk

    async def ensure_paths(self) -> None:
        """The persistent parents every broker reads or watches."""
        for path in (znodes.BROKER_IDS, znodes.TOPICS, znodes.TOPIC_CONFIGS):
            await self.zk.ensure_path(path)

    # ----- cluster id

    async def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster's id: the one in /cluster/id, else `proposed` (the first broker's wins)."""
        try:
            await self.zk.create(znodes.CLUSTER_ID, znodes.encode_cluster_id(proposed), makepath=True)
            return proposed
        except NodeExistsError:
            data, _ = await self.zk.get(znodes.CLUSTER_ID)
            return znodes.decode_cluster_id(data)

    # ----- brokers

    async def register_broker(self, registration: BrokerRegistration) -> None:
        """The ephemeral /brokers/ids/N of this session; BrokerIdInUseError if another session holds it."""
        path = znodes.broker_path(registration.broker_id)
        try:
            await self.zk.create(path, znodes.encode_broker(registration), ephemeral=True, makepath=True)
        except NodeExistsError:
            stat = await self.zk.exists(path)
            if stat is None or stat.ephemeralOwner != self.zk.session_id:
                raise BrokerIdInUseError(
                    f"broker id {registration.broker_id} is registered by another broker"
                ) from None

    async def live_brokers(self, watch: Watch | None = None) -> dict[int, BrokerRegistration]:
        result = {}
        for child in await self.zk.get_children(znodes.BROKER_IDS, watch=watch):
            if not child.isdigit():
                continue
            try:
                data, _ = await self.zk.get(znodes.broker_path(int(child)))
                result[int(child)] = znodes.decode_broker(int(child), data)
            except NoNodeError:  # gone between the listing and the read
                continue
            except znodes.ZnodeFormatError as exc:  # not a registration we can use: the broker stays unlisted
                log.warning("znode_malformed", error=str(exc))
        return result

    # ----- controller

    async def controller_id(self, watch: Watch | None = None) -> int | None:
        """The elected controller's id, or None; `watch` fires when /controller is created or deleted."""
        stat = await self.zk.exists(znodes.CONTROLLER, watch=watch)
        if stat is None:
            return None
        try:
            data, _ = await self.zk.get(znodes.CONTROLLER)
        except NoNodeError:
            return None
        return znodes.decode_controller(data)

    async def controller_epoch(self) -> tuple[int, int]:
        """(epoch, znode version) of /controller_epoch, created at 0 when missing."""
        try:
            await self.zk.create(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(0))
        except NodeExistsError:
            pass
        data, stat = await self.zk.get(znodes.CONTROLLER_EPOCH)
        return znodes.decode_controller_epoch(data), stat.version

    async def try_elect(self, broker_id: int) -> ControllerLease | None:
        """Become controller: create the ephemeral /controller and raise /controller_epoch in one transaction.
        None when another broker holds /controller."""
        while True:
            epoch, version = await self.controller_epoch()
            ops = [
                ZkOp("create", znodes.CONTROLLER, znodes.encode_controller(broker_id, _now_ms()), ephemeral=True),
                ZkOp("set", znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(epoch + 1), version=version),
            ]
            try:
                await self.zk.multi(ops)
            except TransactionFailed as failed:
                if isinstance(failed.error, NodeExistsError):
                    return None
                if isinstance(failed.error, BadVersionError):  # another election raced ours: look again
                    continue
                raise
            return ControllerLease(broker_id, epoch + 1, version + 1)

    async def resign(self, lease: ControllerLease) -> None:
        """Give up /controller if this session still holds it (a graceful stop)."""
        try:
            data, stat = await self.zk.get(znodes.CONTROLLER)
        except NoNodeError:
            return
        if znodes.decode_controller(data) == lease.broker_id and stat.ephemeralOwner == self.zk.session_id:
            try:
                await self.zk.delete(znodes.CONTROLLER, stat.version)
            except (NoNodeError, BadVersionError):
                pass

    # ----- producer ids

    async def allocate_producer_ids(self, broker_id: int, size: int) -> tuple[int, int]:
        """The next block of `size` producer ids, unique in the cluster: a compare-and-set on
        /latest_producer_id_block (retried when another broker took a block meanwhile)."""
        while True:
            try:
                data, stat = await self.zk.get(znodes.PRODUCER_ID_BLOCK)
            except NoNodeError:
                try:
                    await self.zk.create(
                        znodes.PRODUCER_ID_BLOCK, znodes.encode_producer_id_block(broker_id, 0, size - 1)
                    )
                except NodeExistsError:
                    continue
                return 0, size - 1
            _, last_end = znodes.decode_producer_id_block(data)
            start, end = last_end + 1, last_end + size
            try:
                await self.zk.set(
                    znodes.PRODUCER_ID_BLOCK, znodes.encode_producer_id_block(broker_id, start, end), stat.version
                )
            except BadVersionError:
                continue
            return start, end

    # ----- topics

    async def create_topic(self, assignment: TopicAssignment, config: dict[str, str]) -> None:
        """/config/topics/T then /brokers/topics/T, in one transaction (Kafka writes the config first)."""
        await self.zk.ensure_path(znodes.TOPIC_CONFIGS)
        ops = [
            ZkOp("create", znodes.topic_config_path(assignment.topic), znodes.encode_topic_config(config)),
            ZkOp("create", znodes.topic_path(assignment.topic), znodes.encode_topic(assignment)),
        ]
        try:
            await self.zk.multi(ops)
        except TransactionFailed as failed:
            if isinstance(failed.error, NodeExistsError):
                raise TopicExistsInZkError(assignment.topic) from None
            raise

    async def delete_topic(self, lease: ControllerLease, topic: str) -> None:
        """Remove the topic's znodes (states, partitions, assignment, config) in one transaction fenced by the
        controller's epoch. NoNodeError when the topic does not exist."""
        root = znodes.topic_path(topic)
        if await self.zk.exists(root) is None:
            raise NoNodeError(root)
        ops = [ZkOp("check", znodes.CONTROLLER_EPOCH, version=lease.epoch_zk_version)]
        partitions_path = f"{root}/partitions"
        try:
            partitions = await self.zk.get_children(partitions_path)
        except NoNodeError:
            partitions = None
        for partition in partitions or ():
            path = f"{partitions_path}/{partition}"
            ops += [ZkOp("delete", f"{path}/{child}") for child in await self.zk.get_children(path)]
            ops.append(ZkOp("delete", path))
        if partitions is not None:
            ops.append(ZkOp("delete", partitions_path))
        ops.append(ZkOp("delete", root))
        if await self.zk.exists(znodes.topic_config_path(topic)) is not None:
            ops.append(ZkOp("delete", znodes.topic_config_path(topic)))
        try:
            await self.zk.multi(ops)
        except TransactionFailed as failed:
            if failed.index == 0:
                raise ControllerMovedError(f"controller epoch {lease.epoch} is no longer current") from None
            raise StaleStateError(root) from None  # changed while we listed it: list again

    async def topics(self, watch: Watch | None = None) -> list[str]:
        return sorted(await self.zk.get_children(znodes.TOPICS, watch=watch))

    async def topic_assignment(self, topic: str, watch: Watch | None = None) -> TopicAssignment | None:
        found = await self._get_watched(znodes.topic_path(topic), watch)
        return None if found is None else znodes.decode_topic(topic, found[0])

    async def topic_assignment_versioned(self, topic: str) -> tuple[TopicAssignment, int] | None:
        """The assignment with its znode version, for a compare-and-set (CreatePartitions)."""
        found = await self._get_watched(znodes.topic_path(topic), None)
        return None if found is None else (znodes.decode_topic(topic, found[0]), found[1].version)

    async def update_topic(self, lease: ControllerLease, assignment: TopicAssignment, version: int) -> None:
        """The controller's new assignment of a topic, at the znode version it read, fenced by its epoch."""
        ops = [
            ZkOp("check", znodes.CONTROLLER_EPOCH, version=lease.epoch_zk_version),
            ZkOp("set", znodes.topic_path(assignment.topic), znodes.encode_topic(assignment), version=version),
        ]
        try:
            await self.zk.multi(ops)
        except TransactionFailed as failed:
            if failed.index == 0:
                raise ControllerMovedError(f"controller epoch {lease.epoch} is no longer current") from None
            raise StaleStateError(znodes.topic_path(assignment.topic)) from None

    async def topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = await self.zk.get(znodes.topic_config_path(topic))
        except NoNodeError:
            return {}
        return znodes.decode_topic_config(data)

    # ----- partition state

    async def partition_state(self, topic: str, partition: int, watch: Watch | None = None) -> PartitionState | None:
        """The state, or None before the controller wrote it (`watch` then fires when it is created)."""
        path = znodes.partition_state_path(topic, partition)
        found = await self._get_watched(path, watch)
        return None if found is None else znodes.decode_partition_state(found[0], found[1].version, path)

    async def _get_watched(self, path: str, watch: Watch | None) -> tuple[bytes, ZnodeStat] | None:
        """Data and stat of `path`, or None when it does not exist. A read of a missing znode leaves no watch in
        ZooKeeper, so then the watch is set with exists(), which also fires on creation."""
        while True:
            try:
                return await self.zk.get(path, watch=watch)
            except NoNodeError:
                if watch is None or await self.zk.exists(path, watch=watch) is None:
                    return None  # (created in between: read again)

    async def write_partition_state(
        self, lease: ControllerLease, topic: str, partition: int, before: PartitionState | None, after: PartitionState
    ) -> int:
        """The controller's write: the state znode at `before`'s version (created when `before` is None), in a
        transaction checking the controller's epoch. Returns the new znode version."""
        path = znodes.partition_state_path(topic, partition)
        fence = ZkOp("check", znodes.CONTROLLER_EPOCH, version=lease.epoch_zk_version)
        data = znodes.encode_partition_state(after)
        if before is None:
            await self.zk.ensure_path(znodes.partition_path(topic, partition))
            write = ZkOp("create", path, data)
        else:
            write = ZkOp("set", path, data, version=before.zk_version)
        try:
            await self.zk.multi([fence, write])
        except TransactionFailed as failed:
            if failed.index == 0:
                raise ControllerMovedError(f"controller epoch {lease.epoch} is no longer current") from None
            if isinstance(failed.error, (BadVersionError, NodeExistsError, NoNodeError)):
                raise StaleStateError(path) from None
            raise
        return 0 if before is None else before.zk_version + 1

    async def update_isr_as_leader(self, topic: str, partition: int, after: PartitionState) -> int:
        """A leader's own ISR change (kbroker.cluster.controller.leader_isr_update): a compare-and-set on the
        version it read; StaleStateError when the controller (or anyone) wrote in between."""
        path = znodes.partition_state_path(topic, partition)
        try:
            stat = await self.zk.set(path, znodes.encode_partition_state(after), version=after.zk_version)
        except (BadVersionError, NoNodeError):
            raise StaleStateError(path) from None
        return int(stat.version)


def _now_ms() -> int:
    return int(time.time() * 1000)
