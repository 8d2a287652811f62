"""ACLs on kbroker and on Apache Kafka 4.3.1 configured the same way: what Kafka's kafka-acls tool and
clients see must agree.

Both brokers: a PLAINTEXT listener (User:ANONYMOUS), a SASL_PLAINTEXT listener with PLAIN users admin,
alice and bob, `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer` and
`super.users=User:admin`. Kafka's KRaft node also authorizes its own controller and inter-broker
connections, so there they run over SASL as admin (a super user) too.

Compared: kafka-acls adding, listing (all, per resource, with the MATCH pattern type, per principal)
and removing ACLs, and refusing a non-super user; then, as alice with a few ACLs, confluent-kafka's
produce, fetch, group join, transactional produce, topic deletion and metadata (each allowed and
denied), and the authorized operations reported by DescribeCluster, Metadata and DescribeGroups.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.process import BrokerProcess, free_port

if not shutil.which("java"):
    pytest.skip("Apache Kafka and its tools need java", allow_module_level=True)

from tests.kafka_ref import KafkaRef  # noqa: E402
from tests.tools.test_kafka_tools import ToolJvm, classpath  # noqa: E402,F401 - classpath is a fixture

ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
)
PROPERTIES = [
    "sasl.enabled.mechanisms=PLAIN",
    f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:admin",
]
# Kafka only: the node's controller and inter-broker connections authenticate as admin
KAFKA_PROPERTIES = [
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.mechanism.controller.protocol=PLAIN",
    "listener.name.controller.sasl.enabled.mechanisms=PLAIN",
    f"listener.name.controller.plain.sasl.jaas.config={JAAS}",
    "inter.broker.listener.name=SASL_PLAINTEXT",
    "sasl.mechanism.inter.broker.protocol=PLAIN",
]
BROKERS = ("kbroker", "kafka")


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[int, int]]]:
    """name -> (PLAINTEXT port, SASL_PLAINTEXT port), both brokers started side by side."""
    kafka = KafkaRef(listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, properties=PROPERTIES + KAFKA_PROPERTIES)
    plain, sasl = free_port(), free_port()
    args = ["--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"]
    for line in PROPERTIES:
        args += ["--config", line]
    data = tmp_path_factory.mktemp("acls") / "data"
    kbroker = BrokerProcess(data, *args, port=plain, listen_flag=False)
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(kafka.start)
        kbroker.start()
        started.result()
    try:
        yield {"kbroker": (plain, sasl), "kafka": (kafka.port, kafka.listener_ports["SASL_PLAINTEXT"])}
    finally:
        kbroker.stop()
        kafka.stop()


def sasl(port: int, user: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": f"{user}-secret",
    }


# --------------------------------------------------------------------------- kafka-acls


def acl_blocks(out: str) -> list[tuple[str, tuple[str, ...]]]:
    """kafka-acls' listing as sorted (resource, sorted entries): the order of both is a hash order in Kafka."""
    blocks: list[tuple[str, list[str]]] = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith(("Current ACLs for resource", "Adding ACLs for resource")):
            blocks.append((line, []))
        elif line.startswith("(principal=") and blocks:
            blocks[-1][1].append(line)
    return sorted((head, tuple(sorted(entries))) for head, entries in blocks)


def run_acls(
    brokers: dict[str, tuple[int, int]], tmp: Path, jvms: dict[str, ToolJvm], user: str, *args: str
) -> dict[str, str]:
    config = tmp / f"{user}.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{user}-secret";\n'
    )

    def one(name: str) -> str:
        bootstrap = f"127.0.0.1:{brokers[name][1]}"
        status, out, err = jvms[name].run(
            ACL_COMMAND, "--bootstrap-server", bootstrap, "--command-config", str(config), *args
        )
        return f"status {status}\n{out}{err}"

    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(one, name) for name in BROKERS}
        return {name: f.result() for name, f in futures.items()}


