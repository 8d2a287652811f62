"""Fixtures of the compatibility suite.

The broker under test is ``KBROKER_BOOTSTRAP`` (host:port) when set; otherwise a kbroker is started
for the session. ``KBROKER_COMPAT_CLIENTS`` (comma-separated names) narrows the clients.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.clients.adapter import Client
from tests.compat.clients.apiversions import advertised_apis
from tests.compat.clients.registry import FACTORIES
from tests.compat.support import Compat, wait_for_port
from tests.ports import free_port

# The suite's own kbroker: sessions as short as 1 s and a quick timed-out-transaction check keep the group and
# transaction scenarios fast (Apache Kafka keeps its defaults: 6 s minimum session, a 10 s check).
KBROKER_ARGS = [
    "--config",
    "group.min.session.timeout.ms=1000",
    "--config",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
    "--config",
    "offsets.topic.num.partitions=5",
    "--config",
    "transaction.state.log.num.partitions=5",
    "--config",
    "group.share.record.lock.duration.ms=5000",
    "--config",
    "group.share.heartbeat.interval.ms=1000",
    # consumer-protocol groups (KIP-848): 1 s heartbeats and 10 s sessions (Apache Kafka: 5 s and 45 s)
    "--config",
    "group.consumer.min.heartbeat.interval.ms=1000",
    "--config",
    "group.consumer.heartbeat.interval.ms=1000",
    "--config",
    "group.consumer.min.session.timeout.ms=6000",
    "--config",
    "group.consumer.session.timeout.ms=10000",
]

CLIENT_NAMES = [n for n in os.environ.get("KBROKER_COMPAT_CLIENTS", ",".join(FACTORIES)).split(",") if n]


@pytest.fixture(scope="session")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The broker under test: KBROKER_BOOTSTRAP, or a kbroker subprocess started for this session."""
    given = os.environ.get("KBROKER_BOOTSTRAP")
    if given:
        yield given
        return
    port = free_port()
    data_dir = tmp_path_factory.mktemp("kbroker-data")
    log_path = Path(data_dir).parent / "kbroker.log"
    command = [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir)]
    command += KBROKER_ARGS
    with open(log_path, "ab") as log:
        # KBROKER_SRC: run the kbroker of another source tree (e.g. a `git archive` of a known good commit).
        cwd = os.environ.get("KBROKER_SRC") or None
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"kbroker exited with {process.returncode}; see {log_path}")
            try:
                wait_for_port("127.0.0.1", port, 1)
                advertised_apis(f"127.0.0.1:{port}")
                break
            except (OSError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"kbroker did not answer ApiVersions within 30s; see {log_path}")
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    """The broker's ApiVersions answer, asked once per session."""
    return advertised_apis(bootstrap)


@pytest.fixture(scope="session")
def client_pool() -> Iterator[dict[str, Client | str]]:
    """One adapter per client name for the whole session (a driver process is reused across tests)."""
    pool: dict[str, Client | str] = {}
    yield pool
    for subject in pool.values():
        if isinstance(subject, Client):
            subject.close()


@pytest.fixture(params=CLIENT_NAMES)
def compat(
    request: pytest.FixtureRequest,
    bootstrap: str,
    advertised: dict[int, tuple[int, int]],
    client_pool: dict[str, Client | str],
) -> Compat:
    name = request.param
    if name not in client_pool:
        factory = FACTORIES.get(name)
        client_pool[name] = factory() if factory else f"unknown client {name}"
    own = not os.environ.get("KBROKER_BOOTSTRAP")
    return Compat(
        bootstrap=bootstrap,
        advertised=advertised,
        subject=client_pool[name],
        session_timeout_ms=2000 if own else 6000,
        own_broker=own,
    )


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python loads its protocol schemas with a deprecated importlib.resources call, once per request type.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:kafka.protocol.schemas.load_json")
    config.addinivalue_line("filterwarnings", "ignore:open_text is deprecated:DeprecationWarning")
