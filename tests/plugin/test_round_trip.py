"""A producer/consumer round trip with the `kbroker` fixture, with confluent-kafka and kafka-python."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer

from kbroker.testing import InProcessBroker


def test_confluent_round_trip(kbroker: InProcessBroker) -> None:
    producer = Producer({"bootstrap.servers": kbroker.bootstrap})
    for i in range(10):
        producer.produce("orders", key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(10) == 0
    consumer = Consumer(
        {"bootstrap.servers": kbroker.bootstrap, "group.id": "billing", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["orders"])
    seen = []
    deadline = time.monotonic() + 20
    while len(seen) < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append((message.key(), message.value(), message.offset()))
    consumer.close()
    assert seen == [(f"k{i}".encode(), f"v{i}".encode(), i) for i in range(10)]


def test_kafka_python_round_trip(kbroker: InProcessBroker) -> None:
    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap)
    offsets = [producer.send("orders", f"v{i}".encode()).get(10).offset for i in range(5)]
    producer.close()
    assert offsets == [0, 1, 2, 3, 4]
    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kbroker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    values = []
    for message in consumer:  # ends after 10 s without a record
        values.append(message.value)
        if len(values) == 5:
            break
    consumer.close()
    assert values == [f"v{i}".encode() for i in range(5)]


def test_reset_empties_the_broker(kbroker: InProcessBroker) -> None:
    """reset() (which the fixture runs before each test) deletes topics and groups, in milliseconds."""
    from confluent_kafka.admin import AdminClient

    producer = KafkaProducer(bootstrap_servers=kbroker.bootstrap)
    producer.send("orders", b"v").get(10)
    producer.close()
    consumer = KafkaConsumer(
        "orders", bootstrap_servers=kbroker.bootstrap, group_id="billing", auto_offset_reset="earliest"
    )
    assert consumer.poll(10_000, max_records=1)
    consumer.commit()
    consumer.close()
    admin = AdminClient({"bootstrap.servers": kbroker.bootstrap})
    assert "orders" in admin.list_topics(timeout=10).topics
    assert [g.group_id for g in admin.list_consumer_groups().result(10).valid] == ["billing"]
    started = time.perf_counter()
    cleared = kbroker.reset()
    took = time.perf_counter() - started
    assert cleared["topics"] == 1 and cleared["groups"] == 1
    assert took < 0.5, f"reset took {took * 1000:.1f} ms"
    assert "orders" not in admin.list_topics(timeout=10).topics
    assert admin.list_consumer_groups().result(10).valid == []
