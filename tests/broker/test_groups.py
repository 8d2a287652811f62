"""Consumer groups against a real kbroker: raw protocol, then librdkafka, kafka-python and aiokafka clients.

Every test uses its own group and topic names, so the module's broker is shared.
Restart tests start their own broker on their own data directory.

With KBROKER_BOOTSTRAP=host:port the shared tests run against that broker instead, to
check that they encode Apache Kafka's behaviour (`tests/kafka_ref.py exec -- .venv/bin/python
-m pytest tests/broker/test_groups.py`); tests that need a kbroker of their own are skipped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.process import BrokerProcess, RawClient

E = ErrorCode
# Short sessions so tests of dead members run in seconds; few offsets partitions so a start is quick.
GROUP_ARGS = (
    "--config",
    "group.min.session.timeout.ms=1000",
    "--config",
    "offsets.topic.num.partitions=5",
)
SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"  # ConsumerProtocol v0, topic "t"


EXTERNAL = os.environ.get("KBROKER_BOOTSTRAP")
own_broker_only = pytest.mark.skipif(EXTERNAL is not None, reason="needs a kbroker of its own (restarts, settings)")


class ExternalBroker:
    """The broker named by KBROKER_BOOTSTRAP, shaped like a BrokerProcess for these tests."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.port = int(bootstrap.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if EXTERNAL is not None:
        yield _coordinator_ready(ExternalBroker(EXTERNAL))
        return
    process = BrokerProcess(tmp_path_factory.mktemp("groups") / "data", *GROUP_ARGS).start()
    try:
        yield process
    finally:
        if process.alive():
            process.stop()


def _coordinator_ready(broker: ExternalBroker, timeout: float = 60.0) -> ExternalBroker:
    """Apache Kafka creates and loads __consumer_offsets on the first FindCoordinator: wait for it."""
    deadline = time.monotonic() + timeout
    with RawClient(broker.bootstrap) as raw:
        while time.monotonic() < deadline:
            found = raw.call(ApiKey.FIND_COORDINATOR, 3, {"key": "warm-up", "key_type": 0})
            fetched = raw.call(ApiKey.OFFSET_FETCH, 7, {"group_id": name("warm-up"), "topics": None})
            if found["error_code"] == 0 and fetched["error_code"] == 0:
                time.sleep(2)  # the other partitions of __consumer_offsets finish loading
                return broker
            time.sleep(0.2)
    raise TimeoutError("the group coordinator did not become ready")


@pytest.fixture
def raw(gbroker: Any) -> Iterator[RawClient]:
    with RawClient(gbroker.bootstrap) as client:
        yield client


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def produce(bootstrap: str, topic: str, values: list[int], partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=str(value).encode(), partition=value % partitions)
    assert producer.flush(15) == 0


def confluent_consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 200,
        **extra,
    }
    return Consumer(config)


