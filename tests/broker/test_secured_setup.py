"""docs/security.md's "Worked example: TLS, SCRAM and ACLs", step by step with confluent-kafka: an admin
(a PLAIN user, super user) creates a SCRAM user and grants it ACLs; the SCRAM user works over SASL_SSL
within its ACLs and nowhere else; a client with a TLS certificate is authorized by its certificate's
subject; the PLAINTEXT listener on 127.0.0.1 is User:ANONYMOUS and may do nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.broker.tls_support import Certificates, make_certificates
from tests.process import BrokerProcess, free_port

ALICE_CERT = "User:CN=alice,OU=eng,O=kbroker tests,C=NL"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[BrokerProcess, Certificates, int, int]]:
    certs = make_certificates(tmp_path / "tls")
    plain, sasl_ssl, ssl = free_port(), free_port(), free_port()
    lines = [
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{sasl_ssl},SSL://127.0.0.1:{ssl}",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
        'required user_admin="admin-secret";',
        f"ssl.keystore.location={certs.server}",
        f"ssl.truststore.location={certs.ca}",
        "listener.name.ssl.ssl.client.auth=required",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:admin",
    ]
    args: list[str] = []
    for line in lines:
        args += ["--config", line]
    broker = BrokerProcess(tmp_path / "data", *args, port=plain, listen_flag=False).start()
    try:
        yield broker, certs, sasl_ssl, ssl
    finally:
        broker.stop()


def sasl_ssl(port: int, certs: Certificates, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(certs.ca),
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def produce(config: dict[str, Any], topic: str) -> str:
    from confluent_kafka import Producer

    outcome: list[str] = []
    producer = Producer(config | {"message.timeout.ms": 8000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err.name() if err else "delivered"))
    producer.flush(10)
    return outcome[0] if outcome else "no report"


def consume(config: dict[str, Any], group: str, topic: str) -> str:
    from confluent_kafka import Consumer

    consumer = Consumer(config | {"group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                return str(message.error().name()) if message.error() else "read"
        return "nothing"
    finally:
        consumer.close()


def test_tls_scram_and_acls(secured: tuple[BrokerProcess, Certificates, int, int]) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    broker, certs, port, ssl_port = secured
    admin = AdminClient(sasl_ssl(port, certs, "PLAIN", "admin", "admin-secret"))
    for future in admin.create_topics([NewTopic("orders", 1, 1), NewTopic("payroll", 1, 1)]).values():
        future.result(15)
    user = UserScramCredentialUpsertion("app", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"app-secret")
    for future in admin.alter_user_scram_credentials([user]).values():
        future.result(15)

    def allow(principal: str, rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)

    acls = [
        allow("User:app", ResourceType.TOPIC, "orders", AclOperation.WRITE),
        allow("User:app", ResourceType.TOPIC, "orders", AclOperation.READ),
        allow("User:app", ResourceType.GROUP, "billing", AclOperation.READ),
        allow(ALICE_CERT, ResourceType.TOPIC, "orders", AclOperation.READ),
        allow(ALICE_CERT, ResourceType.GROUP, "audit", AclOperation.READ),
    ]
    for future in admin.create_acls(acls).values():
        future.result(15)

    app = sasl_ssl(port, certs, "SCRAM-SHA-512", "app", "app-secret")
    assert produce(app, "orders") == "delivered"
    assert produce(app, "payroll") == "TOPIC_AUTHORIZATION_FAILED"
    assert consume(app, "billing", "orders") == "read"
    assert consume(app, "other", "orders") == "GROUP_AUTHORIZATION_FAILED"
    wrong = sasl_ssl(port, certs, "SCRAM-SHA-512", "app", "nope")
    assert produce(wrong, "orders") != "delivered"
    # mutual TLS: the certificate's subject is the principal the ACLs name
    alice = {
        "bootstrap.servers": f"127.0.0.1:{ssl_port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
        "ssl.certificate.location": str(certs.client_cert),
        "ssl.key.location": str(certs.client_key),
    }
    assert consume(alice, "audit", "orders") == "read"
    assert produce(alice, "orders") == "TOPIC_AUTHORIZATION_FAILED"
    # the local PLAINTEXT listener is User:ANONYMOUS: no ACL names it
    anonymous = {"bootstrap.servers": broker.bootstrap}
    assert produce(anonymous, "orders") == "TOPIC_AUTHORIZATION_FAILED"
    assert sorted(AdminClient(anonymous).list_topics(timeout=10).topics) == []
