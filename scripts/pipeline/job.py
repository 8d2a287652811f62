"""The Structured Streaming job: access-log JSON from Kafka -> per-minute metrics per path -> Kafka and Parquet.

Two queries share one plan: one writes each closed window to the output topic (key ``<window start>|<path>``,
JSON value), the other appends the same rows to Parquet files. Each has its own checkpoint, so a restart picks
up where it stopped. Run it alone with::

    python -m scripts.pipeline.job --bootstrap 127.0.0.1:9092 --input-topic access-log \\
        --output-topic access-log-minutely --parquet out/parquet --checkpoint out/checkpoint [--available-now]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scripts.pipeline.aggregates import ACCURACY, QUANTILES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

EVENT_SCHEMA = "timestamp TIMESTAMP, host STRING, path STRING, status INT, bytes LONG, latency_ms INT"
ISO_MILLIS = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"


@dataclass(frozen=True)
class JobConfig:
    bootstrap: str
    input_topic: str
    output_topic: str
    parquet: Path
    checkpoint: Path
    watermark_delay_s: int = 60
    available_now: bool = True
    processing_time: str = "10 seconds"
    max_offsets_per_trigger: int | None = None
    starting_offsets: str = "earliest"


def minute_stats(spark: SparkSession, config: JobConfig) -> DataFrame:
    """The streaming DataFrame of closed one-minute windows per path."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", config.bootstrap)
        .option("subscribe", config.input_topic)
        .option("startingOffsets", config.starting_offsets)
    )
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(config.max_offsets_per_trigger))
    events = reader.load().select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e")).select("e.*")
    latency_quantiles = F.percentile_approx("latency_ms", list(QUANTILES), ACCURACY)
    stats = (
        events.where(F.col("timestamp").isNotNull())
        .withWatermark("timestamp", f"{config.watermark_delay_s} seconds")
        .groupBy(F.window("timestamp", "1 minute"), F.col("path"))
        .agg(
            F.count(F.lit(1)).alias("requests"),
            F.sum(F.when(F.col("status") >= 500, 1).otherwise(0)).alias("errors"),
            F.sum("bytes").alias("bytes"),
            latency_quantiles.alias("latency"),
        )
    )
    return stats.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "path",
        "requests",
        "errors",
        (F.col("errors") / F.col("requests")).alias("error_rate"),
        "bytes",
        *(F.col("latency")[i].alias(f"latency_p{round(q * 100)}") for i, q in enumerate(QUANTILES)),
    )


def _as_kafka_records(stats: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    start = F.date_format("window_start", ISO_MILLIS)
    value_fields = [c for c in stats.columns if not c.startswith("window_")]
    value = F.to_json(
        F.struct(
            start.alias("window_start"),
            F.date_format("window_end", ISO_MILLIS).alias("window_end"),
            *value_fields,
        )
    )
    return stats.select(F.concat_ws("|", start, F.col("path")).alias("key"), value.alias("value"))


def _trigger(writer: Any, config: JobConfig) -> Any:
    if config.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=config.processing_time)


def start_queries(spark: SparkSession, config: JobConfig) -> list[StreamingQuery]:
    """Start the Kafka-sink and Parquet-sink queries (append mode: each window once, after it closes)."""
    stats = minute_stats(spark, config)
    to_kafka = (
        _as_kafka_records(stats)
        .writeStream.format("kafka")
        .queryName(f"minutely-kafka-{config.output_topic}")
        .option("kafka.bootstrap.servers", config.bootstrap)
        .option("topic", config.output_topic)
        .option("checkpointLocation", str(config.checkpoint / "kafka"))
        .outputMode("append")
    )
    to_parquet = (
        stats.writeStream.format("parquet")
        .queryName(f"minutely-parquet-{config.output_topic}")
        .option("path", str(config.parquet))
        .option("checkpointLocation", str(config.checkpoint / "parquet"))
        .outputMode("append")
    )
    return [_trigger(to_kafka, config).start(), _trigger(to_parquet, config).start()]


def run(spark: SparkSession, config: JobConfig, timeout_s: int = 600) -> None:
    """Run both queries; with availableNow, until the input present at the start is processed."""
    queries = start_queries(spark, config)
    try:
        for query in queries:
            if not query.awaitTermination(timeout_s) and config.available_now:
                raise TimeoutError(f"query {query.name} did not finish within {timeout_s}s")
    finally:
        for query in queries:
            query.stop()


def parse_args(argv: list[str] | None) -> JobConfig:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input-topic", default="access-log")
    parser.add_argument("--output-topic", default="access-log-minutely")
    parser.add_argument("--parquet", type=Path, required=True, help="directory of the Parquet output")
    parser.add_argument("--checkpoint", type=Path, required=True, help="checkpoint directory (one per pipeline)")
    parser.add_argument("--watermark-delay", type=int, default=60, help="seconds of lateness tolerated")
    parser.add_argument("--available-now", action="store_true", help="process what is there, then stop")
    parser.add_argument("--processing-time", default="10 seconds", help="trigger interval when running on")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    args = parser.parse_args(argv)
    return JobConfig(
        bootstrap=args.bootstrap,
        input_topic=args.input_topic,
        output_topic=args.output_topic,
        parquet=args.parquet,
        checkpoint=args.checkpoint,
        watermark_delay_s=args.watermark_delay,
        available_now=args.available_now,
        processing_time=args.processing_time,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
    )


def main(argv: list[str] | None = None) -> int:
    from scripts.spark.session import local_session

    config = parse_args(argv)
    spark = local_session("kbroker-pipeline")
    try:
        if config.available_now:
            run(spark, config)
        else:
            for query in start_queries(spark, config):
                print(f"started {query.name}", flush=True)
            spark.streams.awaitAnyTermination()
    except KeyboardInterrupt:
        pass
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
