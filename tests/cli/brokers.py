"""The two brokers the command line is tested against: kbroker (a real process) and Apache Kafka 4.3.1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.process import REPO, BrokerProcess


def kbroker_broker(data_dir: Path) -> Iterator[str]:
    broker = BrokerProcess(data_dir, "--config", "group.min.session.timeout.ms=1000").start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


def kafka_broker() -> Iterator[str]:
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from tests.kafka_ref import KafkaRef

    with KafkaRef() as kafka:
        yield kafka.bootstrap


class Cli:
    """Runs `python -m kbroker ...` against one broker (through KBROKER_BOOTSTRAP, as a user's shell would)."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.bootstrap = bootstrap
        self.name = name

    def run(self, *args: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("KBROKER_")}
        environ["PYTHONPATH"] = str(REPO)
        environ["KBROKER_BOOTSTRAP"] = self.bootstrap
        return subprocess.run(
            [sys.executable, "-m", "kbroker", *args],
            input=stdin,
            capture_output=True,
            timeout=timeout,
            env=environ,
            cwd=REPO,
        )

    def ok(self, *args: str, stdin: bytes | None = None) -> bytes:
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, f"kbroker {' '.join(args)}: {result.stderr.decode()}"
        return result.stdout

    def json(self, *args: str, stdin: bytes | None = None) -> Any:
        return json.loads(self.ok(*args, "--format", "json", stdin=stdin))

    def lines(self, *args: str, stdin: bytes | None = None) -> list[Any]:
        return [json.loads(line) for line in self.ok(*args, stdin=stdin).splitlines()]


def unique(prefix: str) -> str:
    return f"{prefix}-{time.time_ns() % 10**12}"


def each_broker(kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A module fixture's body: the command line against a fresh kbroker ("kbroker") or Apache Kafka ("kafka")."""
    brokers = kbroker_broker(tmp_path_factory.mktemp("kbroker-data")) if kind == "kbroker" else kafka_broker()
    bootstrap = next(brokers)
    yield Cli(bootstrap, kind)
    brokers.close()
