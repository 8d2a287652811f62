"""kbroker's share-group extensions with real share consumers (Kafka's Java KafkaShareConsumer, confluent-kafka's
ShareConsumer): delayed delivery, tag filtering, dead letters. Group configs are set with Kafka's own
ConfigCommand (kafka-configs --entity-type groups). Apache Kafka has none of these, so these scenarios run
against kbroker only; the share-group behaviour they build on is compared with Kafka in test_share_groups.py.
The kill -9 scenario starts a kbroker of its own.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.clients.share_members import Delivered, ShareMember
from tests.compat.conftest import KBROKER_ARGS
from tests.process import BrokerProcess

KINDS = ["java", "confluent"]
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KBROKER_BOOTSTRAP")), reason="kbroker's own extensions: no Apache Kafka counterpart"
)


def setup_topic(bootstrap: str, **group_configs: str) -> tuple[str, str]:
    topic = f"sx-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(15)
    group = f"sg-{topic}"
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest", **group_configs})
    return topic, group


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """With Kafka's own ConfigCommand (kafka-configs), from the reference Kafka's jars (tests/kafka_ref.py)."""
    from tests.kafka_ref import ensure_tools

    _, libs = ensure_tools()
    pairs = ",".join(f"{k}={v}" for k, v in configs.items())
    done = subprocess.run(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{libs}/*", "kafka.admin.ConfigCommand"]
        + ["--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups", "--entity-name", group]
        + ["--add-config", pairs],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "Completed updating config" in done.stdout, done.stdout + done.stderr


def produce(bootstrap: str, topic: str, records: list[tuple[str, list[tuple[str, str]]]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value, headers in records:
        producer.produce(topic, key=f"key-{value}".encode(), value=value.encode(), headers=headers, partition=0)
        producer.flush(15)  # one record per batch: the records' order in the log is the list's
    assert producer.flush(15) == 0


def classic_read(
    bootstrap: str, topic: str, count: int, timeout: float = 20
) -> list[tuple[int, str, dict[str, bytes]]]:
    """(offset, value, headers) of the first `count` records, read by a classic consumer from the start."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"classic-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[tuple[int, str, dict[str, bytes]]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            headers = {k: v for k, v in (message.headers() or [])}
            got.append((message.offset(), (message.value() or b"").decode(), headers))
    finally:
        consumer.close()
    return got


@pytest.fixture
def members() -> Iterator[list[ShareMember]]:
    started: list[ShareMember] = []
    yield started
    for member in started:
        try:
            member.close()
        except Exception:
            member.crash()


def start_member(members: list[ShareMember], kind: str, bootstrap: str, group: str, topic: str) -> ShareMember:
    member = ShareMember(kind, bootstrap, group, topic)
    members.append(member)
    member.receive()
    return member


def poll_until(member: ShareMember, wanted: int, timeout: float, ack: str = "accept") -> list[tuple[float, Delivered]]:
    """(monotonic time received, record) until `wanted` records came, or `timeout` s."""
    got: list[tuple[float, Delivered]] = []
    deadline = time.monotonic() + timeout
    while len(got) < wanted and time.monotonic() < deadline:
        got += [(time.monotonic(), d) for d in member.poll(ack=ack, timeout_ms=300)]
    return got


@pytest.mark.parametrize("kind", KINDS)
def test_delayed_records_come_after_later_ones_and_the_log_keeps_its_order(
    bootstrap: str, members: list[ShareMember], kind: str
) -> None:
    topic, group = setup_topic(bootstrap)
    member = start_member(members, kind, bootstrap, group, topic)
    at = int(time.time() * 1000) + 6000
    produced = time.monotonic()
    produce(
        bootstrap,
        topic,
        [
            ("after-4s", [("kbroker-deliver-after-ms", "4000")]),
            ("now-1", []),
            ("at-6s", [("kbroker-deliver-at", str(at))]),
            ("now-2", [("kbroker-deliver-after-ms", "0")]),
        ],
    )
    # a classic consumer reads the log as it is: every record, in offset order, at once
    assert [(o, v) for o, v, _ in classic_read(bootstrap, topic, 4)] == [
        (0, "after-4s"),
        (1, "now-1"),
        (2, "at-6s"),
        (3, "now-2"),
    ]
    got = poll_until(member, 4, 30)
    assert [d.value for _, d in got] == ["now-1", "now-2", "after-4s", "at-6s"]
    assert all(d.delivery_count == 1 for _, d in got)
    received = {d.value: t - produced for t, d in got}
    assert received["now-2"] < 4
    assert received["after-4s"] >= 3.5  # timestamps are the producer's clock, the same machine's
    assert received["at-6s"] >= 5.5


@pytest.mark.parametrize("kind", KINDS)
def test_a_tag_filter_delivers_matching_records_only(bootstrap: str, members: list[ShareMember], kind: str) -> None:
    topic, group = setup_topic(bootstrap, **{"kbroker.share.tag.filter": "TagA || TagB"})
    member = start_member(members, kind, bootstrap, group, topic)
    produce(
        bootstrap,
        topic,
        [
            ("a", [("kbroker-tag", "TagA")]),
            ("none", []),
            ("c", [("kbroker-tag", "TagC")]),
            ("b", [("kbroker-tag", "TagB")]),
            ("a-and-c", [("kbroker-tag", "TagC"), ("kbroker-tag", "TagA")]),
        ],
    )
    got = [d for _, d in poll_until(member, 3, 20)]
    got += member.poll(timeout_ms=1500)  # nothing else comes
    assert [(d.offset, d.value) for d in got] == [(0, "a"), (3, "b"), (4, "a-and-c")]
    # a new filter applies to the records not acquired yet
    set_group_configs(bootstrap, group, {"kbroker.share.tag.filter": "TagC && !TagA"})
    produce(bootstrap, topic, [("a2", [("kbroker-tag", "TagA")]), ("c2", [("kbroker-tag", "TagC")])])
    later = [d for _, d in poll_until(member, 1, 20)]
    later += member.poll(timeout_ms=1500)
    assert [(d.offset, d.value) for d in later] == [(6, "c2")]


@pytest.mark.parametrize("kind", KINDS)
def test_rejected_and_exhausted_records_are_copied_to_the_dead_letter_topic(
    bootstrap: str, members: list[ShareMember], kind: str
) -> None:
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"  # does not exist: created on the first dead letter
    topic, group = setup_topic(
        bootstrap, **{"errors.deadletterqueue.topic.name": dlq, "share.delivery.count.limit": "2"}
    )
    member = start_member(members, kind, bootstrap, group, topic)
    produce(bootstrap, topic, [("poison", [("trace", "t-1")])])
    assert [d.value for _, d in poll_until(member, 1, 20, ack="reject")] == ["poison"]
    produce(bootstrap, topic, [("flaky", [])])
    counts = [d.delivery_count for _, d in poll_until(member, 2, 30, ack="release")]
    assert counts == [1, 2]  # then archived at the limit
    produce(bootstrap, topic, [("fine", [])])
    assert [d.value for _, d in poll_until(member, 1, 20)] == ["fine"]
    copies = classic_read(bootstrap, dlq, 2)
    assert [v for _, v, _ in copies] == ["poison", "flaky"]
    poison, flaky = copies[0][2], copies[1][2]
    assert poison == {
        "trace": b"t-1",
        "kbroker-dlq-topic": topic.encode(),
        "kbroker-dlq-partition": b"0",
        "kbroker-dlq-offset": b"0",
        "kbroker-dlq-group": group.encode(),
        "kbroker-dlq-delivery-count": b"1",
        "kbroker-dlq-reason": b"rejected",
        "kbroker-dlq-timestamp": poison["kbroker-dlq-timestamp"],
    }
    assert (flaky["kbroker-dlq-offset"], flaky["kbroker-dlq-delivery-count"]) == (b"1", b"2")
    assert flaky["kbroker-dlq-reason"] == b"delivery-count-limit"
    assert classic_read(bootstrap, dlq, 3, timeout=3)[2:] == []  # "fine" was accepted: no copy


@pytest.mark.parametrize("kind", KINDS)
def test_delayed_records_pending_across_a_broker_kill_9(tmp_path: Path, members: list[ShareMember], kind: str) -> None:
    """A kbroker of its own, killed with SIGKILL while delayed records wait: after the restart they are delivered
    at their time, once, and the records accepted before never come back."""
    broker = BrokerProcess(tmp_path / "data", *KBROKER_ARGS).start()
    try:
        topic, group = setup_topic(broker.bootstrap)
        member = start_member(members, kind, broker.bootstrap, group, topic)
        produced = time.monotonic()
        produce(
            broker.bootstrap,
            topic,
            [
                ("d0", [("kbroker-deliver-after-ms", "6000")]),
                ("n1", []),
                ("d2", [("kbroker-deliver-after-ms", "7000")]),
                ("n3", []),
            ],
        )
        assert sorted(d.value for _, d in poll_until(member, 2, 20)) == ["n1", "n3"]
        members.remove(member)
        member.crash()
        broker.kill()
        broker.start()
        member = start_member(members, kind, broker.bootstrap, group, topic)
        got = poll_until(member, 2, 30)
        got += [(time.monotonic(), d) for d in member.poll(timeout_ms=2000)]  # nothing more comes
        assert [d.value for _, d in got] == ["d0", "d2"]
        assert all(d.delivery_count == 1 for _, d in got)
        assert got[0][0] - produced >= 5.5 and got[1][0] - produced >= 6.5
    finally:
        broker.stop()
