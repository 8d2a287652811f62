"""Replication between three real kbroker processes (ZooKeeper mode), through confluent-kafka:
- acks=all from an idempotent producer survives kill -9 of the leader: every acknowledged record is on the new
  leader at the offset it was acknowledged with, none twice, in order; a consumer group carries on from its
  committed offsets;
- a stopped follower leaves the ISR after replica.lag.time.max.ms; with two of three replicas down acks=all is
  refused (NOT_ENOUGH_REPLICAS) while acks=1 is not; restarted followers rejoin the ISR; a waiting acks=all
  write times out (REQUEST_TIMED_OUT) or, when the ISR shrinks below min.insync.replicas meanwhile, fails
  after its append (NOT_ENOUGH_REPLICAS_AFTER_APPEND);
- a former leader that returns with records its followers never had truncates them: its log equals the new
  leader's;
- a follower whose log end the leader's log start passed (DeleteRecords while it was down) starts again at
  the leader's log start, and the other follower follows the leader's log start."""

from __future__ import annotations

import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.record_builder import SimpleRecord, build_record_batch
from scripts.zookeeper import ZooKeeperServer
from tests.cluster.test_cluster_brokers import Cluster, _brokers_seen, _partitions, wait_until
from tests.process import RawClient

PARTITIONS = 3
LAG_TIME_MS = 1500


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    cluster.configs = {"replica.fetch.backoff.ms": "200", "replica.fetch.wait.max.ms": "200"}
    try:
        yield cluster
    finally:
        cluster.stop_all()


def _start(cluster: Cluster, **configs: str) -> None:
    cluster.configs.update(configs)
    for node_id in (1, 2, 3):
        cluster.start(node_id)
    wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")


def _create(cluster: Cluster, name: str, partitions: int = PARTITIONS) -> dict[int, dict[str, Any]]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = NewTopic(name, num_partitions=partitions, replication_factor=3, config={"min.insync.replicas": "2"})
    admin.create_topics([topic])[name].result(20)
    return _settled(cluster, name, (1, 2, 3), lambda p: len(p["isr_nodes"]) == 3)


def _settled(cluster: Cluster, name: str, nodes: tuple[int, ...], check: Any) -> dict[int, dict[str, Any]]:
    """The topic's partitions once every broker in `nodes` shows each with a leader and `check` true."""

    def ready() -> dict[int, dict[str, Any]] | None:
        seen = None
        for node in nodes:
            parts = _partitions(cluster, node, name)
            if not all(p["error_code"] == 0 and p["leader_id"] >= 0 and check(p) for p in parts.values()):
                return None
            seen = parts
        return seen

    found: dict[int, dict[str, Any]] = wait_until(ready, timeout=40, what=f"{name} settled on {nodes}")
    return found


def _producer(bootstrap: str, **more: Any) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 60000,
            **more,
        }
    )


def _read(bootstrap: str, topic: str, partition: int, end: int, start: int = 0) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of the partition from `start` and below `end`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, start)])
    found: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 30
    try:
        while (not found or found[-1][0] < end - 1) and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    found.append((message.offset(), message.value()))
    finally:
        consumer.close()
    return found


