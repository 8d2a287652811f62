"""SASL_PLAINTEXT and SASL_SSL listeners (PLAIN, SCRAM) against real clients: confluent-kafka, kafka-python, Kafka's tools."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from tests.broker.conftest import read_to_end, unique_topic
from tests.broker.tls_support import Certificates, make_certificates
from tests.process import BrokerProcess, RawClient, free_port

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def sasl_broker(
    tmp_path_factory: pytest.TempPathFactory, certs: Certificates
) -> Iterator[tuple[BrokerProcess, int, int]]:
    plain, sasl, sasl_ssl = free_port(), free_port(), free_port()
    process = BrokerProcess(
        tmp_path_factory.mktemp("sasl") / "data",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                    f"SASL_SSL://127.0.0.1:{sasl_ssl}",
        "--config", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--config", f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        "--config", f"listener.name.sasl_ssl.ssl.keystore.location={certs.server}",
        "--config", "sasl.enabled.mechanisms=PLAIN",
        port=plain,
        listen_flag=False,
    ).start()  # fmt: skip
    try:
        yield process, sasl, sasl_ssl
    finally:
        process.stop()


def confluent(port: int, user: str, password: str, certs: Certificates | None = None) -> dict[str, str]:
    config = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_SSL" if certs else "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }
    if certs is not None:
        config["ssl.ca.location"] = str(certs.ca)
    return config


def round_trip(config: dict[str, str], count: int = 20) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    topic = unique_topic("sasl")
    producer = Producer(config)
    for i in range(count):
        producer.produce(topic, b"%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer(config | {"group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(bytes(message.value() or b""))
    finally:
        consumer.close()
    return values


def test_confluent_kafka_sasl_plaintext_plain(sasl_broker: tuple[BrokerProcess, int, int]) -> None:
    broker, sasl, _ = sasl_broker
    assert round_trip(confluent(sasl, "alice", "alice-secret")) == [b"%d" % i for i in range(20)]
    assert "principal=User:alice" in broker.log_text()


def test_confluent_kafka_sasl_ssl_plain(sasl_broker: tuple[BrokerProcess, int, int], certs: Certificates) -> None:
    _, _, sasl_ssl = sasl_broker
    assert round_trip(confluent(sasl_ssl, "admin", "admin-secret", certs)) == [b"%d" % i for i in range(20)]


def test_kafka_python_sasl_plain(sasl_broker: tuple[BrokerProcess, int, int], certs: Certificates) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    _, sasl, sasl_ssl = sasl_broker
    for port, protocol in ((sasl, "SASL_PLAINTEXT"), (sasl_ssl, "SASL_SSL")):
        options = {
            "bootstrap_servers": f"127.0.0.1:{port}",
            "security_protocol": protocol,
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": "alice",
            "sasl_plain_password": "alice-secret",
        }
        if protocol == "SASL_SSL":
            options["ssl_cafile"] = str(certs.ca)
        topic = unique_topic("sasl-kp")
        producer = KafkaProducer(**options)
        for i in range(10):
            producer.send(topic, b"kp-%d" % i)
        producer.flush(15)
        producer.close()
        consumer = KafkaConsumer(**options, auto_offset_reset="earliest")
        try:
            consumer.assign([TopicPartition(topic, 0)])
            assert [m.value for m in read_to_end(consumer)] == [b"kp-%d" % i for i in range(10)]
        finally:
            consumer.close()


def test_wrong_password_gets_the_clients_authentication_error(sasl_broker: tuple[BrokerProcess, int, int]) -> None:
    from confluent_kafka import KafkaError, Producer

    broker, sasl, _ = sasl_broker
    errors: list[KafkaError] = []
    producer = Producer(confluent(sasl, "alice", "wrong") | {"error_cb": errors.append})
    producer.produce(unique_topic("denied"), b"never stored")
    assert producer.flush(3) == 1
    authentication = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert authentication, [e.str() for e in errors]
    assert "Invalid username or password" in authentication[0].str()
    assert "event=authentication_failed" in broker.log_text()


def test_kafka_python_wrong_password(
    sasl_broker: tuple[BrokerProcess, int, int], caplog: pytest.LogCaptureFixture
) -> None:
    """kafka-python reports SaslAuthenticationFailedError on each attempt, then gives up bootstrapping."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaTimeoutError

    _, sasl, _ = sasl_broker
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaConsumer(
            bootstrap_servers=f"127.0.0.1:{sasl}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="nope",
            bootstrap_timeout_ms=3000,
        )
    assert "SaslAuthenticationFailedError" in caplog.text and "Invalid username or password" in caplog.text


