"""Produce web-access-log events to a Kafka topic, keyed by host, at a configurable rate.

    python -m scripts.pipeline.generate --bootstrap 127.0.0.1:9092 --topic access-log --events 5000 \\
        --rate 1000 --events-file events.jsonl
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scripts.pipeline.events import AccessEvent, generate_events


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """Create ``topic`` unless it exists (kbroker's own client)."""
    from kbroker.client.admin import create_topic
    from kbroker.client.cluster import Cluster
    from kbroker.client.connection import KafkaError
    from protocol.errors import ErrorCode

    with Cluster(bootstrap, client_id="pipeline-setup") as cluster:
        try:
            create_topic(cluster, topic, partitions, 1, {})
        except KafkaError as error:
            if error.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise


def produce_events(bootstrap: str, topic: str, events: Iterable[AccessEvent], rate: float = 0) -> int:
    """Send each event (key = host, CreateTime = event time) with acks=all; ``rate`` events/s, 0 = unthrottled.

    kbroker's own client writes batches of up to CHUNK events (Kafka's partitioner: murmur2 of the key); a
    refused batch raises."""
    from kbroker.client.cluster import Cluster
    from kbroker.client.produce import Producer
    from protocol.record_builder import SimpleRecord

    chunk = max(1, min(CHUNK, int(rate / 10) or 1)) if rate > 0 else CHUNK
    started = time.monotonic()
    sent = 0
    with Cluster(bootstrap, client_id="pipeline-generator") as cluster:
        producer = Producer(cluster, topic, acks=-1)
        pending: list[SimpleRecord] = []
        for event in events:
            pending.append(SimpleRecord(key=event.host.encode(), value=event.to_json(), timestamp=event.timestamp))
            if len(pending) >= chunk:
                sent += _send(producer, pending, started, sent, rate)
                pending = []
        if pending:
            sent += _send(producer, pending, started, sent, rate)
    return sent


CHUNK = 500


def _send(producer: Any, records: list[Any], started: float, sent: int, rate: float) -> int:
    if rate > 0:
        lag = started + sent / rate - time.monotonic()
        if lag > 0:
            time.sleep(lag)
    producer.send(records)
    return len(records)


def write_events(path: Path, events: Iterable[AccessEvent]) -> None:
    with path.open("wb") as out:
        for event in events:
            out.write(event.to_json() + b"\n")


def read_events(path: Path) -> list[AccessEvent]:
    with path.open("rb") as lines:
        return [AccessEvent.from_json(line) for line in lines if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="access-log")
    parser.add_argument("--partitions", type=int, default=3, help="partitions if the topic must be created")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=0, help="events per second (0: as fast as the broker takes)")
    parser.add_argument("--span-minutes", type=int, default=10, help="event time the events cover")
    parser.add_argument("--start-ms", type=int, default=None, help="event time of the first event (default: span ago)")
    parser.add_argument("--lateness", type=int, default=20, help="max seconds an event is out of order")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--events-file", type=Path, help="also write the events here, one JSON per line")
    args = parser.parse_args(argv)
    start_ms = args.start_ms if args.start_ms is not None else int(time.time() * 1000) - args.span_minutes * 60_000
    events = list(generate_events(args.events, start_ms, args.span_minutes * 60, args.lateness, args.seed))
    if args.events_file:
        write_events(args.events_file, events)
    ensure_topic(args.bootstrap, args.topic, args.partitions)
    started = time.monotonic()
    sent = produce_events(args.bootstrap, args.topic, events, args.rate)
    print(f"produced {sent} events to {args.topic} in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
