"""Record validation (Kafka's LogValidator) over a real socket, against kbroker and Apache Kafka alike.

Every batch here is built by hand, with a valid CRC and broken records: a count or a record length that
lies, a varint that never ends, a compression flag on plain bytes, a truncated compressed payload, a
decompression bomb, timestamps out of range both ways, a record without a key on a compacted topic, a
partition named twice in one request. Each scenario runs against a kbroker process and against the
reference Apache Kafka 4.3.1 (tests/kafka_ref.py; those runs are skipped when Java is missing) and
asserts the same answer: the error code, which records are named, nothing appended, and a real consumer
(confluent-kafka) of that partition reading the good batches around the refused one.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from protocol import compression
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.primitives import write_varint
from protocol.record_builder import SimpleRecord, build_record_batch
from tests.kafka_ref import KafkaRef, kafka_home
from tests.process import BrokerProcess, RawClient
from tests.protocol.records_helpers import batch_with_body, raw_record, zigzag

E = ErrorCode
HOUR = 3_600_000
LOG_APPEND_TIME_BIT = 0x08


# -- the two brokers --------------------------------------------------------------------------


def _kafka_missing() -> str | None:
    if shutil.which("java") is None:
        return "java is not installed"
    if not (kafka_home() / ".complete").exists() and shutil.which("mvn") is None:
        return "Apache Kafka's jars are not cached and maven is missing"
    return None


@pytest.fixture(scope="module", params=["kbroker", "kafka"])
def target(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bootstrap address of a kbroker process, then of a reference Apache Kafka."""
    if request.param == "kbroker":
        process = BrokerProcess(tmp_path_factory.mktemp("validation") / "data").start()
        try:
            yield process.bootstrap
        finally:
            process.stop()
        return
    why = _kafka_missing()
    if why is not None:
        pytest.skip(f"reference Apache Kafka: {why}")
    with KafkaRef() as kafka:
        yield kafka.bootstrap


@pytest.fixture
def raw(target: str) -> Iterator[RawClient]:
    with RawClient(target) as client:
        yield client


def _is_kafka(raw: RawClient) -> bool:
    response = raw.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
    # DescribeQuorum (55, KRaft): an API kbroker never offers
    return any(k["api_key"] == 55 for k in response["api_keys"])


def new_topic(raw: RawClient, configs: dict[str, str] | None = None) -> str:
    """A one-partition topic with ``configs``, ready to take produce requests."""
    name = f"v-{uuid.uuid4().hex[:10]}"
    topic = {
        "name": name,
        "num_partitions": 1,
        "replication_factor": 1,
        "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }
    (result,) = raw.call(ApiKey.CREATE_TOPICS, 7, {"topics": [topic], "timeout_ms": 10000})["topics"]
    assert result["error_code"] == 0, result
    return name


def produce_request(raw: RawClient, parts: list[tuple[str, int, bytes]], *, version: int = 9, **kw: Any) -> dict:
    """One Produce request with (topic, partition, records) entries, one topic entry per entry."""
    body = {
        "transactional_id": None,
        "acks": kw.get("acks", -1),
        "timeout_ms": kw.get("timeout_ms", 10000),
        "topic_data": [{"name": t, "partition_data": [{"index": p, "records": r}]} for t, p, r in parts],
    }
    return raw.call(ApiKey.PRODUCE, version, body)


def produce(raw: RawClient, topic: str, records: bytes, version: int = 9) -> dict[str, Any]:
    (answer,) = produce_request(raw, [(topic, 0, records)], version=version)["responses"][0]["partition_responses"]
    return dict(answer)


def good_batch(values: list[bytes]) -> bytes:
    now = int(time.time() * 1000)
    return build_record_batch([SimpleRecord(b"k", v, (), now) for v in values])


def produce_good(raw: RawClient, topic: str, values: list[bytes], timeout: float = 30.0) -> int:
    """Append a valid batch (retrying while a new topic's leader is not ready); its base offset."""
    deadline = time.monotonic() + timeout
    while True:
        answer = produce(raw, topic, good_batch(values))
        if answer["error_code"] == 0:
            return int(answer["base_offset"])
        if not ErrorCode(answer["error_code"]).retriable or time.monotonic() > deadline:
            raise AssertionError(f"produce to {topic} failed: {answer}")
        time.sleep(0.2)


def log_end(raw: RawClient, topic: str) -> int:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }
    return int(raw.call(ApiKey.LIST_OFFSETS, 7, body)["topics"][0]["partitions"][0]["offset"])


