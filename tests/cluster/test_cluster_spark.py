"""Spark's Kafka connector on a 3-broker cluster (three kbroker processes, a real ZooKeeper), across the
loss of a partition leader: Spark's sink writes to a topic with replication factor 3 and
min.insync.replicas=2 (its producer: idempotent, acks=all), one broker is killed, a streaming query reads
everything with availableNow into Parquet, the sink writes more while that broker is down, and the same
query resumes from its checkpoint after the broker is back. Every row the sink wrote is read exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from scripts.zookeeper import ZooKeeperServer
from tests.cluster.test_cluster_brokers import Cluster, _brokers_seen, _partitions, wait_until
from tests.compat.spark_support import kafka_stream, parquet_rows, run_available_now, spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(420)

TOPIC, PARTITIONS = "events", 3


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    yield from spark_session()


@pytest.fixture
def cluster(zookeeper: ZooKeeperServer, zk_chroot: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(zookeeper, zk_chroot, tmp_path)
    cluster.configs = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "5000"}
    try:
        for node_id in (1, 2, 3):
            cluster.start(node_id)
        wait_until(lambda: _brokers_seen(cluster, 1) == [1, 2, 3], what="all brokers registered")
        yield cluster
    finally:
        cluster.stop_all()


def write(spark: SparkSession, bootstrap: str, values: list[str]) -> None:
    """Spark's batch sink: one Kafka record per row, keyed by its value, spread over the partitions."""
    frame = spark.createDataFrame([(v, v) for v in values], "key STRING, value STRING")
    (
        frame.repartition(PARTITIONS)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.acks", "all")
        .option("topic", TOPIC)
        .save()
    )


def stream_to_parquet(spark: SparkSession, bootstrap: str, out: Path, checkpoint: Path) -> list[dict[str, Any]]:
    stream = kafka_stream(spark, bootstrap, subscribe=TOPIC, startingOffsets="earliest")
    query = (
        stream.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    return run_available_now(query, timeout_s=180)


def leaders_everywhere(cluster: Cluster, alive: list[int], gone: int) -> bool:
    return all(
        p["error_code"] == 0 and p["leader_id"] not in (gone, -1)
        for n in alive
        for p in _partitions(cluster, n, TOPIC).values()
    )


def test_spark_reads_and_writes_across_a_leader_failover(cluster: Cluster, spark: SparkSession, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=3)])[TOPIC].result(30)
    parts = wait_until(
        lambda: (p := _partitions(cluster, 1, TOPIC)) and all(x["error_code"] == 0 for x in p.values()) and p,
        what="the topic's leaders",
    )
    first = [f"a{i}" for i in range(300)]
    write(spark, cluster.bootstrap(), first)

    victim = parts[0]["leader_id"]
    cluster.brokers[victim].kill()
    survivors = [n for n in (1, 2, 3) if n != victim]
    wait_until(lambda: leaders_everywhere(cluster, survivors, victim), timeout=60, what="new leaders")
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    stream_to_parquet(spark, cluster.bootstrap(victim), out, checkpoint)
    assert sorted(str(r["value"]) for r in parquet_rows(spark, out)) == sorted(first)

    # two replicas of three are still in sync: acks=all writes go on while the broker is down
    second = [f"b{i}" for i in range(200)]
    write(spark, cluster.bootstrap(victim), second)
    cluster.start(victim)
    wait_until(lambda: _brokers_seen(cluster, survivors[0]) == [1, 2, 3], timeout=60, what="the broker back")
    third = [f"c{i}" for i in range(100)]
    write(spark, cluster.bootstrap(), third)

    stream_to_parquet(spark, cluster.bootstrap(), out, checkpoint)
    rows = parquet_rows(spark, out)
    values = [str(r["value"]) for r in rows]
    assert sorted(values) == sorted(first + second + third)  # none lost, none twice
    # offsets are dense and ordered per partition: what one partition holds was read once, in order
    for partition in range(PARTITIONS):
        offsets = sorted(int(r["offset"]) for r in rows if int(r["partition"]) == partition)
        assert offsets == list(range(len(offsets))), (partition, offsets[:10])
