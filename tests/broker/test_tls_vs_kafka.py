"""The same mutual-TLS listener on kbroker and on Apache Kafka 4.3.1: what librdkafka sees, compared.

An SSL listener with a PEM keystore and truststore and ssl.client.auth=required. Compared: a trusted
client certificate (delivered), an untrusted one and none (the TLS alert librdkafka reports), and the
SSL listener's address in Metadata.

One known difference: the alert's name. Kafka's JSSE answers both refusals with bad_certificate;
kbroker's OpenSSL (Python's ssl module) with unknown_ca and certificate_required, which say more but
cannot be changed through the ssl module. Both refuse during the handshake with an alert, which
librdkafka reports the same way (a transport error naming the alert); the comparison is of that.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.broker.conftest import unique_topic
from tests.broker.tls_support import Certificates, make_certificates
from tests.process import BrokerProcess, free_port


def properties(certs: Certificates) -> list[str]:
    return [
        "listener.name.ssl.ssl.keystore.type=PEM",
        f"listener.name.ssl.ssl.keystore.location={certs.server}",
        "listener.name.ssl.ssl.truststore.type=PEM",
        f"listener.name.ssl.ssl.truststore.location={certs.ca}",
        "listener.name.ssl.ssl.client.auth=required",
    ]


@contextmanager
def kbroker(tmp_path: Path, certs: Certificates) -> Iterator[int]:
    plain, secure = free_port(), free_port()
    args = ["--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{secure}"]
    for line in properties(certs):
        args += ["--config", line]
    process = BrokerProcess(tmp_path / "data", *args, port=plain, listen_flag=False).start()
    try:
        yield secure
    finally:
        process.stop()


@contextmanager
def kafka(tmp_path: Path, certs: Certificates) -> Iterator[int]:
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    with KafkaRef(listeners={"SSL": "SSL"}, properties=properties(certs)) as ref:
        yield ref.listener_ports["SSL"]


def produce_one(certs: Certificates, port: int, cert: Path | None, key: Path | None) -> str:
    from confluent_kafka import KafkaError, Producer

    config: dict[str, Any] = {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs.ca),
    }
    if cert is not None:
        config |= {"ssl.certificate.location": str(cert), "ssl.key.location": str(key)}
    errors: list[KafkaError] = []
    producer = Producer(config | {"error_cb": errors.append})
    producer.produce(unique_topic("tls-cmp"), b"v")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # until delivered or refused, not a fixed wait for a refusal
        if producer.flush(0.2) == 0:
            metadata = producer.list_topics(timeout=5)
            ports = [b.port for b in metadata.brokers.values()]
            return f"delivered, metadata port is the SSL listener's: {ports == [port]}"
        for error in errors:
            if error.code() == KafkaError._TRANSPORT and re.search(r"alert [a-z ]+: SSL alert number \d+", error.str()):
                return "refused with a TLS alert"
    return "failed: " + "; ".join(e.str() for e in errors[:2])


def test_kbroker_and_kafka_agree_on_mutual_tls(tmp_path: Path) -> None:
    certs = make_certificates(tmp_path / "certs")
    results = {}
    for name, start in (("kbroker", kbroker), ("kafka", kafka)):
        (tmp_path / name).mkdir()
        with start(tmp_path / name, certs) as port:
            results[name] = {
                "trusted": produce_one(certs, port, certs.client_cert, certs.client_key),
                "untrusted": produce_one(certs, port, certs.rogue_cert, certs.rogue_key),
                "none": produce_one(certs, port, None, None),
            }
    print(results)
    assert results["kbroker"] == results["kafka"]
    assert results["kbroker"]["trusted"] == "delivered, metadata port is the SSL listener's: True"
