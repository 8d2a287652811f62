"""Several listeners on one kbroker process: each client sees its own listener's address."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from tests.broker.conftest import unique_topic
from tests.process import BrokerProcess, RawClient, free_port


@pytest.fixture
def two_listeners(tmp_path: Path) -> Iterator[tuple[BrokerProcess, int, int]]:
    internal, external = free_port(), free_port()
    process = BrokerProcess(
        tmp_path / "data",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{internal},EXTERNAL://0.0.0.0:{external}",
        "--config", f"advertised.listeners=EXTERNAL://localhost:{external}",
        "--config", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "--config", "listener.name.external.max.connections=50",
        port=internal,
        listen_flag=False,
    ).start()  # fmt: skip
    try:
        yield process, internal, external
    finally:
        process.stop()


def test_metadata_answers_with_the_listener_the_client_came_through(
    two_listeners: tuple[BrokerProcess, int, int],
) -> None:
    broker, internal, external = two_listeners
    for port, expected in ((internal, ("127.0.0.1", internal)), (external, ("localhost", external))):
        with RawClient(f"127.0.0.1:{port}") as client:
            metadata = client.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
            assert [(b["host"], b["port"]) for b in metadata["brokers"]] == [expected]
            cluster = client.call(ApiKey.DESCRIBE_CLUSTER, 0, {"include_cluster_authorized_operations": False})
            assert [(b["host"], b["port"]) for b in cluster["brokers"]] == [expected]
            coordinator = client.call(ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 0})
            assert (coordinator["host"], coordinator["port"]) == expected
    assert f"EXTERNAL://0.0.0.0:{external}" in broker.log_text()


def test_real_clients_through_each_listener(two_listeners: tuple[BrokerProcess, int, int]) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer

    _, internal, external = two_listeners
    for port, host in ((internal, "127.0.0.1"), (external, "localhost")):
        bootstrap = f"127.0.0.1:{port}"
        brokers = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [(host, port)]
        topic = unique_topic("listener")
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(10):
            producer.produce(topic, b"%d" % i)
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        values = []
        try:
            for _ in range(40):
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    values.append(message.value())
                if len(values) == 10:
                    break
        finally:
            consumer.close()
        assert values == [b"%d" % i for i in range(10)]
        kafka_python = KafkaConsumer(bootstrap_servers=bootstrap)
        try:
            assert topic in kafka_python.topics()
            assert [(b.host, b.port) for b in kafka_python._client.cluster.brokers()] == [(host, port)]
        finally:
            kafka_python.close()
