"""Metadata for topics with many partitions: every partition described, few objects made for it."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from uuid import uuid4

from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.handlers.metadata import topic_metadata
from tests.broker.conftest import unique_topic
from tests.process import BrokerProcess


def test_librdkafka_sees_every_partition_of_a_large_topic(broker: BrokerProcess) -> None:
    topic = unique_topic("wide")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 600, 1)])[topic].result(30)
    described = admin.list_topics(timeout=10).topics[topic]
    assert described.error is None
    assert sorted(described.partitions) == list(range(600))
    for partition in described.partitions.values():
        assert partition.leader == 1 and partition.replicas == [1] and partition.isrs == [1]


def test_a_topics_partitions_share_their_replica_lists() -> None:
    """A response for N partitions makes N dicts, not 4N containers: the garbage collections that
    many containers set off were most of Metadata's tail latency with thousands of partitions."""
    meta = SimpleNamespace(partitions=1000, topic_id=uuid4())
    logs = SimpleNamespace(topic=lambda name: meta)
    ctx = SimpleNamespace(broker=SimpleNamespace(logs=logs, node_id=1))
    described = topic_metadata(ctx, "wide")  # type: ignore[arg-type]
    partitions = described["partitions"]
    assert [p["partition_index"] for p in partitions] == list(range(1000))
    assert all(p["replica_nodes"] == p["isr_nodes"] == [1] and p["offline_replicas"] == [] for p in partitions)
    containers = {id(v) for p in partitions for v in p.values() if gc.is_tracked(v)}
    assert len(containers) <= 2