def test_kafka_acls_tool_agrees(brokers: dict[str, tuple[int, int]], classpath: str, tmp_path: Path) -> None:  # noqa: F811
    jvms = {name: ToolJvm(classpath) for name in BROKERS}
    try:
        seen: dict[str, dict[str, Any]] = {name: {} for name in BROKERS}

        def step(label: str, user: str, *args: str, listing: bool = True) -> None:
            outputs = run_acls(brokers, tmp_path, jvms, user, *args)
            for name, out in outputs.items():
                status = out.splitlines()[0]
                seen[name][label] = (status, acl_blocks(out)) if listing else (status, _error_name(out))

        step("add alice", "admin", "--add", "--allow-principal", "User:alice", "--operation", "Read",
             "--operation", "Describe", "--topic", "orders", "--group", "billing")  # fmt: skip
        step("add bob prefixed", "admin", "--add", "--allow-principal", "User:bob", "--operation", "Write",
             "--topic", "pay-", "--resource-pattern-type", "prefixed")  # fmt: skip
        step("add deny", "admin", "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9",
             "--operation", "All", "--topic", "orders")  # fmt: skip
        step("add producer", "admin", "--add", "--producer", "--allow-principal", "User:carol",
             "--topic", "t1", "--transactional-id", "tx1")  # fmt: skip
        step("add consumer", "admin", "--add", "--consumer", "--allow-principal", "User:carol",
             "--topic", "t1", "--group", "g1")  # fmt: skip
        step("add cluster", "admin", "--add", "--allow-principal", "User:*", "--operation", "IdempotentWrite",
             "--cluster")  # fmt: skip
        step("list", "admin", "--list")
        step("list orders", "admin", "--list", "--topic", "orders")
        step("list match", "admin", "--list", "--topic", "pay-eu", "--resource-pattern-type", "match")
        step("list bob", "admin", "--list", "--principal", "User:bob")
        step("remove alice read", "admin", "--remove", "--force", "--allow-principal", "User:alice",
             "--operation", "Read", "--topic", "orders")  # fmt: skip
        step("remove t1", "admin", "--remove", "--force", "--topic", "t1")
        step("list after removal", "admin", "--list")
        step("alice may not add", "alice", "--add", "--allow-principal", "User:alice", "--operation", "All",
             "--topic", "x", listing=False)  # fmt: skip
        step("alice may not list", "alice", "--list", listing=False)
        step("alice may not remove", "alice", "--remove", "--force", "--topic", "orders", listing=False)
    finally:
        for jvm in jvms.values():
            jvm.close()
    print(seen)
    for label in seen["kafka"]:
        assert seen["kbroker"][label] == seen["kafka"][label], label
    listing = seen["kbroker"]["list after removal"][1]
    assert len(listing) == 6 and all(status == "status 0" for status, _ in list(seen["kbroker"].values())[:13])
    assert "ClusterAuthorizationException" in seen["kbroker"]["alice may not list"][1]


def _error_name(out: str) -> str:
    found = re.search(r"(\w+(?:Exception|Error))", out)
    return found.group(1) if found else out[-200:]


# --------------------------------------------------------------------------- clients as alice


