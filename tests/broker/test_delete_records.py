"""DeleteRecords against a real kbroker, seen through ListOffsets and Fetch."""

from __future__ import annotations

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
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


@pytest.fixture
def topic(raw: RawClient) -> str:
    name = unique_topic("delete")
    create_topic(raw, name)
    for _ in range(4):
        produce(raw, name, batch_of(5))
    return name


def delete_records(raw: RawClient, topic: str, offset: int, partition: int = 0, version: int = 2) -> dict:
    body = {
        "topics": [{"name": topic, "partitions": [{"partition_index": partition, "offset": offset}]}],
        "timeout_ms": 5000,
    }
    return dict(raw.call(ApiKey.DELETE_RECORDS, version, body)["topics"][0]["partitions"][0])


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_advances_the_log_start(raw: RawClient, topic: str, version: int) -> None:
    answer = delete_records(raw, topic, 7, version=version)
    assert (answer["error_code"], answer["low_watermark"]) == (0, 7)
    assert list_offset(raw, topic, -2)["offset"] == 7
    part = fetched_partition(fetch(raw, [(topic, 0, 7)]), topic)
    assert part["log_start_offset"] == 7
    assert record_offsets(part["records"])[0] <= 7  # the batch holding 7 starts at 5; clients skip below
    assert fetched_partition(fetch(raw, [(topic, 0, 3)]), topic)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_minus_one_means_the_high_watermark(raw: RawClient, topic: str) -> None:
    assert delete_records(raw, topic, -1)["low_watermark"] == 20
    assert list_offset(raw, topic, -2)["offset"] == 20
    assert list_offset(raw, topic, 0)["offset"] == -1  # nothing left to find by time
    assert produce(raw, topic, batch_of(1))["base_offset"] == 20


def test_never_moves_backwards(raw: RawClient, topic: str) -> None:
    delete_records(raw, topic, 10)
    assert delete_records(raw, topic, 4)["low_watermark"] == 10


def test_beyond_the_high_watermark(raw: RawClient, topic: str) -> None:
    answer = delete_records(raw, topic, 21)
    assert (answer["error_code"], answer["low_watermark"]) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert delete_records(raw, topic, -5)["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert list_offset(raw, topic, -2)["offset"] == 0


def test_unknown_partition(raw: RawClient, topic: str) -> None:
    assert delete_records(raw, topic, 1, partition=3)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert delete_records(raw, unique_topic("missing"), 1)["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_waiting_fetch_is_answered_when_the_log_start_moves(
    broker: BrokerProcess, raw: RawClient, topic: str
) -> None:
    import threading
    import time

    def delete_soon() -> None:
        time.sleep(0.3)
        with RawClient(broker.bootstrap) as client:
            delete_records(client, topic, -1)

    thread = threading.Thread(target=delete_soon)
    thread.start()
    begin = time.monotonic()
    response = fetch(raw, [(topic, 0, 20)], max_wait_ms=10_000)  # waits at the log end
    thread.join()
    assert time.monotonic() - begin < 2
    part = fetched_partition(response, topic)
    assert (part["error_code"], part["log_start_offset"]) == (0, 20)
