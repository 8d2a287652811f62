"""What the Spark scenarios share: the APIs Spark's Kafka connector needs, skip checks, test data helpers.

The connector's needs come from its code paths (docs: protocol-requirements section 2): the driver reads offsets
with the Admin client (Metadata v4+, ListOffsets v1+, v2+ for read_committed), executors fetch with an assigned
consumer (Fetch v4+), and the sink's producer is idempotent (InitProducerId, Produce v3+).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.compat.clients.adapter import ConsumeResult, Record
from tests.compat.clients.apiversions import API_KEYS
from tests.compat.clients.kafka_python_client import KafkaPythonClient

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

# API keys the suite's table does not name yet.
EXTRA_API_KEYS = {"ListGroups": 16, "AddPartitionsToTxn": 24, "EndTxn": 26, "DescribeTopicPartitions": 75}

# API name -> lowest version the connector (or the test's own setup) needs.
SPARK_READ: dict[str, int] = {"Metadata": 4, "ListOffsets": 1, "Fetch": 4}
SETUP: dict[str, int] = {"Metadata": 0, "CreateTopics": 0, "Produce": 2}
SPARK_SINK: dict[str, int] = {"Metadata": 4, "Produce": 3, "InitProducerId": 0}
READ_COMMITTED: dict[str, int] = {
    "ListOffsets": 2,
    "Fetch": 4,
    "FindCoordinator": 1,
    "InitProducerId": 0,
    "AddPartitionsToTxn": 0,
    "EndTxn": 0,
}
DELETE_RECORDS: dict[str, int] = {"DeleteRecords": 0}
# spark.sql.streaming.kafka.useDeprecatedOffsetFetching=true: the driver's KafkaConsumer subscribes in a group.
LEGACY_DRIVER: dict[str, int] = {
    "FindCoordinator": 0,
    "JoinGroup": 0,
    "SyncGroup": 0,
    "Heartbeat": 0,
    "LeaveGroup": 0,
    "OffsetFetch": 0,
    "ListGroups": 0,  # only for the test to see that the driver's group existed
}


def require(advertised: dict[int, tuple[int, int]], *needs: dict[str, int]) -> None:
    """Skip unless the broker advertises every named API at (at least) the given version."""
    absent = []
    for need in needs:
        for name, version in need.items():
            key = API_KEYS.get(name, EXTRA_API_KEYS.get(name))
            assert key is not None, f"unknown API name {name}"
            span = advertised.get(key)
            if span is None or span[1] < version:
                absent.append(f"{name} v{version}+" if version else name)
    if absent:
        pytest.skip(f"broker does not implement {', '.join(sorted(set(absent)))} yet")


def unique_topic(scenario: str) -> str:
    return f"spark-{scenario}-{time.time_ns() % 10**12}"


def create_topic(bootstrap: str, scenario: str, partitions: int = 1) -> str:
    """A fresh topic that keeps its records forever: the scenarios write CreateTimes of 2023, which Apache Kafka's
    retention check (first run 30 s after its start) would otherwise delete, active segment included."""
    topic = unique_topic(scenario)
    KafkaPythonClient().create_topic(bootstrap, topic, partitions, {"retention.ms": "-1"})
    return topic


def produce(bootstrap: str, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
    """Produce with kafka-python (plain, not idempotent); (partition, offset) per record."""
    return KafkaPythonClient(idempotent=False).produce(bootstrap, topic, records)


def consume_all(bootstrap: str, topic: str, partitions: Sequence[int], count: int) -> ConsumeResult:
    """Read ``count`` records from the beginning of ``partitions`` with kafka-python (no consumer group)."""
    result = KafkaPythonClient().consume(bootstrap, topic, list(partitions), "earliest", count, timeout_s=30)
    assert result.error is None, result.error_message
    return result


def group_ids(bootstrap: str) -> set[str]:
    """The consumer groups the broker knows (kafka-python's ListGroups)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="compat-spark-groups")
    try:
        return {str(group["group_id"]) for group in admin.list_groups()}
    finally:
        admin.close()


def kafka_source(spark: SparkSession, bootstrap: str, **options: str) -> Any:
    """``spark.read.format("kafka")`` with the bootstrap and options set."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def kafka_stream(spark: SparkSession, bootstrap: str, **options: str) -> Any:
    """``spark.readStream.format("kafka")`` with the bootstrap and options set."""
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows_as_tuples(rows: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Spark rows of the Kafka schema as plain, sortable tuples (bytes instead of bytearray)."""

    def plain(value: Any) -> Any:
        if isinstance(value, bytearray):
            return bytes(value)
        if isinstance(value, list):
            return tuple(plain(v) for v in value)
        if hasattr(value, "asDict"):
            return tuple(plain(v) for v in value)
        return value

    return sorted(tuple(plain(v) for v in row) for row in rows)


def run_available_now(query: StreamingQuery, timeout_s: int = 120) -> list[dict[str, Any]]:
    """Wait for an availableNow query to finish; its progress reports (raises the query's error if it failed)."""
    finished = query.awaitTermination(timeout_s)
    if not finished:
        query.stop()
        raise AssertionError(f"query did not finish within {timeout_s}s")
    return [dict(p) for p in query.recentProgress]


def wait_for(predicate: Any, timeout_s: float, what: str, interval_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)


def spark_session() -> Iterator[SparkSession]:
    """The one SparkSession of the Spark scenarios (local[2], small shuffles, no UI); stopped at the end."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[test]')")
    from scripts.spark.session import java_missing, local_session

    why = java_missing()
    if why:
        pytest.skip(why)
    session = local_session("kbroker-compat-spark")
    try:
        yield session
    finally:
        session.stop()


def parquet_rows(spark: SparkSession, path: Path) -> list[Any]:
    return list(spark.read.parquet(str(path)).collect()) if path.exists() else []
