"""SSL listeners against real clients: confluent-kafka and kafka-python over TLS, mutual TLS, refused certificates."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from tests.broker.conftest import read_to_end, unique_topic
from tests.broker.tls_support import Certificates, make_certificates
from tests.process import BrokerProcess, RawClient, free_port


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certs"))


def start_tls_broker(data: Path, certs: Certificates, *extra: str) -> tuple[BrokerProcess, int, int]:
    plain, secure = free_port(), free_port()
    process = BrokerProcess(
        data,
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}",
        "--config", f"listener.name.ssl.ssl.keystore.location={certs.server}",
        "--config", "ssl.keystore.type=PEM",
        "--config", f"ssl.truststore.location={certs.ca}",
        *extra,
        port=plain,
        listen_flag=False,
    ).start()  # fmt: skip
    return process, plain, secure


@pytest.fixture(scope="module")
def mtls_broker(tmp_path_factory: pytest.TempPathFactory, certs: Certificates) -> Iterator[tuple[BrokerProcess, int]]:
    process, _, secure = start_tls_broker(
        tmp_path_factory.mktemp("mtls") / "data",
        certs,
        "--config",
        "listener.name.ssl.ssl.client.auth=required",
        "--log-level",
        "debug",  # the principal is logged at debug level
    )
    try:
        yield process, secure
    finally:
        process.stop()


def confluent_ssl(certs: Certificates, port: int, cert: Path | None, key: Path | None) -> dict[str, str]:
    config = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
    }
    if cert is not None and key is not None:
        config |= {"ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    return config


def round_trip_confluent(config: dict[str, str], count: int = 50, size: int = 1000) -> list[bytes]:
    from confluent_kafka import Consumer, Producer

    topic = unique_topic("tls")
    producer = Producer(config)
    for i in range(count):
        producer.produce(topic, (b"%d:" % i).ljust(size, b"v"))
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


def test_confluent_kafka_over_mutual_tls(mtls_broker: tuple[BrokerProcess, int], certs: Certificates) -> None:
    broker, port = mtls_broker
    values = round_trip_confluent(confluent_ssl(certs, port, certs.client_cert, certs.client_key))
    assert [v.split(b":")[0] for v in values] == [b"%d" % i for i in range(50)]


def test_kafka_python_over_mutual_tls(mtls_broker: tuple[BrokerProcess, int], certs: Certificates) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    _, port = mtls_broker
    options = {
        "bootstrap_servers": f"127.0.0.1:{port}",
        "security_protocol": "SSL",
        "ssl_cafile": str(certs.ca),
        "ssl_certfile": str(certs.client_cert),
        "ssl_keyfile": str(certs.client_key),
    }
    topic = unique_topic("tls-kp")
    producer = KafkaProducer(**options)
    for i in range(20):
        producer.send(topic, b"kp-%d" % i)
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(**options, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        values = [message.value for message in read_to_end(consumer)]
    finally:
        consumer.close()
    assert values == [b"kp-%d" % i for i in range(20)]


def test_principal_is_the_certificate_subject(mtls_broker: tuple[BrokerProcess, int], certs: Certificates) -> None:
    broker, port = mtls_broker
    context = ssl.create_default_context(cafile=str(certs.ca))
    context.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    with socket.create_connection(("127.0.0.1", port)) as raw, context.wrap_socket(raw, server_hostname="localhost"):
        pass
    deadline = time.monotonic() + 5
    while 'principal="User:CN=alice,OU=eng,O=kbroker tests,C=NL"' not in broker.log_text():
        assert time.monotonic() < deadline, broker.log_text()[-2000:]
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("who", "alert", "reason"),
    [("rogue", "alert unknown ca", "CERTIFICATE_VERIFY_FAILED"), ("none", "alert certificate required", "CERTIFICATE")],
)
def test_untrusted_or_missing_client_certificate_is_refused(
    mtls_broker: tuple[BrokerProcess, int], certs: Certificates, who: str, alert: str, reason: str
) -> None:
    """The client hears the TLS alert (librdkafka's usual SSL error), the broker logs the failed authentication."""
    from confluent_kafka import KafkaError, Producer

    broker, port = mtls_broker
    errors: list[KafkaError] = []
    cert, key = (certs.rogue_cert, certs.rogue_key) if who == "rogue" else (None, None)
    delivered: list[object] = []
    producer = Producer(confluent_ssl(certs, port, cert, key) | {"error_cb": errors.append})
    producer.produce(unique_topic("refused"), b"never stored", on_delivery=lambda err, msg: delivered.append(err))
    # not delivered: still queued (with, on a busy machine, a request librdkafka counts with it)
    assert producer.flush(3) >= 1 and delivered == []
    messages = [e.str() for e in errors if e.code() == KafkaError._TRANSPORT]
    assert messages and all(alert in m for m in messages), [e.str() for e in errors]
    log = broker.log_text()
    assert "event=authentication_failed" in log and reason in log
    assert broker.alive()


def test_plaintext_client_on_the_ssl_port_and_tls_on_the_plaintext_port(tmp_path: Path, certs: Certificates) -> None:
    broker, plain, secure = start_tls_broker(tmp_path / "data", certs)
    try:
        with socket.create_connection(("127.0.0.1", plain)) as sock:
            context = ssl.create_default_context(cafile=str(certs.ca))
            with pytest.raises((ssl.SSLError, ConnectionError)):
                context.wrap_socket(sock, server_hostname="localhost")
        assert "looks like a TLS handshake on a PLAINTEXT listener" in broker.log_text()
        values = round_trip_confluent(confluent_ssl(certs, secure, None, None), count=5)  # no client auth asked
        assert len(values) == 5
    finally:
        broker.stop()


def test_inline_pem_keystore(tmp_path: Path, certs: Certificates) -> None:
    chain = certs.server_cert.read_text().replace("\n", "\\n")
    key = certs.server_key.read_text().replace("\n", "\\n")
    properties = tmp_path / "server.properties"
    properties.write_text(f"ssl.keystore.type=PEM\nssl.keystore.certificate.chain={chain}\nssl.keystore.key={key}\n")
    plain, secure = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        "--config-file", str(properties),
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}",
        port=plain,
        listen_flag=False,
    ).start()  # fmt: skip
    try:
        values = round_trip_confluent(confluent_ssl(certs, secure, None, None), count=3)
        assert len(values) == 3
        with RawClient(broker.bootstrap) as client:
            body = {
                "resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": ["ssl.keystore.key"]}],
                "include_synonyms": True,
                "include_documentation": False,
            }
            (entry,) = client.call(ApiKey.DESCRIBE_CONFIGS, 4, body)["results"][0]["configs"]
        assert entry["value"] is None and entry["is_sensitive"]  # a private key is never shown, as Kafka does
        assert all(s["value"] is None for s in entry["synonyms"])
    finally:
        broker.stop()