def _stopped(pid: int) -> bool:
    """The process is stopped (SIGSTOP has taken effect)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def _end_offsets(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def test_acks_all_survives_the_leaders_kill(cluster: Cluster) -> None:
    _start(cluster)
    parts = _create(cluster, "ledger")
    acked: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
    failures: list[str] = []

    def delivered(error: KafkaError | None, message: Any) -> None:
        if error is not None:
            failures.append(str(error))
        else:
            acked[message.partition()].append((message.offset(), message.value()))

    producer = _producer(cluster.bootstrap())
    sent = 0

    def send(count: int) -> None:
        nonlocal sent
        for _ in range(count):
            producer.produce("ledger", value=f"v-{sent}".encode(), partition=sent % PARTITIONS, on_delivery=delivered)
            sent += 1
            producer.poll(0)

    # a group member consumes and commits part of it before the failover
    member = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": "ledger-readers",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    member.subscribe(["ledger"])
    consumed: list[bytes] = []
    try:
        send(900)
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        while len(consumed) < 600 and time.monotonic() < deadline:
            consumed += [m.value() for m in member.consume(200, 0.5) if m.error() is None]
        member.commit(asynchronous=False)
        # more in flight as the leader of partition 0 dies: each one is acknowledged exactly once or retried
        victim = parts[0]["leader_id"]
        send(300)
        producer.poll(0.05)
        cluster.brokers[victim].kill()
        send(600)
        assert producer.flush(60) == 0, "records not acknowledged after the failover"
        assert not failures, failures[:3]
        survivors = tuple(n for n in (1, 2, 3) if n != victim)
        new = _settled(cluster, "ledger", survivors, lambda p: victim not in p["isr_nodes"])
        assert new[0]["leader_id"] != victim
        bootstrap = cluster.bootstrap(victim)
        ends = _end_offsets(bootstrap, "ledger")
        for partition in range(PARTITIONS):
            stored = _read(bootstrap, "ledger", partition, ends[partition])
            values = [v for _, v in stored]
            assert len(values) == len(set(values)), f"partition {partition}: a record stored twice"
            assert sorted(acked[partition]) == [x for x in stored if x in set(acked[partition])], partition
            assert set(acked[partition]) <= set(stored), f"partition {partition}: acknowledged records lost"
            numbers = [int(v.split(b"-")[1]) for v in values]
            assert numbers == sorted(numbers), f"partition {partition}: order not kept"
        assert sum(len(a) for a in acked.values()) == sent == 1800
        # the member carries on past its committed offsets, on the surviving brokers
        deadline = time.monotonic() + 60
        while len(set(consumed)) < sent and time.monotonic() < deadline:
            consumed += [m.value() for m in member.consume(500, 0.5) if m.error() is None]
        assert len(set(consumed)) == sent
        member.commit(asynchronous=False)
        committed = member.committed([TopicPartition("ledger", p) for p in range(PARTITIONS)], timeout=10)
        assert {c.partition: c.offset for c in committed} == ends
    finally:
        member.close()


def _replication_metrics(cluster: Cluster, node_id: int, topic: str) -> tuple[float, float, float]:
    """(under-replicated partitions, under-min-ISR partitions, the ISR size of `topic`-0) from the broker's
    /metrics, parsed by prometheus_client."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.http_port(node_id)}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {(s.name, s.labels.get("topic"), s.labels.get("partition")): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip
    return (
        samples[("kbroker_under_replicated_partitions", None, None)],
        samples[("kbroker_under_min_isr_partitions", None, None)],
        samples.get(("kbroker_partition_in_sync_replicas", topic, "0"), -1),
    )


