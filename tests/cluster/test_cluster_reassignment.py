"""Preferred-leader election and partition reassignment on three kbroker processes, driven by Apache Kafka
4.3's own tools (kafka-reassign-partitions, kafka-leader-election, run in one JVM as in tests/tools) and by
raw requests for the errors:
- a partition with data moves from brokers [1, 2] to [2, 3]: broker 3 fetches it, joins the ISR, the
  reassignment completes, leadership moves into the target, broker 1 deletes its log, and broker 3 alone
  (broker 2 killed) serves every record;
- a reassignment whose new replica cannot catch up (its process stopped) stays in progress, is listed with
  its adding and removing replicas, and is cancelled back to the original replicas;
- after a leader's kill and restart, a PREFERRED election moves leadership back once it is in the ISR;
  UNCLEAN finds nothing to elect; the controller's imbalance check does the same by itself;
- Kafka's errors: NOT_CONTROLLER, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
  INVALID_REPLICATION_FACTOR, NO_REASSIGNMENT_IN_PROGRESS, PREFERRED_LEADER_NOT_AVAILABLE."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from scripts.zookeeper import ZooKeeperServer
from tests.cluster.test_cluster_brokers import Cluster, _brokers_seen, wait_until
from tests.cluster.test_cluster_replication import _producer, _read, _settled, _stopped
from tests.process import RawClient

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
FAST_FETCH = {"replica.fetch.backoff.ms": "200", "replica.fetch.wait.max.ms": "200"}


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    cluster.configs = {**FAST_FETCH, "auto.leader.rebalance.enable": "false"}  # a test may turn it on
    try:
        yield cluster
    finally:
        cluster.stop_all()


def _start(cluster: Cluster, node_ids: tuple[int, ...] = (1, 2, 3)) -> None:
    for node_id in node_ids:
        cluster.start(node_id)
    wait_until(lambda: _brokers_seen(cluster, 1) == sorted(cluster.brokers), what="all brokers registered")


@pytest.fixture(scope="module")
def jvm() -> Iterator[Any]:
    from tests.tools.test_kafka_tools import ToolJvm, tools_classpath

    runner = ToolJvm(tools_classpath())
    try:
        yield runner
    finally:
        runner.close()


def run(jvm: Any, main_class: str, bootstrap: str, *args: str) -> str:
    status, out, err = jvm.run(main_class, "--bootstrap-server", bootstrap, *args)
    assert status == 0, f"{main_class} {' '.join(args)}: status {status}\n{out}{err}"
    return str(out + err)


def _create(cluster: Cluster, name: str, assignment: dict[int, list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = NewTopic(name, len(assignment), replica_assignment=[assignment[p] for p in sorted(assignment)])
    admin.create_topics([topic], operation_timeout=15)[name].result(20)
    _settled(cluster, name, tuple(sorted(cluster.brokers)), lambda p: len(p["isr_nodes"]) == len(p["replica_nodes"]))


def _plan(tmp_path: Path, moves: dict[tuple[str, int], list[int]]) -> str:
    path = tmp_path / f"plan-{len(list(tmp_path.iterdir()))}.json"
    partitions = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return str(path)


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = _producer(bootstrap)
    for i in range(count):
        producer.produce(topic, value=b"r%d" % i, partition=0)
    assert producer.flush(30) == 0


def _controller(cluster: Cluster) -> int:
    return int(cluster.metadata(min(cluster.brokers))["controller_id"])


def test_a_partition_with_data_moves_to_another_broker(cluster: Cluster, jvm: Any, tmp_path: Path) -> None:
    _start(cluster)
    _create(cluster, "moves", {0: [1, 2]})
    _produce(cluster.bootstrap(), "moves", 200)
    bootstrap = cluster.brokers[1].bootstrap
    plan = _plan(tmp_path, {("moves", 0): [2, 3]})
    out = run(jvm, REASSIGN, bootstrap, "--execute", "--reassignment-json-file", plan)
    assert '{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[1,2]' in out  # the rollback plan
    assert "Successfully started partition reassignment for moves-0" in out
    wait_until(
        lambda: (
            "Reassignment of partition moves-0 is completed."
            in run(jvm, REASSIGN, bootstrap, "--verify", "--reassignment-json-file", plan)
        ),
        timeout=60,
        what="the reassignment to complete",
    )
    parts = _settled(cluster, "moves", (1, 2, 3), lambda p: p["replica_nodes"] == [2, 3])
    assert parts[0]["leader_id"] == 2 and sorted(parts[0]["isr_nodes"]) == [2, 3]
    assert run(jvm, REASSIGN, bootstrap, "--list") == "No partition reassignments found.\n"
    wait_until(lambda: not (cluster.brokers[1].data_dir / "moves-0").exists(), what="broker 1 to delete its log")
    assert (cluster.brokers[3].data_dir / "moves-0").is_dir()
    # broker 3 holds every record: with broker 2 gone it leads and serves them all
    cluster.brokers[2].kill()
    _settled(cluster, "moves", (1, 3), lambda p: p["leader_id"] == 3)
    records = _read(cluster.bootstrap(2), "moves", 0, 200)
    assert [value for _, value in records] == [b"r%d" % i for i in range(200)]


def test_a_reassignment_in_progress_is_listed_and_cancelled(cluster: Cluster, jvm: Any, tmp_path: Path) -> None:
    _start(cluster, (1, 2))
    cluster.configs["zookeeper.session.timeout.ms"] = "60000"  # broker 3 stays registered while stopped
    _start(cluster, (3,))
    _create(cluster, "pair", {0: [1, 2]})
    _produce(cluster.bootstrap(), "pair", 20)
    process = cluster.brokers[3].proc
    assert process is not None
    process.send_signal(signal.SIGSTOP)  # live in ZooKeeper, but it will not fetch
    wait_until(lambda: _stopped(process.pid), what="broker 3 stopped")
    bootstrap = cluster.brokers[1].bootstrap
    plan = _plan(tmp_path, {("pair", 0): [2, 3]})
    assert "Successfully started" in run(jvm, REASSIGN, bootstrap, "--execute", "--reassignment-json-file", plan)
    listed = "Current partition reassignments:\npair-0: replicas: 2,3,1. adding: 3. removing: 1.\n"
    wait_until(lambda: run(jvm, REASSIGN, bootstrap, "--list") == listed, what="the reassignment listed")
    verified = run(jvm, REASSIGN, bootstrap, "--verify", "--reassignment-json-file", plan)
    assert "Reassignment of partition pair-0 is still in progress." in verified
    parts = _settled(cluster, "pair", (1, 2), lambda p: p["replica_nodes"] == [2, 3, 1])
    assert parts[0]["leader_id"] == 1 and sorted(parts[0]["isr_nodes"]) == [1, 2]  # the leader stays meanwhile
    assert parts[0]["leader_epoch"] == 1  # a new epoch for the new replica set
    # (--preserve-throttles: clearing them would wait for the stopped broker 3, with Kafka as here)
    out = run(jvm, REASSIGN, bootstrap, "--cancel", "--preserve-throttles", "--reassignment-json-file", plan)
    assert "Successfully cancelled partition reassignment for: pair-0" in out
    assert run(jvm, REASSIGN, bootstrap, "--list") == "No partition reassignments found.\n"
    # back to the original replicas, in the replica set's order as Kafka does (the preferred leader is now 2)
    parts = _settled(cluster, "pair", (1, 2), lambda p: p["replica_nodes"] == [2, 1])
    assert parts[0]["leader_id"] == 1 and sorted(parts[0]["isr_nodes"]) == [1, 2]
    process.send_signal(signal.SIGCONT)
    _settled(cluster, "pair", (1, 2, 3), lambda p: p["replica_nodes"] == [2, 1])
    assert not (cluster.brokers[3].data_dir / "pair-0").exists()
    assert [v for _, v in _read(cluster.bootstrap(), "pair", 0, 20)] == [b"r%d" % i for i in range(20)]


def test_preferred_election_after_a_leaders_restart(cluster: Cluster, jvm: Any) -> None:
    _start(cluster)
    _create(cluster, "lead", {0: [1, 2, 3], 1: [2, 3, 1]})
    _produce(cluster.bootstrap(), "lead", 30)
    cluster.brokers[1].kill()
    _settled(cluster, "lead", (2, 3), lambda p: p["leader_id"] != 1)
    cluster.start(1)
    before = _settled(cluster, "lead", (1, 2, 3), lambda p: sorted(p["isr_nodes"]) == [1, 2, 3])
    assert before[0]["leader_id"] == 2  # the first live replica in the ISR took over, 1 came back as follower
    bootstrap = cluster.brokers[3].bootstrap
    out = run(jvm, ELECTION, bootstrap, "--election-type", "PREFERRED", "--all-topic-partitions")
    # every partition asked for: only those elected are answered (lead-1 and any internal topic's are not)
    assert out == "Successfully completed leader election (PREFERRED) for partitions lead-0\n"
    after = _settled(cluster, "lead", (1, 2, 3), lambda p: p["leader_id"] == p["replica_nodes"][0])
    assert after[0]["leader_epoch"] == before[0]["leader_epoch"] + 1 and after[0]["isr_nodes"] == before[0]["isr_nodes"]
    out = run(jvm, ELECTION, bootstrap, "--election-type", "UNCLEAN", "--topic", "lead", "--partition", "1")
    assert out == "Valid replica already elected for partitions lead-1\n"
    assert run(jvm, ELECTION, bootstrap, "--election-type", "UNCLEAN", "--all-topic-partitions") == ""
    assert [v for _, v in _read(cluster.bootstrap(), "lead", 0, 30)] == [b"r%d" % i for i in range(30)]


def test_the_imbalance_check_moves_leadership_back(cluster: Cluster) -> None:
    cluster.configs.update({"auto.leader.rebalance.enable": "true", "leader.imbalance.check.interval.seconds": "1"})
    _start(cluster)
    _create(cluster, "balance", {0: [1, 2, 3]})
    controller = _controller(cluster)
    with RawClient(cluster.brokers[controller].bootstrap) as client:  # a reorder completes at once; 1 keeps leading
        answer = client.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, _alter("balance", 0, [2, 1, 3]))
    assert answer["error_code"] == 0 and answer["responses"][0]["partitions"][0]["error_code"] == 0
    parts = _settled(cluster, "balance", (1, 2, 3), lambda p: p["replica_nodes"] == [2, 1, 3] and p["leader_id"] == 2)
    assert parts[0]["leader_epoch"] >= 2
    assert "leader_election_requested" in cluster.brokers[controller].log_text()


def _alter(topic: str, partition: int, replicas: list[int] | None, allow: bool = True) -> dict[str, Any]:
    return {
        "timeout_ms": 10000,
        "allow_replication_factor_change": allow,
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}],
    }


def _elect(topic: str, partitions: list[int]) -> dict[str, Any]:
    return {"election_type": 0, "topic_partitions": [{"topic": topic, "partitions": partitions}], "timeout_ms": 10000}


def test_kafkas_errors(cluster: Cluster) -> None:
    _start(cluster)
    _create(cluster, "errs", {0: [1, 2], 1: [2, 1]})
    controller = _controller(cluster)
    other = next(n for n in (1, 2, 3) if n != controller)
    with RawClient(cluster.brokers[other].bootstrap) as client:
        versions = {k["api_key"]: k["max_version"] for k in client.call(ApiKey.API_VERSIONS, 3, {
            "client_software_name": "t", "client_software_version": "1"})["api_keys"]}  # fmt: skip
        assert (versions[43], versions[45], versions[46]) == (2, 1, 0)  # offered in cluster mode
        assert client.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, _alter("errs", 0, [2, 3]))["error_code"] == 41
        assert (
            client.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 1000, "topics": None})["error_code"]
            == E.NOT_CONTROLLER
        )
        (result,) = client.call(ApiKey.ELECT_LEADERS, 2, _elect("errs", [0]))["replica_election_results"]
        assert result["partition_result"][0]["error_code"] == E.NOT_CONTROLLER
    from confluent_kafka import ElectionType, KafkaError, TopicPartition

    admin = AdminClient({"bootstrap.servers": cluster.brokers[other].bootstrap})  # librdkafka finds the controller
    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("errs", 0)]).result(timeout=30)
    assert [error.code() for error in elected.values()] == [KafkaError.ELECTION_NOT_NEEDED]
    with RawClient(cluster.brokers[controller].bootstrap) as client:

        def alter(topic: str, partition: int, replicas: list[int] | None, allow: bool = True) -> tuple[int, str]:
            answer = client.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 1, _alter(topic, partition, replicas, allow))
            (result,) = answer["responses"][0]["partitions"]
            return result["error_code"], result["error_message"]

        assert alter("nope", 0, [1, 2])[0] == E.UNKNOWN_TOPIC_OR_PARTITION
        assert alter("errs", 7, [1, 2])[0] == E.UNKNOWN_TOPIC_OR_PARTITION
        assert alter("errs", 0, [2, 9]) == (
            E.INVALID_REPLICA_ASSIGNMENT,
            "Replica assignment has brokers that are not alive. Replica list: [9], live broker list: [1, 2, 3]",
        )
        assert alter("errs", 0, [2, 2])[0] == E.INVALID_REPLICA_ASSIGNMENT
        assert alter("errs", 0, [])[0] == E.INVALID_REPLICA_ASSIGNMENT
        assert alter("errs", 0, [1, 2, 3], allow=False)[0] == E.INVALID_REPLICATION_FACTOR
        assert alter("errs", 0, None) == (E.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.")

        def elect(partitions: list[int]) -> dict[int, int]:
            (result,) = client.call(ApiKey.ELECT_LEADERS, 2, _elect("errs", partitions))["replica_election_results"]
            return {p["partition_id"]: p["error_code"] for p in result["partition_result"]}

        assert elect([0, 1, 5]) == {0: E.ELECTION_NOT_NEEDED, 1: E.ELECTION_NOT_NEEDED, 5: E.UNKNOWN_TOPIC_OR_PARTITION}
        assert client.call(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 1000, "topics": None})["topics"] == []
    victim = 1 if controller != 1 else 2  # the preferred leader of one partition, not the controller
    cluster.brokers[victim].kill()
    _settled(cluster, "errs", (controller,), lambda p: p["leader_id"] != victim)
    with RawClient(cluster.brokers[controller].bootstrap) as client:
        (result,) = client.call(ApiKey.ELECT_LEADERS, 2, _elect("errs", [0, 1]))["replica_election_results"]
        codes = {p["partition_id"]: p["error_code"] for p in result["partition_result"]}
    preferred_by_victim = 0 if victim == 1 else 1
    assert codes == {
        preferred_by_victim: E.PREFERRED_LEADER_NOT_AVAILABLE,
        1 - preferred_by_victim: E.ELECTION_NOT_NEEDED,
    }


def test_a_partition_left_with_one_replica_keeps_serving(cluster: Cluster) -> None:
    """[1, 2] to [2]: the high watermark, held apart from the log end while others replicated, follows the
    log end again on the only replica, so records produced after the move are read back."""
    _start(cluster)
    _create(cluster, "single", {0: [1, 2]})
    _produce(cluster.bootstrap(), "single", 10)
    with RawClient(cluster.brokers[_controller(cluster)].bootstrap) as client:
        answer = client.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, _alter("single", 0, [2]))
    assert answer["responses"][0]["partitions"][0]["error_code"] == 0
    _settled(cluster, "single", (1, 2, 3), lambda p: p["replica_nodes"] == [2] and p["leader_id"] == 2)
    _produce(cluster.bootstrap(), "single", 10)
    assert [v for _, v in _read(cluster.bootstrap(), "single", 0, 20)] == [b"r%d" % (i % 10) for i in range(20)]


def _normalized(text: str, data_dirs: list[str]) -> str:
    """A tool's output with what differs by construction replaced: data directories, ports."""
    for data_dir in data_dirs:
        text = text.replace(data_dir, "<dir>")
    return re.sub(r"127\.0\.0\.1:\d+", "<host>", text)


