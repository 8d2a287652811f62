"""Replication in a secured cluster: three kbroker processes and a real ZooKeeper, each broker's client
listener SASL_SSL (PLAIN and SCRAM-SHA-512), an authorizer with allow.everyone.if.no.acl.found=false and
super.users=User:admin. The brokers replicate as User:admin with SCRAM-SHA-512, over that listener (TLS,
security.inter.broker.protocol) or over a SASL_PLAINTEXT listener of their own (inter.broker.listener.name);
a client with its own SCRAM user and only WRITE/READ ACLs
produces with acks=all and consumes, before and after its leader is killed -9. A principal without
CLUSTER_ACTION sending a follower's Fetch is refused, even with READ on the topic, as Kafka refuses it.

Users and ACLs live in each broker's data directory (not in ZooKeeper), so the admin creates them on each
broker, one connection per broker, with kbroker's own inter-broker channel (PLAIN over TLS)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kbroker.cluster.channel import BrokerChannel
from kbroker.cluster.channel_security import ChannelSecurity
from kbroker.cluster.znodes import BrokerEndpoint
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from scripts.zookeeper import ZooKeeperServer
from tests.broker.conftest import fetch_request
from tests.broker.test_acls import GROUP, READ, WRITE, creation
from tests.broker.test_secured_setup import sasl_ssl
from tests.broker.tls_support import Certificates, make_certificates
from tests.cluster.test_cluster_brokers import Cluster, wait_until

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_mallory="mallory-secret";'
)
SCRAM_JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
)
SCRAM_SHA_512 = 2


def secured_cluster(cluster: Cluster, certs: Certificates, inter_broker: str) -> None:
    """Start three brokers whose client listener is SASL_SSL and whose inter-broker listener is `inter_broker`
    (the same listener, named through security.inter.broker.protocol, or a SASL_PLAINTEXT one of its own,
    named through inter.broker.listener.name)."""
    cluster.listener = "SASL_SSL"
    if inter_broker == "SASL_SSL":
        cluster.configs["security.inter.broker.protocol"] = "SASL_SSL"
    else:
        cluster.more_listeners = (inter_broker,)
        cluster.configs["inter.broker.listener.name"] = inter_broker
        cluster.configs[f"listener.name.{inter_broker.lower()}.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
    cluster.configs.update(
        {
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            f"listener.name.{inter_broker.lower()}.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
            "ssl.keystore.location": str(certs.server),
            "ssl.truststore.location": str(certs.ca),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": "User:admin",
        }
    )
    for node_id in (1, 2, 3):
        cluster.start(node_id)


@pytest.fixture
def secured(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[tuple[Cluster, Certificates]]:
    """Unstarted: the test starts it with `secured_cluster`."""
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    try:
        yield cluster, make_certificates(tmp_path / "tls")
    finally:
        cluster.stop_all()


def call(
    certs: Certificates, port: int, user: str, password: str, api_key: int, version: int, body: dict[str, Any]
) -> dict[str, Any]:
    """One request to the broker at `port`, authenticated with PLAIN over TLS."""
    security = ChannelSecurity("SASL_SSL", ssl.create_default_context(cafile=certs.ca), "PLAIN", user, password)
    endpoint = BrokerEndpoint("SASL_SSL", "SASL_SSL", "127.0.0.1", port)

    async def once() -> dict[str, Any]:
        channel = BrokerChannel("test", lambda _: endpoint, security)
        try:
            return await channel.call(0, api_key, version, body, timeout_s=20)
        finally:
            channel.close()

    return asyncio.run(once())


def admin_call(certs: Certificates, port: int, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    return call(certs, port, "admin", "admin-secret", api_key, version, body)


def scram_upsert(user: str, password: str) -> dict[str, Any]:
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 8192)
    return {"name": user, "mechanism": SCRAM_SHA_512, "iterations": 8192, "salt": salt, "salted_password": salted}


def set_up_users(cluster: Cluster, certs: Certificates, topic: str) -> None:
    """On every broker: SCRAM-SHA-512 credentials for admin (the brokers' own) and alice, and alice's ACLs."""
    for process in cluster.brokers.values():
        upserts = [scram_upsert("admin", "admin-secret"), scram_upsert("alice", "alice-secret")]
        altered = admin_call(
            certs, process.port, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": upserts}
        )
        assert [r["error_code"] for r in altered["results"]] == [0, 0], altered
        creations = [creation(topic, WRITE), creation(topic, READ), creation("readers", READ, resource_type=GROUP)]
        created = admin_call(certs, process.port, ApiKey.CREATE_ACLS, 3, {"creations": creations})
        assert [r["error_code"] for r in created["results"]] == [0, 0, 0], created


def client_config(cluster: Cluster, certs: Certificates, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return sasl_ssl(0, certs, mechanism, user, password) | {"bootstrap.servers": cluster.bootstrap()}


def create_topic(cluster: Cluster, certs: Certificates, topic: str) -> AdminClient:
    admin = AdminClient(client_config(cluster, certs, "PLAIN", "admin", "admin-secret"))

    def brokers() -> int:
        try:
            return len(admin.list_topics(timeout=10).brokers)
        except KafkaException:
            return 0

    wait_until(lambda: brokers() == 3, what="three live brokers")
    new = NewTopic(topic, num_partitions=1, replication_factor=3, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(30)
    return admin


def partition_state(admin: AdminClient, topic: str) -> Any:
    """Partition 0 as Metadata shows it; None while it cannot be read (a broker just killed, say)."""
    try:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    except KafkaException:
        return None
    return partitions.get(0)


def produce(config: dict[str, Any], topic: str, values: list[str]) -> list[int]:
    """acks=all; the offsets acknowledged (every record must be)."""
    producer = Producer(config | {"acks": "all", "enable.idempotence": True, "message.timeout.ms": 30000})
    acknowledged: list[int] = []
    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acknowledged.append(message.offset())
        else:
            failures.append(str(error))

    for value in values:
        producer.produce(topic, value.encode(), on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failures, failures[:3]
    return acknowledged


@pytest.mark.parametrize("inter_broker", ["SASL_SSL", "SASL_PLAINTEXT"])
def test_a_secured_cluster_replicates_and_keeps_acknowledged_records_when_the_leader_dies(
    secured: tuple[Cluster, Certificates], inter_broker: str
) -> None:
    cluster, certs = secured
    secured_cluster(cluster, certs, inter_broker)
    topic = "payments"
    set_up_users(cluster, certs, topic)
    admin = create_topic(cluster, certs, topic)
    alice = client_config(cluster, certs, "SCRAM-SHA-512", "alice", "alice-secret")

    first = [f"r{i}" for i in range(200)]
    assert produce(alice, topic, first) == list(range(200))  # acks=all: the followers fetched them, as admin
    state = wait_until(
        lambda: (p := partition_state(admin, topic)) is not None and len(p.isrs) == 3 and p, what="ISR of three"
    )
    leader = state.leader
    cluster.brokers[leader].kill()

    survivors = AdminClient(client_config(cluster, certs, "PLAIN", "admin", "admin-secret"))
    wait_until(
        lambda: (p := partition_state(survivors, topic)) is not None and p.leader not in (-1, leader),
        what="a new leader",
    )
    more = [f"s{i}" for i in range(50)]
    assert produce(alice, topic, more) == list(range(200, 250))  # the two survivors replicate to each other

    consumer = Consumer(alice | {"group.id": "readers", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[str] = []

        def read_all() -> bool:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value().decode())
            return len(values) >= 250

        wait_until(read_all, timeout=60, what="every acknowledged record")
        assert values == first + more
    finally:
        consumer.close()


def test_a_follower_fetch_needs_cluster_action_not_topic_read(secured: tuple[Cluster, Certificates]) -> None:
    cluster, certs = secured
    secured_cluster(cluster, certs, "SASL_SSL")
    topic = "ledger"
    set_up_users(cluster, certs, topic)
    admin = create_topic(cluster, certs, topic)
    state = wait_until(lambda: (p := partition_state(admin, topic)) is not None and p.leader > 0 and p)
    port = cluster.brokers[state.leader].port
    follower = fetch_request([(topic, 0, 0)]) | {"replica_id": 2}
    consumer = fetch_request([(topic, 0, 0)])

    def errors(body: dict[str, Any]) -> list[int]:
        response = call(certs, port, "mallory", "mallory-secret", ApiKey.FETCH, 12, body)
        return [p["error_code"] for t in response["responses"] for p in t["partitions"]]

    # Kafka's KafkaApis.handleFetchRequest answers a follower without CLUSTER_ACTION with
    # TOPIC_AUTHORIZATION_FAILED for every partition
    assert errors(follower) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert errors(consumer) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    granted = admin_call(certs, port, ApiKey.CREATE_ACLS, 3, {"creations": [creation(topic, READ, "User:mallory")]})
    assert granted["results"][0]["error_code"] == 0
    # a consumer's fetch: READ on the topic is enough (once the leader has read its new role from ZooKeeper)
    wait_until(lambda: errors(consumer) == [ErrorCode.NONE], what="a consumer's fetch with READ")
    assert errors(follower) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]  # a follower's: READ is not
