"""The group and transaction coordinators on a 3-broker cluster (three kbroker processes, a real ZooKeeper):
__consumer_offsets and __transaction_state are cluster topics, FindCoordinator answers the leader of the
key's partition from every broker, members connected to different brokers form one group, a transactional
producer commits and aborts across partitions led by three brokers (markers sent to the other leaders,
verification asked of the coordinator), and when the coordinating broker is killed the group and the
transactional id move to the new leader of their internal partition. Clients: confluent-kafka, and raw
requests for the protocol answers."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.log.coordinator_log import partition_for
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import iter_batches
from scripts.zookeeper import ZooKeeperServer
from tests.broker.conftest import fetch, fetched_partition
from tests.broker.test_transactions import describe, offset_fetch, txn_offset_commit, txn_records
from tests.cluster.test_cluster_brokers import Cluster, _brokers_seen, _partitions, wait_until
from tests.process import RawClient

INTERNAL_PARTITIONS = 10
GROUP_KEY, TRANSACTION_KEY = 0, 1
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 15, 16


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    cluster.configs = {
        "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
        "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS),
        "group.initial.rebalance.delay.ms": "0",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    }
    try:
        for node_id in (1, 2, 3):
            cluster.start(node_id)
        wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
        yield cluster
    finally:
        cluster.stop_all()


def find_coordinator(cluster: Cluster, node_id: int, key_type: int, key: str) -> dict[str, Any]:
    with RawClient(cluster.brokers[node_id].bootstrap) as client:
        return client.call(ApiKey.FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})


def coordinator_of(
    cluster: Cluster, key_type: int, key: str, *, asked: tuple[int, ...] = (1, 2, 3), gone: int = -1
) -> int:
    """The coordinator every live broker in `asked` names (waiting out the creation of the internal topic,
    and the move away from a broker that is `gone`)."""

    def agreed() -> int | None:
        answers = {find_coordinator(cluster, n, key_type, key)["node_id"] for n in asked}
        return answers.pop() if len(answers) == 1 and not answers & {-1, gone} else None

    found: int = wait_until(agreed, what=f"one coordinator for {key}")
    return found


def leader_of(cluster: Cluster, node_id: int, topic: str, partition: int) -> int:
    return int(_partitions(cluster, node_id, topic)[partition]["leader_id"])


def create_topic(cluster: Cluster, name: str, partitions: int) -> dict[int, int]:
    """The topic, replication factor 3; its leaders once elected."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=3)])[name].result(20)
    parts = wait_until(
        lambda: (p := _partitions(cluster, 1, name)) and all(x["error_code"] == 0 for x in p.values()) and p,
        what=f"leaders of {name}",
    )
    return {index: entry["leader_id"] for index, entry in parts.items()}