def test_isr_shrinks_and_expands_with_followers(cluster: Cluster) -> None:
    # sessions outlive a paused follower: only the leader's lag check takes it out of the ISR
    cluster.http = True  # the leader's /metrics follows the ISR
    _start(cluster, **{"replica.lag.time.max.ms": str(LAG_TIME_MS), "zookeeper.session.timeout.ms": "8000"})
    parts = _create(cluster, "isr", partitions=1)
    leader = parts[0]["leader_id"]
    followers = [n for n in (1, 2, 3) if n != leader]
    assert wait_until(lambda: _replication_metrics(cluster, leader, "isr")[2] == 3, what="isr of 3 in /metrics")
    producer = _producer(cluster.brokers[leader].bootstrap, **{"message.timeout.ms": 10000})
    producer.produce("isr", value=b"before", partition=0)
    assert producer.flush(20) == 0
    # one follower stopped: it leaves the ISR after the lag time; acks=all goes on with two
    cluster.brokers[followers[0]].kill()
    _settled(cluster, "isr", (leader,), lambda p: sorted(p["isr_nodes"]) == sorted([leader, followers[1]]))
    under, under_min, isr = _replication_metrics(cluster, leader, "isr")
    assert isr == 2 and under >= 1 and under_min == 0
    producer.produce("isr", value=b"two-in-sync", partition=0)
    assert producer.flush(20) == 0
    # the second one paused (its session lives on: only the leader's lag check removes it)
    process = cluster.brokers[followers[1]].proc
    assert process is not None
    process.send_signal(signal.SIGSTOP)
    try:
        _settled(cluster, "isr", (leader,), lambda p: p["isr_nodes"] == [leader])
        under, under_min, isr = _replication_metrics(cluster, leader, "isr")
        assert isr == 1 and under >= 1 and under_min >= 1  # min.insync.replicas is 2
        errors: list[KafkaError] = []
        strict = Producer({"bootstrap.servers": cluster.brokers[leader].bootstrap, "acks": "all", "retries": 0})
        strict.produce("isr", value=b"refused", partition=0, on_delivery=lambda e, m: errors.append(e))
        strict.flush(20)
        assert [e.code() if e else None for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
        loose = Producer({"bootstrap.servers": cluster.brokers[leader].bootstrap, "acks": "1"})
        loose.produce("isr", value=b"acks-1", partition=0)
        assert loose.flush(20) == 0
    finally:
        process.send_signal(signal.SIGCONT)
    cluster.start(followers[0])
    _settled(cluster, "isr", (1, 2, 3), lambda p: sorted(p["isr_nodes"]) == [1, 2, 3])
    # every partition the leader leads catches up again (internal topics' too): nothing under-replicated
    wait_until(lambda: _replication_metrics(cluster, leader, "isr") == (0, 0, 3), what="no under-replicated partition")
    producer.produce("isr", value=b"all-back", partition=0)
    assert producer.flush(20) == 0
    stored = [v for _, v in _read(cluster.brokers[leader].bootstrap, "isr", 0, 4)]
    assert stored == [b"before", b"two-in-sync", b"acks-1", b"all-back"]


def test_a_returning_leader_truncates_what_only_it_had(cluster: Cluster) -> None:
    _start(cluster, **{"zookeeper.session.timeout.ms": "8000"})  # paused followers keep their sessions
    parts = _create(cluster, "diverge", partitions=1)
    old = parts[0]["leader_id"]
    followers = [n for n in (1, 2, 3) if n != old]
    producer = _producer(cluster.brokers[old].bootstrap)
    for i in range(50):
        producer.produce("diverge", value=f"shared-{i}".encode(), partition=0)
    assert producer.flush(20) == 0
    # the followers paused (still in the ISR: the lag time is 30 s), the leader takes records only it has
    paused = [cluster.brokers[n].proc for n in followers]
    for process in paused:
        assert process is not None
        process.send_signal(signal.SIGSTOP)
    try:
        for process in paused:
            assert process is not None
            wait_until(lambda p=process: _stopped(p.pid), what="follower stopped")
        alone = Producer({"bootstrap.servers": cluster.brokers[old].bootstrap, "acks": "1"})
        # a probe first: it answers whatever fetch of a follower was waiting or unread at the leader, so no
        # follower fetch is left there to carry the records after it
        alone.produce("diverge", value=b"probe", partition=0)
        assert alone.flush(20) == 0
        for i in range(20):
            alone.produce("diverge", value=f"lost-{i}".encode(), partition=0)
        assert alone.flush(20) == 0
        assert _end_offsets(cluster.brokers[old].bootstrap, "diverge", 1)[0] == 50  # the HW did not move
        cluster.brokers[old].kill()
    finally:
        for process in paused:
            assert process is not None
            process.send_signal(signal.SIGCONT)
    new = _settled(cluster, "diverge", tuple(followers), lambda p: p["leader_id"] in followers)
    leader = new[0]["leader_id"]
    writer = _producer(cluster.brokers[leader].bootstrap)
    for i in range(30):
        writer.produce("diverge", value=f"after-{i}".encode(), partition=0)
    assert writer.flush(30) == 0
    cluster.start(old)
    _settled(cluster, "diverge", (1, 2, 3), lambda p: sorted(p["isr_nodes"]) == [1, 2, 3])
    ends = _end_offsets(cluster.brokers[leader].bootstrap, "diverge", 1)[0]
    expected = _read(cluster.brokers[leader].bootstrap, "diverge", 0, ends)
    values = [v for _, v in expected]
    if b"probe" in values:  # (it may have reached the followers before they stopped)
        values.remove(b"probe")
    assert values == [f"shared-{i}".encode() for i in range(50)] + [f"after-{i}".encode() for i in range(30)]
    # OffsetForLeaderEpoch, as a replica asks it: epoch 0 ends where the new leader's epoch began
    epoch_end = next(offset for offset, value in expected if value.startswith(b"after-"))
    body = {
        "replica_id": old,
        "topics": [
            {"topic": "diverge", "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}
        ],
    }
    with RawClient(cluster.brokers[leader].bootstrap) as raw:
        (answer,) = raw.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, body)["topics"][0]["partitions"]
    assert (answer["error_code"], answer["leader_epoch"], answer["end_offset"]) == (0, 0, epoch_end)
    # the former leader, made the only replica left, serves the new leader's log: nothing of its lost suffix
    for node in (1, 2, 3):
        if node != old:
            cluster.brokers[node].kill()
    _settled(cluster, "diverge", (old,), lambda p: p["leader_id"] == old)
    assert _read(cluster.brokers[old].bootstrap, "diverge", 0, ends) == expected
    assert _end_offsets(cluster.brokers[old].bootstrap, "diverge", 1)[0] == ends


def test_a_follower_behind_the_leaders_log_start_starts_again_there(cluster: Cluster) -> None:
    _start(cluster)
    parts = _create(cluster, "trimmed", partitions=1)
    leader = parts[0]["leader_id"]
    away, staying = (n for n in (1, 2, 3) if n != leader)
    producer = _producer(cluster.brokers[leader].bootstrap)
    for i in range(30):
        producer.produce("trimmed", value=f"early-{i}".encode(), partition=0)
    assert producer.flush(20) == 0
    cluster.brokers[away].kill()
    _settled(cluster, "trimmed", (leader,), lambda p: away not in p["isr_nodes"])
    for i in range(30):
        producer.produce("trimmed", value=f"late-{i}".encode(), partition=0)
    assert producer.flush(20) == 0
    # the leader's log start passes the stopped follower's log end (30)
    admin = AdminClient({"bootstrap.servers": cluster.brokers[leader].bootstrap})
    deleted = admin.delete_records([TopicPartition("trimmed", 0, 50)])
    assert next(iter(deleted.values())).result(20).low_watermark == 50
    cluster.start(away)
    _settled(cluster, "trimmed", (1, 2, 3), lambda p: sorted(p["isr_nodes"]) == [1, 2, 3])
    expected = [(50 + i, f"late-{20 + i}".encode()) for i in range(10)]
    # each follower in turn made the only replica left: both hold the leader's log from its log start
    cluster.brokers[leader].kill()
    first = _settled(cluster, "trimmed", (away, staying), lambda p: p["leader_id"] in (away, staying))[0]["leader_id"]
    second = staying if first == away else away
    for node in (first, second):
        if node == second:
            cluster.brokers[first].kill()
            _settled(cluster, "trimmed", (second,), lambda p: p["leader_id"] == second)
        bootstrap = cluster.brokers[node].bootstrap
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "marks"})
        try:
            marks = wait_until(lambda c=consumer: _marks(c), what=f"watermarks on {node}")
        finally:
            consumer.close()
        assert marks == (50, 60), node
        assert _read(bootstrap, "trimmed", 0, 60, start=50) == expected, node


