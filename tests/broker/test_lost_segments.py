"""A middle segment file lost while the broker was down: a real kbroker, a real client.

The broker is stopped (cleanly, or killed with its checkpoints lost), a middle
segment's .log file is deleted, and the broker started again: a consumer from the
beginning gets every message that survived, and the gap is logged once.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.process import BrokerProcess

MESSAGES = 3000


def _produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 50})
    for i in range(MESSAGES):
        producer.produce(topic, key=b"k%d" % i, value=b"value-%06d-" % i + bytes(100))
        producer.poll(0)
    assert producer.flush(30) == 0


def _consume(bootstrap: str, topic: str, expected: int) -> dict[int, bytes]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    try:
        while len(got) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got[message.offset()] = message.value()
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("clean", [True, False])
def test_consumer_reads_everything_that_survived(tmp_path: Path, clean: bool) -> None:
    data = tmp_path / "data"
    topic = "lost-middle"
    broker = BrokerProcess(data, "--config", "log.segment.bytes=16384").start()
    try:
        _produce(broker.bootstrap, topic)
    finally:
        if clean:
            assert broker.stop(signal.SIGTERM) == 0
        else:
            broker.kill()
    directory = data / f"{topic}-0"
    logs = sorted(directory.glob("*.log"))
    assert len(logs) >= 5
    lost = int(logs[2].name[:20]), int(logs[3].name[:20])
    logs[2].unlink()
    if not clean:  # a crash that also lost the checkpoints: everything is scanned
        for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
            (data / name).unlink(missing_ok=True)
    broker = BrokerProcess(data, "--config", "log.segment.bytes=16384").start()
    try:
        got = _consume(broker.bootstrap, topic, MESSAGES - (lost[1] - lost[0]))
    finally:
        broker.stop()
    survivors = [i for i in range(MESSAGES) if not lost[0] <= i < lost[1]]
    assert sorted(got) == survivors
    assert all(got[i].startswith(b"value-%06d-" % i) for i in survivors)
    text = broker.log_text()
    assert text.count("log_offset_gaps") == 1 and f"[[{lost[0]}, {lost[1]}]]" in text
    assert len(sorted(directory.glob("*.log"))) == len(logs) - 1  # every other segment kept


def test_a_flipped_bit_costs_only_its_batch(tmp_path: Path) -> None:
    from protocol.records import iter_batches

    data = tmp_path / "data"
    topic = "flipped-middle"
    broker = BrokerProcess(data, "--config", "log.segment.bytes=16384").start()
    try:
        _produce(broker.bootstrap, topic)
    finally:
        broker.kill()
    directory = data / f"{topic}-0"
    logs = sorted(directory.glob("*.log"))
    content = bytearray(logs[2].read_bytes())
    batches = list(iter_batches(bytes(content)))
    assert len(batches) > 1
    damaged = batches[0]  # the batches after it in the segment are intact
    content[damaged.position + damaged.size // 2] ^= 0x10  # inside its records: the CRC catches it
    logs[2].write_bytes(content)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        (data / name).unlink(missing_ok=True)
    lost = range(damaged.base_offset, damaged.next_offset)
    broker = BrokerProcess(data, "--config", "log.segment.bytes=16384").start()
    try:
        got = _consume(broker.bootstrap, topic, MESSAGES - len(lost))
    finally:
        broker.stop()
    assert sorted(got) == [i for i in range(MESSAGES) if i not in lost]
    text = broker.log_text()
    assert "segments_salvaged=1" in text and f"[[{lost.start}, {lost.stop}]]" in text
