"""Secured listeners on kbroker or on Apache Kafka 4.3.1, and every client of the suite run against them.

A broker here has four listeners: PLAINTEXT (to create topics), SSL with mutual TLS required,
SASL_PLAINTEXT and SASL_SSL offering PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512. Both brokers get the
same server properties (`broker_properties`) and the same certificates; the PLAIN users are in the
listeners' JAAS lines, the SCRAM user is created with the admin API on kbroker and with
`kafka-storage format --add-scram` on Kafka (kbroker has no storage formatting step).

A scenario is one produce and one consume of a record by one client; its `Outcome` is what the client
saw: delivered, or refused with its own authentication error (and which error class: librdkafka's
error code, the Java exception, franz-go's and kafkajs's errors, the TLS alert), or something else.

Run as a program it compares every client over every listener and mechanism on both brokers and
prints the table (scripts/compat_vs_kafka --security); tests/compat/scenarios/test_security_matrix.py runs the
matrix on kbroker, tests/compat/scenarios/test_security_vs_kafka.py a few cells on both.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.broker.tls_support import Certificates, make_certificates
from tests.compat.clients.adapter import Client, ClientError
from tests.compat.clients.driver_client import DriverClient
from tests.compat.clients.registry import FACTORIES
from tests.process import BrokerProcess, free_port

USER, PASSWORD = "alice", "alice-secret"
JAAS_PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="admin" password="admin-secret" user_admin="admin-secret" user_{USER}="{PASSWORD}";'
)
JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SCRAMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SECURED_LISTENERS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
CELLS = [
    ("SSL", None),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]
# (name, protocol, mechanism, password, untrusted client certificate)
REFUSALS = [
    ("wrong-password-plain", "SASL_PLAINTEXT", "PLAIN", "wrong", False),
    ("wrong-password-scram", "SASL_SSL", "SCRAM-SHA-256", "wrong", False),
    ("wrong-password-scram512", "SASL_SSL", "SCRAM-SHA-512", "wrong", False),
    ("untrusted-certificate", "SSL", None, PASSWORD, True),
]
CLIENTS = ["confluent-kafka", "kcat", "kafka-python", "aiokafka", "java-3.9", "java-4", "franz-go", "kafkajs"]
DELIVERED = "delivered"
AUTHENTICATION = "authentication"  # the client's own authentication error


def broker_properties(certs: Certificates) -> list[str]:
    """The server properties both brokers are given (the listeners themselves are set by each start)."""
    lines = [
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={certs.server}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={certs.ca}",
        "listener.name.ssl.ssl.client.auth=required",
        "sasl.enabled.mechanisms=PLAIN," + ",".join(SCRAMS),
        "connection.failed.authentication.delay.ms=10",
    ]
    for listener in ("sasl_plaintext", "sasl_ssl"):
        lines.append(f"listener.name.{listener}.plain.sasl.jaas.config={JAAS_PLAIN}")
        lines += [f"listener.name.{listener}.{m.lower()}.sasl.jaas.config={JAAS_SCRAM}" for m in SCRAMS]
    return lines


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
    """One running secured broker: its listeners' ports, by security protocol, and the certificates."""

    broker: str  # "kbroker" or "kafka"
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

    def new_topic(self) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        topic = f"secured-{uuid.uuid4().hex[:10]}"
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{self.ports['PLAINTEXT']}"})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
        return topic


def certificates(directory: Path) -> tuple[Certificates, Path, Path]:
    """The test certificates, and the client's and the rogue client's PEM keystores (key + certificate)."""
    certs = make_certificates(directory)
    keystore = certs.ca.parent / "client-keystore.pem"
    keystore.write_text(certs.client_key.read_text() + certs.client_cert.read_text())
    rogue_keystore = certs.ca.parent / "rogue-keystore.pem"
    rogue_keystore.write_text(certs.rogue_key.read_text() + certs.rogue_cert.read_text())
    return certs, keystore, rogue_keystore


@contextlib.contextmanager
def secured_kbroker(directory: Path, certs: Certificates, keystore: Path, rogue: Path) -> Iterator[Matrix]:
    ports = {name: free_port() for name in ("PLAINTEXT", *SECURED_LISTENERS)}
    args = ["--config", "listeners=" + ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())]
    for line in broker_properties(certs):
        args += ["--config", line]
    broker = BrokerProcess(directory / "data", *args, port=ports["PLAINTEXT"], listen_flag=False).start()
    try:
        from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        upsertions = [
            UserScramCredentialUpsertion(USER, ScramCredentialInfo(ScramMechanism[m.replace("-", "_")], 4096),
                                         PASSWORD.encode())
            for m in SCRAMS
        ]  # fmt: skip
        for future in admin.alter_user_scram_credentials(upsertions).values():
            future.result(15)
        yield Matrix("kbroker", ports, certs, keystore, rogue)
    finally:
        broker.stop()


