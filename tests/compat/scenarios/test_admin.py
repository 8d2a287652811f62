"""Scenario 1: create a 3-partition topic with configs, describe it and its configs, alter, add partitions, delete."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tests.compat.clients.adapter import ClientError
from tests.compat.support import Compat

T = TypeVar("T")
ADMIN_OPS = ("create_topic", "describe_topic", "topic_configs", "alter_config", "create_partitions", "delete_topic")


def eventually(check: Callable[[], T], accept: Callable[[T], bool], timeout_s: float = 10.0) -> T:
    """Repeat ``check`` until ``accept`` holds (metadata reaches brokers asynchronously in Kafka)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = check()
            if accept(value) or time.monotonic() > deadline:
                return value
        except ClientError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def topic_gone(compat: Compat, topic: str) -> bool:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=compat.bootstrap, client_id="compat-check")
    try:
        return topic not in admin.list_topics()
    finally:
        admin.close()


def test_admin_topic_lifecycle(compat: Compat) -> None:
    compat.need(ops=ADMIN_OPS)
    client, bootstrap = compat.client, compat.bootstrap
    topic = compat.topic("admin")
    client.create_topic(bootstrap, topic, 3, {"retention.ms": "3600000", "cleanup.policy": "delete"})

    described = eventually(lambda: client.describe_topic(bootstrap, topic), lambda d: len(d.partitions) == 3)
    assert described.partitions == [0, 1, 2]
    configs = client.topic_configs(bootstrap, topic)
    assert configs["retention.ms"] == "3600000"
    assert configs["cleanup.policy"] == "delete"
    assert "segment.bytes" in configs, "describe must list default configs too"

    client.alter_config(bootstrap, topic, "retention.ms", "7200000")
    configs = eventually(lambda: client.topic_configs(bootstrap, topic), lambda c: c["retention.ms"] == "7200000")
    assert configs["retention.ms"] == "7200000"

    client.create_partitions(bootstrap, topic, 5)
    described = eventually(lambda: client.describe_topic(bootstrap, topic), lambda d: len(d.partitions) == 5)
    assert described.partitions == [0, 1, 2, 3, 4]

    client.delete_topic(bootstrap, topic)
    assert eventually(lambda: topic_gone(compat, topic), bool), f"{topic} still listed after delete"


def test_admin_errors(compat: Compat) -> None:
    compat.need(ops=("create_topic", "delete_topic"))
    client, bootstrap = compat.client, compat.bootstrap
    topic = compat.setup_topic("admin-errors")
    try:
        client.create_topic(bootstrap, topic, 1, {})
    except ClientError as failure:
        assert failure.kind == "topic_exists", failure.message
    else:
        raise AssertionError("creating an existing topic succeeded")
    try:
        client.delete_topic(bootstrap, compat.topic("never-created"))
    except ClientError as failure:
        assert failure.kind == "unknown_topic", failure.message
    else:
        raise AssertionError("deleting an unknown topic succeeded")
