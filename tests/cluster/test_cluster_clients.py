"""Every client of the compatibility suite against a 3-broker cluster, before and after a leader is killed:
it produces to every partition's leader and reads its records back, following the new leaders and their
leader epochs (Metadata, NOT_LEADER_OR_FOLLOWER, the epochs in Fetch and ListOffsets). The records of the
rounds before the failover are on the new leaders (each round read its record back below the high watermark,
so every in-sync replica had it before the kill)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.zookeeper import ZooKeeperServer
from tests.cluster.test_cluster_brokers import Cluster, _brokers_seen, _partitions, wait_until
from tests.compat.clients.adapter import Client, Record
from tests.compat.clients.registry import FACTORIES

PARTITIONS = 3


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    try:
        for node_id in (1, 2, 3):
            cluster.start(node_id)
        yield cluster
    finally:
        cluster.stop_all()


def _clients() -> Iterator[tuple[str, Client]]:
    for name, factory in FACTORIES.items():
        client = factory()
        if isinstance(client, str):
            continue  # not built here: the compatibility suite reports it
        yield name, client


def _ends(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        consumer.close()


def _ends_or_none(bootstrap: str) -> dict[int, int] | None:
    """The end offsets, or None while a new leader answers OFFSET_NOT_AVAILABLE (its followers have not
    fetched from it yet)."""
    try:
        return _ends(bootstrap, "multi")
    except KafkaException:
        return None


def _round(client: Client, bootstrap: str, topic: str, tag: str) -> None:
    records = [Record(f"{tag}-{p}".encode(), f"{tag}-value-{p}".encode(), partition=p) for p in range(PARTITIONS)]
    start = _ends(bootstrap, topic)  # (not every driver reports the offsets it produced at)
    offsets = client.produce(bootstrap, topic, records)
    reported = sorted(p for p, _ in offsets)  # kcat and kafkajs's driver report no partitions (-1)
    assert reported in (list(range(PARTITIONS)), [-1] * PARTITIONS), (tag, offsets)
    for partition in range(PARTITIONS):  # one partition a call: kcat reads one at a time
        result = client.consume(bootstrap, topic, [partition], {partition: start[partition]}, 1, 20.0)
        assert result.error is None, (tag, result.error, result.error_message)
        assert [r.value for r in result.records] == [records[partition].value], (tag, partition)


def test_every_client_follows_the_leaders_across_a_failover(cluster: Cluster) -> None:
    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    futures = admin.create_topics([NewTopic("multi", num_partitions=PARTITIONS, replication_factor=3)])
    futures["multi"].result(20)
    parts: dict[int, dict[str, Any]] = wait_until(
        lambda: (p := _partitions(cluster, 1, "multi")) and all(x["error_code"] == 0 for x in p.values()) and p
    )
    clients = list(_clients())
    assert {"confluent-kafka", "kafka-python", "aiokafka"} <= {name for name, _ in clients}
    try:
        # one seed broker (the Go and Node drivers take a single address); clients find the others in Metadata
        for name, client in clients:
            _round(client, cluster.brokers[1].bootstrap, "multi", f"{name}-before")
        victim = parts[0]["leader_id"]
        cluster.brokers[victim].kill()
        survivors = [n for n in (1, 2, 3) if n != victim]
        survivor = survivors[0]
        # every surviving broker, not just one, must show the new leaders: each learns them from its own
        # ZooKeeper watch, and a leader that has not yet answers NOT_LEADER_OR_FOLLOWER (as Kafka's does
        # before its LeaderAndIsr), which get_watermark_offsets does not retry
        wait_until(
            lambda: all(
                p["leader_id"] not in (victim, -1) for n in survivors for p in _partitions(cluster, n, "multi").values()
            ),
            what="new leaders on every surviving broker",
        )
        # replicated: the new leaders' high watermarks come back to every record produced before
        before = dict.fromkeys(range(PARTITIONS), len(clients))
        wait_until(lambda: _ends_or_none(cluster.brokers[survivor].bootstrap) == before, what="records kept")
        for name, client in clients:
            _round(client, cluster.brokers[survivor].bootstrap, "multi", f"{name}-after")
    finally:
        for _, client in clients:
            client.close()
