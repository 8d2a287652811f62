"""Record batches as real clients build them, with every codec, are stored as sent and decode with protocol.records."""

from __future__ import annotations

import pytest

from protocol.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from protocol.records import iter_batches
from tests.broker.conftest import create_topic, fetch, fetched_partition, unique_topic
from tests.process import BrokerProcess, RawClient

CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
COUNT = 200


def expected(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
    return b"key-%d" % i, b"value-%d-" % i + b"x" * (i % 50), [("h", b"%d" % i)], 1_700_000_000_000 + i


def check_stored_batches(raw: RawClient, topic: str, codec: int) -> None:
    answer = fetched_partition(fetch(raw, [(topic, 0, 0)]), topic)
    assert answer["error_code"] == 0
    seen = []
    compressed = 0
    for batch in iter_batches(bytes(answer["records"])):
        batch.verify()  # CRC-32C as the client computed it: the broker rewrote only the base offset and epoch
        # librdkafka sends a batch uncompressed when compressing does not shrink it: a lone record
        # that left before the others (a busy machine) is stored as sent, uncompressed
        assert batch.compression == codec or (batch.compression == NONE and batch.records_count == 1)
        compressed += batch.compression == codec
        for record in batch.records():
            seen.append((record.offset, record.key, record.value, [tuple(h) for h in record.headers], record.timestamp))
    assert [s[0] for s in seen] == list(range(COUNT))
    assert [s[1:] for s in seen] == [expected(i) for i in range(COUNT)]
    assert compressed > 0


@pytest.mark.parametrize("codec", list(CODECS))
def test_librdkafka_batches(broker: BrokerProcess, raw: RawClient, codec: str) -> None:
    from confluent_kafka import Producer

    topic = unique_topic(f"rd-{codec}")
    create_topic(raw, topic)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 500, "acks": "all"}
    )
    producer.list_topics(topic, timeout=10)  # the leader is known before the first record is queued
    for i in range(COUNT):
        key, value, headers, timestamp = expected(i)
        producer.produce(topic, value, key, partition=0, headers=headers, timestamp=timestamp)
    assert producer.flush(20) == 0
    check_stored_batches(raw, topic, CODECS[codec])


@pytest.mark.parametrize("codec", list(CODECS))
def test_kafka_python_batches(broker: BrokerProcess, raw: RawClient, codec: str) -> None:
    from kafka import KafkaProducer

    topic = unique_topic(f"kp-{codec}")
    create_topic(raw, topic)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, compression_type=None if codec == "none" else codec, linger_ms=50
    )
    for i in range(COUNT):
        key, value, headers, timestamp = expected(i)
        producer.send(topic, value, key, headers=headers, partition=0, timestamp_ms=timestamp)
    producer.flush(20)
    producer.close(5)
    check_stored_batches(raw, topic, CODECS[codec])
