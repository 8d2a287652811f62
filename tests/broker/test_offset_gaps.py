"""A partition whose offsets have gaps (as compaction leaves them), served to real clients.

The segment files are written with chosen base offsets into a data directory, then a
kbroker process serves them: a consumer positioned inside a gap gets the next record
that exists (as from Kafka on a compacted topic), ListOffsets by timestamp lands on
the next record, and a full read returns every record in order.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from kbroker.log.segment import segment_name
from protocol.record_builder import SimpleRecord, build_record_batch
from protocol.records import RecordBatch
from tests.process import BrokerProcess

TOPIC = "gappy"
# (segment base offset, [(batch base offset, record count)]): gaps inside segments, between
# them, and before a segment's first batch
LAYOUT = [
    (0, [(0, 3), (3, 2), (20, 1), (21, 4), (100, 2)]),
    (150, [(160, 5), (170, 1)]),
    (500, [(500, 2), (502, 1), (900, 3)]),
]


def _timestamp(offset: int) -> int:
    return 1_700_000_000_000 + offset * 10


def _write(data: Path) -> list[int]:
    manager = LogManager(data, LogConfig())
    manager.startup()
    manager.create_topic(TOPIC, 1)
    asyncio.run(manager.shutdown())
    directory = data / f"{TOPIC}-0"
    for path in directory.glob("0*"):
        path.unlink()
    offsets = []
    for segment_base, batches in LAYOUT:
        content = bytearray()
        for base, count in batches:
            records = [SimpleRecord(b"k", b"r%d" % (base + i), (), _timestamp(base + i)) for i in range(count)]
            batch = bytearray(build_record_batch(records))
            RecordBatch(batch).set_base_offset(base)
            content += batch
            offsets += range(base, base + count)
        (directory / (segment_name(segment_base) + ".log")).write_bytes(content)
    return offsets


@pytest.fixture
def gappy(tmp_path: Path):
    data = tmp_path / "data"
    offsets = _write(data)
    broker = BrokerProcess(data).start()
    try:
        yield broker, offsets
    finally:
        broker.stop()


def _first_from(bootstrap: str, offset: int, topic: str = TOPIC) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gaps", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, offset)])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                assert message.value() == b"r%d" % message.offset() or topic != TOPIC
                return int(message.offset())
        raise AssertionError(f"nothing consumed from offset {offset}")
    finally:
        consumer.close()


def test_confluent_kafka_reads_across_gaps(gappy) -> None:
    from confluent_kafka import Consumer, TopicPartition

    broker, offsets = gappy
    for start in (5, 19, 26, 101, 102, 140, 155, 171, 300, 503, 899):
        assert _first_from(broker.bootstrap, start) == min(o for o in offsets if o >= start), start
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "gaps-times"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
        assert (low, high) == (0, 903)
        for target in (5, 101, 300, 600):
            [found] = consumer.offsets_for_times([TopicPartition(TOPIC, 0, _timestamp(target))], timeout=10)
            assert found.offset == min(o for o in offsets if o >= target), target
    finally:
        consumer.close()


def test_kafka_python_reads_every_record_in_order(gappy) -> None:
    from kafka import KafkaConsumer

    broker, offsets = gappy
    consumer = KafkaConsumer(
        TOPIC, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    try:
        got = [(m.offset, m.value) for m in consumer]
    finally:
        consumer.close()
    assert got == [(o, b"r%d" % o) for o in offsets]


def _offsets(bootstrap: str, topic: str) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gaps-scan", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    offsets: list[int] = []
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        deadline = time.monotonic() + 20
        while (not offsets or offsets[-1] < high - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                offsets.append(message.offset())
    finally:
        consumer.close()
    return offsets


def test_apache_kafka_serves_gaps_the_same_way() -> None:
    """The rule the tests above hold kbroker to, checked on Apache Kafka: a compacted topic
    (compaction is how Kafka's logs get gaps) read from inside its gaps."""
    if not shutil.which("java"):
        pytest.skip("Apache Kafka needs java")
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.kafka_ref import KafkaRef

    topic = "compacted"
    configs = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.001",
        "min.compaction.lag.ms": "0",
    }
    with KafkaRef() as kafka:
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)
        producer = Producer({"bootstrap.servers": kafka.bootstrap})
        for i in range(30):  # unique keys stay; the updates of "a" and "b" are compacted away
            key = b"u%d" % i if i % 3 == 0 else b"ab"[i % 3 - 1 : i % 3]
            producer.produce(topic, key=key, value=b"v%d" % i, timestamp=_timestamp(i))
            producer.flush(10)  # one batch each
        time.sleep(0.5)
        producer.produce(topic, key=b"last", value=b"roll", timestamp=_timestamp(30))  # rolls the segment
        producer.flush(10)
        deadline = time.monotonic() + 120
        offsets = _offsets(kafka.bootstrap, topic)
        while len(offsets) == 31 and time.monotonic() < deadline:
            time.sleep(2)
            offsets = _offsets(kafka.bootstrap, topic)
        assert len(offsets) < 31, "the log cleaner did not run"
        gaps = [o for o in range(offsets[-1]) if o not in offsets]
        for start in gaps:
            assert _first_from(kafka.bootstrap, start, topic) == min(o for o in offsets if o >= start), start
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "gaps-times"})
        try:
            for target in gaps:
                [found] = consumer.offsets_for_times([TopicPartition(topic, 0, _timestamp(target))], timeout=10)
                assert found.offset == min(o for o in offsets if o >= target), target
        finally:
            consumer.close()