def setup_alice(port: int) -> None:
    """As admin: the topics, and alice's ACLs (WRITE+READ on granted, DESCRIBE only on described, READ on
    group granted-group, WRITE on transactional id granted-tx)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(sasl(port, "admin"))
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in ("granted", "described", "secret")]).values():
        future.result(20)

    def allow(rtype: ResourceType, name: str, operation: AclOperation) -> AclBinding:
        return AclBinding(
            rtype, name, ResourcePatternType.LITERAL, "User:alice", "*", operation, AclPermissionType.ALLOW
        )

    acls = [
        allow(ResourceType.TOPIC, "granted", AclOperation.WRITE),
        allow(ResourceType.TOPIC, "granted", AclOperation.READ),
        allow(ResourceType.TOPIC, "described", AclOperation.DESCRIBE),
        allow(ResourceType.GROUP, "granted-group", AclOperation.READ),
        allow(ResourceType.GROUP, "granted-group-848", AclOperation.READ),
        allow(ResourceType.TRANSACTIONAL_ID, "granted-tx", AclOperation.WRITE),
    ]
    for future in admin.create_acls(acls).values():
        future.result(20)
    time.sleep(1.0)  # Kafka applies ACLs through its metadata log


def produce(config: dict[str, Any], topic: str) -> str:
    from confluent_kafka import Producer

    outcome: list[str] = []
    producer = Producer(config | {"message.timeout.ms": 8000})
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err.name() if err else "delivered"))
    producer.flush(10)
    return outcome[0] if outcome else "no report"


def fetch(config: dict[str, Any], topic: str) -> str:
    """Read partition 0 from the start, assigned (no group membership): the first error, or what arrived."""
    from confluent_kafka import Consumer, TopicPartition

    # librdkafka looks up the coordinator of its group.id even when assigned: a group alice may read
    consumer = Consumer(config | {"group.id": "granted-group", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                return str(message.error().name())
            return "read"
        return "nothing"
    finally:
        consumer.close()


def join(config: dict[str, Any], group: str, topic: str, protocol: str = "classic") -> str:
    from confluent_kafka import Consumer

    settings = {"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    consumer = Consumer(config | settings | {"group.protocol": protocol})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                return str(message.error().name())
            return "read"
        return "nothing"
    finally:
        consumer.close()


def transactional(config: dict[str, Any], transactional_id: str, topic: str) -> str:
    from confluent_kafka import KafkaException, Producer

    producer = Producer(config | {"transactional.id": transactional_id, "transaction.timeout.ms": 10000})
    try:
        producer.init_transactions(10)
        producer.begin_transaction()
        producer.produce(topic, b"tx")
        producer.commit_transaction(10)
        return "committed"
    except KafkaException as error:
        return str(error.args[0].name())


def delete_topic(config: dict[str, Any], topic: str) -> str:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        admin = AdminClient(config)
        admin.delete_topics([topic])[topic].result(15)
        return "deleted"
    except KafkaException as error:
        return str(error.args[0].name())


def kafka_python(port: int) -> dict[str, str]:
    """kafka-python as alice: a produce to a topic it may only describe, a group it may not read."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    auth = {
        "bootstrap_servers": f"127.0.0.1:{port}",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    seen: dict[str, str] = {}
    producer = KafkaProducer(**auth, max_block_ms=8000)
    for topic in ("granted", "described"):
        try:
            producer.send(topic, b"kp").get(10)
            seen[f"kafka-python produce {topic}"] = "delivered"
        except KafkaError as error:
            seen[f"kafka-python produce {topic}"] = type(error).__name__
    producer.close()
    consumer = KafkaConsumer("granted", group_id="other-group", **auth, consumer_timeout_ms=5000)
    try:
        consumer.poll(timeout_ms=5000)
        seen["kafka-python join other-group"] = "joined"
    except KafkaError as error:
        seen["kafka-python join other-group"] = type(error).__name__
    finally:
        consumer.close()
    return seen


