"""CoordinatorPlacement against a cluster snapshot in process (no ZooKeeper): FindCoordinator's answers, the
partitions loaded and unloaded as leadership moves, and the coordinator epochs of the transaction log."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from kbroker.broker import Broker, new_log_manager
from kbroker.cluster.metadata import ClusterMetadata
from kbroker.cluster.znodes import NO_LEADER, BrokerEndpoint, BrokerRegistration, PartitionState, TopicAssignment
from kbroker.config import BrokerConfig
from kbroker.coordinator_placement import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, CoordinatorPlacement
from kbroker.group import start_group_coordinator
from kbroker.group.store import OFFSETS_TOPIC
from kbroker.log.coordinator_log import partition_for
from kbroker.txn.runtime import start_transaction_coordinator
from kbroker.txn.txn_store import TXN_TOPIC
from protocol.errors import ErrorCode

PARTITIONS = 4


class FakeCluster:
    """What the placement reads of ClusterRuntime: the snapshot, the change listeners, topic creation."""

    def __init__(self, metadata: ClusterMetadata) -> None:
        self.metadata = metadata
        self.metadata_listeners: list[Any] = []
        self.created: list[tuple[str, int, int]] = []

    async def create_topic(self, name: str, partitions: int, factor: int, configs: dict[str, str], **_: Any) -> None:
        self.created.append((name, partitions, factor))

    @property
    def store(self) -> FakeCluster:
        return self

    async def live_brokers(self) -> dict[int, BrokerRegistration]:
        return self.metadata.brokers

    def change(self, metadata: ClusterMetadata) -> None:
        self.metadata = metadata
        for listener in self.metadata_listeners:
            listener(metadata)


def registration(node_id: int) -> BrokerRegistration:
    endpoints = (
        BrokerEndpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9000 + node_id),
        BrokerEndpoint("EXTERNAL", "PLAINTEXT", f"b{node_id}.example", 19000 + node_id),
    )
    return BrokerRegistration(node_id, endpoints)


def snapshot(leaders: dict[tuple[str, int], int], epoch: int = 0) -> ClusterMetadata:
    topics = {
        name: TopicAssignment(name, uuid.uuid4(), {p: (1, 2, 3) for p in range(PARTITIONS)})
        for name in {name for name, _ in leaders}
    }
    states = {key: PartitionState(leader, epoch, (1, 2, 3), 1) for key, leader in leaders.items()}
    return ClusterMetadata({n: registration(n) for n in (1, 2, 3)}, 1, topics, states)


def every(topic: str, leader_of: Any) -> dict[tuple[str, int], int]:
    return {(topic, p): leader_of(p) for p in range(PARTITIONS)}


def test_find_coordinator_answers_the_leader_on_the_requests_listener(tmp_path: Path) -> None:
    async def run() -> None:
        broker, cluster, placement = await start(tmp_path, ClusterMetadata({n: registration(n) for n in (1, 2, 3)}))
        # no topic yet: created in the background, COORDINATOR_NOT_AVAILABLE meanwhile
        assert placement.find(GROUP_KEY_TYPE, "g", "PLAINTEXT").error is ErrorCode.COORDINATOR_NOT_AVAILABLE
        await asyncio.sleep(0.01)
        assert cluster.created == [(OFFSETS_TOPIC, PARTITIONS, 3)]
        leaders = every(OFFSETS_TOPIC, lambda p: p % 3 + 1)
        cluster.change(snapshot(leaders))
        expected = partition_for("g", PARTITIONS) % 3 + 1
        found = placement.find(GROUP_KEY_TYPE, "g", "EXTERNAL")
        assert (found.error, found.node_id, found.host, found.port) == (
            ErrorCode.NONE,
            expected,
            f"b{expected}.example",
            19000 + expected,
        )
        assert placement.find(GROUP_KEY_TYPE, "g", "INTERNAL").error is ErrorCode.COORDINATOR_NOT_AVAILABLE
        leaders[(OFFSETS_TOPIC, partition_for("g", PARTITIONS))] = NO_LEADER
        cluster.change(snapshot(leaders))
        assert placement.find(GROUP_KEY_TYPE, "g", "PLAINTEXT").error is ErrorCode.COORDINATOR_NOT_AVAILABLE
        await stop(broker, placement)

    asyncio.run(run())


def test_partitions_load_and_unload_as_leadership_moves(tmp_path: Path) -> None:
    async def run() -> None:
        broker, cluster, placement = await start(tmp_path, ClusterMetadata({n: registration(n) for n in (1, 2, 3)}))
        for topic in (OFFSETS_TOPIC, TXN_TOPIC):  # the local replicas, as ClusterRuntime creates them
            broker.logs.create_topic(topic, PARTITIONS)
        groups, transactions = broker.groups, broker.transactions
        assert groups is not None and transactions is not None
        leaders = {**every(OFFSETS_TOPIC, lambda p: 1 if p < 2 else 2), **every(TXN_TOPIC, lambda p: 1)}
        cluster.change(snapshot(leaders, epoch=4))
        assert groups.store.owned == {0, 1} and transactions.state_log.store.owned == set(range(PARTITIONS))
        assert transactions.coordinator_epochs == dict.fromkeys(range(PARTITIONS), 4)
        leaders[(OFFSETS_TOPIC, 0)] = 3
        leaders[(OFFSETS_TOPIC, 3)] = 1
        leaders[(TXN_TOPIC, 2)] = 2
        cluster.change(snapshot(leaders, epoch=5))
        assert groups.store.owned == {1, 3} and transactions.state_log.store.owned == {0, 1, 3}
        assert transactions.coordinator_epochs == dict.fromkeys((0, 1, 3), 5)  # (an ISR change raises it too)
        group = next(g for g in (f"g{i}" for i in range(100)) if partition_for(g, PARTITIONS) == 0)
        assert groups.coordinator_error(group) is ErrorCode.NOT_COORDINATOR
        await stop(broker, placement)

    asyncio.run(run())


async def start(data_dir: Path, metadata: ClusterMetadata) -> tuple[Broker, FakeCluster, CoordinatorPlacement]:
    props = {
        "offsets.topic.num.partitions": str(PARTITIONS),
        "transaction.state.log.num.partitions": str(PARTITIONS),
    }
    config = BrokerConfig.build(props, listen="127.0.0.1:0", data_dir=data_dir)
    logs = new_log_manager(config)
    logs.startup()
    broker = Broker(config=config, logs=logs)
    cluster = FakeCluster(metadata)
    broker.cluster = cluster  # type: ignore[assignment]
    broker.groups = start_group_coordinator(broker)
    broker.transactions = await start_transaction_coordinator(broker)
    placement = CoordinatorPlacement(broker, cluster)  # type: ignore[arg-type]
    placement.attach()
    assert TRANSACTION_KEY_TYPE in placement.topics
    return broker, cluster, placement


async def stop(broker: Broker, placement: CoordinatorPlacement) -> None:
    await placement.stop()
    assert broker.transactions is not None and broker.groups is not None
    await broker.transactions.stop()
    await broker.groups.stop()
    await broker.logs.shutdown()