def test_sasl_apis_are_advertised_on_sasl_listeners_only(sasl_broker: tuple[BrokerProcess, int, int]) -> None:
    broker, sasl, _ = sasl_broker
    with RawClient(broker.bootstrap) as plaintext, RawClient(f"127.0.0.1:{sasl}") as on_sasl:
        plain_keys = {k["api_key"] for k in plaintext.call(ApiKey.API_VERSIONS, 3, {})["api_keys"]}
        sasl_keys = {k["api_key"] for k in on_sasl.call(ApiKey.API_VERSIONS, 3, {})["api_keys"]}
        assert ApiKey.SASL_HANDSHAKE not in plain_keys and ApiKey.SASL_AUTHENTICATE not in plain_keys
        assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= sasl_keys
        on_sasl.send(on_sasl.request_bytes(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}))
        assert on_sasl.closed_by_peer()  # nothing but the SASL exchange before authentication


@pytest.fixture(scope="module")
def scram_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, int]]:
    plain, sasl = free_port(), free_port()
    process = BrokerProcess(
        tmp_path_factory.mktemp("scram") / "data",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "--config", "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
        port=plain,
        listen_flag=False,
    ).start()  # fmt: skip
    try:
        yield process, sasl
    finally:
        if process.alive():
            process.stop()


def scram_config(port: int, mechanism: str, user: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def test_scram_users_managed_by_the_admin_client_then_used(scram_broker: tuple[BrokerProcess, int]) -> None:
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    broker, sasl = scram_broker
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    upsertions = [
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-256"),
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"alice-512"),
    ]
    for future in admin.alter_user_scram_credentials(upsertions).values():
        future.result(10)
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(10)
    assert sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192),
        (ScramMechanism.SCRAM_SHA_512, 4096),
    ]
    assert round_trip(scram_config(sasl, "SCRAM-SHA-256", "alice", "alice-256")) == [b"%d" % i for i in range(20)]
    assert len(round_trip(scram_config(sasl, "SCRAM-SHA-512", "alice", "alice-512"), count=5)) == 5
    errors: list[KafkaError] = []
    producer = Producer(scram_config(sasl, "SCRAM-SHA-256", "alice", "alice-512") | {"error_cb": errors.append})
    producer.produce(unique_topic("denied"), b"never")
    assert producer.flush(3) == 1
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), [e.str() for e in errors]
    assert "alice-256" not in (broker.data_dir / "scram-credentials.json").read_text()


