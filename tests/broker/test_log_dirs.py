"""DescribeLogDirs against a real kbroker."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

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


def _create_topic(raw: RawClient, name: str, partitions: int) -> None:
    response = raw.call(
        ApiKey.CREATE_TOPICS,
        4,
        {
            "topics": [
                {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            "timeout_ms": 10_000,
            "validate_only": False,
        },
    )
    assert response["topics"][0]["error_code"] == 0


def test_two_log_dirs(tmp_path: Path) -> None:
    """log.dirs=a,b: partitions spread over both, each reported with its own; meta.properties in each;
    a partition found in both stops the next start with a clear error."""
    first, second = tmp_path / "a", tmp_path / "b"
    process = BrokerProcess(first, log_dirs=[second]).start()
    name = unique_topic("two")
    try:
        with RawClient(process.bootstrap) as raw:
            _create_topic(raw, name, 2)
            produce(raw, name, batch_of(3), partition=1)
            results = _describe(raw, None)["results"]
    finally:
        process.stop()
    assert [r["log_dir"] for r in results] == [str(first.resolve()), str(second.resolve())]
    assert [_partitions(r, name) and list(_partitions(r, name)) for r in results] == [[0], [1]]
    assert _partitions(results[0], name)[0]["partition_size"] == 0
    assert _partitions(results[1], name)[1]["partition_size"] == len(batch_of(3))
    metas = [(d / "meta.properties").read_text() for d in (first, second)]
    cluster_ids = [line for text in metas for line in text.splitlines() if line.startswith("cluster.id=")]
    assert len(cluster_ids) == 2 and cluster_ids[0] == cluster_ids[1]

    restarted = BrokerProcess(first, log_dirs=[second]).start()
    try:
        with RawClient(restarted.bootstrap) as raw:
            results = _describe(raw, [{"topic": name, "partitions": [0, 1]}])["results"]
            assert _partitions(results[1], name)[1]["partition_size"] == len(batch_of(3))
    finally:
        restarted.stop()

    shutil.copytree(second / f"{name}-1", first / f"{name}-1")
    duplicate = BrokerProcess(first, log_dirs=[second])
    with pytest.raises(RuntimeError, match=f"partition {name}-1 has a directory in two data directories"):
        duplicate.start()
