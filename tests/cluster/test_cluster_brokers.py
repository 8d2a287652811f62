"""Three real kbroker processes with zookeeper.connect, against a real ZooKeeper: they register, elect one
controller, serve the same cluster metadata; CreateTopics through the controller assigns replicas and the
controller elects leaders; when a leader or the controller is killed, the controller (a new one if need be)
elects from the ISR with the next leader epoch. Clients: confluent-kafka's AdminClient and producer, and
raw Metadata v12 for the leader epochs."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from scripts.zookeeper import ZooKeeperServer
from tests.process import BrokerProcess, RawClient, free_port

SESSION_TIMEOUT_MS = 2000
NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH = 6, 74


class Cluster:
    def __init__(self, zookeeper: ZooKeeperServer, chroot: str, root: Path) -> None:
        self.connect = zookeeper.connect_string + chroot
        self.root = root
        self.brokers: dict[int, BrokerProcess] = {}
        self.configs: dict[str, str] = {}  # more broker configs, for every broker started from now on
        self.listener: str | None = None  # e.g. SASL_SSL: each broker's first listener (else --listen, PLAINTEXT)
        self.more_listeners: tuple[str, ...] = ()  # more listeners (named after their protocol), each on a port
        self._more_ports: dict[tuple[int, str], int] = {}
        self.http = False  # each broker started from now on also serves HTTP (/metrics) on a port of its own

    def start(self, node_id: int) -> BrokerProcess:
        previous = self.brokers.get(node_id)
        port = previous.port if previous else free_port()
        listeners = []
        if self.listener is not None:
            entries = [f"{self.listener}://127.0.0.1:{port}"]
            for name in self.more_listeners:
                more = self._more_ports.setdefault((node_id, name), free_port())
                entries.append(f"{name}://127.0.0.1:{more}")
            listeners = ["--config", "listeners=" + ",".join(entries)]
        if self.http:
            listeners += ["--http-listen", f"127.0.0.1:{self.http_port(node_id)}"]
        process = BrokerProcess(
            self.root / f"broker-{node_id}",
            "--config",
            f"node.id={node_id}",
            "--config",
            f"zookeeper.connect={self.connect}",
            "--config",
            f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}",
            "--config",
            "default.replication.factor=3",
            *(arg for name, value in self.configs.items() for arg in ("--config", f"{name}={value}")),
            *listeners,
            port=port,
            listen_flag=self.listener is None,
        )
        self.brokers[node_id] = process.start()
        return process

    def http_port(self, node_id: int) -> int:
        return self._more_ports.setdefault((node_id, "http"), free_port())

    def bootstrap(self, *exclude: int) -> str:
        return ",".join(p.bootstrap for n, p in sorted(self.brokers.items()) if n not in exclude and p.alive())

    def metadata(self, node_id: int, topics: list[str] | None = None) -> dict[str, Any]:
        with RawClient(self.brokers[node_id].bootstrap) as client:
            body = {
                "topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False,
            }
            return client.call(ApiKey.METADATA, 12, body)

    def stop_all(self) -> None:
        """Stop every live broker, resuming first any a test left SIGSTOPped (it could not exit otherwise)."""
        for process in self.brokers.values():
            if process.alive():
                assert process.proc is not None
                process.proc.send_signal(signal.SIGCONT)
                process.stop()


def wait_until(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    try:
        for node_id in (1, 2, 3):
            cluster.start(node_id)
        yield cluster
    finally:
        cluster.stop_all()


def _brokers_seen(cluster: Cluster, node_id: int) -> list[int]:
    return sorted(b["node_id"] for b in cluster.metadata(node_id)["brokers"])


def _partitions(cluster: Cluster, node_id: int, topic: str) -> dict[int, dict[str, Any]]:
    (entry,) = cluster.metadata(node_id, [topic])["topics"]
    return {p["partition_index"]: p for p in entry["partitions"]}


def _list_offset(cluster: Cluster, node_id: int, partition: int, epoch: int) -> dict[str, Any]:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": "orders",
                "partitions": [{"partition_index": partition, "timestamp": -1, "current_leader_epoch": epoch}],
            }
        ],
    }
    with RawClient(cluster.brokers[node_id].bootstrap) as client:
        return dict(client.call(ApiKey.LIST_OFFSETS, 7, body)["topics"][0]["partitions"][0])


def test_brokers_register_and_agree_on_one_controller(cluster: Cluster) -> None:
    for node_id in (1, 2, 3):
        wait_until(lambda n=node_id: _brokers_seen(cluster, n) == [1, 2, 3], what=f"broker {node_id} to see all")
    answers = [cluster.metadata(n) for n in (1, 2, 3)]
    assert len({a["controller_id"] for a in answers}) == 1 and answers[0]["controller_id"] in (1, 2, 3)
    assert len({a["cluster_id"] for a in answers}) == 1
    ports = {b["node_id"]: b["port"] for b in answers[0]["brokers"]}
    assert ports == {n: p.port for n, p in cluster.brokers.items()}
    # the same through a stock client
    metadata = AdminClient({"bootstrap.servers": cluster.bootstrap()}).list_topics(timeout=10)
    assert sorted(metadata.brokers) == [1, 2, 3]
    assert metadata.controller_id == answers[0]["controller_id"]
    assert metadata.cluster_id == answers[0]["cluster_id"]


def test_created_topic_is_replicated_in_metadata_and_fails_over(cluster: Cluster) -> None:
    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    futures = admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=3)], operation_timeout=15)
    futures["orders"].result(timeout=20)
    bad = admin.create_topics([NewTopic("too-many", num_partitions=1, replication_factor=4)], operation_timeout=15)
    with pytest.raises(Exception, match="INVALID_REPLICATION_FACTOR|larger than available brokers"):
        bad["too-many"].result(timeout=20)

    def settled(node_id: int) -> dict[int, dict[str, Any]] | None:
        parts = _partitions(cluster, node_id, "orders")
        return parts if len(parts) == 6 and all(p["error_code"] == 0 for p in parts.values()) else None

    parts = wait_until(lambda: settled(1), what="leaders of orders")
    for node_id in (2, 3):  # every broker serves the same view
        assert wait_until(lambda n=node_id: settled(n)) == parts
    for p in parts.values():
        assert sorted(p["replica_nodes"]) == [1, 2, 3]
        assert p["leader_id"] == p["replica_nodes"][0]  # the preferred replica leads a new partition
        assert p["isr_nodes"] == p["replica_nodes"] and p["leader_epoch"] == 0 and p["offline_replicas"] == []
    assert sorted(p["leader_id"] for p in parts.values()) == [1, 1, 2, 2, 3, 3]  # round robin spreads leaders
    for node_id, process in cluster.brokers.items():  # each replica holds a log for the topic
        assert (process.data_dir / "orders-0").is_dir(), node_id

    # clients produce to the leaders and read back
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in range(60):
        producer.produce("orders", key=str(i).encode(), value=b"v%d" % i, partition=i % 6)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition("orders", p, 0) for p in range(6)])
    seen = 0
    deadline = time.monotonic() + 20
    while seen < 60 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    consumer.close()
    assert seen == 60

    # kill -9 the leader of partition 0: the controller elects the next in-sync replica, epoch 1
    victim = parts[0]["leader_id"]
    cluster.brokers[victim].kill()
    survivor = next(n for n in (1, 2, 3) if n != victim)

    def failed_over() -> dict[int, dict[str, Any]] | None:
        # every survivor, not just one: each learns the new epochs from its own ZooKeeper watch
        views = [_partitions(cluster, n, "orders") for n in (1, 2, 3) if n != victim]
        done = all(p["leader_id"] != victim and victim not in p["isr_nodes"] for v in views for p in v.values())
        return views[0] if done and all(v == views[0] for v in views) else None

    after = wait_until(failed_over, timeout=30, what="leaders moved off the killed broker")
    for index, p in after.items():
        before = parts[index]
        expected = [r for r in before["replica_nodes"] if r != victim]
        assert p["isr_nodes"] == expected
        assert p["offline_replicas"] == [victim]
        if before["leader_id"] == victim:
            assert p["leader_id"] == expected[0] and p["leader_epoch"] == 1
        else:
            assert p["leader_id"] == before["leader_id"] and p["leader_epoch"] == 1  # ISR shrink raises it too
    assert _brokers_seen(cluster, survivor) == sorted(n for n in (1, 2, 3) if n != victim)

    # only the leader serves a partition, at the controller's epoch; DescribeTopicPartitions agrees
    for index, p in after.items():
        leader = p["leader_id"]
        follower = next(r for r in p["replica_nodes"] if r not in (leader, victim))
        assert _list_offset(cluster, follower, index, -1)["error_code"] == NOT_LEADER_OR_FOLLOWER
        assert _list_offset(cluster, leader, index, 0)["error_code"] == FENCED_LEADER_EPOCH
        # (OFFSET_NOT_AVAILABLE, retried as clients do, until the followers' first fetches from a new leader
        # bring its high watermark to the start of its epoch)
        answer = wait_until(lambda i=index, n=leader: (a := _list_offset(cluster, n, i, 1))["error_code"] != 78 and a)
        assert answer["error_code"] == 0 and answer["leader_epoch"] == 1
        assert answer["offset"] == 10  # acks=all: a new leader has every acknowledged record
    with RawClient(cluster.brokers[survivor].bootstrap) as client:
        body = {"topics": [{"name": "orders"}], "response_partition_limit": 100, "cursor": None}
        (described,) = client.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body)["topics"]
    for p in described["partitions"]:
        expected = after[p["partition_index"]]
        assert (p["leader_id"], p["leader_epoch"], p["isr_nodes"]) == (
            expected["leader_id"],
            1,
            expected["isr_nodes"],
        )

    # clients carry on with the new epoch: the surviving leaders' records are read back, new ones written
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(victim), "group.id": "unused2"})
    kept = [i for i in range(6) if parts[i]["leader_id"] != victim]
    consumer.assign([TopicPartition("orders", i, 0) for i in kept])
    seen = 0
    deadline = time.monotonic() + 20
    while seen < 10 * len(kept) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    consumer.close()
    assert seen == 10 * len(kept)
    producer = Producer({"bootstrap.servers": cluster.bootstrap(victim), "acks": "all"})
    for i in range(6):
        producer.produce("orders", value=b"after", partition=i)
    assert producer.flush(20) == 0


def test_a_killed_controller_is_replaced(cluster: Cluster) -> None:
    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
    controller = cluster.metadata(1)["controller_id"]
    cluster.brokers[controller].kill()
    survivor = next(n for n in (1, 2, 3) if n != controller)
    new = wait_until(
        lambda: (c := cluster.metadata(survivor)["controller_id"]) not in (controller, -1) and c,
        what="a new controller",
    )
    assert new in (1, 2, 3) and new != controller
    # the restarted broker registers again and follows the new controller
    cluster.start(controller)
    wait_until(lambda: _brokers_seen(cluster, controller) == [1, 2, 3], what="the restarted broker registered")
    assert cluster.metadata(controller)["controller_id"] == new


def test_partitions_added_and_topic_deleted_through_the_controller(cluster: Cluster) -> None:
    from confluent_kafka.admin import NewPartitions

    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
    controller = cluster.metadata(1)["controller_id"]
    other = next(n for n in (1, 2, 3) if n != controller)
    with RawClient(cluster.brokers[other].bootstrap) as client:  # CreateTopics is the controller's
        body = {
            "topics": [{"name": "x", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}]
        }
        body.update(timeout_ms=5000, validate_only=False)
        assert client.call(ApiKey.CREATE_TOPICS, 5, body)["topics"][0]["error_code"] == 41  # NOT_CONTROLLER
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic("grow", num_partitions=2, replication_factor=2)], operation_timeout=15)[
        "grow"
    ].result(20)
    admin.create_partitions([NewPartitions("grow", 5)], operation_timeout=15)["grow"].result(20)
    wrong = admin.create_partitions([NewPartitions("grow", 6, replica_assignment=[[1, 2, 3]])], operation_timeout=15)
    with pytest.raises(Exception, match="INVALID_REPLICA_ASSIGNMENT|Inconsistent replication factor"):
        wrong["grow"].result(20)
    smaller = admin.create_partitions([NewPartitions("grow", 3)], operation_timeout=15)
    with pytest.raises(Exception, match="INVALID_PARTITIONS|not be an increase"):
        smaller["grow"].result(20)

    def grown(node_id: int) -> dict[int, dict[str, Any]] | None:
        parts = _partitions(cluster, node_id, "grow")
        return parts if len(parts) == 5 and all(p["error_code"] == 0 for p in parts.values()) else None

    parts = wait_until(lambda: grown(other), what="five partitions with leaders")
    assert all(len(p["replica_nodes"]) == 2 for p in parts.values())
    for node_id, process in cluster.brokers.items():  # replicas of the new partitions have their logs
        holds = [i for i, p in parts.items() if node_id in p["replica_nodes"]]
        assert all((process.data_dir / f"grow-{i}").is_dir() for i in holds), node_id

    admin.delete_topics(["grow"], operation_timeout=15)["grow"].result(20)
    for node_id in (1, 2, 3):
        wait_until(lambda n=node_id: cluster.metadata(n, ["grow"])["topics"][0]["error_code"] == 3, what="deleted")
    for process in cluster.brokers.values():
        wait_until(lambda p=process: not (p.data_dir / "grow-0").exists(), what="local logs deleted")
    missing = admin.delete_topics(["grow"], operation_timeout=15)
    with pytest.raises(Exception, match="UNKNOWN_TOPIC_OR_PART"):
        missing["grow"].result(20)


def test_a_broker_killed_and_restarted_at_once_rejoins(cluster: Cluster) -> None:
    """Its old session's registration is still there: it waits for it to expire, then registers; DescribeCluster
    lists it again. Broker 3 runs with an 8 s session here (the ZooKeeper's longest is 10 s), so that its old
    registration outlives the restart: with the others' 2 s, a restart slowed by a busy CPU found it gone."""
    cluster.brokers[3].stop()
    cluster.configs["zookeeper.session.timeout.ms"] = "8000"
    cluster.start(3)
    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
    registered = cluster.brokers[3].log_text().count("broker_registered")  # every process of broker 3 logs here
    cluster.brokers[3].kill()
    cluster.start(3)
    wait_until(
        lambda: cluster.brokers[3].log_text().count("broker_registered") > registered,
        what="the restarted broker to register",
    )
    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="everyone to see it")
    with RawClient(cluster.brokers[3].bootstrap) as client:
        body = {"include_cluster_authorized_operations": False, "endpoint_type": 1, "include_fenced_brokers": False}
        answer = client.call(ApiKey.DESCRIBE_CLUSTER, 2, body)
    assert sorted(b["broker_id"] for b in answer["brokers"]) == [1, 2, 3]
    assert answer["controller_id"] == cluster.metadata(1)["controller_id"]
    assert "broker_id_still_registered" in cluster.brokers[3].log_text()