def test_scram_credentials_survive_a_restart_and_kafka_python_uses_them(
    scram_broker: tuple[BrokerProcess, int],
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialUpsertion

    broker, sasl = scram_broker
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        upsertion = UserScramCredentialUpsertion("bob", ScramMechanism.SCRAM_SHA_512, "bob-secret", 4096)
        assert admin.alter_user_scram_credentials([upsertion]) == {"bob": None}
    finally:
        admin.close()
    broker.stop()
    broker.start()
    options = {
        "bootstrap_servers": f"127.0.0.1:{sasl}",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "bob",
        "sasl_plain_password": "bob-secret",
    }
    topic = unique_topic("scram-kp")
    producer = KafkaProducer(**options)
    for i in range(5):
        producer.send(topic, b"%d" % i)
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(**options, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        assert [m.value for m in read_to_end(consumer)] == [b"%d" % i for i in range(5)]
    finally:
        consumer.close()


def test_kafka_configs_tool_adds_scram_users(scram_broker: tuple[BrokerProcess, int]) -> None:
    """Kafka's own kafka-configs (ConfigCommand) manages SCRAM users against kbroker."""
    import shutil
    import subprocess

    broker, sasl = scram_broker
    if not shutil.which("java"):
        pytest.skip("Kafka's tools need java")
    from tests.kafka_ref import ensure_jars

    libs = ensure_jars()
    result = subprocess.run(
        ["java", "-cp", f"{libs}/*", "kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap,
         "--alter", "--entity-type", "users", "--entity-name", "carol",
         "--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret]"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Completed updating config for user carol" in result.stdout
    assert len(round_trip(scram_config(sasl, "SCRAM-SHA-256", "carol", "carol-secret"), count=3)) == 3


def test_java_admin_client_over_mutual_tls_and_sasl_ssl_scram(tmp_path: Path, certs: Certificates) -> None:
    """Kafka 4.3.1's Java admin client (through kafka-configs): adds a SCRAM user over mutual TLS, then
    authenticates with it over SASL_SSL; a wrong password is Java's SaslAuthenticationException."""
    import shutil
    import subprocess

    if not shutil.which("java"):
        pytest.skip("Kafka's tools need java")
    from tests.kafka_ref import ensure_jars

    libs = ensure_jars()
    plain, tls, sasl_ssl = free_port(), free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls},SASL_SSL://127.0.0.1:{sasl_ssl}",
        "--config", f"ssl.keystore.location={certs.server}",
        "--config", f"ssl.truststore.location={certs.ca}",
        "--config", "listener.name.ssl.ssl.client.auth=required",
        "--config", "sasl.enabled.mechanisms=SCRAM-SHA-512",
        port=plain,
        listen_flag=False,
    ).start()  # fmt: skip
    client_keystore = tmp_path / "client-keystore.pem"
    client_keystore.write_text(certs.client_key.read_text() + certs.client_cert.read_text())
    trust = f"ssl.truststore.type=PEM\nssl.truststore.location={certs.ca}\n"
    over_tls = tmp_path / "tls.properties"
    over_tls.write_text(
        f"security.protocol=SSL\n{trust}ssl.keystore.type=PEM\nssl.keystore.location={client_keystore}\n"
    )

    def over_sasl(password: str) -> Path:
        path = tmp_path / f"sasl-{password}.properties"
        jaas = (
            f'org.apache.kafka.common.security.scram.ScramLoginModule required username="dora" password="{password}";'
        )
        path.write_text(f"security.protocol=SASL_SSL\n{trust}sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={jaas}\n")
        return path

    def configs(port: int, properties: Path, *args: str) -> subprocess.CompletedProcess[str]:
        command = ["java", "-cp", f"{libs}/*", "kafka.admin.ConfigCommand", "--bootstrap-server", f"127.0.0.1:{port}",
                   "--command-config", str(properties), *args]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    try:
        added = configs(tls, over_tls, "--alter", "--entity-type", "users", "--entity-name", "dora",
                        "--add-config", "SCRAM-SHA-512=[password=dora-secret]")  # fmt: skip
        assert added.returncode == 0 and "Completed updating config for user dora" in added.stdout, added.stderr
        described = configs(sasl_ssl, over_sasl("dora-secret"), "--describe", "--entity-type", "brokers",
                            "--entity-name", "1")  # fmt: skip
        assert described.returncode == 0 and "configs for broker 1" in described.stdout, described.stderr
        refused = configs(sasl_ssl, over_sasl("wrong"), "--describe", "--entity-type", "brokers",
                          "--entity-name", "1")  # fmt: skip
        assert refused.returncode != 0
        assert "SaslAuthenticationException" in refused.stdout + refused.stderr
        assert "User:dora" in broker.log_text()
    finally:
        broker.stop()


def test_unauthenticated_frames_are_limited_to_sasl_server_max_receive_size(
    sasl_broker: tuple[BrokerProcess, int, int],
) -> None:
    import socket
    import struct

    broker, sasl, _ = sasl_broker
    with socket.create_connection(("127.0.0.1", sasl)) as sock, RawClient(broker.bootstrap) as plaintext:
        sock.sendall(struct.pack(">i", 524288 + 1))
        sock.settimeout(5)
        assert sock.recv(1) == b""
        assert plaintext.call(ApiKey.API_VERSIONS, 3, {})["error_code"] == 0
    assert "frame length 524289 is outside 0..524288" in broker.log_text()


def test_librdkafka_reauthenticates_before_the_session_expires(tmp_path: Path) -> None:
    """KIP-368: with connections.max.reauth.ms=2000 a producer keeps producing for 7 s on the same
    connection, re-authenticating as its sessions near their end; nothing is refused or lost."""
    from confluent_kafka import Producer

    plain, sasl = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "--config", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--config", "connections.max.reauth.ms=2000",
        port=plain,
        listen_flag=False,
    ).start()  # fmt: skip
    try:
        delivered: list[bool] = []
        producer = Producer(confluent(sasl, "alice", "alice-secret"))
        topic = unique_topic("reauth")
        end = time.monotonic() + 7
        while time.monotonic() < end:
            producer.produce(topic, b"x", on_delivery=lambda err, msg: delivered.append(err is None))
            producer.poll(0.1)
        assert producer.flush(10) == 0
        assert delivered and all(delivered)
        log = broker.log_text()
        assert log.count("event=sasl_reauthenticated") >= 2, log[-3000:]
        assert "session expired" not in log
    finally:
        broker.stop()
