"""SASL_PLAINTEXT and SASL_SSL listeners with PLAIN against real clients: confluent-kafka and kafka-python."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from protocol.api_keys import ApiKey
from tests.broker.conftest import unique_topic
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
        consumer = KafkaConsumer(**options, auto_offset_reset="earliest", consumer_timeout_ms=5000)
        try:
            consumer.assign([TopicPartition(topic, 0)])
            assert [m.value for m in consumer] == [b"kp-%d" % i for i in range(10)]
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