class Received:
    """Records each consumer got, as (partition, offset, value)."""

    def __init__(self, consumers: dict[str, Consumer]) -> None:
        self.consumers = consumers
        self.records: dict[str, list[tuple[int, int, int]]] = {key: [] for key in consumers}
        self.ordered: list[int] = []  # every value, in the order received

    def poll_until(self, done: Callable[[], bool], timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for key, consumer in self.consumers.items():
                message = consumer.poll(0.02)
                if message is not None and message.error() is None:
                    value = int(message.value() or b"-1")
                    position = (message.partition() or 0, message.offset() or 0, value)
                    self.records.setdefault(key, []).append(position)
                    self.ordered.append(value)
            if done():
                return
        raise AssertionError(f"timed out; assignments {self.assignments()}, received {self.counts()}")

    def assignments(self) -> dict[str, set[int]]:
        return {key: {tp.partition for tp in c.assignment()} for key, c in self.consumers.items()}

    def counts(self) -> dict[str, int]:
        return {key: len(records) for key, records in self.records.items()}

    def values(self) -> list[int]:
        return list(self.ordered)

    def balanced(self, partitions: int) -> bool:
        sets = list(self.assignments().values())
        share = partitions // len(sets)
        return all(len(s) == share for s in sets) and set().union(*sets) == set(range(partitions))


# -- raw protocol -----------------------------------------------------------------------


def join(raw: RawClient, version: int, group: str, member_id: str = "", **extra: Any) -> dict[str, Any]:
    body = {
        "group_id": group,
        "session_timeout_ms": 6000,
        "rebalance_timeout_ms": 6000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        **extra,
    }
    return raw.call(ApiKey.JOIN_GROUP, version, body)


@pytest.mark.parametrize(
    "versions",
    [
        {"find": 0, "join": 0, "sync": 0, "hb": 0, "leave": 0, "commit": 2, "fetch": 1, "describe": 0, "list": 0},
        {"find": 3, "join": 7, "sync": 5, "hb": 4, "leave": 4, "commit": 8, "fetch": 7, "describe": 5, "list": 4},
    ],
    ids=["oldest", "newest"],
)
def test_group_lifecycle_with_raw_protocol(raw: RawClient, gbroker: Any, versions: dict[str, int]) -> None:
    group, topic = name("raw"), name("t")
    create_topic(gbroker.bootstrap, topic, 2)
    found = raw.call(ApiKey.FIND_COORDINATOR, versions["find"], {"key": group, "key_type": 0})
    assert found["error_code"] == 0 and found["port"] == gbroker.port
    first = join(raw, versions["join"], group)
    if versions["join"] >= 4:
        assert first["error_code"] == E.MEMBER_ID_REQUIRED
        first = join(raw, versions["join"], group, first["member_id"])
    assert first["error_code"] == 0 and first["generation_id"] == 1 and first["protocol_name"] == "range"
    member = first["member_id"]
    assert first["leader"] == member and [m["member_id"] for m in first["members"]] == [member]
    sync = {
        "group_id": group,
        "generation_id": 1,
        "member_id": member,
        "assignments": [{"member_id": member, "assignment": b"plan"}],
    }
    if versions["sync"] >= 5:  # protocol type and name are mandatory, and checked
        assert raw.call(ApiKey.SYNC_GROUP, 5, sync)["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
        wrong = {**sync, "protocol_type": "consumer", "protocol_name": "roundrobin"}
        assert raw.call(ApiKey.SYNC_GROUP, 5, wrong)["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
        sync = {**sync, "protocol_type": "consumer", "protocol_name": "range"}
    synced = raw.call(ApiKey.SYNC_GROUP, versions["sync"], sync)
    assert synced["error_code"] == 0 and synced["assignment"] == b"plan"
    beat = {"group_id": group, "generation_id": 1, "member_id": member}
    assert raw.call(ApiKey.HEARTBEAT, versions["hb"], beat)["error_code"] == 0
    assert (
        raw.call(ApiKey.HEARTBEAT, versions["hb"], {**beat, "generation_id": 0})["error_code"] == E.ILLEGAL_GENERATION
    )
    partitions = [
        {"partition_index": 1, "committed_offset": 42, "committed_leader_epoch": 0, "committed_metadata": "m"}
    ]
    commit = {"group_id": group, "generation_id_or_member_epoch": 1, "member_id": member}
    answer = raw.call(
        ApiKey.OFFSET_COMMIT, versions["commit"], {**commit, "topics": [{"name": topic, "partitions": partitions}]}
    )
    assert answer["topics"][0]["partitions"][0]["error_code"] == 0
    stale = raw.call(
        ApiKey.OFFSET_COMMIT,
        versions["commit"],
        {**commit, "generation_id_or_member_epoch": 7, "topics": [{"name": topic, "partitions": partitions}]},
    )
    assert stale["topics"][0]["partitions"][0]["error_code"] == E.ILLEGAL_GENERATION
    fetched = raw.call(
        ApiKey.OFFSET_FETCH,
        versions["fetch"],
        {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0, 1]}]},
    )
    by_partition = {p["partition_index"]: p for p in fetched["topics"][0]["partitions"]}
    assert by_partition[0]["committed_offset"] == -1 and by_partition[1]["committed_offset"] == 42
    assert by_partition[1]["metadata"] == "m"
    described = raw.call(ApiKey.DESCRIBE_GROUPS, versions["describe"], {"groups": [group]})["groups"][0]
    assert described["group_state"] == "Stable" and described["protocol_data"] == "range"
    assert described["members"][0]["member_assignment"] == b"plan"
    assert described["members"][0]["client_host"] == "/127.0.0.1"
    listed = raw.call(ApiKey.LIST_GROUPS, versions["list"], {"states_filter": ["stable"]})["groups"]
    assert group in [g["group_id"] for g in listed]
    if versions["leave"] >= 3:
        left = raw.call(ApiKey.LEAVE_GROUP, versions["leave"], {"group_id": group, "members": [{"member_id": member}]})
        assert left["error_code"] == 0 and left["members"][0]["error_code"] == 0
    else:
        assert (
            raw.call(ApiKey.LEAVE_GROUP, versions["leave"], {"group_id": group, "member_id": member})["error_code"] == 0
        )
    described = raw.call(ApiKey.DESCRIBE_GROUPS, versions["describe"], {"groups": [group]})["groups"][0]
    assert described["group_state"] == "Empty" and described["members"] == []
    unknown = name("none")
    deleted = raw.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group, unknown, ""]})["results"]
    assert {r["group_id"]: r["error_code"] for r in deleted} == {
        group: 0,
        unknown: E.GROUP_ID_NOT_FOUND,
        "": E.GROUP_ID_NOT_FOUND,
    }


