"""Spark's own Kafka connector (spark-sql-kafka-0-10, unmodified, from Maven Central) against the broker.

One local SparkSession serves the module. Each scenario first checks that the broker advertises the APIs the
connector needs for it (and skips with the missing names otherwise), then starts Spark.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.compat.clients.adapter import Record
from tests.compat.clients.kafka_python_client import KafkaPythonClient
from tests.compat.spark_support import (
    DELETE_RECORDS,
    LEGACY_DRIVER,
    READ_COMMITTED,
    SETUP,
    SPARK_READ,
    SPARK_SINK,
    consume_all,
    create_topic,
    group_ids,
    kafka_source,
    kafka_stream,
    parquet_rows,
    produce,
    require,
    rows_as_tuples,
    run_available_now,
    spark_session,
    unique_topic,
    wait_for,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

KAFKA_COLUMNS = (
    "topic",
    "partition",
    "offset",
    "key",
    "value",
    "unix_millis(timestamp) AS timestamp",
    "timestampType",
    "headers",
)
BASE_TS = 1_700_000_000_000

# A scenario takes seconds; a connector stuck on a broker answer should not hold the suite for the default 300 s.
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def spark_module() -> Iterator[SparkSession]:
    yield from spark_session()


def get_spark(request: pytest.FixtureRequest) -> SparkSession:
    """The module's SparkSession, started only once a scenario has passed its API checks."""
    session: SparkSession = request.getfixturevalue("spark_module")
    return session


# -- 1. batch reads -------------------------------------------------------------------------------------------


def _batch_records() -> list[Record]:
    """Six records per partition of three; CreateTime p*100 + i*1000 after BASE_TS; varied keys/values/headers."""
    records = []
    for partition in range(3):
        for i in range(6):
            headers = (("h", f"{partition}{i}".encode()), ("dup", b"a"), ("dup", b"b")) if i % 2 == 0 else ()
            records.append(
                Record(
                    key=None if i == 1 else f"k{partition}-{i}".encode(),
                    value=None if i == 5 else f"v{partition}-{i}".encode(),
                    headers=headers,
                    timestamp=BASE_TS + partition * 100 + i * 1000,
                    partition=partition,
                )
            )
    return records


def _expected(topic: str, records: list[Record], offsets: list[tuple[int, int]], keep: Any) -> list[tuple[Any, ...]]:
    """The Kafka source's rows for the produced records that ``keep(partition, offset)`` selects."""
    out = []
    for record, (partition, offset) in zip(records, offsets, strict=True):
        if keep(partition, offset):
            headers = tuple(record.headers) if record.headers else None
            out.append((topic, partition, offset, record.key, record.value, record.timestamp, 0, headers))
    return sorted(out, key=lambda row: (row[1], row[2]))


