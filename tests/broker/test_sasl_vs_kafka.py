"""The same SASL set-up on kbroker and on Apache Kafka 4.3.1: what clients see must agree.

One PLAINTEXT listener and one SASL_PLAINTEXT listener offering PLAIN and SCRAM-SHA-256, configured
with the same properties on both brokers. Compared: a right and a wrong PLAIN password, a SCRAM user
created with the admin client then used with its right and a wrong password (librdkafka's errors),
the SASL listener's own address in Metadata, and a request sent before authenticating.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from tests.broker.conftest import unique_topic
from tests.process import BrokerProcess, RawClient, free_port

JAAS_PLAIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
)
JAAS_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PROPERTIES = [
    "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
    f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS_PLAIN}",
    f"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={JAAS_SCRAM}",
]


@contextmanager
def kbroker(tmp_path: Path) -> Iterator[tuple[int, int]]:
    plain, sasl = free_port(), free_port()
    args = ["--config", f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"]
    for line in PROPERTIES:
        args += ["--config", line]
    process = BrokerProcess(tmp_path / "data", *args, port=plain, listen_flag=False).start()
    try:
        yield plain, sasl
    finally:
        process.stop()


@contextmanager
def kafka(tmp_path: Path) -> Iterator[tuple[int, int]]:
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    with KafkaRef(listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"}, properties=PROPERTIES) as ref:
        yield ref.port, ref.listener_ports["SASL_PLAINTEXT"]


def sasl_config(port: int, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def produce_one(config: dict[str, Any]) -> str:
    """'delivered', or librdkafka's authentication error text without addresses and timings."""
    from confluent_kafka import KafkaError, Producer

    errors: list[KafkaError] = []
    producer = Producer(config | {"error_cb": errors.append})
    producer.produce(unique_topic("cmp"), b"v")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # until delivered or refused, not a fixed wait for a refusal
        if producer.flush(0.2) == 0:
            return "delivered"
        for error in errors:
            if error.code() == KafkaError._AUTHENTICATION:
                text = re.sub(r"^.*?SASL authentication error: ", "", error.str())
                return re.sub(r" \(after \d+ms.*$", "", text)
    return "failed: " + "; ".join(e.str() for e in errors[:2])


def observe(plain: int, sasl: int) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    seen: dict[str, Any] = {}
    seen["plain right"] = produce_one(sasl_config(sasl, "PLAIN", "alice", "alice-secret"))
    seen["plain wrong"] = produce_one(sasl_config(sasl, "PLAIN", "alice", "nope"))
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
    upsertion = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"c-pw")
    for future in admin.alter_user_scram_credentials([upsertion]).values():
        future.result(15)
    time.sleep(0.5)  # Kafka applies the credential through its metadata log
    seen["scram right"] = produce_one(sasl_config(sasl, "SCRAM-SHA-256", "carol", "c-pw"))
    seen["scram wrong"] = produce_one(sasl_config(sasl, "SCRAM-SHA-256", "carol", "nope"))
    seen["scram unknown user"] = produce_one(sasl_config(sasl, "SCRAM-SHA-256", "nobody", "x"))
    brokers = AdminClient(sasl_config(sasl, "PLAIN", "alice", "alice-secret")).list_topics(timeout=10).brokers
    seen["metadata port is the SASL listener's"] = [b.port for b in brokers.values()] == [sasl]
    with RawClient(f"127.0.0.1:{sasl}") as raw:
        raw.send(raw.request_bytes(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}))
        seen["request before authenticating closes"] = raw.closed_by_peer()
    return seen


def test_kbroker_and_kafka_agree_on_sasl(tmp_path: Path) -> None:
    brokers: dict[str, Callable[[Path], Any]] = {"kbroker": kbroker, "kafka": kafka}
    results = {}
    for name, start in brokers.items():
        (tmp_path / name).mkdir()
        with start(tmp_path / name) as (plain, sasl):
            results[name] = observe(plain, sasl)
    print(results)
    assert results["kbroker"] == results["kafka"]
    assert results["kbroker"]["plain right"] == "delivered" and results["kbroker"]["scram right"] == "delivered"
