"""DescribeLogDirs against a real kbroker."""

from __future__ import annotations

import os

import pytest

from protocol.api_keys import ApiKey
from tests.broker.conftest import batch_of, create_topic, produce, unique_topic
from tests.process import BrokerProcess, RawClient


def _describe(raw: RawClient, topics: list[dict] | None, version: int = 5) -> dict:
    return dict(raw.call(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": topics}))


def _partitions(result: dict, topic: str) -> dict[int, dict]:
    for t in result["topics"]:
        if t["name"] == topic:
            return {p["partition_index"]: p for p in t["partitions"]}
    return {}


@pytest.mark.parametrize("version", range(1, 6))
def test_sizes_of_requested_partitions(broker: BrokerProcess, raw: RawClient, version: int) -> None:
    name = unique_topic("dirs")
    create_topic(raw, name)
    sizes = [len(batch_of(3)), len(batch_of(3)) * 2]
    produce(raw, name, batch_of(3))
    produce(raw, name, batch_of(3))
    response = _describe(
        raw, [{"topic": name, "partitions": [0, 7]}, {"topic": "no-such-topic", "partitions": [0]}], version
    )
    assert response["error_code"] == 0
    (result,) = response["results"]
    assert result["error_code"] == 0
    assert result["log_dir"] == os.path.abspath(broker.data_dir)
    assert [t["name"] for t in result["topics"]] == [name]  # the missing topic and partition 7 are left out
    (partition,) = _partitions(result, name).values()
    assert partition == {"partition_index": 0, "partition_size": sizes[1], "offset_lag": 0, "is_future_key": False}
    if version >= 4:
        stats = os.statvfs(broker.data_dir)
        assert result["total_bytes"] == stats.f_blocks * stats.f_frsize
        assert 0 < result["usable_bytes"] <= result["total_bytes"]
    if version >= 5:
        assert result["is_cordoned"] is False


def test_null_topics_lists_every_partition(raw: RawClient) -> None:
    first, second = unique_topic("all"), unique_topic("all")
    create_topic(raw, first)
    create_topic(raw, second)
    produce(raw, second, batch_of(2))
    (result,) = _describe(raw, None)["results"]
    assert _partitions(result, first)[0]["partition_size"] == 0
    assert _partitions(result, second)[0]["partition_size"] == len(batch_of(2))
