"""Produce against a real kbroker: raw requests for exact error codes, real clients for round trips."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

import crc32c
import pytest

from protocol import compression
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import CRC_START, RecordBatch, iter_batches
from tests.broker.conftest import (
    batch_of,
    create_topic,
    fetch,
    fetched_partition,
    list_offset,
    produce,
    record_offsets,
    unique_topic,
)
from tests.process import BrokerProcess, RawClient


def _recrc(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[CRC_START:])))
    return bytes(batch)


@pytest.fixture
def topic(raw: RawClient) -> str:
    name = unique_topic("produce")
    create_topic(raw, name)
    return name


def test_produce_assigns_dense_offsets_and_reports_log_start(raw: RawClient, topic: str) -> None:
    first = produce(raw, topic, batch_of(5))
    second = produce(raw, topic, batch_of(3))
    assert (first["error_code"], first["base_offset"], first["log_start_offset"]) == (0, 0, 0)
    assert (second["error_code"], second["base_offset"]) == (0, 5)
    assert first["log_append_time_ms"] == -1
    assert list_offset(raw, topic, -1)["offset"] == 8
    data = fetched_partition(fetch(raw, [(topic, 0, 0)]), topic)["records"]
    assert record_offsets(data) == list(range(8))
    assert [b.partition_leader_epoch for b in iter_batches(bytes(data))] == [0, 0]  # the epoch Metadata reports


@pytest.mark.parametrize("version", range(3, 12))
def test_every_implemented_version(raw: RawClient, topic: str, version: int) -> None:
    answer = produce(raw, topic, batch_of(2), version=version)
    assert answer["error_code"] == 0
    assert answer["base_offset"] == 0
    assert answer["log_start_offset"] == (0 if version >= 5 else -1)


def test_produce_is_advertised_from_v0(raw: RawClient) -> None:
    response = raw.call(ApiKey.API_VERSIONS, 3, {})
    keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
    assert keys[ApiKey.PRODUCE] == (0, 12)  # 12: transactions v2


@pytest.mark.parametrize("version", [0, 1, 2])
def test_old_versions_are_refused_by_closing_as_kafka_4_does(broker: BrokerProcess, version: int) -> None:
    with RawClient(broker.bootstrap) as client:
        body = {"acks": 1, "timeout_ms": 1000, "topic_data": [{"name": "x", "partition_data": []}]}
        client.send(client.request_bytes(ApiKey.PRODUCE, version, body))
        assert client.closed_by_peer()


def test_acks_zero_gets_no_response(raw: RawClient, topic: str) -> None:
    body = {
        "transactional_id": None,
        "acks": 0,
        "timeout_ms": 1000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch_of(4)}]}],
    }
    raw.send(raw.request_bytes(ApiKey.PRODUCE, 9, body, correlation_id=500))
    # the next answer on the connection is the one to the following request
    assert list_offset(raw, topic, -1)["offset"] == 4


def test_acks_zero_failure_closes_the_connection(raw: RawClient) -> None:
    body = {
        "transactional_id": None,
        "acks": 0,
        "timeout_ms": 1000,
        "topic_data": [{"name": unique_topic("missing"), "partition_data": [{"index": 0, "records": batch_of(1)}]}],
    }
    raw.send(raw.request_bytes(ApiKey.PRODUCE, 9, body))
    assert raw.closed_by_peer()


def test_invalid_acks(raw: RawClient, topic: str) -> None:
    assert produce(raw, topic, batch_of(1), acks=2)["error_code"] == ErrorCode.INVALID_REQUIRED_ACKS


def test_unknown_topic_and_partition(raw: RawClient, topic: str) -> None:
    missing = unique_topic("missing")
    assert produce(raw, missing, batch_of(1))["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(raw, topic, batch_of(1), partition=7)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # Produce does not create topics (Metadata does, as in Kafka)
    response = raw.call(ApiKey.METADATA, 9, {"topics": [{"name": missing}], "allow_auto_topic_creation": False})
    assert response["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_bad_crc_is_corrupt_message_and_nothing_is_appended(raw: RawClient, topic: str) -> None:
    batch = bytearray(batch_of(3))
    batch[-1] ^= 0xFF
    answer = produce(raw, topic, bytes(batch))
    assert answer["error_code"] == ErrorCode.CORRUPT_MESSAGE
    assert answer["base_offset"] == -1
    assert answer["error_message"]
    assert list_offset(raw, topic, -1)["offset"] == 0


def test_batch_above_max_message_bytes(raw: RawClient, topic: str) -> None:
    big = batch_of(1, value_size=1_100_000)
    answer = produce(raw, topic, big)
    assert answer["error_code"] == ErrorCode.MESSAGE_TOO_LARGE
    assert list_offset(raw, topic, -1)["offset"] == 0
    assert produce(raw, topic, batch_of(1, value_size=900 * 1024))["error_code"] == 0


@pytest.mark.parametrize(
    ("name", "records", "code"),
    [
        ("null", None, ErrorCode.INVALID_RECORD),
        ("empty", b"", ErrorCode.INVALID_RECORD),
        ("truncated", batch_of(3)[:-5], ErrorCode.INVALID_RECORD),
        ("two-batches", batch_of(2) + batch_of(2), ErrorCode.INVALID_RECORD),
        ("base-offset", batch_of(2, base_offset=7), ErrorCode.INVALID_RECORD),
        ("control", batch_of(1, is_control=True), ErrorCode.INVALID_RECORD),
        ("no-sequence", batch_of(1, producer_id=5, producer_epoch=0), ErrorCode.INVALID_RECORD),
    ],
)
def test_invalid_batches(raw: RawClient, topic: str, name: str, records: bytes | None, code: int) -> None:
    answer = produce(raw, topic, records)
    assert answer["error_code"] == code, answer
    assert list_offset(raw, topic, -1)["offset"] == 0


def test_inconsistent_record_count(raw: RawClient, topic: str) -> None:
    batch = bytearray(batch_of(3))
    struct.pack_into(">i", batch, 57, 4)  # records_count says 4, last offset delta says 3 records
    assert produce(raw, topic, _recrc(batch))["error_code"] == ErrorCode.INVALID_RECORD


def test_old_magic_is_refused(raw: RawClient, topic: str) -> None:
    batch = bytearray(batch_of(1))
    batch[16] = 1
    assert produce(raw, topic, bytes(batch))["error_code"] == ErrorCode.INVALID_RECORD


def test_trailing_fragment_is_ignored_as_in_kafka(raw: RawClient, topic: str) -> None:
    answer = produce(raw, topic, batch_of(2) + b"\x00\x00\x00")
    assert (answer["error_code"], answer["base_offset"]) == (0, 0)
    assert list_offset(raw, topic, -1)["offset"] == 2


def test_zstd_needs_v7(raw: RawClient, topic: str) -> None:
    zstd = batch_of(3, compression_type=compression.ZSTD)
    assert produce(raw, topic, zstd, version=6)["error_code"] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert produce(raw, topic, zstd, version=7)["error_code"] == 0
    data = fetched_partition(fetch(raw, [(topic, 0, 0)]), topic)["records"]
    (batch,) = list(iter_batches(bytes(data)))
    assert batch.compression == compression.ZSTD  # stored as received, never recompressed
    assert [r.value for r in batch.records()] == [b"0:vvvvvvvv", b"1:vvvvvvvv", b"2:vvvvvvvv"]


def test_producer_ids_need_init_producer_id(raw: RawClient, topic: str) -> None:
    advertised = {k["api_key"] for k in raw.call(ApiKey.API_VERSIONS, 3, {})["api_keys"]}
    idempotent = batch_of(2, producer_id=1000, producer_epoch=0, base_sequence=0)
    transactional = batch_of(2, producer_id=1000, producer_epoch=0, base_sequence=2, is_transactional=True)
    if ApiKey.INIT_PRODUCER_ID in advertised:
        assert produce(raw, topic, idempotent)["error_code"] == 0
        assert produce(raw, topic, transactional)["error_code"] == ErrorCode.INVALID_TXN_STATE
    else:
        assert produce(raw, topic, idempotent)["error_code"] == ErrorCode.UNKNOWN_PRODUCER_ID
        assert produce(raw, topic, transactional)["error_code"] == ErrorCode.UNKNOWN_PRODUCER_ID


def test_several_partitions_answer_separately(raw: RawClient, topic: str) -> None:
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [
                    {"index": 0, "records": batch_of(2)},
                    {"index": 3, "records": batch_of(2)},
                ],
            }
        ],
    }
    answers = raw.call(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"]
    # a partition named twice is answered once: tests/broker/test_record_validation.py
    assert [(a["index"], a["error_code"]) for a in answers] == [(0, 0), (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


def test_log_append_time_topic(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker("--config", "log.message.timestamp.type=LogAppendTime")
    topic = unique_topic("lat")
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)
        before = int(time.time() * 1000)
        answer = produce(client, topic, batch_of(3, start_ts=5))
        after = int(time.time() * 1000)
        assert answer["error_code"] == 0
        assert before <= answer["log_append_time_ms"] <= after
        data = fetched_partition(fetch(client, [(topic, 0, 0)]), topic)["records"]
    (batch,) = list(iter_batches(bytes(data)))
    assert batch.is_log_append_time and batch.is_valid()
    assert {r.timestamp for r in batch.records()} == {answer["log_append_time_ms"]}


def test_fsync_before_ack(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker("--config", "kbroker.fsync.before.ack=true")
    topic = unique_topic("fsync")
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)
        answers = [produce(client, topic, batch_of(10), acks=-1) for _ in range(5)]
        assert [(a["error_code"], a["base_offset"]) for a in answers] == [(0, 10 * i) for i in range(5)]
    # the acknowledgements went through the fsync path (an asynchronous answer); kill -9 and
    # recover: everything acknowledged is there (page-cache durability only: this is no power-cut test)
    broker.kill()
    broker.start()
    with RawClient(broker.bootstrap) as client:
        assert list_offset(client, topic, -1)["offset"] == 50


def test_records_are_stored_byte_for_byte(raw: RawClient, topic: str) -> None:
    sent = batch_of(4, compression_type=compression.GZIP)
    produce(raw, topic, sent)
    data = bytes(fetched_partition(fetch(raw, [(topic, 0, 0)]), topic)["records"])
    assert data[12:16] == b"\x00\x00\x00\x00"  # leader epoch 0 stamped outside the CRC
    assert data[16:] == sent[16:]
    assert RecordBatch(data).is_valid()


def test_partition_that_failed_to_load_answers_storage_error(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()
    topic = unique_topic("offline")
    with RawClient(broker.bootstrap) as client:
        create_topic(client, topic)
        produce(client, topic, batch_of(3))
    broker.stop()
    segment = broker.data_dir / f"{topic}-0" / "00000000000000000000.log"
    segment.unlink()
    segment.mkdir()  # an I/O error on load: the partition is offline
    broker.start()
    with RawClient(broker.bootstrap) as client:
        assert produce(client, topic, batch_of(1))["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
        assert fetched_partition(fetch(client, [(topic, 0, 0)]), topic)["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
        assert list_offset(client, topic, -1)["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
    assert "partition_offline" in broker.log_text()


def test_internal_topics_are_refused(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker()  # its own broker: the session one keeps a clean __consumer_offsets
    with RawClient(broker.bootstrap) as client:
        # __consumer_offsets is created by the group coordinator on the first commit, never by Metadata
        topic = unique_topic()
        create_topic(client, topic)
        commit = {
            "group_id": "g",
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 5}]}],
        }
        committed = client.call(ApiKey.OFFSET_COMMIT, 2, commit)
        assert committed["topics"][0]["partitions"][0]["error_code"] == 0
        before = {p: list_offset(client, "__consumer_offsets", -1, partition=p)["offset"] for p in range(50)}
        answer = produce(client, "__consumer_offsets", batch_of(1))
        assert (answer["error_code"], answer["base_offset"]) == (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
        after = {p: list_offset(client, "__consumer_offsets", -1, partition=p)["offset"] for p in range(50)}
        assert before == after