def test_simple_commits_without_joining_and_batched_fetch(raw: RawClient, gbroker: Any) -> None:
    group, other, topic = name("simple"), name("simple"), name("t")
    create_topic(gbroker.bootstrap, topic, 3)
    for g, offset in ((group, 10), (other, 20)):
        body = {
            "group_id": g,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 2, "committed_offset": offset, "committed_metadata": None},
                        {"partition_index": 9, "committed_offset": 1, "committed_metadata": None},
                    ],
                }
            ],
        }
        answer = raw.call(ApiKey.OFFSET_COMMIT, 8, body)["topics"][0]["partitions"]
        assert {p["partition_index"]: p["error_code"] for p in answer} == {2: 0, 9: E.UNKNOWN_TOPIC_OR_PARTITION}
    everything = raw.call(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "topics": None})
    assert everything["topics"] == [
        {
            "name": topic,
            "partitions": [
                {
                    "partition_index": 2,
                    "committed_offset": 10,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": 0,
                }
            ],
        }
    ]
    batched = raw.call(
        ApiKey.OFFSET_FETCH,
        8,
        {"groups": [{"group_id": group, "topics": None}, {"group_id": other, "topics": None}], "require_stable": True},
    )
    offsets = {g["group_id"]: g["topics"][0]["partitions"][0]["committed_offset"] for g in batched["groups"]}
    assert offsets == {group: 10, other: 20}
    bad = raw.call(ApiKey.FIND_COORDINATOR, 3, {"key": "x", "key_type": 5})
    assert bad["error_code"] == E.INVALID_REQUEST and bad["node_id"] == -1
    batch = raw.call(ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group, other, ""]})
    answers = [(c["key"], c["error_code"], c["port"]) for c in batch["coordinators"]]
    assert answers == [(group, 0, gbroker.port), (other, 0, gbroker.port), ("", 0, gbroker.port)]
    deleted = raw.call(
        ApiKey.OFFSET_DELETE,
        0,
        {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 2}]}]},
    )
    assert deleted["error_code"] == 0 and deleted["topics"][0]["partitions"][0]["error_code"] == 0
    assert raw.call(ApiKey.OFFSET_FETCH, 7, {"group_id": group, "topics": None})["topics"] == []


def test_offsets_topic_is_internal_and_not_created_by_groups_alone(raw: RawClient) -> None:
    metadata = raw.call(ApiKey.METADATA, 9, {"topics": None, "allow_auto_topic_creation": False})
    internal = [t for t in metadata["topics"] if t["name"] == "__consumer_offsets"]
    assert all(t["is_internal"] for t in internal)


