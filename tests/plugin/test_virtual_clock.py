"""Timeouts that take real Kafka a minute, made to happen at once with `kbroker.advance()`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.testing import InProcessBroker


def create_topic(broker: InProcessBroker, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(10)


def poll_until(consumer: Consumer, done: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        consumer.poll(0.05)
        if done():
            return True
    return done()


def test_session_timeout_rebalances_after_advance(kbroker: InProcessBroker) -> None:
    """A static member that stops (no LeaveGroup, KIP-345) keeps its partition until its session times
    out: 45 s on a real clock, one advance() here. The live member heartbeats between two jumps of 30 s."""
    create_topic(kbroker, "orders", partitions=2)
    assignments: dict[str, set[int]] = {"a": set(), "b": set()}

    def consumer(name: str) -> Consumer:
        def on_assign(c: Any, partitions: list[TopicPartition]) -> None:
            assignments[name] = {p.partition for p in partitions}

        c = Consumer(
            {
                "bootstrap.servers": kbroker.bootstrap,
                "group.id": "billing",
                "group.instance.id": name,
                "session.timeout.ms": 45000,
                "heartbeat.interval.ms": 100,
                "partition.assignment.strategy": "range",
            }
        )
        c.subscribe(["orders"], on_assign=on_assign)
        return c

    a, b = consumer("a"), consumer("b")
    both = lambda: assignments["a"] | assignments["b"] == {0, 1} and assignments["a"] and assignments["b"]  # noqa: E731
    deadline = time.monotonic() + 30
    while not both() and time.monotonic() < deadline:
        a.poll(0.05)
        b.poll(0.05)
    assert both(), assignments
    b.close()  # a static member leaves no LeaveGroup behind: the group waits for its session to end
    assert not poll_until(a, lambda: assignments["a"] == {0, 1}, 1.0), "rebalanced before the session timed out"
    kbroker.advance(30)  # not yet: 30 s < 45 s
    assert not poll_until(a, lambda: assignments["a"] == {0, 1}, 0.5)
    kbroker.advance(30)  # b's session (last heartbeat 60 s ago) is over; a heartbeated in between
    assert poll_until(a, lambda: assignments["a"] == {0, 1}, 15), assignments
    a.close()


def test_abandoned_transaction_times_out_after_advance(kbroker: InProcessBroker) -> None:
    """An open transaction holds the last stable offset back, so a read_committed consumer waits; once the
    clock passes transaction.timeout.ms the coordinator aborts it and the consumer reads what came after."""
    create_topic(kbroker, "payments")
    abandoned = Producer(
        {
            "bootstrap.servers": kbroker.bootstrap,
            "transactional.id": f"tx-{uuid.uuid4()}",
            "transaction.timeout.ms": 60000,
        }
    )
    abandoned.init_transactions(10)
    abandoned.begin_transaction()
    abandoned.produce("payments", b"never committed")
    assert abandoned.flush(10) == 0  # written, the transaction left open
    plain = Producer({"bootstrap.servers": kbroker.bootstrap})
    plain.produce("payments", b"after the transaction")
    assert plain.flush(10) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kbroker.bootstrap,
            "group.id": "audit",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition("payments", 0, 0)])
    values: list[bytes] = []

    def read(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not values:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                values.append(message.value())

    read(1.5)
    assert values == [], "read_committed must wait behind the open transaction"
    kbroker.advance(61)
    read(15)
    consumer.close()
    assert values == [b"after the transaction"]
    assert kbroker.reset()["transactions"] == 1  # the aborted transaction's id, forgotten


def test_retention_deletes_old_segments_after_advance(kbroker: InProcessBroker) -> None:
    """retention.ms of an hour passes at once: the closed segments go and the log start offset moves."""
    create_topic(kbroker, "events", **{"retention.ms": "3600000", "segment.bytes": "1024"})
    producer = Producer({"bootstrap.servers": kbroker.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(40):
        producer.produce("events", b"x" * 100, key=str(i).encode())
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": kbroker.bootstrap, "group.id": "g"})
    low, high = consumer.get_watermark_offsets(TopicPartition("events", 0), timeout=10)
    assert (low, high) == (0, 40)
    kbroker.advance(10)  # retention looks, nothing is old enough
    assert consumer.get_watermark_offsets(TopicPartition("events", 0), timeout=10)[0] == 0
    kbroker.advance(3600)
    low, high = consumer.get_watermark_offsets(TopicPartition("events", 0), timeout=10)
    consumer.close()
    assert 0 < low < high == 40, (low, high)  # every closed segment deleted, the active one kept
