"""A Kafka Streams word count (Kafka's own kafka-streams jar, tests/compat/clients/drivers/streams) keeps its
state store in a compacted changelog topic on kbroker: the cleaner bounds the changelog while the
application runs, and an instance that lost its local state restores the store from the cleaned
changelog (offsets with gaps) and counts on from the right totals.

Needs `scripts/install_clients` (it builds the word count with Maven).
"""

from __future__ import annotations

import collections
import os
import shutil
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.broker.test_compaction import create_compacted_topic, kbroker_args, produce, read_all
from tests.process import BrokerProcess

STREAMS = Path(__file__).resolve().parent.parent / "compat" / "clients" / "drivers" / "streams" / "target"
WORDS = [f"word{i}" for i in range(12)]


def lines(count: int, seed: int) -> list[str]:
    return [" ".join(WORDS[(seed + i * 7 + j * 5) % len(WORDS)] for j in range(5)) for i in range(count)]


class WordCountApp:
    """The word count in a JVM of its own; `running` is set when it reports RUNNING."""

    def __init__(
        self, bootstrap: str, app_id: str, state_dir: Path, source: str, sink: str, guarantee: str = "at_least_once"
    ) -> None:
        classpath = os.pathsep.join([str(STREAMS / "kafka-streams-wordcount-1.jar"), str(STREAMS / "deps" / "*")])
        command = ["java", "-Xmx256m", "-cp", classpath, "kbroker.streams.WordCount"]
        self.process = subprocess.Popen(
            [*command, bootstrap, app_id, str(state_dir), source, sink, guarantee],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.running = threading.Event()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip())
            if line.strip() == "RUNNING":
                self.running.set()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def kbroker(start_broker: Callable[..., BrokerProcess]) -> BrokerProcess:
    if shutil.which("java") is None or not (STREAMS / "kafka-streams-wordcount-1.jar").exists():
        pytest.skip("the Kafka Streams word count is not built (scripts/install_clients)")
    return start_broker(*kbroker_args())


@pytest.fixture
def apps() -> Iterator[list[WordCountApp]]:
    started: list[WordCountApp] = []
    yield started
    for app in started:
        if app.process.poll() is None:
            app.stop()


def counts_seen(bootstrap: str, sink: str) -> dict[str, int]:
    """Each word's latest count in the output topic."""
    latest: dict[str, int] = {}
    for _, key, value in read_all(bootstrap, sink):
        assert key is not None and value is not None
        latest[key.decode()] = struct.unpack(">q", value)[0]
    return latest


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_a_streams_state_store_restores_from_its_cleaned_changelog(
    kbroker: BrokerProcess, apps: list[WordCountApp], tmp_path: Path
) -> None:
    bootstrap = kbroker.bootstrap
    app_id = f"wc-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app_id}-lines", f"{app_id}-counts"
    changelog = f"{app_id}-counts-changelog"
    create_compacted_topic(bootstrap, source, {"cleanup.policy": "delete"})
    create_compacted_topic(bootstrap, sink, {"cleanup.policy": "delete"})
    expected: collections.Counter[str] = collections.Counter()

    def write(batch: list[str]) -> None:
        produce(bootstrap, source, [(b"", line.encode()) for line in batch])
        for line in batch:
            expected.update(line.split())

    state_dir = tmp_path / "state"
    write(lines(200, 1))
    apps.append(WordCountApp(bootstrap, app_id, state_dir, source, sink))
    wait_until(lambda: counts_seen(bootstrap, sink) == dict(expected), 120, "the first counts")
    # more updates in small doses, so the changelog rolls (segment.ms=500) and the cleaner runs
    for seed in range(2, 6):
        write(lines(40, seed))
        time.sleep(0.7)
    updates = sum(expected.values())  # no store cache: one changelog record per counted word
    wait_until(lambda: counts_seen(bootstrap, sink) == dict(expected), 120, "the counts after more lines")
    changelog_dir = Path(kbroker.data_dir) / f"{changelog}-0"
    wait_until(lambda: "log_cleaned" in kbroker.log_text() and changelog in kbroker.log_text(), 60, "a cleaning round")
    records = read_all(bootstrap, changelog)
    assert len(records) < updates / 3, f"{len(records)} changelog records for {updates} updates: not compacted"
    offsets = [offset for offset, _, _ in records]
    assert offsets[-1] - offsets[0] + 1 > len(offsets)  # gaps left by the cleaner

    # the instance loses its local store; a new one restores it from the cleaned changelog
    apps[0].stop()
    shutil.rmtree(state_dir)
    write(lines(30, 9))
    apps.append(WordCountApp(bootstrap, app_id, state_dir, source, sink))
    wait_until(lambda: counts_seen(bootstrap, sink) == dict(expected), 120, "the counts after the restore")
    assert apps[1].process.poll() is None, apps[1].output
    assert "ERROR" not in apps[1].output
    assert changelog_dir.exists()


def test_exactly_once_v2_word_count_across_a_restart(
    kbroker: BrokerProcess, apps: list[WordCountApp], tmp_path: Path
) -> None:
    """processing.guarantee=exactly_once_v2: the output and the store's changelog are written in
    transactions (the 4.3 client uses transactions v2 on kbroker); a read_committed reader sees
    every count exactly, also after the instance is killed mid-stream and a new one takes over."""
    bootstrap = kbroker.bootstrap
    app_id = f"wc-eos-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app_id}-lines", f"{app_id}-counts"
    create_compacted_topic(bootstrap, source, {"cleanup.policy": "delete"})
    create_compacted_topic(bootstrap, sink, {"cleanup.policy": "delete"})
    expected: collections.Counter[str] = collections.Counter()

    def write(batch: list[str]) -> None:
        produce(bootstrap, source, [(b"", line.encode()) for line in batch])
        for line in batch:
            expected.update(line.split())

    write(lines(100, 1))
    apps.append(WordCountApp(bootstrap, app_id, tmp_path / "a", source, sink, "exactly_once_v2"))
    wait_until(lambda: counts_seen(bootstrap, sink) == dict(expected), 120, "the first counts")
    write(lines(50, 2))
    apps[0].process.kill()  # no clean shutdown: an open transaction may be left behind
    apps[0].process.wait(10)
    write(lines(50, 3))
    apps.append(WordCountApp(bootstrap, app_id, tmp_path / "b", source, sink, "exactly_once_v2"))
    wait_until(lambda: counts_seen(bootstrap, sink) == dict(expected), 180, "the counts after the restart")
    # exactly once: in committed order, each word's counts go up by one, none repeated or skipped
    seen: dict[str, int] = {}
    for _, key, value in read_all(bootstrap, sink):
        assert key is not None and value is not None
        word, count = key.decode(), struct.unpack(">q", value)[0]
        assert count == seen.get(word, 0) + 1, f"{word}: {count} after {seen.get(word, 0)}"
        seen[word] = count
    assert seen == dict(expected)
    # it did run in transactions: the coordinator committed some of the application's
    assert any(app_id in line and "transaction_ending" in line for line in kbroker.log_text().splitlines())