def test_the_tools_answer_as_against_kafka(cluster: Cluster, jvm: Any, tmp_path: Path) -> None:
    """The same commands against Apache Kafka 4.3.1 (one node, tests/kafka_ref.py) and a one-broker kbroker
    cluster, both node 1 with a one-partition topic: the same output, data directories aside."""
    from tests.kafka_ref import KafkaRef

    kafka = KafkaRef().start()
    try:
        _start(cluster, (1,))
        brokers = {"kbroker": cluster.brokers[1].bootstrap, "kafka": kafka.bootstrap}
        for bootstrap in brokers.values():
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic("cmp", 1, replication_factor=1)], operation_timeout=15)["cmp"].result(30)
        wait_until(lambda: _settled(cluster, "cmp", (1,), lambda p: True), what="cmp led on kbroker")
        same = _plan(tmp_path, {("cmp", 0): [1]})
        elsewhere = _plan(tmp_path, {("cmp", 0): [1, 9]})
        commands = [
            (REASSIGN, "--list"),
            (REASSIGN, "--execute", "--reassignment-json-file", same),
            (REASSIGN, "--verify", "--reassignment-json-file", same),
            (REASSIGN, "--cancel", "--reassignment-json-file", same),
            (ELECTION, "--election-type", "PREFERRED", "--topic", "cmp", "--partition", "0"),
            (ELECTION, "--election-type", "UNCLEAN", "--all-topic-partitions"),
        ]
        dirs = [str(cluster.brokers[1].data_dir), str(kafka._workdir) + "/data"]
        for main_class, *args in commands:
            outputs = {name: _normalized(run(jvm, main_class, b, *args), dirs) for name, b in brokers.items()}
            assert outputs["kbroker"] == outputs["kafka"], (args, outputs)
        # a replica on a broker that does not exist: the tool refuses it before asking either
        for bootstrap in brokers.values():
            status, out, err = jvm.run(
                REASSIGN, "--bootstrap-server", bootstrap, "--execute", "--reassignment-json-file", elsewhere
            )
            assert status == 1 and "Unknown broker id 9" in out + err, out + err
    finally:
        kafka.stop()