def _read(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> list[tuple[Any, ...]]:
    frame = kafka_source(spark, bootstrap, subscribe=topic, includeHeaders="true", **options)
    rows = rows_as_tuples(frame.selectExpr(*KAFKA_COLUMNS).collect())
    return sorted(rows, key=lambda row: (row[1], row[2]))


def test_batch_read_json_offsets(bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any) -> None:
    require(advertised, SETUP, SPARK_READ)
    topic = create_topic(bootstrap, "batch-offsets", partitions=3)
    records = _batch_records()
    offsets = produce(bootstrap, topic, records)
    spark = get_spark(request)
    starting = {topic: {"0": 1, "1": -2, "2": 4}}
    ending = {topic: {"0": 4, "1": -1, "2": 6}}
    rows = _read(spark, bootstrap, topic, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    bounds = {0: (1, 4), 1: (0, 6), 2: (4, 6)}
    expected = _expected(topic, records, offsets, lambda p, o: bounds[p][0] <= o < bounds[p][1])
    assert rows == expected


def test_batch_read_by_timestamp(bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any) -> None:
    require(advertised, SETUP, SPARK_READ)
    topic = create_topic(bootstrap, "batch-timestamps", partitions=3)
    records = _batch_records()
    offsets = produce(bootstrap, topic, records)
    spark = get_spark(request)
    # p0: first CreateTime >= +2500 is offset 3; p1: +2100 matches offset 2 exactly; p2: no record is that late,
    # so ListOffsets answers -1 and the "latest" strategy starts p2 at its end (no rows).
    starting = {topic: {"0": BASE_TS + 2500, "1": BASE_TS + 2100, "2": BASE_TS + 99_999}}
    rows = _read(
        spark,
        bootstrap,
        topic,
        startingOffsetsByTimestamp=json.dumps(starting),
        startingOffsetsByTimestampStrategy="latest",
    )
    assert rows == _expected(topic, records, offsets, lambda p, o: o >= {0: 3, 1: 2, 2: 6}[p])

    # Ending by timestamp is exclusive: p0 ends before +4500 (offset 5), p1 before +3100 (offset 3); p2 has no
    # match and reads to its end.
    starting = {topic: {"0": BASE_TS + 2500, "1": BASE_TS + 2100, "2": BASE_TS + 3200}}
    ending = {topic: {"0": BASE_TS + 4500, "1": BASE_TS + 3100, "2": BASE_TS + 99_999}}
    rows = _read(
        spark,
        bootstrap,
        topic,
        startingOffsetsByTimestamp=json.dumps(starting),
        endingOffsetsByTimestamp=json.dumps(ending),
    )
    bounds = {0: (3, 5), 1: (2, 3), 2: (3, 6)}
    assert rows == _expected(topic, records, offsets, lambda p, o: bounds[p][0] <= o < bounds[p][1])

    # The default strategy refuses a timestamp no record reaches.
    starting = {topic: {"0": BASE_TS, "1": BASE_TS, "2": BASE_TS + 99_999}}
    from pyspark.errors import IllegalArgumentException

    with pytest.raises(IllegalArgumentException, match="No offset matched"):
        _read(spark, bootstrap, topic, startingOffsetsByTimestamp=json.dumps(starting))


def test_batch_read_legacy_offset_fetching(
    bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any
) -> None:
    """The deprecated driver path: a KafkaConsumer in a consumer group reads the offsets instead of the Admin."""
    require(advertised, SETUP, SPARK_READ, LEGACY_DRIVER)
    topic = create_topic(bootstrap, "batch-legacy", partitions=3)
    records = _batch_records()
    offsets = produce(bootstrap, topic, records)
    spark = get_spark(request)
    groups_before = group_ids(bootstrap)
    spark.conf.set("spark.sql.streaming.kafka.useDeprecatedOffsetFetching", "true")
    try:
        rows = _read(spark, bootstrap, topic, startingOffsets="earliest", endingOffsets="latest")
        assert rows == _expected(topic, records, offsets, lambda p, o: True)
        starting = {topic: {"0": BASE_TS + 2500, "1": BASE_TS + 2100, "2": BASE_TS + 5200}}
        rows = _read(spark, bootstrap, topic, startingOffsetsByTimestamp=json.dumps(starting))
        assert rows == _expected(topic, records, offsets, lambda p, o: o >= {0: 3, 1: 2, 2: 5}[p])
        drivers = [g for g in group_ids(bootstrap) - groups_before if g.startswith("spark-kafka-relation-")]
        assert len(drivers) == 2 and all(g.endswith("-driver-0") for g in drivers), drivers
    finally:
        spark.conf.unset("spark.sql.streaming.kafka.useDeprecatedOffsetFetching")


# -- 2. streaming, availableNow, restart from the checkpoint ------------------------------------------------


def _to_parquet(frame: Any, out: Path, checkpoint: Path) -> Any:
    return (
        frame.selectExpr("partition", "offset", "CAST(value AS STRING) AS value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )


def _batch_sizes(progress: list[dict[str, Any]]) -> list[int]:
    return [int(p["numInputRows"]) for p in progress if int(p["numInputRows"]) > 0]


def _values(rows: list[Any]) -> list[tuple[int, int, str]]:
    return sorted((int(r["partition"]), int(r["offset"]), str(r["value"])) for r in rows)


def test_stream_available_now_restart(
    bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any, tmp_path: Path
) -> None:
    require(advertised, SETUP, SPARK_READ)
    topic = create_topic(bootstrap, "stream-restart", partitions=2)
    first = [Record(None, f"a{i}".encode(), partition=i % 2) for i in range(30)]
    produce(bootstrap, topic, first)
    spark = get_spark(request)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    stream = kafka_stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="7")

    sizes = _batch_sizes(run_available_now(_to_parquet(stream, out, checkpoint)))
    assert sum(sizes) == 30 and max(sizes) <= 7 and len(sizes) >= 5, sizes
    expected = sorted((i % 2, i // 2, f"a{i}") for i in range(30))
    assert _values(parquet_rows(spark, out)) == expected

    second = [Record(None, f"b{i}".encode(), partition=i % 2) for i in range(20)]
    produce(bootstrap, topic, second)
    sizes = _batch_sizes(run_available_now(_to_parquet(stream, out, checkpoint)))
    assert sum(sizes) == 20 and max(sizes) <= 7, sizes
    expected += [(i % 2, 15 + i // 2, f"b{i}") for i in range(20)]
    assert _values(parquet_rows(spark, out)) == sorted(expected)


# -- 3. subscribePattern sees a new topic ---------------------------------------------------------------------


def test_subscribe_pattern_new_topic(bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any) -> None:
    require(advertised, SETUP, SPARK_READ)
    prefix = unique_topic("pattern")
    admin = KafkaPythonClient()
    admin.create_topic(bootstrap, f"{prefix}-a", 1, {})
    produce(bootstrap, f"{prefix}-a", [Record(None, f"a{i}".encode()) for i in range(3)])
    spark = get_spark(request)
    name = prefix.replace("-", "_")
    query = (
        kafka_stream(spark, bootstrap, subscribePattern=f"{prefix}-.*", startingOffsets="earliest")
        .selectExpr("topic", "CAST(value AS STRING) AS value")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(processingTime="1 second")
        .start()
    )
    try:

        def seen() -> set[tuple[str, str]]:
            if query.exception() is not None:
                raise AssertionError(f"query failed: {query.exception()}")
            return {(r["topic"], r["value"]) for r in spark.sql(f"SELECT * FROM {name}").collect()}

        wait_for(lambda: len(seen()) >= 3, 60, "the first topic's records")
        admin.create_topic(bootstrap, f"{prefix}-b", 2, {})
        produce(bootstrap, f"{prefix}-b", [Record(None, f"b{i}".encode(), partition=i % 2) for i in range(4)])
        wait_for(lambda: len(seen()) >= 7, 90, "the new topic's records")
        expected = {(f"{prefix}-a", f"a{i}") for i in range(3)} | {(f"{prefix}-b", f"b{i}") for i in range(4)}
        assert seen() == expected
        assert spark.sql(f"SELECT count(*) AS n FROM {name}").collect()[0]["n"] == 7
    finally:
        query.stop()


# -- 4. the Kafka sink --------------------------------------------------------------------------------------------


def test_sink_columns(bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any) -> None:
    require(advertised, SETUP, SPARK_READ, SPARK_SINK)
    topics = [create_topic(bootstrap, "sink-a", partitions=3), create_topic(bootstrap, "sink-b", partitions=2)]
    spark = get_spark(request)
    rows = []
    for i in range(24):
        topic = topics[i % 2]
        partition = i % (3 if topic == topics[0] else 2)
        headers = [("n", str(i).encode()), ("n", None)] if i % 3 == 0 else []
        key = None if i % 5 == 0 else f"key-{i}".encode()
        rows.append((topic, partition, key, f"value-{i}".encode(), headers))
    schema = "topic STRING, partition INT, key BINARY, value BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    frame = spark.createDataFrame(rows, schema).coalesce(1)  # one writer task: Kafka order = row order
    frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save()

    for topic, partitions in zip(topics, (3, 2), strict=True):
        mine = [r for r in rows if r[0] == topic]
        got = consume_all(bootstrap, topic, range(partitions), len(mine)).records
        assert len(got) == len(mine)
        for partition in range(partitions):
            wanted = [(r[2], r[3], tuple(r[4])) for r in mine if r[1] == partition]
            seen = sorted((c for c in got if c.partition == partition), key=lambda c: c.offset)
            assert [c.offset for c in seen] == list(range(len(wanted)))
            assert [(c.key, c.value, c.headers) for c in seen] == wanted


# -- 5. read_committed ------------------------------------------------------------------------------------------


def _transaction(producer: Any, topic: str, prefix: str, commit: bool | None) -> None:
    """Four records in one transaction; commit, abort, or (None) leave it open."""
    producer.begin_transaction()
    for i in range(4):
        producer.produce(topic, value=f"{prefix}-{i}".encode(), partition=0)
    producer.flush(30)
    if commit is True:
        producer.commit_transaction(30)
    elif commit is False:
        producer.abort_transaction(30)


def test_read_committed(bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any) -> None:
    require(advertised, SETUP, SPARK_READ, READ_COMMITTED)
    from confluent_kafka import Producer

    topic = create_topic(bootstrap, "read-committed")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-txn", "linger.ms": 0})
    producer.init_transactions(30)
    _transaction(producer, topic, "c1", commit=True)
    _transaction(producer, topic, "x", commit=False)
    _transaction(producer, topic, "c2", commit=True)
    spark = get_spark(request)

    def values(isolation: str) -> list[str]:
        frame = kafka_source(
            spark,
            bootstrap,
            subscribe=topic,
            startingOffsets="earliest",
            endingOffsets="latest",
            **{"kafka.isolation.level": isolation},
        )
        rows = frame.selectExpr("offset", "CAST(value AS STRING) AS value").orderBy("offset").collect()
        return [r["value"] for r in rows]

    def batch(prefix: str) -> list[str]:
        return [f"{prefix}-{i}" for i in range(4)]

    assert values("read_committed") == batch("c1") + batch("c2")
    assert values("read_uncommitted") == batch("c1") + batch("x") + batch("c2")

    # An open transaction holds the last stable offset: "latest" for read_committed stops before it.
    _transaction(producer, topic, "open", commit=None)
    assert values("read_committed") == batch("c1") + batch("c2")
    assert values("read_uncommitted") == batch("c1") + batch("x") + batch("c2") + batch("open")
    producer.commit_transaction(30)
    assert values("read_committed") == batch("c1") + batch("c2") + batch("open")


# -- 6. failOnDataLoss after DeleteRecords -------------------------------------------------------------------------


def test_fail_on_data_loss(
    bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any, tmp_path: Path
) -> None:
    require(advertised, SETUP, SPARK_READ, DELETE_RECORDS)
    topic = create_topic(bootstrap, "data-loss")
    produce(bootstrap, topic, [Record(None, f"v{i}".encode()) for i in range(10)])
    spark = get_spark(request)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run(fail_on_data_loss: str) -> list[dict[str, Any]]:
        stream = kafka_stream(
            spark, bootstrap, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss
        )
        return run_available_now(_to_parquet(stream, out, checkpoint))

    run("true")
    assert _values(parquet_rows(spark, out)) == [(0, i, f"v{i}") for i in range(10)]

    produce(bootstrap, topic, [Record(None, f"v{i}".encode()) for i in range(10, 20)])
    assert KafkaPythonClient().delete_records(bootstrap, topic, 0, 15) == 15
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException, match="Some data may have been lost"):
        run("true")
    assert _values(parquet_rows(spark, out)) == [(0, i, f"v{i}") for i in range(10)]

    run("false")
    assert _values(parquet_rows(spark, out)) == [(0, i, f"v{i}") for i in (*range(10), *range(15, 20))]


# -- 7. the pipeline end to end ---------------------------------------------------------------------------------


def test_pipeline_end_to_end(
    bootstrap: str, advertised: dict[int, tuple[int, int]], request: Any, tmp_path: Path
) -> None:
    require(advertised, SETUP, SPARK_READ, SPARK_SINK)
    from scripts.pipeline.run import PipelineRun, run_pipeline

    spark = get_spark(request)
    now_ms = int(time.time() * 1000)
    start_ms = now_ms - now_ms % 60_000 - 6 * 60_000  # six whole minutes of event time, ending about now
    plan = PipelineRun(bootstrap=bootstrap, workdir=tmp_path, events=1500, span_minutes=6, start_ms=start_ms, seed=11)
    outcome = run_pipeline(spark, plan)
    assert outcome.kafka.expected >= 20 and outcome.kafka.still_open > 0, outcome.kafka.summary()
    assert outcome.kafka.ok, outcome.kafka.summary()
    assert outcome.parquet.ok, outcome.parquet.summary()


def test_pipeline_check_finds_differences() -> None:
    """The checker itself: nearest-rank percentiles, closed windows only, and every kind of difference reported."""
    from scripts.pipeline.aggregates import expected_stats
    from scripts.pipeline.check import compare
    from scripts.pipeline.events import AccessEvent

    base = 1_790_000_000_000 - 1_790_000_000_000 % 60_000
    events = [AccessEvent(base + i * 1000, "h", "/a", 500 if i < 3 else 200, 10, i + 1) for i in range(10)]
    events += [AccessEvent(base + 60_000 + i, "h", "/b", 200, 1, 1) for i in range(2)]
    events.append(AccessEvent(base + 180_000, "h", "/a", 200, 1, 1))  # watermark base+120s closes two windows
    expected = expected_stats(events, watermark_delay_s=60)
    assert expected.still_open == 1 and sorted(s.path for s in expected.closed.values()) == ["/a", "/b"]
    first = next(s for s in expected.closed.values() if s.path == "/a")
    assert (first.requests, first.errors, first.error_rate, first.bytes) == (10, 3, 0.3, 100)
    assert (first.latency_p50, first.latency_p95, first.latency_p99) == (5, 10, 10)

    def record(stats: Any, **changes: Any) -> tuple[bytes, bytes]:
        return stats.key.encode(), json.dumps({**stats.__dict__, **changes}).encode()

    second = next(s for s in expected.closed.values() if s.path == "/b")
    assert compare(expected, [record(first), record(second)]).ok
    report = compare(expected, [record(first, requests=9), record(first), (b"x|/c", b"{}")])
    assert not report.ok
    assert report.problems == [
        f"window {first.key}: requests=9, expected 10",
        f"window {first.key} written more than once",
        "unexpected window x|/c",
        f"missing window {second.key}",
    ]