def test_deferred_join_answered_when_a_second_member_completes_the_rebalance(gbroker: Any) -> None:
    group = name("defer")
    with RawClient(gbroker.bootstrap) as a, RawClient(gbroker.bootstrap) as b:
        first = join(a, 3, group)
        member_a = first["member_id"]
        sync = {"group_id": group, "generation_id": 1, "member_id": member_a, "assignments": []}
        a.call(ApiKey.SYNC_GROUP, 3, sync)
        # b joins: a rebalance starts and b's answer waits until a rejoins
        b.send(b.request_bytes(ApiKey.JOIN_GROUP, 3, _join_body(group)))
        time.sleep(0.3)
        beat = a.call(ApiKey.HEARTBEAT, 3, {"group_id": group, "generation_id": 1, "member_id": member_a})
        assert beat["error_code"] == E.REBALANCE_IN_PROGRESS
        rejoin = join(a, 3, group, member_a)
        _, answer_b = b.read_response(ApiKey.JOIN_GROUP, 3)
        assert rejoin["generation_id"] == answer_b["generation_id"] == 2
        assert len(rejoin["members"]) + len(answer_b["members"]) == 2


def _join_body(group: str) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 6000,
        "rebalance_timeout_ms": 6000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
    }


# -- librdkafka (confluent-kafka) ------------------------------------------------------------


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_three_consumers_share_six_partitions(gbroker: Any, assignor: str) -> None:
    group, topic = name("three"), name("six")
    create_topic(gbroker.bootstrap, topic, 6)
    consumers = {
        f"c{i}": confluent_consumer(gbroker.bootstrap, group, **{"partition.assignment.strategy": assignor})
        for i in range(3)
    }
    try:
        for consumer in consumers.values():
            consumer.subscribe([topic])
        received = Received(consumers)
        received.poll_until(lambda: received.balanced(6))
        produce(gbroker.bootstrap, topic, list(range(60)), 6)
        received.poll_until(lambda: len(received.values()) >= 60)
        assert sorted(received.values()) == list(range(60))  # every record exactly once
        owners = received.assignments()
        for key, records in received.records.items():
            assert {partition for partition, _, _ in records} <= owners[key]
        # one member leaves: the others take over its partitions and read new records
        consumers.pop("c0").close()
        received.consumers = consumers
        received.poll_until(lambda: received.balanced(6))
        before = len(received.values())
        produce(gbroker.bootstrap, topic, list(range(60, 120)), 6)
        received.poll_until(lambda: len(received.values()) >= before + 60)
        assert sorted(received.values()[before:]) == list(range(60, 120))
    finally:
        for consumer in consumers.values():
            consumer.close()


def test_two_groups_each_read_everything(gbroker: Any) -> None:
    topic = name("both")
    create_topic(gbroker.bootstrap, topic, 3)
    produce(gbroker.bootstrap, topic, list(range(30)), 3)
    consumers = {
        "a": confluent_consumer(gbroker.bootstrap, name("ga")),
        "b": confluent_consumer(gbroker.bootstrap, name("gb")),
    }
    try:
        for consumer in consumers.values():
            consumer.subscribe([topic])
        received = Received(consumers)
        received.poll_until(lambda: all(n >= 30 for n in received.counts().values()))
        for records in received.records.values():
            assert sorted(v for _, _, v in records) == list(range(30))
    finally:
        for consumer in consumers.values():
            consumer.close()


# kafka-python 3.0.12 loses its assignment when a poll times out while the rejoin that follows a
# leader's assignment without the topic's metadata completes (the SyncGroup answer is received,
# the partitions never set): like the compatibility suite, load the topic's metadata first.
KILLABLE_CONSUMER = """
import sys
from kafka import KafkaConsumer
consumer = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                         session_timeout_ms=2000, heartbeat_interval_ms=300, auto_offset_reset="earliest")
assert consumer.partitions_for_topic(sys.argv[2])
consumer.subscribe([sys.argv[2]])
while True:
    consumer.poll(200)
    if consumer.assignment():
        print("assigned", flush=True)
"""