def consume_values(bootstrap: str, topic: str, expected: int, timeout: float = 30.0) -> list[bytes]:
    """Every value of partition 0 from the beginning, read by confluent-kafka (librdkafka)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "enable.auto.commit": False, "log_level": 3}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
        return values
    finally:
        consumer.close()


def refused_and_still_readable(
    raw: RawClient, target: str, topic: str, records: bytes, code: int, *, version: int = 9
) -> dict[str, Any]:
    """Good batch, the batch under test (refused with ``code``, nothing appended), good batch, consumer reads both."""
    produce_good(raw, topic, [b"before-1", b"before-2"])
    answer = produce(raw, topic, records, version=version)
    assert answer["error_code"] == code, answer
    assert answer["base_offset"] == -1
    assert log_end(raw, topic) == 2
    produce_good(raw, topic, [b"after"])
    assert consume_values(target, topic, 3) == [b"before-1", b"before-2", b"after"]
    return answer


# -- hand-built batches -------------------------------------------------------------------------


def now_ms() -> int:
    return int(time.time() * 1000)


def two_records() -> bytes:
    return raw_record(offset_delta=0) + raw_record(offset_delta=1)


def batch(body: bytes, count: int, *, attributes: int = 0, timestamp: int | None = None) -> bytes:
    return bytes(
        batch_with_body(body, count, attributes=attributes, base_timestamp=now_ms() if timestamp is None else timestamp)
    )


@cache
def zeros_compressed(codec: int) -> bytes:
    """100 MB of zero bytes, compressed: a decompression bomb (its records are not even well formed)."""
    return compression.compress(codec, bytes(100 << 20))


CODECS = {"gzip": compression.GZIP, "snappy": compression.SNAPPY, "lz4": compression.LZ4, "zstd": compression.ZSTD}


# -- structure: INVALID_RECORD ------------------------------------------------------------------


def _length_lie(delta: int) -> bytes:
    body = two_records()
    return bytes([body[0] + 2 * delta]) + body[1:]  # the first record's length, zigzag-encoded in one byte


STRUCTURE: dict[str, Callable[[], bytes]] = {
    "count says more records": lambda: batch(two_records(), 3),
    "count says fewer records": lambda: batch(two_records(), 1),
    "record length too long": lambda: batch(_length_lie(+1), 2),
    "record length too short": lambda: batch(_length_lie(-1), 2),
    "varint of six bytes": lambda: batch(zigzag(12) + b"\x00\x00" + b"\xff" * 10 + b"\x00", 1),
    "varlong of eleven bytes": lambda: batch(
        (lambda body: zigzag(len(body)) + body)(b"\x00" + b"\xff" * 10 + b"\x01\x00\x01\x01\x00"), 1
    ),
    "negative header count": lambda: batch(zigzag(6) + b"\x00\x00\x00\x01\x01" + zigzag(-1), 1),
    "negative header key length": lambda: batch(
        zigzag(8) + b"\x00\x00\x00\x01\x01" + zigzag(1) + zigzag(-1) + zigzag(-1), 1
    ),
    "bytes after the last record": lambda: batch(two_records() + b"\x00", 2),
    "record length zero": lambda: batch(zigzag(0) + two_records(), 3),
    "compressed bytes after the last record": lambda: batch(
        compression.compress(compression.ZSTD, two_records() + b"\x00\x00"), 2, attributes=compression.ZSTD
    ),
    "gzip bomb": lambda: batch(zeros_compressed(compression.GZIP), 2, attributes=compression.GZIP),
    "lz4 bomb": lambda: batch(zeros_compressed(compression.LZ4), 2, attributes=compression.LZ4),
    "zstd bomb": lambda: batch(zeros_compressed(compression.ZSTD), 2, attributes=compression.ZSTD),
}


@pytest.mark.parametrize("case", list(STRUCTURE))
def test_malformed_records_are_invalid_record(raw: RawClient, target: str, case: str) -> None:
    answer = refused_and_still_readable(raw, target, new_topic(raw), STRUCTURE[case](), E.INVALID_RECORD)
    assert answer["record_errors"] == []


# -- undecodable compressed records: Kafka fails them with an unexpected error ------------------


@pytest.mark.parametrize("codec", list(CODECS))
def test_compression_flag_on_plain_records(raw: RawClient, target: str, codec: str) -> None:
    records = batch(two_records(), 2, attributes=CODECS[codec])
    refused_and_still_readable(raw, target, new_topic(raw), records, E.UNKNOWN_SERVER_ERROR)


@pytest.mark.parametrize("codec", list(CODECS))
def test_truncated_compressed_records(raw: RawClient, target: str, codec: str) -> None:
    payload = compression.compress(CODECS[codec], two_records() * 20)
    records = batch(payload[: len(payload) // 2], 40, attributes=CODECS[codec])
    refused_and_still_readable(raw, target, new_topic(raw), records, E.UNKNOWN_SERVER_ERROR)


def test_compressed_offset_deltas_out_of_order(raw: RawClient, target: str) -> None:
    payload = compression.compress(compression.LZ4, raw_record(offset_delta=0) + raw_record(offset_delta=5))
    records = batch(payload, 2, attributes=compression.LZ4)
    refused_and_still_readable(raw, target, new_topic(raw), records, E.UNKNOWN_SERVER_ERROR)


def test_unknown_codec(raw: RawClient, target: str) -> None:
    refused_and_still_readable(
        raw, target, new_topic(raw), batch(two_records(), 2, attributes=5), E.UNKNOWN_SERVER_ERROR
    )


# -- keys and timestamps: per-record errors ----------------------------------------------------


def _indexes(answer: dict[str, Any]) -> list[int]:
    return [e["batch_index"] for e in answer["record_errors"]]


def test_timestamp_after_the_default_hour_is_refused(raw: RawClient, target: str) -> None:
    records = batch(two_records(), 2, timestamp=now_ms() + 2 * HOUR)
    answer = refused_and_still_readable(raw, target, new_topic(raw), records, E.INVALID_TIMESTAMP)
    assert _indexes(answer) == [0, 1]
    assert answer["error_message"] == "One or more records have been rejected due to invalid timestamp"
    message = answer["record_errors"][1]["batch_index_error_message"]
    assert message.startswith("Timestamp ") and " of message with offset 1 is out of range." in message


def test_timestamp_before_the_topic_limit_is_refused(raw: RawClient, target: str) -> None:
    topic = new_topic(raw, {"message.timestamp.before.max.ms": str(HOUR)})
    body = raw_record() + raw_record(offset_delta=1, timestamp_delta=2 * HOUR)  # the second one is now
    answer = refused_and_still_readable(
        raw, target, topic, batch(body, 2, timestamp=now_ms() - 2 * HOUR), E.INVALID_TIMESTAMP
    )
    assert _indexes(answer) == [0]


def test_timestamps_minus_one_and_long_ago_are_accepted(raw: RawClient) -> None:
    topic = new_topic(raw, {"message.timestamp.before.max.ms": str(HOUR)})
    produce_good(raw, topic, [b"x"])
    assert produce(raw, topic, batch(two_records(), 2, timestamp=-1))["error_code"] == 0
    plain = new_topic(raw)
    produce_good(raw, plain, [b"x"])
    assert produce(raw, plain, batch(two_records(), 2, timestamp=1))["error_code"] == 0


def test_keyless_records_on_a_compacted_topic(raw: RawClient, target: str) -> None:
    topic = new_topic(raw, {"cleanup.policy": "compact,delete"})
    body = raw_record(key=None) + raw_record(offset_delta=1) + raw_record(key=None, offset_delta=2)
    answer = refused_and_still_readable(raw, target, topic, batch(body, 3), E.INVALID_RECORD)
    assert _indexes(answer) == [0, 2]
    reason = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert [e["batch_index_error_message"] for e in answer["record_errors"]] == [reason, reason]
    assert answer["error_message"] == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first three "
        f"errors at most: [RecordError(batchIndex=0, message='{reason}'), RecordError(batchIndex=2, message='{reason}')]"
    )


def test_a_key_error_and_a_timestamp_error_make_invalid_timestamp(raw: RawClient, target: str) -> None:
    topic = new_topic(raw, {"cleanup.policy": "compact"})
    body = raw_record(key=None) + raw_record(offset_delta=1, timestamp_delta=2 * HOUR)
    answer = refused_and_still_readable(raw, target, topic, batch(body, 2), E.INVALID_TIMESTAMP)
    assert _indexes(answer) == [0, 1]
    assert answer["record_errors"][0]["batch_index_error_message"].startswith("Compacted topic cannot accept")


def test_a_structural_error_wins_over_record_errors(raw: RawClient, target: str) -> None:
    topic = new_topic(raw, {"cleanup.policy": "compact"})
    body = raw_record(key=None) + raw_record(offset_delta=1)
    answer = refused_and_still_readable(raw, target, topic, batch(body, 3), E.INVALID_RECORD)
    assert answer["record_errors"] == []


def test_producer_set_log_append_time(raw: RawClient, target: str) -> None:
    topic = new_topic(raw, {"message.timestamp.type": "LogAppendTime"})
    answer = refused_and_still_readable(
        raw, target, topic, batch(two_records(), 2, attributes=LOG_APPEND_TIME_BIT), E.INVALID_TIMESTAMP
    )
    assert _indexes(answer) == [0, 1]
    assert answer["record_errors"][0]["batch_index_error_message"].endswith(
        "Producer should not set timestamp type to LogAppendTime."
    )
    plain = new_topic(raw)
    records = batch(two_records(), 2, attributes=LOG_APPEND_TIME_BIT, timestamp=-1)
    assert _indexes(refused_and_still_readable(raw, target, plain, records, E.INVALID_TIMESTAMP)) == [0, 1]


def test_producer_set_log_append_time_with_a_valid_time_on_a_create_time_topic(raw: RawClient) -> None:
    topic = new_topic(raw)
    produce_good(raw, topic, [b"x"])
    assert produce(raw, topic, batch(two_records(), 2, attributes=LOG_APPEND_TIME_BIT))["error_code"] == 0


def test_a_timestamp_delta_of_long_min_wraps_as_in_java(raw: RawClient, target: str) -> None:
    """A ten-byte varlong delta of Long.MIN_VALUE: Kafka adds it to the base timestamp and subtracts it from
    now in long arithmetic; the result falls outside the default hour after now, for record 1 only."""
    body = b"\x00" + b"\xff" * 9 + b"\x01" + b"\x02\x01\x01\x00"
    records = batch(raw_record() + zigzag(len(body)) + body, 2)
    answer = refused_and_still_readable(raw, target, new_topic(raw), records, E.INVALID_TIMESTAMP)
    assert _indexes(answer) == [1]


def test_versions_before_8_get_the_code_only(raw: RawClient, target: str) -> None:
    records = batch(two_records(), 2, timestamp=now_ms() + 2 * HOUR)
    answer = refused_and_still_readable(raw, target, new_topic(raw), records, E.INVALID_TIMESTAMP, version=7)
    assert "record_errors" not in answer or answer["record_errors"] == []


# -- what Kafka accepts, kbroker accepts --------------------------------------------------------


def _header_key_not_utf8() -> bytes:
    body = b"\x00\x00\x00\x01\x01" + zigzag(1) + zigzag(2) + b"\xff\xfe" + zigzag(-1)
    return zigzag(len(body)) + body


ACCEPTED: dict[str, Callable[[], bytes]] = {
    "uncompressed offset deltas out of order": lambda: batch(raw_record() + raw_record(offset_delta=5), 2),
    "key length -5 (a null)": lambda: batch(zigzag(6) + b"\x00\x00\x00" + zigzag(-5) + zigzag(-1) + b"\x00", 1),
    "header key not UTF-8": lambda: batch(_header_key_not_utf8(), 1),
    "record attributes set": lambda: batch((lambda b: zigzag(len(b)) + b)(b"\x07\x00\x00\x01\x01\x00"), 1),
    "five-byte offset delta wrapping to 32 bits": lambda: batch(
        (lambda b: zigzag(len(b)) + b)(b"\x00\x00\xff\xff\xff\xff\x7f\x01\x01\x00"), 1
    ),
    "gzip with bytes after the member": lambda: batch(
        compression.compress(compression.GZIP, two_records()) + b"junk", 2, attributes=compression.GZIP
    ),
    "raw snappy block": lambda: batch(
        compression.compress(compression.SNAPPY, two_records(), snappy_xerial=False), 2, attributes=compression.SNAPPY
    ),
    "record length in five bytes": lambda: batch(
        (lambda b: bytes((len(b) << 1 | 0x80,)) + b"\x80\x80\x80\x00" + b)(b"\x00\x00\x00\x01\x01\x00"), 1
    ),
    "header with a null value": lambda: batch(
        (lambda b: zigzag(len(b)) + b)(b"\x00\x00\x00\x01\x01" + zigzag(1) + zigzag(1) + b"h" + zigzag(-1)), 1
    ),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_what_kafka_accepts(raw: RawClient, case: str) -> None:
    topic = new_topic(raw)
    produce_good(raw, topic, [b"x"])
    answer = produce(raw, topic, ACCEPTED[case]())
    assert (answer["error_code"], answer["base_offset"]) == (0, 1), answer


# -- a partition twice in one request, and timeout_ms -------------------------------------------


def test_a_partition_named_twice_appends_only_its_last_batch(raw: RawClient, target: str) -> None:
    topic = new_topic(raw)
    produce_good(raw, topic, [b"first"])
    response = produce_request(raw, [(topic, 0, good_batch([b"a", b"b"])), (topic, 0, good_batch([b"c", b"d", b"e"]))])
    answers = [p for t in response["responses"] for p in t["partition_responses"]]
    assert [(a["index"], a["error_code"], a["base_offset"]) for a in answers] == [(0, 0, 1)]
    assert log_end(raw, topic) == 4
    same_entry = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 10000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [
                    {"index": 0, "records": good_batch([b"f"])},
                    {"index": 0, "records": good_batch([b"g", b"h"])},
                ],
            }
        ],
    }
    answers = raw.call(ApiKey.PRODUCE, 9, same_entry)["responses"][0]["partition_responses"]
    assert [(a["index"], a["error_code"], a["base_offset"]) for a in answers] == [(0, 0, 4)]
    assert log_end(raw, topic) == 6
    assert consume_values(target, topic, 6) == [b"first", b"c", b"d", b"e", b"g", b"h"]


def test_a_partition_named_twice_with_a_corrupt_last_batch_appends_nothing(raw: RawClient, target: str) -> None:
    topic = new_topic(raw)
    produce_good(raw, topic, [b"first"])
    corrupt = bytearray(good_batch([b"c"]))
    corrupt[-1] ^= 0xFF
    response = produce_request(raw, [(topic, 0, good_batch([b"a", b"b"])), (topic, 0, bytes(corrupt))])
    answers = [p for t in response["responses"] for p in t["partition_responses"]]
    assert [(a["index"], a["error_code"]) for a in answers] == [(0, E.CORRUPT_MESSAGE)]
    assert log_end(raw, topic) == 1


@pytest.mark.parametrize("timeout_ms", [0, -1, 1])
def test_timeout_ms_does_not_matter_with_one_replica(raw: RawClient, timeout_ms: int) -> None:
    topic = new_topic(raw)
    produce_good(raw, topic, [b"x"])
    response = produce_request(raw, [(topic, 0, good_batch([b"y"]))], acks=-1, timeout_ms=timeout_ms)
    (answer,) = response["responses"][0]["partition_responses"]
    assert (answer["error_code"], answer["base_offset"]) == (0, 1)


# -- kbroker only: where it differs from Kafka, on purpose ---------------------------------------


def test_a_bomb_of_valid_records_is_refused(raw: RawClient, target: str) -> None:
    """70 MiB of well-formed records in a small zstd batch: Kafka would accept it; kbroker caps the
    decompressed size (64 MiB) so that one request cannot take unbounded memory."""
    if _is_kafka(raw):
        pytest.skip("Apache Kafka has no cap on the decompressed size")
    body = bytearray()
    value = bytes(1 << 20)
    for i in range(70):
        record = bytearray(b"\x00\x00")
        write_varint(record, i)
        record += b"\x01"
        write_varint(record, len(value))
        record += value + b"\x00"
        write_varint(body, len(record))
        body += record
    payload = compression.compress(compression.ZSTD, body)
    assert len(payload) < 100_000
    answer = refused_and_still_readable(
        raw, target, new_topic(raw), batch(payload, 70, attributes=compression.ZSTD), E.INVALID_RECORD
    )
    assert "limit" in (answer["error_message"] or "")
