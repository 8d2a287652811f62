"""A few cells of the secured-listener matrix on kbroker and on Apache Kafka 4.3.1, compared.

Both brokers run for the module with the same listeners, properties, certificates and users
(tests/compat/security_matrix.py). A JVM client and librdkafka connect over SASL_SSL with SCRAM-SHA-512
(produce and consume a record), then with a wrong password: what each client sees, down to the error it
names and the broker's message, must be the same on both. The whole matrix (every client, listener and
mechanism, and the refused certificate) is compared by scripts/compat_vs_kafka --security; its last
result is in docs/compatibility.md.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.compat.clients.adapter import Client
from tests.compat.security_matrix import (
    AUTHENTICATION,
    DELIVERED,
    PASSWORD,
    Matrix,
    certificates,
    outcome,
    secured_kafka,
    secured_kbroker,
)


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Matrix]]:
    certs, keystore, rogue = certificates(tmp_path_factory.mktemp("certs"))
    with (
        secured_kafka(tmp_path_factory.mktemp("kafka"), certs, keystore, rogue) as kafka,
        secured_kbroker(tmp_path_factory.mktemp("kbroker"), certs, keystore, rogue) as kbroker,
    ):
        yield {"kbroker": kbroker, "kafka": kafka}


@pytest.fixture(scope="module")
def drivers() -> Iterator[dict[str, Client | str]]:
    made: dict[str, Client | str] = {}
    yield made
    for client in made.values():
        if isinstance(client, Client):
            client.close()


@pytest.mark.parametrize("client", ["confluent-kafka", "java-4"])
@pytest.mark.parametrize(("password", "expected"), [(PASSWORD, DELIVERED), ("wrong", AUTHENTICATION)],
                         ids=["right-password", "wrong-password"])  # fmt: skip
def test_sasl_ssl_scram_sha_512_as_on_kafka(
    brokers: dict[str, Matrix], drivers: dict[str, Client | str], client: str, password: str, expected: str
) -> None:
    seen = {
        name: outcome(matrix, client, drivers, matrix.secured("SASL_SSL", "SCRAM-SHA-512", password=password))
        for name, matrix in brokers.items()
    }
    print({name: str(o) for name, o in seen.items()})
    assert seen["kafka"].kind == expected, seen["kafka"].detail
    assert (seen["kbroker"].kind, seen["kbroker"].error) == (seen["kafka"].kind, seen["kafka"].error), seen