@own_broker_only
def test_member_killed_without_leaving_is_replaced_after_its_session_timeout(gbroker: Any) -> None:
    group, topic = name("killed"), name("t")
    create_topic(gbroker.bootstrap, topic, 4)
    victim = subprocess.Popen(
        [sys.executable, "-c", KILLABLE_CONSUMER, gbroker.bootstrap, topic, group],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    survivor = confluent_consumer(gbroker.bootstrap, group)
    try:
        assert victim.stdout is not None and victim.stdout.readline().strip() == b"assigned"
        survivor.subscribe([topic])
        received = Received({"s": survivor})
        received.poll_until(lambda: len(received.assignments()["s"]) == 2)
        victim.kill()
        victim.wait(10)
        killed_at = time.monotonic()
        received.poll_until(lambda: len(received.assignments()["s"]) == 4, timeout=20)
        assert time.monotonic() - killed_at >= 1.0  # it took the session timeout, not a LeaveGroup
        produce(gbroker.bootstrap, topic, list(range(20)), 4)
        received.poll_until(lambda: len(received.values()) >= 20)
        assert sorted(received.values()) == list(range(20))
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(10)
        survivor.close()


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(gbroker: Any) -> None:
    group, topic = name("static"), name("t")
    create_topic(gbroker.bootstrap, topic, 4)
    assigned: list[int] = []

    def on_assign(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
        assigned.append(len(partitions))

    steady = confluent_consumer(gbroker.bootstrap, group, **{"group.instance.id": "steady"})
    steady.subscribe([topic], on_assign=on_assign)
    mover = confluent_consumer(gbroker.bootstrap, group, **{"group.instance.id": "mover"})
    try:
        alone = Received({"steady": steady})
        alone.poll_until(lambda: len(alone.assignments()["steady"]) == 4)  # steady leads: JoinGroup < v9
        mover.subscribe([topic])  # would rebalance if the leader restarted
        received = Received({"steady": steady, "mover": mover})
        received.poll_until(lambda: received.balanced(4))
        before = received.assignments()["mover"]
        rebalances = len(assigned)
        mover.close()  # a static member does not send LeaveGroup
        mover = confluent_consumer(gbroker.bootstrap, group, **{"group.instance.id": "mover"})
        mover.subscribe([topic])
        received.consumers["mover"] = mover
        received.poll_until(lambda: received.assignments()["mover"] == before)
        for _ in range(20):
            steady.poll(0.05)
        assert len(assigned) == rebalances  # the other member saw no rebalance
    finally:
        steady.close()
        mover.close()


# -- admin APIs ------------------------------------------------------------------------------


def test_describe_group_and_lag_with_admin_clients(gbroker: Any) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from kafka import KafkaAdminClient

    group, topic = name("admin"), name("t")
    create_topic(gbroker.bootstrap, topic, 2)
    produce(gbroker.bootstrap, topic, list(range(10)), 2)
    consumer = confluent_consumer(gbroker.bootstrap, group, **{"enable.auto.commit": False, "client.id": "lagger"})
    consumer.subscribe([topic])
    try:
        received = Received({"c": consumer})
        received.poll_until(lambda: len(received.values()) >= 4)
        consumer.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 1)], asynchronous=False)
        admin = AdminClient({"bootstrap.servers": gbroker.bootstrap})
        description = admin.describe_consumer_groups([group])[group].result(10)
        assert description.state.name == "STABLE" and len(description.members) == 1
        member = description.members[0]
        assert member.client_id == "lagger"
        assert {tp.partition for tp in member.assignment.topic_partitions} == {0, 1}
        committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
        offsets = {tp.partition: tp.offset for tp in committed.topic_partitions}
        assert offsets == {0: 2, 1: 1}
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 5)[1] for p in (0, 1)}
        assert {p: ends[p] - offsets[p] for p in (0, 1)} == {0: 3, 1: 4}  # 5 records each
        kadmin = KafkaAdminClient(bootstrap_servers=gbroker.bootstrap)
        try:
            kdescription = kadmin.describe_groups([group])[group]
            assert kdescription["group_state"] == "Stable" and kdescription["protocol_data"] == "range"
            (kmember,) = kdescription["members"]
            assert kmember["member_metadata"]["topics"] == [topic]
            assert kmember["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1]}]
            koffsets = kadmin.list_group_offsets(group)[group]
            assert {tp.partition: meta.offset for tp, meta in koffsets.items()} == {0: 2, 1: 1}
            assert group in [g["group_id"] for g in kadmin.list_groups(states_filter=["Stable"])]
        finally:
            kadmin.close()
    finally:
        consumer.close()


# -- kafka-python and aiokafka --------------------------------------------------------------------


def test_kafka_python_group_consumes_and_commits(gbroker: Any) -> None:
    from kafka import KafkaConsumer

    group, topic = name("kp"), name("t")
    create_topic(gbroker.bootstrap, topic, 3)
    produce(gbroker.bootstrap, topic, list(range(30)), 3)
    consumer = KafkaConsumer(
        bootstrap_servers=gbroker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    assert consumer.partitions_for_topic(topic)  # see KILLABLE_CONSUMER
    consumer.subscribe([topic])
    try:
        values: list[int] = []
        deadline = time.monotonic() + 30
        while len(values) < 30 and time.monotonic() < deadline:
            for records in consumer.poll(200).values():
                values += [int(r.value) for r in records]
        assert sorted(values) == list(range(30))
        consumer.commit()
        assert {tp.partition: consumer.committed(tp) for tp in consumer.assignment()} == {0: 10, 1: 10, 2: 10}
    finally:
        consumer.close()


def test_aiokafka_group_consumes_and_commits(gbroker: Any) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AioTopicPartition

    group, topic = name("aio"), name("t")
    create_topic(gbroker.bootstrap, topic, 2)
    produce(gbroker.bootstrap, topic, list(range(20)), 2)

    async def run() -> list[int]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=gbroker.bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            values: list[int] = []
            async with asyncio.timeout(30):
                while len(values) < 20:
                    for records in (await consumer.getmany(timeout_ms=200)).values():
                        values += [int(r.value) for r in records]
            await consumer.commit()
            assert await consumer.committed(AioTopicPartition(topic, 0)) == 10
            return values
        finally:
            await consumer.stop()

    assert sorted(asyncio.run(run())) == list(range(20))


# -- durability across restarts ------------------------------------------------------------------


def consume_some(bootstrap: str, group: str, topic: str, count: int) -> list[tuple[int, int, int]]:
    """Read at least `count` records, commit exactly what was read, close."""
    consumer = confluent_consumer(bootstrap, group, **{"enable.auto.commit": False})
    consumer.subscribe([topic])
    received = Received({"c": consumer})
    try:
        received.poll_until(lambda: len(received.values()) >= count)
        last: dict[int, int] = {}
        for partition, offset, _ in received.records["c"]:
            last[partition] = max(last.get(partition, -1), offset)
        consumer.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in last.items()], asynchronous=False)
    finally:
        consumer.close()
    return received.records["c"]