def admin_calls(config: dict[str, Any]) -> dict[str, Any]:
    """Admin requests as alice, each answered with a result or its error's name."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, ResourceType

    admin = AdminClient(config)

    def outcome(call: Any) -> Any:
        try:
            return call()
        except KafkaException as error:
            return str(error.args[0].name())

    def one(futures: Any) -> Any:
        return next(iter(futures.values())).result(15)

    topic_configs = ConfigResource(ResourceType.TOPIC, "described")
    return {
        "describe configs described": outcome(lambda: len(one(admin.describe_configs([topic_configs]))) > 0),
        "list groups": outcome(lambda: sorted(g.group_id for g in admin.list_consumer_groups().result(15).valid)),
        "offsets of other-group": outcome(
            lambda: one(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("other-group")])).group_id
        ),
        "add partitions to granted": outcome(lambda: one(admin.create_partitions([NewPartitions("granted", 3)]))),
    }


def operations(config: dict[str, Any]) -> dict[str, Any]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicCollection  # noqa: F401
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(config)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(15)
    topics = admin.describe_topics(TopicCollection(["granted"]), include_authorized_operations=True)
    topic = topics["granted"].result(15)
    group = admin.describe_consumer_groups(["granted-group"], include_authorized_operations=True)["granted-group"]
    described = group.result(15)

    def names(ops: Any) -> list[str] | None:
        return None if ops is None else sorted(op.name for op in ops)

    return {
        "cluster": names(cluster.authorized_operations),
        "topic granted": names(topic.authorized_operations),
        "group granted-group": names(described.authorized_operations),
    }


def observe(plain: int, sasl_port: int) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient

    setup_alice(sasl_port)
    alice, admin = sasl(sasl_port, "alice"), sasl(sasl_port, "admin")
    seen: dict[str, Any] = {}
    seen["produce granted"] = produce(alice, "granted")
    seen["produce described"] = produce(alice, "described")  # Produce's own check: metadata is allowed
    seen["produce secret"] = produce(alice, "secret")  # hidden by Metadata
    seen["fetch granted"] = fetch(alice, "granted")
    seen["fetch described"] = fetch(alice, "described")  # Fetch's own check
    seen["fetch secret"] = fetch(alice, "secret")
    seen["join granted-group"] = join(alice, "granted-group", "granted")
    seen["join other-group"] = join(alice, "other-group", "granted")
    seen["join other-group (KIP-848)"] = join(alice, "other-group", "granted", "consumer")
    seen["join granted-group (KIP-848)"] = join(alice, "granted-group-848", "granted", "consumer")
    seen["join granted-group, secret (KIP-848)"] = join(alice, "granted-group-848", "secret", "consumer")
    seen["transaction granted-tx"] = transactional(alice, "granted-tx", "granted")
    seen["transaction other-tx"] = transactional(alice, "other-tx", "granted")
    seen["delete granted"] = delete_topic(alice, "granted")
    seen["delete secret"] = delete_topic(alice, "secret")
    seen["alice sees topics"] = sorted(t for t in AdminClient(alice).list_topics(timeout=10).topics if t[:2] != "__")
    anonymous = {"bootstrap.servers": f"127.0.0.1:{plain}"}
    seen["anonymous sees topics"] = sorted(AdminClient(anonymous).list_topics(timeout=10).topics)
    seen["anonymous produce"] = produce(anonymous, "granted")
    seen["alice operations"] = operations(alice)
    seen["admin operations"] = operations(admin)
    seen.update(kafka_python(sasl_port))
    seen.update(admin_calls(alice))
    seen["admin deletes secret"] = delete_topic(admin, "secret")
    return seen


def test_unauthorised_clients_get_the_same_errors(brokers: dict[str, tuple[int, int]]) -> None:
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(observe, *brokers[name]) for name in BROKERS}
        results = {name: f.result() for name, f in futures.items()}
    print(results)
    for key in results["kafka"]:
        assert results["kbroker"][key] == results["kafka"][key], key
    seen = results["kbroker"]
    assert seen["produce described"] == "TOPIC_AUTHORIZATION_FAILED"
    assert seen["fetch described"] == "TOPIC_AUTHORIZATION_FAILED"
    assert seen["join other-group"] == "GROUP_AUTHORIZATION_FAILED"
    assert seen["transaction other-tx"] == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert seen["delete granted"] == "TOPIC_AUTHORIZATION_FAILED"
    assert seen["produce granted"] == "delivered" and seen["transaction granted-tx"] == "committed"
    assert seen["kafka-python produce described"] == "TopicAuthorizationFailedError"
    assert seen["kafka-python join other-group"] == "GroupAuthorizationFailedError"