def test_a_broker_keeping_other_partitions_drops_the_moved_ones_records(cluster: Cluster) -> None:
    """[1, 2] to [2, 3] for partition 0 only: broker 1 keeps partition 1, and partition 0's log there (every
    broker holding a partition of a topic has a log for each) starts again empty."""
    _start(cluster)
    _create(cluster, "halves", {0: [1, 2], 1: [1, 2]})
    producer = _producer(cluster.bootstrap())
    for i in range(40):
        producer.produce("halves", value=b"h%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    with RawClient(cluster.brokers[_controller(cluster)].bootstrap) as client:
        answer = client.call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, _alter("halves", 0, [2, 3]))
    assert answer["responses"][0]["partitions"][0]["error_code"] == 0
    _settled(cluster, "halves", (1, 2, 3), lambda p: p["partition_index"] == 1 or p["replica_nodes"] == [2, 3])
    data_dir = cluster.brokers[1].data_dir

    def size(partition: int) -> int:
        return sum(f.stat().st_size for f in (data_dir / f"halves-{partition}").glob("*.log"))

    wait_until(lambda: size(0) == 0, what="partition 0's records gone from broker 1")
    assert size(1) > 0 and "replica_log_emptied" in cluster.brokers[1].log_text()
    assert [v for _, v in _read(cluster.bootstrap(), "halves", 0, 20)] == [b"h%d" % i for i in range(0, 40, 2)]