@contextlib.contextmanager
def secured_kafka(directory: Path, certs: Certificates, keystore: Path, rogue: Path) -> Iterator[Matrix]:
    """Apache Kafka 4.3.1 (tests/kafka_ref.py) with the same listeners, properties and users."""
    if shutil.which("java") is None:
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    kafka = KafkaRef(
        listeners={name: name for name in SECURED_LISTENERS},
        properties=broker_properties(certs),
        scram_users=[(m, USER, PASSWORD) for m in SCRAMS],
        log_path=directory / "kafka.log",
    )
    with kafka:
        yield Matrix("kafka", {"PLAINTEXT": kafka.port, **kafka.listener_ports}, certs, keystore, rogue)


BROKERS: dict[str, Callable[[Path, Certificates, Path, Path], contextlib.AbstractContextManager[Matrix]]] = {
    "kbroker": secured_kbroker,
    "kafka": secured_kafka,
}


# ----- one produce and one consume per client; each returns the value read back, or raises Refused


class Refused(Exception):
    """The client failed. `kind` is AUTHENTICATION when it was the client's own authentication error;
    `error` names the error the client gave (its class or code, and the TLS alert if one was named)."""

    def __init__(self, kind: str, error: str, detail: str) -> None:
        super().__init__(f"{kind} ({error}): {detail}")
        self.kind = kind
        self.error = error
        self.detail = detail


ALERTS = {
    "bad_certificate": r"bad[ _]certificate",
    "unknown_ca": r"unknown[ _]ca|unknown certificate authority",
    "certificate_required": r"certificate[ _]required",
    "handshake_failure": r"handshake[ _]failure",
    "certificate_unknown": r"certificate[ _]unknown",
}


def tls_alert(text: str) -> str | None:
    """The TLS alert a client's error text names, in the RFC's spelling, whatever the client's wording."""
    for name, pattern in ALERTS.items():
        if re.search(pattern, text, re.IGNORECASE):
            return name
    return None


def error_name(name: str, text: str) -> str:
    """`name` with the TLS alert the text names, or the broker's SASL error message it carries."""
    alert = tls_alert(text)
    if alert:
        return f"{name} [alert {alert}]"
    message = re.search(r"Authentication failed[^()\n;\"'\]]*", text)
    return f'{name} "{message.group(0).strip().rstrip(".")}"' if message else name


def via_confluent(secured: Secured, topic: str, value: bytes) -> bytes:
    from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

    errors: list[KafkaError] = []
    producer = Producer(secured.librdkafka() | {"error_cb": errors.append, "message.timeout.ms": 10000})
    producer.produce(topic, value, partition=0)
    for _ in range(24):
        if producer.flush(0.5) == 0 or any(_librdkafka_refusal(e.code(), e.str()) for e in errors):
            break
    if len(producer) or errors:
        refusals = [e for e in errors if _librdkafka_refusal(e.code(), e.str())]
        first = (refusals or errors or [None])[0]
        name = "undelivered" if first is None else error_name(first.name(), first.str())
        raise Refused(AUTHENTICATION if refusals else "other", name, "; ".join(e.str() for e in errors[:2]))
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
        if "SASL authentication error" in err:
            raise Refused(AUTHENTICATION, error_name("SASL authentication error", err), err.strip()[-500:])
        if "SSL alert" in err:
            raise Refused(AUTHENTICATION, error_name("SSL alert", err), err.strip()[-500:])
        raise Refused("other", "error", err.strip()[-500:])
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
        detail = f"{error!r}; {text[-400:]}"
        if "SaslAuthenticationFailedError" in text:
            raise Refused(AUTHENTICATION, error_name("SaslAuthenticationFailedError", text), detail) from None
        if "[SSL: " in text or "SSLError" in text:
            raise Refused(AUTHENTICATION, error_name("SSLError", text), detail) from None
        raise Refused("other", type(error).__name__, detail) from None
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
            detail = f"{error!r}; {text[-400:]}"
            if "SaslAuthenticationFailed" in text:
                raise Refused(AUTHENTICATION, error_name("SaslAuthenticationFailedError", text), detail) from None
            # a refused certificate: TLS 1.3 delivers the broker's alert after the handshake, which
            # aiokafka only reports as the connection closing
            if secured.protocol == "SSL" and "closed" in text:
                raise Refused(AUTHENTICATION, error_name("connection closed", text), detail) from None
            raise Refused("other", type(error).__name__, detail) from None
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


