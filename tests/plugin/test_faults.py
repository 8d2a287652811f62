"""Faults injected into a running broker: clients retry, nothing is lost or written twice."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from kbroker.testing import InProcessBroker


def create_topic(broker: InProcessBroker, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)


def read_all(broker: InProcessBroker, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())
        elif message is None and len(values) >= expected:
            break
    consumer.close()
    return values


def produce_idempotent(broker: InProcessBroker, topic: str, count: int) -> list[Any]:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    reports: list[Any] = []
    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert producer.flush(30) == 0
    return reports


def test_failed_produce_is_retried_without_duplicates(kbroker: InProcessBroker) -> None:
    create_topic(kbroker, "orders")
    kbroker.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=3)
    reports = produce_idempotent(kbroker, "orders", 50)
    assert [err for err, _ in reports if err is not None] == []
    assert kbroker.faults["injected"] == 3 and kbroker.faults["faults"] == []
    assert read_all(kbroker, "orders", 50) == [f"m{i}".encode() for i in range(50)]


def test_lost_produce_answer_is_deduplicated(kbroker: InProcessBroker) -> None:
    """The connection closes after the batch is appended: the idempotent producer sends it again and the
    broker answers the duplicate with its first offsets, so every record is in the log once."""
    create_topic(kbroker, "orders")
    kbroker.disconnect("Produce", count=2, after=True)
    reports = produce_idempotent(kbroker, "orders", 50)
    assert [err for err, _ in reports if err is not None] == []
    assert sorted(offset for _, offset in reports) == list(range(50))
    assert kbroker.faults["injected"] == 2
    assert read_all(kbroker, "orders", 50) == [f"m{i}".encode() for i in range(50)]


def test_not_retriable_error_reaches_the_application(kbroker: InProcessBroker) -> None:
    create_topic(kbroker, "orders")
    kbroker.fail("Produce", "TOPIC_AUTHORIZATION_FAILED")
    producer = Producer({"bootstrap.servers": kbroker.bootstrap})
    errors: list[Any] = []
    producer.produce("orders", b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(10)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_delay_holds_answers(kbroker: InProcessBroker) -> None:
    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap)
    producer.send("orders", b"warm").get(10)

    def timed_send() -> float:
        started = time.perf_counter()
        producer.send("orders", b"x").get(10)
        return time.perf_counter() - started

    baseline = timed_send()
    kbroker.delay("Produce", 0.3, count=1)
    delayed = timed_send()
    after = timed_send()
    producer.close()
    print(
        f"produce ack: {baseline * 1000:.1f} ms, with a 300 ms delay {delayed * 1000:.1f} ms, then {after * 1000:.1f} ms"
    )
    assert 0.3 <= delayed < 0.3 + 1.0
    assert after < 0.3


def test_unavailable_partition_until_restored(kbroker: InProcessBroker) -> None:
    create_topic(kbroker, "orders")
    kbroker.make_unavailable("orders", 0)
    producer = Producer({"bootstrap.servers": kbroker.bootstrap, "enable.idempotence": True})
    delivered: list[Any] = []
    producer.produce("orders", b"waits", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    producer.flush(1.0)
    assert delivered == [], "no leader: the record waits in the producer"
    assert kbroker.faults["unavailable"] == [{"topic": "orders", "partition": 0}]
    kbroker.make_available("orders", 0)
    assert producer.flush(15) == 0
    assert delivered == [(None, 0)]


def test_close_connections_now(kbroker: InProcessBroker) -> None:
    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap)
    producer.send("orders", b"1").get(10)
    assert kbroker.close_connections() >= 1
    assert producer.send("orders", b"2").get(10).offset == 1  # the client reconnects
    producer.close()


def test_consumer_rides_out_coordinator_and_fetch_errors(kbroker: InProcessBroker) -> None:
    """Top-level errors (FindCoordinator) and per-partition ones (Fetch) are retried by a group consumer."""
    create_topic(kbroker, "orders")
    producer = Producer({"bootstrap.servers": kbroker.bootstrap})
    for i in range(5):
        producer.produce("orders", f"m{i}".encode())
    assert producer.flush(10) == 0
    kbroker.fail("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=2)
    kbroker.fail("Fetch", "NOT_LEADER_OR_FOLLOWER", count=2)
    consumer = Consumer({"bootstrap.servers": kbroker.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < 5 and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [f"m{i}".encode() for i in range(5)]
    assert kbroker.faults["injected"] == 4


def test_metadata_shows_no_leader_for_an_unavailable_partition(kbroker: InProcessBroker) -> None:
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(10)
    kbroker.make_unavailable("orders", 1)
    partitions = admin.list_topics("orders", timeout=10).topics["orders"].partitions
    assert partitions[0].leader == 1 and partitions[0].error is None
    assert partitions[1].leader == -1 and partitions[1].error.code() == KafkaError.LEADER_NOT_AVAILABLE
    kbroker.clear_faults()
    assert admin.list_topics("orders", timeout=10).topics["orders"].partitions[1].leader == 1


def test_disconnect_before_handling(kbroker: InProcessBroker) -> None:
    """The connection closes before the request is handled: the client sends it again on a new one."""
    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap, retries=5, retry_backoff_ms=10)
    producer.send("orders", b"1").get(10)
    kbroker.disconnect("Produce")
    assert producer.send("orders", b"2").get(10).offset == 1
    producer.close()
    assert kbroker.faults["injected"] == 1


def test_failed_metadata_names_the_error_per_topic(kbroker: InProcessBroker) -> None:
    create_topic(kbroker, "orders")
    kbroker.fail("Metadata", "TOPIC_AUTHORIZATION_FAILED", count=None)  # the client's own refreshes too
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    topic = admin.list_topics("orders", timeout=10).topics["orders"]
    assert topic.error is not None and topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert kbroker.faults["faults"][0]["remaining"] is None
    kbroker.clear_faults()
    assert admin.list_topics("orders", timeout=10).topics["orders"].error is None
