"""An API kbroker does not offer makes a client fail at once with its usual "unsupported" error, never wait
(docs/compatibility.md lists those APIs; tests/tools checks Kafka's own tools)."""

from __future__ import annotations

import time

import pytest

from tests.process import BrokerProcess

FAST = 5.0  # seconds: far below any client timeout


def test_confluent_admin_gets_unsupported_feature(broker: BrokerProcess) -> None:
    from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    started = time.monotonic()
    with pytest.raises(KafkaException) as failure:  # ElectLeaders (43): one node leads every partition
        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("t", 0)]).result(timeout=30)
    assert failure.value.args[0].code() == KafkaError._UNSUPPORTED_FEATURE
    assert time.monotonic() - started < FAST


def test_kafka_python_admin_gets_incompatible_broker_version(broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import IncompatibleBrokerVersion

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        started = time.monotonic()
        with pytest.raises(IncompatibleBrokerVersion):
            admin.elect_leaders(0, {("t", 0)})
        assert time.monotonic() - started < FAST
    finally:
        admin.close()
