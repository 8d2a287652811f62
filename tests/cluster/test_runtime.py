"""ClusterRuntime in-process against a real ZooKeeper: a controller that loses its ZooKeeper session steps
down at once, another broker takes over with the next epoch, and the first registers again; brokers
follow partition state changes through watches."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kbroker.broker import new_log_manager
from kbroker.cluster.runtime import ClusterRuntime, start_cluster
from kbroker.cluster.zk import ZkClient
from kbroker.config import BrokerConfig
from scripts.zookeeper import ZooKeeperServer
from tests.cluster.conftest import async_test
from tests.process import free_port


async def _broker(zookeeper: ZooKeeperServer, chroot: str, node_id: int, root: Path) -> ClusterRuntime:
    config = BrokerConfig.build(
        {
            "node.id": str(node_id),
            "zookeeper.connect": zookeeper.connect_string + chroot,
            "zookeeper.session.timeout.ms": "2000",
        },
        listen=f"127.0.0.1:{free_port()}",
        data_dir=root / f"broker-{node_id}",
    )
    logs = new_log_manager(config)
    logs.startup()
    return await start_cluster(config, logs, f"cluster-of-{node_id}")


async def _until(check: object, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


@async_test
async def test_controller_steps_down_on_session_loss_and_rejoins(
    zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    first = await _broker(zookeeper, zk_chroot, 1, tmp_path)
    second = await _broker(zookeeper, zk_chroot, 2, tmp_path)
    try:
        assert first.is_controller and not second.is_controller  # the first to start won
        assert first.cluster_id == second.cluster_id == "cluster-of-1"
        await _until(lambda: set(second.metadata.brokers) == {1, 2} and second.metadata.controller_id == 1)
        await first.create_topic("t", 2, 2, {"retention.ms": "60000"})
        await _until(lambda: second.metadata.leaders_known("t") and first.metadata.leaders_known("t"))
        assert second.metadata.state("t", 0) == first.metadata.state("t", 0)
        assert second.logs.topic("t") is not None  # a replica's log, with the cluster's topic id and configs
        assert second.logs.topic("t").topic_id == first.metadata.topics["t"].topic_id  # type: ignore[union-attr]
        assert second.logs.topic("t").configs == {"retention.ms": "60000"}  # type: ignore[union-attr]
        # producer ids: each broker's blocks come from ZooKeeper, never the same twice
        blocks = [first.take_producer_id_block(), second.take_producer_id_block()]
        await _until(lambda: first._spare_ids is not None and second._spare_ids is not None)
        blocks += [first.take_producer_id_block(), second.take_producer_id_block()]
        assert None not in blocks and len({b[0] for b in blocks if b}) == 4
        assert all(b[1] - b[0] == 999 for b in blocks if b)
        epoch = first.lease.epoch  # type: ignore[union-attr]

        # ZooKeeper expires the controller's session (a second client joins it and closes it)
        twin = ZkClient(first.zk.hosts + first.zk.chroot, session_timeout_ms=2000, client_id=first.zk.session)
        await twin.start()
        await twin.stop()
        await _until(lambda: not first.is_controller)  # stepped down on the lost session
        await _until(lambda: second.is_controller)
        assert second.lease is not None and second.lease.epoch == epoch + 1
        await _until(lambda: set(second.metadata.brokers) == {1, 2})  # the first registered again
        await _until(lambda: first.metadata.controller_id == 2)
        assert not first.is_controller
    finally:
        for runtime in (first, second):
            await runtime.stop()
            await runtime.logs.shutdown()


@async_test
async def test_only_the_controller_creates_topics(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> None:
    from kbroker.cluster.runtime import NotControllerError

    first = await _broker(zookeeper, zk_chroot, 1, tmp_path)
    second = await _broker(zookeeper, zk_chroot, 2, tmp_path)
    try:
        try:
            await second.create_topic("u", 1, 1, {})
        except NotControllerError:
            pass
        else:
            raise AssertionError("a broker that is not the controller created a topic")
        await second.create_topic("auto", 1, 2, {}, by_controller=False)  # auto-creation: any broker
        await _until(lambda: first.metadata.leaders_known("auto"))
        assert first.metadata.topics["auto"].partitions[0] in ((1, 2), (2, 1))
    finally:
        for runtime in (first, second):
            await runtime.stop()
            await runtime.logs.shutdown()


@async_test
async def test_a_controller_whose_epoch_moved_is_fenced_and_a_new_election_follows(
    zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    runtime = await _broker(zookeeper, zk_chroot, 1, tmp_path)
    other = ZkClient(zookeeper.connect_string + zk_chroot)
    await other.start()
    try:
        assert runtime.lease is not None and runtime.lease.epoch == 1
        _, stat = await other.get("/controller_epoch")
        await other.set("/controller_epoch", b"41", stat.version)  # as if another controller had been elected
        await runtime.create_topic("fenced", 1, 1, {})  # the assignment is written; its state write is fenced
        await _until(lambda: runtime.metadata.leaders_known("fenced"))
        assert runtime.lease is not None and runtime.lease.epoch == 42  # resigned, elected again
        state = runtime.metadata.state("fenced", 0)
        assert state is not None and state.controller_epoch == 42
    finally:
        await other.stop()
        await runtime.stop()
        await runtime.logs.shutdown()


@async_test
async def test_malformed_znodes_are_skipped_not_fatal(
    zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    runtime = await _broker(zookeeper, zk_chroot, 1, tmp_path)
    other = ZkClient(zookeeper.connect_string + zk_chroot)
    await other.start()
    try:
        await other.create("/brokers/topics/garbage", b"not json")
        await other.create("/brokers/ids/7", b'{"endpoints":["nonsense"]}', ephemeral=True)
        await runtime.create_topic("good", 1, 1, {})
        await _until(lambda: runtime.metadata.leaders_known("good"))
        assert "garbage" not in runtime.metadata.topics and set(runtime.metadata.brokers) == {1}
        await other.set("/brokers/topics/good/partitions/0/state", b"[]")  # a bad state: the partition has none
        await _until(lambda: runtime.metadata.state("good", 0) is None)
        await runtime.create_topic("after", 1, 1, {})  # and the broker keeps following the cluster
        await _until(lambda: runtime.metadata.leaders_known("after"))
    finally:
        await other.stop()
        await runtime.stop()
        await runtime.logs.shutdown()
