"""An API kbroker does not offer makes a client fail at once with its usual "unsupported" error, never wait
(docs/compatibility.md lists those APIs; tests/tools checks Kafka's own tools)."""

from __future__ import annotations

import time

import pytest

from tests.process import BrokerProcess

FAST = 5.0  # seconds: far below any client timeout


def test_confluent_admin_gets_unsupported_feature(broker: BrokerProcess) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    started = time.monotonic()
    with pytest.raises(KafkaException) as failure:
        admin.describe_acls(every).result(timeout=30)
    assert failure.value.args[0].code() == KafkaError._UNSUPPORTED_FEATURE
    assert time.monotonic() - started < FAST


def test_kafka_python_admin_gets_incompatible_broker_version(broker: BrokerProcess) -> None:
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.errors import IncompatibleBrokerVersion

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        pattern = ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY)
        acl = ACLFilter(
            principal=None,
            host="*",
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=pattern,
        )
        started = time.monotonic()
        with pytest.raises(IncompatibleBrokerVersion):
            admin.describe_acls(acl)
        assert time.monotonic() - started < FAST
    finally:
        admin.close()