def _marks(consumer: Consumer) -> tuple[int, int] | None:
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=5)
    except Exception:  # noqa: BLE001 - a new leader answers OFFSET_NOT_AVAILABLE until its HW is back
        return None
    return (low, high) if high == 60 else None


def _produce_raw(bootstrap: str, value: bytes, timeout_ms: int) -> int:
    """One acks=all Produce v9 of one record to partition 0 of "waits", bounded by `timeout_ms`: its error code."""
    batch = build_record_batch([SimpleRecord(value=value)])
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": "waits", "partition_data": [{"index": 0, "records": batch}]}],
    }
    with RawClient(bootstrap) as raw:
        (topic,) = raw.call(ApiKey.PRODUCE, 9, body)["responses"]
    return int(topic["partition_responses"][0]["error_code"])


def test_acks_all_answers_as_the_isr_allows(cluster: Cluster) -> None:
    """With both followers paused: REQUEST_TIMED_OUT after the request's timeout, then (the ISR shrinking to the
    leader while it waits) NOT_ENOUGH_REPLICAS_AFTER_APPEND, then NOT_ENOUGH_REPLICAS before any append."""
    lag = {"replica.lag.time.max.ms": "5000", "zookeeper.session.timeout.ms": "12000"}  # sessions outlive the lag
    _start(cluster, **lag)
    parts = _create(cluster, "waits", partitions=1)
    leader = parts[0]["leader_id"]
    bootstrap = cluster.brokers[leader].bootstrap
    assert _produce_raw(bootstrap, b"replicated", 5000) == ErrorCode.NONE
    paused = [cluster.brokers[n].proc for n in (1, 2, 3) if n != leader]
    for process in paused:
        assert process is not None
        process.send_signal(signal.SIGSTOP)
    try:
        for process in paused:
            assert process is not None
            wait_until(lambda p=process: _stopped(p.pid), what="follower stopped")
        assert _produce_raw(bootstrap, b"timed-out", 300) == ErrorCode.REQUEST_TIMED_OUT
        assert _partitions(cluster, leader, "waits")[0]["isr_nodes"] != [leader]  # (the lag time is not over)
        assert _produce_raw(bootstrap, b"isr-shrank", 20000) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        _settled(cluster, "waits", (leader,), lambda p: p["isr_nodes"] == [leader])  # as written in ZooKeeper
        assert _produce_raw(bootstrap, b"refused", 5000) == ErrorCode.NOT_ENOUGH_REPLICAS
    finally:
        for process in paused:
            assert process is not None
            process.send_signal(signal.SIGCONT)
    _settled(cluster, "waits", (1, 2, 3), lambda p: sorted(p["isr_nodes"]) == [1, 2, 3])
    # the appended ones stay (acks=all failing after the append does not remove it, as in Kafka); the refused one
    # was never appended
    assert [v for _, v in _read(bootstrap, "waits", 0, 3)] == [b"replicated", b"timed-out", b"isr-shrank"]