@own_broker_only
@pytest.mark.parametrize("stop", ["sigterm", "kill-9"])
def test_committed_offsets_survive_a_broker_restart(tmp_path: Path, stop: str) -> None:
    broker = BrokerProcess(tmp_path / "data", *GROUP_ARGS).start()
    try:
        group, topic = name("restart"), name("t")
        create_topic(broker.bootstrap, topic, 3)
        produce(broker.bootstrap, topic, list(range(30)), 3)
        first = consume_some(broker.bootstrap, group, topic, 12)
        if stop == "sigterm":
            assert broker.stop() == 0
        else:
            broker.kill()
        broker.start()
        consumer = confluent_consumer(broker.bootstrap, group)
        consumer.subscribe([topic])
        received = Received({"c": consumer})
        try:
            read_before = {v for _, _, v in first}
            received.poll_until(lambda: len(received.values()) >= 30 - len(read_before))
            for _ in range(10):
                consumer.poll(0.05)
        finally:
            consumer.close()
        again = received.values()
        assert not read_before & set(again), "records read again after the committed offset"
        assert sorted(read_before | set(again)) == list(range(30)) and len(again) == len(set(again))
    finally:
        if broker.alive():
            broker.stop()


@own_broker_only
def test_shutdown_answers_a_waiting_join_not_coordinator(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", *GROUP_ARGS).start()
    group = name("bye")
    try:
        with RawClient(broker.bootstrap) as a, RawClient(broker.bootstrap) as b:
            first = join(a, 3, group)
            sync = {"group_id": group, "generation_id": 1, "member_id": first["member_id"], "assignments": []}
            a.call(ApiKey.SYNC_GROUP, 3, sync)
            b.send(b.request_bytes(ApiKey.JOIN_GROUP, 3, _join_body(group)))  # waits for a to rejoin
            time.sleep(0.3)
            broker.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
            _, answer = b.read_response(ApiKey.JOIN_GROUP, 3)
            assert answer["error_code"] == E.NOT_COORDINATOR
        assert broker.stop() == 0
    finally:
        if broker.alive():
            broker.kill()
