"""Every client of the compatibility suite over SSL, SASL_PLAINTEXT and SASL_SSL, with PLAIN and both SCRAMs.

One broker for the module with four listeners (tests/compat/security_matrix.py): PLAINTEXT (to create
topics), SSL with mutual TLS required, SASL_PLAINTEXT and SASL_SSL offering PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512. Each cell is one produce and one consume of a record over that listener with that
mechanism; then a wrong password and a certificate from a CA the broker does not trust must be refused
with the client's own authentication error (librdkafka's _AUTHENTICATION / SSL handshake failure, Java's
SaslAuthenticationException / SslAuthenticationException, kafka-python's and aiokafka's errors,
franz-go's SASL_AUTHENTICATION_FAILED or TLS alert, kafkajs's KafkaJSSASLAuthenticationError).
kafka-python and aiokafka log the refusal and then fail to bootstrap: their log is checked; aiokafka
reports a refused certificate (TLS 1.3 sends the alert after the handshake) only as the connection closing.

The broker is kbroker; with KBROKER_BOOTSTRAP set (scripts/compat_vs_kafka) it is Apache Kafka 4.3.1
configured the same way. scripts/compat_vs_kafka --security compares both, cell by cell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache

import pytest

from tests.compat.clients.adapter import Client
from tests.compat.security_matrix import (
    AUTHENTICATION,
    BROKERS,
    CELLS,
    CLIENTS,
    DELIVERED,
    REFUSALS,
    Matrix,
    certificates,
    outcome,
)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    certs, keystore, rogue = certificates(tmp_path_factory.mktemp("certs"))
    broker = "kafka" if os.environ.get("KBROKER_BOOTSTRAP") else "kbroker"
    with BROKERS[broker](tmp_path_factory.mktemp("matrix"), certs, keystore, rogue) as running:
        yield running


@pytest.fixture(scope="module")
def drivers() -> Iterator[dict[str, Client | str]]:
    made: dict[str, Client | str] = {}
    yield made
    for client in made.values():
        if isinstance(client, Client):
            client.close()


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("protocol", "mechanism"), CELLS, ids=[f"{p}-{m or 'mTLS'}" for p, m in CELLS])
def test_round_trip(
    matrix: Matrix, drivers: dict[str, Client | str], client: str, protocol: str, mechanism: str | None
) -> None:
    seen = outcome(matrix, client, drivers, matrix.secured(protocol, mechanism))
    if client == "kcat" and (mechanism or "").startswith("SCRAM") and _kcat_librdkafka().startswith("2.0."):
        # librdkafka 2.0 repeats its nonce in the SCRAM client-final message: Apache Kafka 4.3.1 refuses it
        # (scripts/compat_vs_kafka --security), and so does kbroker (docs/security.md)
        assert seen.kind == AUTHENTICATION, seen
        return
    assert seen.kind == DELIVERED, seen


@cache
def _kcat_librdkafka() -> str:
    if shutil.which("kcat") is None:
        return ""
    version = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10).stdout
    return version.split("librdkafka ", 1)[1].split()[0] if "librdkafka " in version else ""


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(
    ("protocol", "mechanism", "password", "rogue"),
    [cell[1:] for cell in REFUSALS if cell[0] != "wrong-password-scram512"],
    ids=[cell[0] for cell in REFUSALS if cell[0] != "wrong-password-scram512"],
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
    seen = outcome(matrix, client, drivers, matrix.secured(protocol, mechanism, password=password, rogue=rogue))
    assert seen.kind == AUTHENTICATION, f"{seen}: {seen.detail}"
