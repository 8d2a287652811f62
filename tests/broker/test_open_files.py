"""A broker with far more segment files than `ulimit -n` allows open at once.

A data directory of 1,000 partitions, each with data, and a kbroker process whose
soft and hard RLIMIT_NOFILE are both 256: it starts, every partition loads, a
consumer of all 1,000 partitions gets every record (one Fetch names them all), and
the broker goes on producing and serving.
"""

from __future__ import annotations

import asyncio
import resource
import signal
import time
from pathlib import Path

from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from protocol.record_builder import SimpleRecord, build_record_batch
from tests.process import BrokerProcess

PARTITIONS = 1000
LIMIT = 256
TOPIC = "many"


def _fill(data: Path) -> None:
    """The data directory, written by the storage layer as a previous broker run would have."""
    manager = LogManager(data, LogConfig())
    manager.startup()
    manager.create_topic(TOPIC, PARTITIONS)
    for partition in range(PARTITIONS):
        log = manager.get_log(TOPIC, partition)
        assert log is not None
        records = [SimpleRecord(key=b"%d" % partition, value=b"p%d-r%d" % (partition, i)) for i in range(2)]
        log.append(bytearray(build_record_batch(records)))
    asyncio.run(manager.shutdown())


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _consume_all(bootstrap: str, expected: int) -> dict[tuple[int, int], bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "open-files", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    got: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + 90
    try:
        while len(got) < expected and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                assert message.error() is None, message.error()
                got[(message.partition(), message.offset())] = message.value()
    finally:
        consumer.close()
    return got


def test_thousand_partitions_under_a_low_open_file_limit(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    data = tmp_path / "data"
    _fill(data)
    broker = BrokerProcess(data, preexec_fn=_low_limit).start(timeout=60)
    try:
        got = _consume_all(broker.bootstrap, 2 * PARTITIONS)
        assert got == {(p, i): b"p%d-r%d" % (p, i) for p in range(PARTITIONS) for i in range(2)}
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for p in range(0, PARTITIONS, 7):
            producer.produce(TOPIC, value=b"more", partition=p)
        assert producer.flush(30) == 0
        assert broker.alive()
    finally:
        assert broker.stop(signal.SIGTERM) == 0
    text = broker.log_text()
    assert "Too many open files" not in text and "partition_offline" not in text
    assert f"soft={LIMIT}" in text and "open_segment_files_bound=128" in text