def driver_error_name(message: str) -> str:
    """The error a driver reported: the Java exception's simple name, kafkajs's error name, franz-go's
    Kafka error code (or `tls`), each with the TLS alert it names."""
    head = message.split(":", 1)[0].strip()
    if head == "remote error" or "tls: " in message:
        head = "tls"
    return error_name(head.rsplit(".", 1)[-1], message)


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
            raise Refused(error.kind, driver_error_name(str(error)), str(error)) from None
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


@dataclass(frozen=True)
class Outcome:
    """What one client saw in one scenario: `kind` is DELIVERED, AUTHENTICATION or "other"; `error` the
    error it named (empty when delivered)."""

    kind: str
    error: str = ""
    detail: str = ""

    def __str__(self) -> str:
        return self.kind if not self.error else f"{self.kind}: {self.error}"


def outcome(matrix: Matrix, client: str, drivers: dict[str, Client | str], secured: Secured) -> Outcome:
    """Produce one record through `secured` and read it back with `client`; pytest.skip if the client is
    not installed."""
    value = f"{client} over {secured.protocol} {secured.mechanism or 'mutual TLS'}".encode()
    try:
        got = client_for(client, drivers)(secured, matrix.new_topic(), value)
    except Refused as refused:
        return Outcome(refused.kind, refused.error, refused.detail)
    return Outcome(DELIVERED) if got == value else Outcome("other", "read back something else", repr(got))


# ----- the comparison, as a program


def scenarios() -> list[tuple[str, str, str | None, str, bool]]:
    """(name, protocol, mechanism, password, rogue certificate): every round trip, then every refusal."""
    trips = [(f"{p} {m or 'mTLS'}", p, m, PASSWORD, False) for p, m in CELLS]
    return trips + [(f"{p} {m or 'mTLS'} {name}", p, m, pw, rogue) for name, p, m, pw, rogue in REFUSALS]


def compare(clients: list[str], brokers: list[str]) -> int:
    """Run every scenario for every client on each broker; print the table; 1 if the kinds disagree."""
    results: dict[tuple[str, str, str], str] = {}
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="security-vs-kafka-") as temp:
        root = Path(temp)
        certs, keystore, rogue = certificates(root / "certs")
        for broker in brokers:
            (root / broker).mkdir()
            began = time.monotonic()
            drivers: dict[str, Client | str] = {}
            try:
                with BROKERS[broker](root / broker, certs, keystore, rogue) as matrix:
                    for client in clients:
                        for name, protocol, mechanism, password, bad_cert in scenarios():
                            secured = matrix.secured(protocol, mechanism, password=password, rogue=bad_cert)
                            try:
                                seen = str(outcome(matrix, client, drivers, secured))
                            except pytest.skip.Exception as skipped:
                                seen = f"skipped: {skipped}"
                            except Exception as error:  # noqa: BLE001 - a failed cell is a result too
                                seen = f"failed: {type(error).__name__}: {str(error)[:120]}"
                            results[(client, name, broker)] = seen
                            print(f"{broker:8} {client:16} {name:40} {seen}", file=sys.stderr, flush=True)
            finally:
                for driver in drivers.values():
                    if isinstance(driver, Client):
                        driver.close()
            timings[broker] = time.monotonic() - began
    disagree = 0
    print("| client | scenario | " + " | ".join(brokers) + " | same |")
    print("|---|---|" + "---|" * len(brokers) + "---|")
    for client in clients:
        for name, *_ in scenarios():
            seen = [results[(client, name, broker)] for broker in brokers]
            kinds = {s.split(":", 1)[0] for s in seen}
            same = "yes" if len(set(seen)) == 1 else ("kind" if len(kinds) == 1 else "**NO**")
            disagree += same == "**NO**"
            print(f"| {client} | {name} | " + " | ".join(seen) + f" | {same} |")
    print("\n" + ", ".join(f"{broker} {seconds:.0f} s" for broker, seconds in timings.items()))
    print(f"{disagree} scenario(s) where the outcome differs; 'kind': same outcome, another error name")
    return 1 if disagree else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compare the secured-listener matrix on kbroker and Apache Kafka.")
    parser.add_argument("--clients", default=",".join(CLIENTS), help="comma-separated client names")
    parser.add_argument("--brokers", default="kbroker,kafka", help="comma-separated: kbroker, kafka")
    args = parser.parse_args(argv)
    logging.getLogger().addHandler(logging.NullHandler())  # the clients' refusals are read, not printed
    return compare([c for c in args.clients.split(",") if c], [b for b in args.brokers.split(",") if b])


if __name__ == "__main__":
    sys.exit(main())
