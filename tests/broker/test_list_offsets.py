"""ListOffsets and OffsetForLeaderEpoch against a real kbroker."""

from __future__ import annotations

import pytest

from protocol import compression
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.broker.conftest import batch_of, create_topic, list_offset, produce, unique_topic
from tests.process import RawClient


@pytest.fixture
def topic(raw: RawClient) -> str:
    """Three batches: offsets 0-4 at 1000-1004, 5-9 (gzip) at 2000-2004, 10-14 at 1500-1504."""
    name = unique_topic("offsets")
    create_topic(raw, name)
    produce(raw, name, batch_of(5, start_ts=1000))
    produce(raw, name, batch_of(5, start_ts=2000, compression_type=compression.GZIP))
    produce(raw, name, batch_of(5, start_ts=1500))
    return name


def _found(answer: dict) -> tuple[int, int, int, int]:
    return answer["error_code"], answer["offset"], answer["timestamp"], answer["leader_epoch"]


@pytest.mark.parametrize("version", range(1, 12))
def test_earliest_and_latest_every_version(raw: RawClient, topic: str, version: int) -> None:
    assert _found(list_offset(raw, topic, -2, version=version))[:2] == (0, 0)
    latest = list_offset(raw, topic, -1, version=version)
    assert (latest["error_code"], latest["offset"], latest["timestamp"]) == (0, 15, -1)
    assert latest["leader_epoch"] == (0 if version >= 4 else -1)


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        (0, (0, 0, 1000, 0)),  # before everything: the first record
        (1000, (0, 0, 1000, 0)),
        (1003, (0, 3, 1003, 0)),  # inside the first batch
        (1005, (0, 5, 2000, 0)),  # between batches: the first record at or after it, by offset
        (2002, (0, 7, 2002, 0)),  # inside a compressed batch
        (2004, (0, 9, 2004, 0)),
        (2005, (0, -1, -1, -1)),  # after the last record: -1
    ],
)
def test_by_timestamp(raw: RawClient, topic: str, timestamp: int, expected: tuple[int, int, int, int]) -> None:
    assert _found(list_offset(raw, topic, timestamp)) == expected


def test_max_timestamp(raw: RawClient, topic: str) -> None:
    assert _found(list_offset(raw, topic, -3)) == (0, 9, 2004, 0)


@pytest.mark.parametrize("version", [8, 11])
def test_earliest_local_is_the_log_start_offset(raw: RawClient, topic: str, version: int) -> None:
    assert _found(list_offset(raw, topic, -4, version=version))[:2] == (0, 0)
    raw.call(
        ApiKey.DELETE_RECORDS,
        2,
        {"topics": [{"name": topic, "partitions": [{"partition_index": 0, "offset": 7}]}], "timeout_ms": 5000},
    )
    assert _found(list_offset(raw, topic, -4, version=version))[:2] == (0, 7)


@pytest.mark.parametrize(("timestamp", "version"), [(-5, 9), (-5, 11), (-6, 11)])
def test_tiered_sentinels_without_remote_storage(raw: RawClient, topic: str, timestamp: int, version: int) -> None:
    # Kafka's UnifiedLog for a topic without remote storage: no error, nothing found.
    assert _found(list_offset(raw, topic, timestamp, version=version)) == (0, -1, -1, -1)


@pytest.mark.parametrize(("timestamp", "version"), [(-3, 6), (-4, 7), (-5, 8), (-6, 10), (-7, 11), (-100, 11)])
def test_sentinel_newer_than_the_version_is_unsupported(
    raw: RawClient, topic: str, timestamp: int, version: int
) -> None:
    answer = list_offset(raw, topic, timestamp, version=version)
    assert _found(answer) == (ErrorCode.UNSUPPORTED_VERSION, -1, -1, -1)


def test_v10_timeout_is_accepted(raw: RawClient, topic: str) -> None:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        "timeout_ms": 30000,
    }
    (answer,) = raw.call(ApiKey.LIST_OFFSETS, 10, body)["topics"][0]["partitions"]
    assert (answer["error_code"], answer["offset"]) == (0, 15)


def test_read_committed_latest_is_the_last_stable_offset(raw: RawClient, topic: str) -> None:
    assert list_offset(raw, topic, -1, isolation_level=1)["offset"] == 15


def test_empty_partition(raw: RawClient) -> None:
    name = unique_topic("empty")
    create_topic(raw, name)
    assert _found(list_offset(raw, name, -2))[:2] == (0, 0)
    assert _found(list_offset(raw, name, -1))[:2] == (0, 0)
    assert _found(list_offset(raw, name, 5)) == (0, -1, -1, -1)
    assert _found(list_offset(raw, name, -3)) == (0, -1, -1, -1)


def test_errors(raw: RawClient, topic: str) -> None:
    missing = list_offset(raw, unique_topic("missing"), -1)
    assert _found(missing) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1)
    assert list_offset(raw, topic, -1, partition=5)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert list_offset(raw, topic, -1, current_leader_epoch=2)["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert list_offset(raw, topic, -1, current_leader_epoch=0)["error_code"] == 0


def test_duplicate_partitions_are_invalid(raw: RawClient, topic: str) -> None:
    partitions = [{"partition_index": 0, "timestamp": -1}, {"partition_index": 0, "timestamp": -2}]
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": partitions}]}
    answers = raw.call(ApiKey.LIST_OFFSETS, 7, body)["topics"][0]["partitions"]
    assert [a["error_code"] for a in answers] == [ErrorCode.INVALID_REQUEST]  # one answer, as Kafka 4.3.1's


def _end_offset(raw: RawClient, topic: str, epoch: int, current: int = -1, version: int = 4) -> dict:
    body = {
        "replica_id": -1,
        "topics": [
            {"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}
        ],
    }
    return dict(raw.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, body)["topics"][0]["partitions"][0])


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch(raw: RawClient, topic: str, version: int) -> None:
    answer = _end_offset(raw, topic, 0, version=version)
    assert (answer["error_code"], answer["leader_epoch"], answer["end_offset"]) == (0, 0, 15)
    answer = _end_offset(raw, topic, 3, version=version)  # an epoch that never was: no end offset
    assert (answer["error_code"], answer["leader_epoch"], answer["end_offset"]) == (0, -1, -1)


def test_offset_for_leader_epoch_errors(raw: RawClient, topic: str) -> None:
    assert _end_offset(raw, topic, 0, current=1)["error_code"] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert _end_offset(raw, topic, 0, current=0)["error_code"] == 0
    assert _end_offset(raw, unique_topic("missing"), 0)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
