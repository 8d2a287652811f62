"""Run the pipeline end to end: generate events, run the job (availableNow), check both sinks.

    scripts/pipeline/run --bootstrap 127.0.0.1:9092 --events 5000

Exits 0 when the output topic and the Parquet files hold exactly the expected per-minute metrics, 1 otherwise.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scripts.pipeline import job
from scripts.pipeline.aggregates import expected_stats
from scripts.pipeline.check import Report, compare, read_topic
from scripts.pipeline.events import generate_events
from scripts.pipeline.generate import ensure_topic, produce_events, write_events

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class PipelineRun:
    bootstrap: str
    workdir: Path
    events: int = 5000
    rate: float = 0
    span_minutes: int = 10
    start_ms: int | None = None
    lateness_s: int = 20
    seed: int = 7
    partitions: int = 3
    watermark_delay_s: int = 60
    max_offsets_per_trigger: int | None = None
    input_topic: str | None = None
    output_topic: str | None = None


@dataclass
class Outcome:
    kafka: Report
    parquet: Report
    timings: dict[str, float]

    @property
    def ok(self) -> bool:
        return self.kafka.ok and self.parquet.ok


def parquet_output(spark: SparkSession, path: Path) -> list[tuple[bytes | None, bytes | None]]:
    """The Parquet sink's rows in the output topic's (key, value) form."""
    if not path.exists():
        return []
    rows = job._as_kafka_records(spark.read.parquet(str(path))).collect()
    return [(r["key"].encode(), r["value"].encode()) for r in rows]


def run_pipeline(spark: SparkSession, plan: PipelineRun) -> Outcome:
    stamp = time.time_ns() % 10**12
    input_topic = plan.input_topic or f"access-log-{stamp}"
    output_topic = plan.output_topic or f"access-log-minutely-{stamp}"
    start_ms = plan.start_ms if plan.start_ms is not None else int(time.time() * 1000) - plan.span_minutes * 60_000
    events = list(generate_events(plan.events, start_ms, plan.span_minutes * 60, plan.lateness_s, plan.seed))
    timings = {}

    began = time.monotonic()
    write_events(plan.workdir / "events.jsonl", events)
    ensure_topic(plan.bootstrap, input_topic, plan.partitions)
    ensure_topic(plan.bootstrap, output_topic, 2)
    produce_events(plan.bootstrap, input_topic, events, plan.rate)
    timings["generate"] = time.monotonic() - began

    began = time.monotonic()
    config = job.JobConfig(
        bootstrap=plan.bootstrap,
        input_topic=input_topic,
        output_topic=output_topic,
        parquet=plan.workdir / "parquet",
        checkpoint=plan.workdir / "checkpoint",
        watermark_delay_s=plan.watermark_delay_s,
        available_now=True,
        max_offsets_per_trigger=plan.max_offsets_per_trigger,
    )
    job.run(spark, config)
    timings["job"] = time.monotonic() - began

    began = time.monotonic()
    expected = expected_stats(events, plan.watermark_delay_s)
    outcome = Outcome(
        kafka=compare(expected, read_topic(plan.bootstrap, output_topic)),
        parquet=compare(expected, parquet_output(spark, config.parquet)),
        timings=timings,
    )
    timings["check"] = time.monotonic() - began
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=0, help="events per second to produce (0: unthrottled)")
    parser.add_argument("--span-minutes", type=int, default=10, help="event time the events cover")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the input topic")
    parser.add_argument("--watermark-delay", type=int, default=60, help="seconds")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument("--input-topic", help="default: access-log-<unique>")
    parser.add_argument("--output-topic", help="default: access-log-minutely-<unique>")
    parser.add_argument("--workdir", type=Path, help="keep events, Parquet and checkpoints here")
    args = parser.parse_args(argv)

    from scripts.spark.session import local_session

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kbroker-pipeline-"))
    workdir.mkdir(parents=True, exist_ok=True)
    plan = PipelineRun(
        bootstrap=args.bootstrap,
        workdir=workdir,
        events=args.events,
        rate=args.rate,
        span_minutes=args.span_minutes,
        seed=args.seed,
        partitions=args.partitions,
        watermark_delay_s=args.watermark_delay,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        input_topic=args.input_topic,
        output_topic=args.output_topic,
    )
    began = time.monotonic()
    spark = local_session("kbroker-pipeline")
    try:
        outcome = run_pipeline(spark, plan)
    finally:
        spark.stop()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print("output topic:", outcome.kafka.summary())
    print("parquet:     ", outcome.parquet.summary())
    steps = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in outcome.timings.items())
    print(f"timings: {steps}; total {time.monotonic() - began:.1f}s")
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
