"""Kafka Connect in distributed mode (Apache Kafka's own runtime and FileStreamSource connector, built
by scripts/install_clients into tests/compat/clients/drivers/streams/target/deps) keeps its configs, source
offsets and statuses in compacted topics on kbroker: the cleaner compacts the offsets topic while a
source connector runs, and a restarted worker resumes from the stored offset (every line of the file
reaches the topic exactly once).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.broker.test_compaction import create_compacted_topic, kbroker_args, read_all
from tests.process import BrokerProcess, free_port

DEPS = Path(__file__).resolve().parent.parent / "compat" / "clients" / "drivers" / "streams" / "target" / "deps"
INTERNAL = {"cleanup.policy": "compact", "segment.ms": "500", "min.cleanable.dirty.ratio": "0.01"}


class ConnectWorker:
    def __init__(self, bootstrap: str, group: str, topics: dict[str, str], directory: Path) -> None:
        self.port = free_port()
        config = directory / f"worker-{self.port}.properties"
        config.write_text(
            "\n".join(
                [
                    f"bootstrap.servers={bootstrap}",
                    f"group.id={group}",
                    f"config.storage.topic={topics['config']}",
                    f"offset.storage.topic={topics['offset']}",
                    f"status.storage.topic={topics['status']}",
                    "config.storage.replication.factor=1",
                    "offset.storage.replication.factor=1",
                    "status.storage.replication.factor=1",
                    "key.converter=org.apache.kafka.connect.storage.StringConverter",
                    "value.converter=org.apache.kafka.connect.storage.StringConverter",
                    "offset.flush.interval.ms=200",
                    f"listeners=http://127.0.0.1:{self.port}",
                    "",
                ]
            )
        )
        self.log = open(directory / f"worker-{self.port}.log", "w")  # noqa: SIM115 - closed in stop()
        command = ["java", "-Xmx384m", "-cp", str(DEPS / "*"), "org.apache.kafka.connect.cli.ConnectDistributed"]
        self.process = subprocess.Popen([*command, str(config)], stdout=self.log, stderr=subprocess.STDOUT)

    def rest(self, method: str, path: str, body: object = None) -> object:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
        return json.loads(text) if text else None

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, "the Connect worker exited"
            try:
                self.rest("GET", "/connectors")
                return
            except OSError:
                assert time.monotonic() < deadline, "the Connect worker did not answer"
                time.sleep(0.5)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.log.close()


@pytest.fixture
def kbroker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    if shutil.which("java") is None or not (DEPS / "connect-file-4.3.1.jar").exists():
        pytest.skip("the Connect runtime is not resolved (scripts/install_clients)")
    return start_broker(*kbroker_args())


@pytest.fixture
def workers() -> Iterator[list[ConnectWorker]]:
    started: list[ConnectWorker] = []
    yield started
    for worker in started:
        worker.stop()


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_connect_resumes_from_its_cleaned_offsets_topic(
    kbroker: BrokerProcess, workers: list[ConnectWorker], tmp_path: Path
) -> None:
    bootstrap = kbroker.bootstrap
    group = f"connect-{uuid.uuid4().hex[:8]}"
    topics = {kind: f"{group}-{kind}" for kind in ("config", "offset", "status")}
    for name in topics.values():
        create_compacted_topic(bootstrap, name, INTERNAL)
    sink = f"{group}-lines"
    create_compacted_topic(bootstrap, sink, {"cleanup.policy": "delete"})
    source = tmp_path / "source.txt"
    source.write_text("")
    written: list[str] = []

    def append(count: int) -> None:
        with open(source, "a") as out:
            for _ in range(count):
                written.append(f"line-{len(written)}")
                out.write(written[-1] + "\n")

    def lines_in_topic() -> list[str]:
        return [value.decode() for _, _, value in read_all(bootstrap, sink) if value is not None]

    workers.append(ConnectWorker(bootstrap, group, topics, tmp_path))
    workers[0].wait_ready()
    workers[0].rest(
        "POST",
        "/connectors",
        {
            "name": "file-source",
            "config": {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                "file": str(source),
                "topic": sink,
                "tasks.max": "1",
            },
        },
    )
    for _ in range(12):  # one source offset commit (same key) per dose, across several segments
        append(5)
        time.sleep(0.6)
    wait_until(lambda: lines_in_topic() == written, 60, "every line in the topic")
    time.sleep(1)  # the last offset commit
    cleaned = f"event=log_cleaned topic={topics['offset']} "
    wait_until(lambda: cleaned in kbroker.log_text(), 60, "a cleaning round of the offsets topic")
    wait_until(
        lambda: len(read_all(bootstrap, topics["offset"])) <= 4, 60, "the offsets topic compacted to its last commits"
    )

    workers[0].stop()
    append(10)  # written while no worker runs: the next one must start from the stored offset
    workers.append(ConnectWorker(bootstrap, group, topics, tmp_path))
    workers[1].wait_ready()
    wait_until(lambda: lines_in_topic() == written, 90, "the lines after the restart, each once")
    assert os.path.exists(source)
