"""kbroker_factory: brokers configured for one test, and a restart on the same data directory and port."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer

from kbroker.testing import InProcessBroker


def test_configured_broker(kbroker_factory: Callable[..., InProcessBroker]) -> None:
    broker = kbroker_factory(config={"num.partitions": 3, "auto.create.topics.enable": True})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("orders", b"x").get(10)
    producer.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert len(admin.list_topics("orders", timeout=10).topics["orders"].partitions) == 3


def test_restart_keeps_acknowledged_records(kbroker_factory: Callable[..., InProcessBroker], tmp_path: Path) -> None:
    first = kbroker_factory(data_dir=tmp_path / "data")
    port = first.port
    producer = KafkaProducer(bootstrap_servers=first.bootstrap, acks="all")
    for i in range(3):
        producer.send("orders", f"m{i}".encode()).get(10)
    producer.close()
    first.stop()
    second = kbroker_factory(data_dir=tmp_path / "data", port=port)
    assert second.bootstrap == f"127.0.0.1:{port}"
    consumer = KafkaConsumer(
        "orders", bootstrap_servers=second.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10_000
    )
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == 3:
            break
    consumer.close()
    assert values == [b"m0", b"m1", b"m2"]


def test_a_broker_that_cannot_start_says_why(kbroker_factory: Callable[..., InProcessBroker]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(RuntimeError, match="cannot listen"):
            kbroker_factory(port=taken.getsockname()[1])
