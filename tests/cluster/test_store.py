"""The ZooKeeper adapter against a real ZooKeeper: registrations, the controller election with its epoch,
fencing of a deposed controller, compare-and-set partition state, topics."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from kbroker.cluster.controller import leader_isr_update
from kbroker.cluster.store import (
    BrokerIdInUseError,
    ClusterStore,
    ControllerMovedError,
    StaleStateError,
    TopicExistsInZkError,
)
from kbroker.cluster.zk import ZkClient
from kbroker.cluster.znodes import BrokerEndpoint, BrokerRegistration, PartitionState, TopicAssignment
from scripts.zookeeper import ZooKeeperServer
from tests.cluster.conftest import async_test


async def _store(zookeeper: ZooKeeperServer, chroot: str, **kwargs: object) -> ClusterStore:
    client = ZkClient(zookeeper.connect_string + chroot, session_timeout_ms=4000, **kwargs)  # type: ignore[arg-type]
    await client.start()
    store = ClusterStore(client)
    await store.ensure_paths()
    return store


def _registration(broker_id: int) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (BrokerEndpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9000 + broker_id),))


@async_test
async def test_cluster_id_first_broker_wins(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    a, b = await _store(zookeeper, zk_chroot), await _store(zookeeper, zk_chroot)
    try:
        assert await a.get_or_create_cluster_id("first") == "first"
        assert await b.get_or_create_cluster_id("second") == "first"
    finally:
        await a.zk.stop()
        await b.zk.stop()


@async_test
async def test_registrations_are_ephemeral_and_unique(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    a, b = await _store(zookeeper, zk_chroot), await _store(zookeeper, zk_chroot)
    try:
        await a.register_broker(_registration(1))
        await a.register_broker(_registration(1))  # again from the same session (a retry): fine
        with pytest.raises(BrokerIdInUseError):
            await b.register_broker(_registration(1))
        await b.register_broker(_registration(2))
        brokers = await a.live_brokers()
        assert sorted(brokers) == [1, 2]
        assert brokers[2].endpoint("PLAINTEXT") == BrokerEndpoint("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9002)
        data, _ = await a.zk.get("/brokers/ids/1")
        assert json.loads(data)["endpoints"] == ["PLAINTEXT://127.0.0.1:9001"]
        await a.zk.stop()
        assert sorted(await b.live_brokers()) == [2]
        await b.register_broker(_registration(1))  # the id is free once its session is gone
    finally:
        await a.zk.stop()
        await b.zk.stop()


@async_test
async def test_one_controller_per_epoch_and_a_deposed_one_is_fenced(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    stores = [await _store(zookeeper, zk_chroot) for _ in range(3)]
    try:
        leases = await asyncio.gather(*(s.try_elect(i + 1) for i, s in enumerate(stores)))
        winners = [lease for lease in leases if lease is not None]
        assert len(winners) == 1 and winners[0].epoch == 1
        first = winners[0]
        assert await stores[0].controller_id() == first.broker_id
        winner_store = stores[first.broker_id - 1]
        topic = TopicAssignment("t", uuid.uuid4(), {0: (1, 2)})
        await winner_store.create_topic(topic, {"cleanup.policy": "compact"})
        with pytest.raises(TopicExistsInZkError):
            await stores[0].create_topic(topic, {})
        assert await stores[0].topics() == ["t"]
        assert await stores[0].topic_assignment("t") == topic
        assert await stores[0].topic_config("t") == {"cleanup.policy": "compact"}
        state = PartitionState(1, 0, (1, 2), first.epoch)
        assert await winner_store.write_partition_state(first, "t", 0, None, state) == 0
        assert await stores[0].partition_state("t", 0) == PartitionState(1, 0, (1, 2), 1, 0)

        # the controller's session ends; another broker is elected with the next epoch
        deposed = winner_store
        twin = ZkClient(zookeeper.connect_string + zk_chroot, session_timeout_ms=4000, client_id=deposed.zk.session)
        await twin.start()
        await twin.stop()  # ZooKeeper expires the controller's session: /controller goes
        others = [s for s in stores if s is not deposed]
        second = None
        for _ in range(100):
            second = await others[0].try_elect(9) or await others[1].try_elect(8)
            if second is not None:
                break
            await asyncio.sleep(0.1)
        assert second is not None and second.epoch == 2
        current = await others[0].partition_state("t", 0)
        assert current is not None
        # the deposed controller (its client reconnected with a new session) writes with its old lease
        for _ in range(100):
            if deposed.zk.client.connected:
                break
            await asyncio.sleep(0.1)
        with pytest.raises(ControllerMovedError):
            await deposed.write_partition_state(first, "t", 0, current, PartitionState(2, 1, (2,), 1))
        assert await others[0].partition_state("t", 0) == current  # nothing written
    finally:
        for store in stores:
            await store.zk.stop()


@async_test
async def test_partition_state_writes_are_compare_and_set(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    store = await _store(zookeeper, zk_chroot)
    try:
        lease = await store.try_elect(1)
        assert lease is not None
        await store.create_topic(TopicAssignment("t", uuid.uuid4(), {0: (1, 2, 3)}), {})
        await store.write_partition_state(lease, "t", 0, None, PartitionState(1, 0, (1, 2, 3), lease.epoch))
        read = await store.partition_state("t", 0)
        assert read is not None
        with pytest.raises(StaleStateError):  # created already: a second "create" loses
            await store.write_partition_state(lease, "t", 0, None, PartitionState(1, 0, (1,), lease.epoch))
        # the leader shrinks its ISR with the version it read ...
        shrunk = leader_isr_update(read, (1, 2, 3), 1, 0, [1, 2])
        assert await store.update_isr_as_leader("t", 0, shrunk) == 1
        # ... so the controller's write based on the older read fails, and succeeds after a re-read
        with pytest.raises(StaleStateError):
            await store.write_partition_state(lease, "t", 0, read, PartitionState(2, 1, (2, 3), lease.epoch))
        with pytest.raises(StaleStateError):
            await store.update_isr_as_leader("t", 0, shrunk)  # the same version again: stale
        fresh = await store.partition_state("t", 0)
        assert fresh is not None and fresh.isr == (1, 2) and fresh.zk_version == 1
        assert await store.write_partition_state(lease, "t", 0, fresh, PartitionState(2, 1, (2,), lease.epoch)) == 2
        await store.resign(lease)
        assert await store.controller_id() is None
    finally:
        await store.zk.stop()


@async_test
async def test_producer_id_blocks_are_unique_across_brokers(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    stores = [await _store(zookeeper, zk_chroot) for _ in range(3)]
    try:
        blocks = await asyncio.gather(
            *(s.allocate_producer_ids(i, 1000) for i, s in enumerate(stores) for _ in range(4))
        )
        assert sorted(blocks) == [(i * 1000, i * 1000 + 999) for i in range(12)]  # disjoint, no gap
        data, _ = await stores[0].zk.get("/latest_producer_id_block")
        value = json.loads(data)
        assert value["version"] == 1 and value["block_start"] == "11000" and value["block_end"] == "11999"
    finally:
        for store in stores:
            await store.zk.stop()
