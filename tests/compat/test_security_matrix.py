"""Every client of the compatibility suite over SSL, SASL_PLAINTEXT and SASL_SSL, with PLAIN and both SCRAMs.

One broker for the module with four listeners: PLAINTEXT (to create topics and SCRAM users), SSL with
mutual TLS required, SASL_PLAINTEXT and SASL_SSL offering PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
Each cell is one produce and one consume of a record over that listener with that mechanism; then a
wrong password and a certificate from a CA the broker does not trust must be refused with the
client's own authentication error (librdkafka's _AUTHENTICATION / SSL handshake failure, Java's
SaslAuthenticationException / SslAuthenticationException, kafka-python's and aiokafka's errors,
franz-go's SASL_AUTHENTICATION_FAILED or TLS alert, kafkajs's KafkaJSSASLAuthenticationError).
kafka-python and aiokafka log the refusal and then fail to bootstrap: their log is checked; aiokafka
reports a refused certificate (TLS 1.3 sends the alert after the handshake) only as the connection closing.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.broker.tls_support import Certificates, make_certificates
from tests.compat.clients import Client, ClientError
from tests.compat.driver_client import DriverClient
from tests.compat.registry import FACTORIES
from tests.process import BrokerProcess, free_port

USER, PASSWORD = "alice", "alice-secret"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="admin-secret" user_admin="admin-secret" user_{USER}="{PASSWORD}";'
)
CELLS = [
    ("SSL", None),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]
CLIENTS = ["confluent-kafka", "kcat", "kafka-python", "aiokafka", "java-3.9", "java-4", "franz-go", "kafkajs"]
AUTHENTICATION = "authentication"  # what each helper below calls the client's own authentication error


@dataclass(frozen=True)
class Secured:
    """A listener's address and how a client authenticates to it (the drivers' "security" object)."""

    bootstrap: str
    protocol: str
    mechanism: str | None
    username: str
    password: str
    certs: Certificates
    cert: Path | None = None  # the client's certificate (mutual TLS), with key and keystore (key + chain)
    key: Path | None = None
    keystore: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "mechanism": self.mechanism,
            "username": self.username,
            "password": self.password,
            "ca": str(self.certs.ca),
            "cert": None if self.cert is None else str(self.cert),
            "key": None if self.key is None else str(self.key),
            "keystore": None if self.keystore is None else str(self.keystore),
        }

    def librdkafka(self) -> dict[str, str]:
        config = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol}
        if "SSL" in self.protocol:
            config["ssl.ca.location"] = str(self.certs.ca)
            if self.cert is not None:
                config["ssl.certificate.location"] = str(self.cert)
                config["ssl.key.location"] = str(self.key)
        if self.mechanism is not None:
            config |= {
                "sasl.mechanisms": self.mechanism,
                "sasl.username": self.username,
                "sasl.password": self.password,
            }
        return config

    def python(self) -> dict[str, Any]:
        """kafka-python's and aiokafka's keyword arguments (aiokafka takes an ssl_context instead of files)."""
        options: dict[str, Any] = {"bootstrap_servers": self.bootstrap, "security_protocol": self.protocol}
        if self.mechanism is not None:
            options |= {
                "sasl_mechanism": self.mechanism,
                "sasl_plain_username": self.username,
                "sasl_plain_password": self.password,
            }
        return options


@dataclass(frozen=True)
class Matrix:
    ports: dict[str, int]
    certs: Certificates
    keystore: Path
    rogue_keystore: Path

    def secured(
        self, protocol: str, mechanism: str | None, *, password: str = PASSWORD, rogue: bool = False
    ) -> Secured:
        cert, key, keystore = None, None, None
        if protocol == "SSL":
            cert = self.certs.rogue_cert if rogue else self.certs.client_cert
            key = self.certs.rogue_key if rogue else self.certs.client_key
            keystore = self.rogue_keystore if rogue else self.keystore
        return Secured(
            f"127.0.0.1:{self.ports[protocol]}", protocol, mechanism, USER, password, self.certs, cert, key, keystore
        )


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    certs = make_certificates(tmp_path_factory.mktemp("certs"))
    keystore = certs.ca.parent / "client-keystore.pem"
    keystore.write_text(certs.client_key.read_text() + certs.client_cert.read_text())
    rogue_keystore = certs.ca.parent / "rogue-keystore.pem"
    rogue_keystore.write_text(certs.rogue_key.read_text() + certs.rogue_cert.read_text())
    ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    broker = BrokerProcess(
        tmp_path_factory.mktemp("matrix") / "data",
        "--config", f"listeners={listeners}",
        "--config", f"ssl.keystore.location={certs.server}",
        "--config", f"ssl.truststore.location={certs.ca}",
        "--config", "listener.name.ssl.ssl.client.auth=required",
        "--config", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "--config", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--config", f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        "--config", "connection.failed.authentication.delay.ms=10",
        port=ports["PLAINTEXT"],
        listen_flag=False,
    ).start()  # fmt: skip
    try:
        from confluent_kafka.admin import (
            AdminClient,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        upsertions = [
            UserScramCredentialUpsertion(USER, ScramCredentialInfo(mechanism, 4096), PASSWORD.encode())
            for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
        ]
        for future in admin.alter_user_scram_credentials(upsertions).values():
            future.result(15)
        yield Matrix(ports, certs, keystore, rogue_keystore)
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def drivers() -> Iterator[dict[str, Client | str]]:
    made: dict[str, Client | str] = {}
    yield made
    for client in made.values():
        if isinstance(client, Client):
            client.close()


def new_topic(matrix: Matrix) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"secured-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{matrix.ports['PLAINTEXT']}"})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    return topic


# ----- one produce and one consume per client; each returns the value read back, or raises Refused


class Refused(Exception):
    """The client failed; `kind` is AUTHENTICATION when it was the client's own authentication error."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def via_confluent(secured: Secured, topic: str, value: bytes) -> bytes:
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    errors: list[KafkaError] = []
    producer = Producer(secured.librdkafka() | {"error_cb": errors.append, "message.timeout.ms": 10000})
    producer.produce(topic, value, partition=0)
    for _ in range(24):
        if producer.flush(0.5) == 0 or any(_librdkafka_refusal(e.code(), e.str()) for e in errors):
            break
    if len(producer) or errors:
        refused = any(_librdkafka_refusal(e.code(), e.str()) for e in errors)
        raise Refused(AUTHENTICATION if refused else "other", "; ".join(e.str() for e in errors[:2]))
    consumer = Consumer(secured.librdkafka() | {"group.id": topic, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        message = consumer.poll(15)
        assert message is not None and message.error() is None, message and message.error()
        return bytes(message.value())
    finally:
        consumer.close()


def _librdkafka_refusal(code: int, text: str) -> bool:
    """librdkafka's usual authentication errors: _AUTHENTICATION for SASL; a refused certificate is the
    broker's TLS alert, reported as a transport (or SSL) error naming it."""
    from confluent_kafka import KafkaError

    return code == KafkaError._AUTHENTICATION or (code in (KafkaError._TRANSPORT, KafkaError._SSL) and "alert" in text)


def via_kcat(secured: Secured, topic: str, value: bytes) -> bytes:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed: run scripts/install_clients")
    options = [
        a for name, v in secured.librdkafka().items() if name != "bootstrap.servers" for a in ("-X", f"{name}={v}")
    ]
    options += ["-b", secured.bootstrap, "-t", topic, "-p", "0"]
    sent = subprocess.run(["kcat", "-P", *options, "-X", "message.timeout.ms=10000"], input=value + b"\n",
                          capture_output=True, timeout=60)  # fmt: skip
    err = sent.stderr.decode(errors="replace")
    if sent.returncode != 0 or "ERROR" in err:
        failed = "SASL authentication error" in err or "SSL alert" in err
        raise Refused(AUTHENTICATION if failed else "other", err.strip()[-500:])
    read = subprocess.run(["kcat", "-C", *options, "-o", "beginning", "-c", "1", "-e", "-q"],
                          capture_output=True, timeout=60)  # fmt: skip
    assert read.returncode == 0, read.stderr
    return read.stdout.rstrip(b"\n")


class _Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def via_kafka_python(secured: Secured, topic: str, value: bytes) -> bytes:
    """kafka-python logs the broker's refusal (SaslAuthenticationFailedError, or the SSL error) on each
    attempt, then gives up bootstrapping: that log line is its authentication error."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError

    options = secured.python()
    if "SSL" in secured.protocol:
        options |= {"ssl_cafile": str(secured.certs.ca), "ssl_check_hostname": True}
        if secured.cert is not None:
            options |= {"ssl_certfile": str(secured.cert), "ssl_keyfile": str(secured.key)}
    logged = _Logged()
    logger = logging.getLogger("kafka")
    logger.addHandler(logged)
    try:
        producer = KafkaProducer(**options, request_timeout_ms=10000, max_block_ms=10000, bootstrap_timeout_ms=5000)
        try:
            producer.send(topic, value, partition=0).get(15)
        finally:
            producer.close(5)
    except KafkaError as error:
        text = "\n".join(logged.lines)
        refused = "SaslAuthenticationFailedError" in text or "[SSL: " in text or "SSLError" in text
        raise Refused(AUTHENTICATION if refused else "other", f"{error!r}; {text[-400:]}") from None
    finally:
        logger.removeHandler(logged)
    consumer = KafkaConsumer(**options, enable_auto_commit=False, consumer_timeout_ms=15000)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, 0)
        for message in consumer:
            return bytes(message.value)
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()


def via_aiokafka(secured: Secured, topic: str, value: bytes) -> bytes:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.errors import KafkaError
    from aiokafka.helpers import create_ssl_context

    options = secured.python()
    if "SSL" in secured.protocol:
        options["ssl_context"] = create_ssl_context(
            cafile=str(secured.certs.ca),
            certfile=None if secured.cert is None else str(secured.cert),
            keyfile=None if secured.key is None else str(secured.key),
        )

    async def run() -> bytes:
        producer = AIOKafkaProducer(**options, request_timeout_ms=10000)
        try:
            await asyncio.wait_for(producer.start(), 20)
            await producer.send_and_wait(topic, value, partition=0)
        except KafkaError as error:  # aiokafka logs the broker's refusal, then cannot bootstrap
            text = "\n".join(logged.lines)
            # a refused certificate: TLS 1.3 delivers the broker's alert after the handshake, which
            # aiokafka only reports as the connection closing
            refused = "SaslAuthenticationFailed" in text or (secured.protocol == "SSL" and "closed" in text)
            raise Refused(AUTHENTICATION if refused else "other", f"{error!r}; {text[-400:]}") from None
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**options, enable_auto_commit=False)
        await consumer.start()
        try:
            partition = TopicPartition(topic, 0)
            consumer.assign([partition])
            consumer.seek(partition, 0)
            message = await asyncio.wait_for(consumer.getone(), 15)
            return bytes(message.value or b"")
        finally:
            await consumer.stop()

    logged = _Logged()
    logger = logging.getLogger("aiokafka")
    logger.addHandler(logged)
    try:
        return asyncio.run(run())
    finally:
        logger.removeHandler(logged)


def via_driver(name: str, drivers: dict[str, Client | str]) -> Callable[[Secured, str, bytes], bytes]:
    def run(secured: Secured, topic: str, value: bytes) -> bytes:
        if name not in drivers:
            drivers[name] = FACTORIES[name]()
        client = drivers[name]
        if isinstance(client, str):
            pytest.skip(client)
        assert isinstance(client, DriverClient)
        record = {"key": None, "value": base64.b64encode(value).decode(), "headers": [], "timestamp": None,
                  "partition": 0}  # fmt: skip
        security = secured.to_json()
        try:
            client.call("produce", timeout_s=90, bootstrap=secured.bootstrap, topic=topic, records=[record],
                        acks="all", compression="none", security=security)  # fmt: skip
        except ClientError as error:
            raise Refused(error.kind, str(error)) from None
        answer = client.call("consume", timeout_s=90, bootstrap=secured.bootstrap, topic=topic, partitions=[0],
                             start="earliest", max_records=1, timeout_ms=20000, reset="earliest",
                             isolation="read_uncommitted", security=security)  # fmt: skip
        records = answer["records"]
        assert len(records) == 1, answer
        return base64.b64decode(records[0]["value"])

    return run


def client_for(name: str, drivers: dict[str, Client | str]) -> Callable[[Secured, str, bytes], bytes]:
    simple = {"confluent-kafka": via_confluent, "kcat": via_kcat, "kafka-python": via_kafka_python,
              "aiokafka": via_aiokafka}  # fmt: skip
    return simple[name] if name in simple else via_driver(name, drivers)


# ----- the matrix


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("protocol", "mechanism"), CELLS, ids=[f"{p}-{m or 'mTLS'}" for p, m in CELLS])
def test_round_trip(
    matrix: Matrix, drivers: dict[str, Client | str], client: str, protocol: str, mechanism: str | None
) -> None:
    value = f"{client} over {protocol} {mechanism or 'mutual TLS'}".encode()
    topic = new_topic(matrix)
    assert client_for(client, drivers)(matrix.secured(protocol, mechanism), topic, value) == value


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(
    ("protocol", "mechanism", "password", "rogue"),
    [
        ("SASL_PLAINTEXT", "PLAIN", "wrong", False),
        ("SASL_SSL", "SCRAM-SHA-256", "wrong", False),
        ("SSL", None, PASSWORD, True),
    ],
    ids=["wrong-password-plain", "wrong-password-scram", "untrusted-certificate"],
)
def test_refused(
    matrix: Matrix,
    drivers: dict[str, Client | str],
    client: str,
    protocol: str,
    mechanism: str | None,
    password: str,
    rogue: bool,
) -> None:
    secured = matrix.secured(protocol, mechanism, password=password, rogue=rogue)
    topic = new_topic(matrix)
    with pytest.raises(Refused) as refused:
        client_for(client, drivers)(secured, topic, b"never")
    assert refused.value.kind == AUTHENTICATION, str(refused.value)