def produce(bootstrap: str, topic: str, records: list[tuple[int, str]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition, value in records:
        producer.produce(topic, value=value.encode(), partition=partition)
    assert producer.flush(20) == 0


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str, until: Callable[[list[str]], bool]
) -> list[str]:
    """Every record value of the topic from the start, read until `until` holds and then one quiet second."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[str] = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not until(values):
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
        quiet = time.monotonic() + 1.0  # and nothing more arrives
        while time.monotonic() < quiet:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
    finally:
        consumer.close()
    return sorted(values)


def group_consumer(bootstrap: str, group: str, protocol: str = "classic") -> Consumer:
    timeouts = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500} if protocol == "classic" else {}
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **timeouts,
        }
    )


def consume_together(consumers: list[Consumer], expected: int, timeout: float = 30.0) -> dict[int, list[str]]:
    """Poll every consumer in turn until `expected` distinct records arrived and each has an assignment (a
    partition moved by a rebalance before any commit is read again from the start by its new owner)."""
    got: dict[int, list[str]] = {i: [] for i in range(len(consumers))}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            message = consumer.poll(0.05)
            if message is not None and message.error() is None:
                got[i].append(message.value().decode())
        if len({v for values in got.values() for v in values}) >= expected and all(c.assignment() for c in consumers):
            return got
    raise AssertionError(f"consumed {sum(map(len, got.values()))} of {expected}: {got}")


def describe_transaction(cluster: Cluster, node_id: int, transactional_id: str) -> dict[str, Any]:
    with RawClient(cluster.brokers[node_id].bootstrap) as client:
        answer = client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [transactional_id]})
    (state,) = answer["transaction_states"]
    assert state["error_code"] == 0, state
    return dict(state)


def read_to_values(consumer: Consumer, wanted: set[str]) -> dict[int, int]:
    """Poll until the records with these values arrived; per partition, the offset after the last of them."""
    ends: dict[int, int] = {}
    seen: set[str] = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not wanted <= seen:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None and message.value().decode() in wanted:
            seen.add(message.value().decode())
            ends[message.partition()] = max(ends.get(message.partition(), 0), message.offset() + 1)
    assert wanted <= seen, (wanted, seen)
    return ends


def commit_offsets(consumer: Consumer, ends: dict[int, int]) -> None:
    """Commit these offsets of `work`, retried while the member rejoins or the coordinator moves."""
    offsets = [TopicPartition("work", p, offset) for p, offset in sorted(ends.items())]
    deadline = time.monotonic() + 20
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            consumer.poll(0.2)


def committed_offsets(bootstrap: str, group: str) -> dict[int, int]:
    checker = group_consumer(bootstrap, group)
    try:
        offsets = checker.committed([TopicPartition("work", p) for p in range(3)], timeout=15)
    finally:
        checker.close()
    return {tp.partition: tp.offset for tp in offsets if tp.offset >= 0}


def high_watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(3)}
    finally:
        consumer.close()


def test_internal_topics_are_cluster_topics_and_find_coordinator_names_their_leaders(cluster: Cluster) -> None:
    group_coordinator = coordinator_of(cluster, GROUP_KEY, "g-find")
    txn_coordinator = coordinator_of(cluster, TRANSACTION_KEY, "t-find")
    offsets = _partitions(cluster, 2, "__consumer_offsets")
    states = _partitions(cluster, 3, "__transaction_state")
    assert len(offsets) == len(states) == INTERNAL_PARTITIONS
    assert all(len(p["replica_nodes"]) == 3 for p in [*offsets.values(), *states.values()])
    assert group_coordinator == offsets[partition_for("g-find", INTERNAL_PARTITIONS)]["leader_id"]
    assert txn_coordinator == states[partition_for("t-find", INTERNAL_PARTITIONS)]["leader_id"]
    answer = find_coordinator(cluster, 1, GROUP_KEY, "g-find")
    assert answer["port"] == cluster.brokers[group_coordinator].port  # the leader's address on this listener
    # another broker refuses the group's requests
    other = next(n for n in (1, 2, 3) if n != group_coordinator)
    with RawClient(cluster.brokers[other].bootstrap) as client:
        fetched = client.call(ApiKey.OFFSET_FETCH, 7, {"group_id": "g-find", "topics": None, "require_stable": False})
    assert fetched["error_code"] == NOT_COORDINATOR
    elsewhere = next(n for n in (1, 2, 3) if n != txn_coordinator)
    with RawClient(cluster.brokers[elsewhere].bootstrap) as client:
        body = {"transactional_id": "t-find", "transaction_timeout_ms": 10_000, "producer_id": -1, "producer_epoch": -1}
        assert client.call(ApiKey.INIT_PRODUCER_ID, 4, body)["error_code"] == NOT_COORDINATOR


def test_internal_topic_waits_for_as_many_brokers_as_its_replication_factor(
    zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path
) -> None:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    cluster.configs = {"offsets.topic.num.partitions": str(INTERNAL_PARTITIONS)}
    try:
        for node_id in (1, 2):
            cluster.start(node_id)
        wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2], what="two brokers registered")
        for _ in range(3):  # as Kafka: offsets.topic.replication.factor 3 is not met by two live brokers
            assert find_coordinator(cluster, 1, GROUP_KEY, "early")["error_code"] == COORDINATOR_NOT_AVAILABLE
            time.sleep(0.3)
        assert _partitions(cluster, 2, "__consumer_offsets") == {}
        assert "internal_topic_not_created" in cluster.brokers[1].log_text()
        cluster.start(3)
        coordinator = coordinator_of(cluster, GROUP_KEY, "early")
        offsets = _partitions(cluster, 1, "__consumer_offsets")
        assert coordinator == offsets[partition_for("early", INTERNAL_PARTITIONS)]["leader_id"]
        assert {len(p["replica_nodes"]) for p in offsets.values()} == {3}
    finally:
        cluster.stop_all()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_members_on_three_brokers_rebalance_and_commit_through_one_coordinator(cluster: Cluster, protocol: str) -> None:
    create_topic(cluster, "events", 6)
    produce(cluster.bootstrap(), "events", [(i % 6, f"e{i}") for i in range(60)])
    coordinator = coordinator_of(cluster, GROUP_KEY, "spread")
    consumers = [group_consumer(cluster.brokers[n].bootstrap, "spread", protocol) for n in (1, 2, 3)]
    try:
        for consumer in consumers:
            consumer.subscribe(["events"])
        got = consume_together(consumers, 60)
        assert {v for values in got.values() for v in values} == {f"e{i}" for i in range(60)}

        # one group: every partition once, each owner at its end (the consumer protocol may still be moving
        # a partition; its new owner reads it again from the start, nothing being committed yet)
        def settled() -> bool:
            for consumer in consumers:
                consumer.poll(0.05)
            owned = [tp for c in consumers for tp in c.position(c.assignment())]
            return sorted(tp.partition for tp in owned) == list(range(6)) and all(tp.offset == 10 for tp in owned)

        wait_until(settled, what="every partition assigned once and read to its end")
        for consumer in consumers:
            consumer.commit(asynchronous=False)
    finally:
        for consumer in consumers:
            consumer.close()
    checker = group_consumer(cluster.brokers[coordinator % 3 + 1].bootstrap, "spread")
    try:
        committed = checker.committed([TopicPartition("events", p) for p in range(6)], timeout=15)
    finally:
        checker.close()
    assert {tp.partition: tp.offset for tp in committed} == dict.fromkeys(range(6), 10)


def test_transactions_over_partitions_led_by_three_brokers(cluster: Cluster) -> None:
    leaders = create_topic(cluster, "payments", 3)
    assert sorted(leaders.values()) == [1, 2, 3]  # the markers go to all three brokers
    coordinator = coordinator_of(cluster, TRANSACTION_KEY, "payer")
    producer = Producer({"bootstrap.servers": cluster.brokers[1].bootstrap, "transactional.id": "payer"})
    producer.init_transactions(30)
    group = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "payments-app"})
    try:
        for tag, commit in (("a", True), ("b", False), ("c", True)):
            producer.begin_transaction()
            for partition in range(3):
                producer.produce("payments", value=f"{tag}{partition}".encode(), partition=partition)
            if tag == "c":  # offsets in the transaction: TxnOffsetCommit through the group's coordinator
                offsets = [TopicPartition("payments", 0, 42)]
                producer.send_offsets_to_transaction(offsets, group.consumer_group_metadata(), 20)
            assert producer.flush(20) == 0  # sent before the outcome (librdkafka drops unsent records on abort)
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        committed = group.committed([TopicPartition("payments", 0)], timeout=15)
    finally:
        group.close()
    assert committed[0].offset == 42
    expected = ["a0", "a1", "a2", "c0", "c1", "c2"]
    assert read_all(cluster.bootstrap(), "payments", 3, "read_committed", lambda seen: len(seen) >= 6) == expected
    everything = read_all(cluster.bootstrap(), "payments", 3, "read_uncommitted", lambda seen: len(seen) >= 9)
    assert everything == sorted([*expected, "b0", "b1", "b2"])
    assert coordinator in (1, 2, 3)


def test_group_and_transactions_move_when_their_coordinator_is_killed(cluster: Cluster) -> None:
    create_topic(cluster, "work", 3)
    coordinator = coordinator_of(cluster, GROUP_KEY, "workers")
    states = wait_until(lambda: (p := _partitions(cluster, 1, "__consumer_offsets")) and len(p) == 10 and p)
    coordinator_of(cluster, TRANSACTION_KEY, "warm-up")  # creates __transaction_state
    txn_leaders = wait_until(lambda: (p := _partitions(cluster, 1, "__transaction_state")) and len(p) == 10 and p)
    # a transactional id coordinated by the same broker as the group
    txn_id = next(
        f"mover-{i}"
        for i in range(1000)
        if txn_leaders[partition_for(f"mover-{i}", INTERNAL_PARTITIONS)]["leader_id"] == coordinator
    )
    assert states[partition_for("workers", INTERNAL_PARTITIONS)]["leader_id"] == coordinator
    survivors = tuple(n for n in (1, 2, 3) if n != coordinator)
    seed = cluster.brokers[survivors[0]].bootstrap

    producer = Producer({"bootstrap.servers": seed, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for partition in range(3):
        producer.produce("work", value=f"before{partition}".encode(), partition=partition)
    producer.commit_transaction(30)
    before = describe_transaction(cluster, coordinator, txn_id)
    consumer = group_consumer(seed, "workers")
    consumer.subscribe(["work"])
    before_ends = read_to_values(consumer, {f"before{p}" for p in range(3)})
    commit_offsets(consumer, before_ends)

    cluster.brokers[coordinator].kill()
    started = time.monotonic()
    assert coordinator_of(cluster, GROUP_KEY, "workers", asked=survivors, gone=coordinator) in survivors
    new_txn_coordinator = coordinator_of(cluster, TRANSACTION_KEY, txn_id, asked=survivors, gone=coordinator)
    assert new_txn_coordinator in survivors
    assert time.monotonic() - started < 10  # the ZooKeeper session (2 s) expires, the controller elects

    # the group goes on with the new coordinator: the member rejoins, consumes and commits
    wait_until(
        lambda: coordinator not in {leader_of(cluster, survivors[0], "work", p) for p in range(3)},
        what="new leaders of work",
    )
    # the partitions' data and the coordinators' state (their internal partitions) survived the failover:
    # followers replicated both before the kill
    assert all(end >= before_ends[p] for p, end in high_watermarks(seed, "work").items())
    assert committed_offsets(seed, "workers") == before_ends
    produce(seed, "work", [(p, f"after{p}") for p in range(3)])
    ends = read_to_values(consumer, {f"after{p}" for p in range(3)})  # (a rebalance may repeat some records)
    commit_offsets(consumer, ends)  # through the new coordinator
    consumer.close()
    assert committed_offsets(seed, "workers") == ends

    # the transactional id is served by the new coordinator: a new producer fences the old one and commits
    successor = Producer({"bootstrap.servers": seed, "transactional.id": txn_id})
    successor.init_transactions(30)
    successor.begin_transaction()
    for partition in range(3):
        successor.produce("work", value=f"txn-after{partition}".encode(), partition=partition)
    successor.commit_transaction(30)
    after = describe_transaction(cluster, new_txn_coordinator, txn_id)
    assert after["transaction_state"] == "CompleteCommit"
    # the id's state moved with its partition: the successor bumped the same producer's epoch
    assert after["producer_id"] == before["producer_id"]
    assert after["producer_epoch"] > before["producer_epoch"]
    in_txn = {"txn-after0", "txn-after1", "txn-after2"}
    assert in_txn <= set(read_all(seed, "work", 3, "read_committed", until=lambda seen: in_txn <= set(seen)))


def test_transactions_v2_add_partitions_through_another_brokers_coordinator(cluster: Cluster) -> None:
    """Produce v12 and TxnOffsetCommit v5 on brokers that do not coordinate the transaction: they add their
    partition with AddPartitionsToTxn v5 to the coordinator (what the Java producer 4.x makes them do), and a
    v11 batch outside the transaction is refused after asking it (verify_only)."""
    leaders = create_topic(cluster, "tv2", 3)
    txn_id, coordinator = "tv2-app", coordinator_of(cluster, TRANSACTION_KEY, "tv2-app")
    group = next(
        g for g in (f"tv2-group-{i}" for i in range(100)) if coordinator_of(cluster, GROUP_KEY, g) != coordinator
    )
    group_coordinator = coordinator_of(cluster, GROUP_KEY, group)

    def client(node_id: int) -> RawClient:
        return RawClient(cluster.brokers[node_id].bootstrap)

    with client(coordinator) as raw:
        body = {"transactional_id": txn_id, "transaction_timeout_ms": 60_000}
        answer = raw.call(ApiKey.INIT_PRODUCER_ID, 5, body)
    assert answer["error_code"] == 0
    pid, epoch = answer["producer_id"], answer["producer_epoch"]

    def produce_to(partition: int, value: str, producer_epoch: int, version: int = 12, seq: int = 0) -> int:
        records = txn_records(pid, producer_epoch, seq, value)
        body = {
            "transactional_id": txn_id,
            "acks": -1,
            "timeout_ms": 5000,
            "topic_data": [{"name": "tv2", "partition_data": [{"index": partition, "records": records}]}],
        }
        with client(leaders[partition]) as raw:
            reply = raw.call(ApiKey.PRODUCE, version, body)
        return int(reply["responses"][0]["partition_responses"][0]["error_code"])

    remote = next(p for p, leader in leaders.items() if leader != coordinator)
    assert produce_to(remote, "early", epoch, version=11) == E.INVALID_TXN_STATE  # verified with the coordinator
    for partition in range(3):
        assert produce_to(partition, f"v{partition}", epoch) == E.NONE
    with client(group_coordinator) as raw:
        assert txn_offset_commit(raw, txn_id, pid, epoch, group, "tv2", version=5) == E.NONE
    with client(coordinator) as raw:
        state = describe(raw, txn_id)
        assert state["transaction_state"] == "Ongoing"
        assert len([p for t in state["topics"] for p in t["partitions"]]) == 4  # 3 + the group's offsets partition
        body = {"transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "committed": True}
        ended = raw.call(ApiKey.END_TXN, 5, body)
        assert (ended["error_code"], ended["producer_epoch"]) == (E.NONE, epoch + 1)
        wait_until(lambda: describe(raw, txn_id)["transaction_state"] == "CompleteCommit")
    for partition in range(3):  # each leader holds the batch and its COMMIT marker (with the bumped epoch)
        with client(leaders[partition]) as raw:
            found = fetched_partition(fetch(raw, [("tv2", partition, 0)]), "tv2", partition)
        batches = list(iter_batches(bytes(found["records"] or b"")))
        assert [(b.is_control, b.producer_epoch) for b in batches] == [(False, epoch), (True, epoch + 1)]
    with client(group_coordinator) as raw:
        assert offset_fetch(raw, group, "tv2") == 11
    assert produce_to(remote, "late", epoch, seq=1) == E.INVALID_PRODUCER_EPOCH  # the finished epoch is fenced


def test_kafkas_tools_find_the_group_and_the_transaction_from_any_broker(cluster: Cluster) -> None:
    """kafka-consumer-groups and kafka-transactions (Kafka 4.3's tools), bootstrapped at a broker that
    coordinates neither, find the coordinators and describe what they hold."""
    from tests.tools.test_kafka_tools import ToolJvm, tools_classpath

    create_topic(cluster, "tooled", 3)
    produce(cluster.bootstrap(), "tooled", [(p, f"t{p}") for p in range(3)])
    group_coordinator = coordinator_of(cluster, GROUP_KEY, "tool-group")
    txn_id = next(
        t
        for t in (f"tool-txn-{i}" for i in range(100))
        if coordinator_of(cluster, TRANSACTION_KEY, t) != group_coordinator
    )
    txn_coordinator = coordinator_of(cluster, TRANSACTION_KEY, txn_id)
    seed = next(n for n in (1, 2, 3) if n not in (group_coordinator, txn_coordinator))
    consumer = group_consumer(cluster.bootstrap(), "tool-group")
    consumer.assign([TopicPartition("tooled", p, 0) for p in range(3)])
    consumer.commit(offsets=[TopicPartition("tooled", p, p + 1) for p in range(3)], asynchronous=False)
    consumer.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("tooled", value=b"open", partition=0)
    assert producer.flush(20) == 0  # left open: the tool sees it Ongoing

    jvm = ToolJvm(tools_classpath())
    try:
        bootstrap = cluster.brokers[seed].bootstrap
        status, out, err = jvm.run(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            "tool-group",
        )
        assert status == 0, out + err
        rows = [line.split() for line in out.splitlines() if line.startswith("tool-group")]
        assert sorted((r[1], r[2], r[3]) for r in rows) == [("tooled", str(p), str(p + 1)) for p in range(3)]
        status, out, err = jvm.run(
            "org.apache.kafka.tools.TransactionsCommand",
            "--bootstrap-server",
            bootstrap,
            "describe",
            "--transactional-id",
            txn_id,
        )
        assert status == 0, out + err
        assert f"{txn_coordinator}" in out.split() and "Ongoing" in out, out
    finally:
        jvm.close()
        producer.abort_transaction(30)


def test_java_exactly_once_copier_across_the_cluster(cluster: Cluster) -> None:
    """Kafka 4.3's TransactionalMessageCopier (the Java consumer in a group and the Java producer with
    transactions v2, random aborts included) copies a topic whose partitions three brokers lead: the
    read_committed output holds every input record exactly once and the group's offsets are at the end."""
    from tests.tools.test_kafka_tools import JVM, tools_classpath

    for name in ("copy-in", "copy-out"):
        assert sorted(create_topic(cluster, name, 3).values()) == [1, 2, 3]
    inputs = [f"r{i}" for i in range(60)]
    produce(cluster.bootstrap(), "copy-in", [(i % 3, value) for i, value in enumerate(inputs)])
    command = [
        *JVM,
        "-cp",
        tools_classpath(),
        "org.apache.kafka.tools.TransactionalMessageCopier",
        "--broker-list",
        cluster.brokers[1].bootstrap,
        "--input-topic",
        "copy-in",
        "--input-partition",
        "0",
        "--output-topic",
        "copy-out",
        "--transactional-id",
        "copier",
        "--consumer-group",
        "copiers",
        "--max-messages",
        "60",
        "--transaction-size",
        "10",
        "--group-mode",
        "--use-group-metadata",
        "--enable-random-aborts",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-2000:]
    copied = read_all(cluster.bootstrap(), "copy-out", 3, "read_committed", lambda seen: len(seen) >= 60)
    assert copied == sorted(inputs)
    checker = group_consumer(cluster.bootstrap(), "copiers")
    try:
        offsets = checker.committed([TopicPartition("copy-in", p) for p in range(3)], timeout=15)
    finally:
        checker.close()
    assert {tp.partition: tp.offset for tp in offsets} == dict.fromkeys(range(3), 20)
