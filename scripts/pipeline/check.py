"""Compare the job's output topic with aggregates computed directly from the generated input.

    python -m scripts.pipeline.check --bootstrap 127.0.0.1:9092 --output-topic access-log-minutely \\
        --events-file events.jsonl            # or --input-topic access-log to read the input back

Exits 1 when a closed window is missing, unexpected, duplicated or has different metrics.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from scripts.pipeline.aggregates import QUANTILES, Expected, MinuteStats, expected_stats, percentile_choices
from scripts.pipeline.events import AccessEvent


@dataclass
class Report:
    expected: int = 0
    matched: int = 0
    still_open: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.matched == self.expected

    def summary(self) -> str:
        verdict = "OK" if self.ok else f"MISMATCH ({len(self.problems)} problems)"
        lines = [
            f"{verdict}: {self.matched}/{self.expected} closed windows match; "
            f"{self.still_open} windows still open (after the final watermark)"
        ]
        return "\n".join(lines + [f"  {p}" for p in self.problems[:50]])


def read_topic(bootstrap: str, topic: str, timeout_s: float = 60) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) of ``topic`` from the start to its current end, partition by partition."""
    from kbroker.client.admin import EARLIEST, LATEST, list_offsets
    from kbroker.client.cluster import Cluster
    from kbroker.client.connection import KafkaError
    from kbroker.client.consume import Consumer

    with Cluster(bootstrap, client_id="pipeline-check") as cluster:
        try:
            info = cluster.topic(topic)
        except KafkaError:
            raise LookupError(f"topic {topic} does not exist") from None
        partitions = sorted(info.partitions)
        ends = list_offsets(cluster, info, partitions, LATEST)
        consumer = Consumer(cluster, info, list_offsets(cluster, info, partitions, EARLIEST), reset=EARLIEST)
        out: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.positions[p] < ends[p] for p in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {topic} to its end within {timeout_s}s")
            out.extend((c.record.key, c.record.value) for c in consumer.poll())
        return out


def _differences(want: MinuteStats, got: dict[str, object], latencies: list[int]) -> list[str]:
    out = []
    for name in (f.name for f in fields(MinuteStats)):
        value = got.get(name)
        if name.startswith("latency_p"):
            quantile = QUANTILES[[f"latency_p{round(q * 100)}" for q in QUANTILES].index(name)]
            allowed = percentile_choices(latencies, quantile)
            if value not in allowed:
                out.append(f"{name}={value}, expected one of {sorted(allowed)}")
        elif name == "error_rate":
            if not isinstance(value, int | float) or abs(value - want.error_rate) > 1e-9:
                out.append(f"error_rate={value}, expected {want.error_rate}")
        elif value != getattr(want, name):
            out.append(f"{name}={value!r}, expected {getattr(want, name)!r}")
    return out


def compare(expected: Expected, output: Iterable[tuple[bytes | None, bytes | None]]) -> Report:
    """Each closed window exactly once with the expected metrics; nothing else."""
    report = Report(expected=len(expected.closed), still_open=expected.still_open)
    seen: set[str] = set()
    for raw_key, raw_value in output:
        key = raw_key.decode() if raw_key is not None else "<null>"
        want = expected.closed.get(key)
        if want is None:
            report.problems.append(f"unexpected window {key}")
            continue
        if key in seen:
            report.problems.append(f"window {key} written more than once")
            continue
        seen.add(key)
        got = json.loads(raw_value or b"null") or {}
        diffs = _differences(want, got, expected.latencies[key])
        if diffs:
            report.problems.append(f"window {key}: {'; '.join(diffs)}")
        else:
            report.matched += 1
    report.problems.extend(f"missing window {key}" for key in sorted(set(expected.closed) - seen))
    return report


def check(bootstrap: str, output_topic: str, events: list[AccessEvent], watermark_delay_s: int) -> Report:
    return compare(expected_stats(events, watermark_delay_s), read_topic(bootstrap, output_topic))


def main(argv: list[str] | None = None) -> int:
    from scripts.pipeline.generate import read_events

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--output-topic", default="access-log-minutely")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--events-file", type=Path, help="the generator's --events-file")
    source.add_argument("--input-topic", help="read the input events back from this topic instead")
    parser.add_argument("--watermark-delay", type=int, default=60, help="the job's --watermark-delay")
    args = parser.parse_args(argv)
    if args.events_file:
        events = read_events(args.events_file)
    else:
        events = [AccessEvent.from_json(value) for _, value in read_topic(args.bootstrap, args.input_topic) if value]
    report = check(args.bootstrap, args.output_topic, events, args.watermark_delay)
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