def test_ssl_listener_without_keystore_fails_the_start(tmp_path: Path) -> None:
    plain, secure = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        "--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}",
        port=plain,
        listen_flag=False,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="has no keystore"):
        broker.start()
    assert not (tmp_path / "data" / "meta.properties").exists()
    assert ApiKey.API_VERSIONS == 18


def test_aiokafka_over_mutual_tls(mtls_broker: tuple[BrokerProcess, int], certs: Certificates) -> None:
    import asyncio

    import aiokafka
    from aiokafka.helpers import create_ssl_context

    _, port = mtls_broker
    topic = unique_topic("tls-aio")

    async def run() -> list[bytes]:
        context = create_ssl_context(
            cafile=str(certs.ca), certfile=str(certs.client_cert), keyfile=str(certs.client_key)
        )
        options = {"bootstrap_servers": f"127.0.0.1:{port}", "security_protocol": "SSL", "ssl_context": context}
        producer = aiokafka.AIOKafkaProducer(**options)
        await producer.start()
        try:
            for i in range(10):
                await producer.send_and_wait(topic, b"aio-%d" % i)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, auto_offset_reset="earliest", **options)
        await consumer.start()
        try:
            values: list[bytes] = []
            while len(values) < 10:
                batch = await consumer.getmany(timeout_ms=5000)
                if not batch:
                    break
                values += [bytes(m.value or b"") for messages in batch.values() for m in messages]
            return values
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [b"aio-%d" % i for i in range(10)]
