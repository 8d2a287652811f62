#!/usr/bin/env python3
"""Produce and fetch latency while the log cleaner works (not a test).

1. A kbroker with the cleaner off gets a compacted topic full of updates (--mb MiB over
   --keys keys, 1 MiB segments); a probe loop then measures, for --seconds, the latency of
   one-record produces (acks=1, the ack round trip) and of fetching that record back (a
   consumer positioned at the end: produce ack -> record received).
2. The same data directory restarts with the cleaner on (backoff 100 ms, no I/O limit unless
   --io-limit): the probe loop runs again while the first cleaning round works, which is told
   by the broker's `log_cleaned` event and the `.cleaned` files in the partition directory.

    .venv/bin/python scripts/bench/cleaner.py [--mb 40] [--keys 2000] [--seconds 5] [--io-limit BYTES]
"""

from __future__ import annotations

import argparse
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parent.parent.parent
TOPIC = "compacted"
PROBE = "probe"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(data_dir: Path, port: int, log_path: Path, *settings: str) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir)]
    for setting in settings:
        args += ["--config", setting]
    with open(log_path, "ab") as out:
        process = subprocess.Popen(args, stdout=out, stderr=out, cwd=REPO)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.05)
    raise TimeoutError("kbroker did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(60)


def fill(bootstrap: str, mb: int, keys: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"cleanup.policy": "compact", "segment.bytes": str(1 << 20)}
    for future in admin.create_topics([NewTopic(TOPIC, 1, 1, config=configs), NewTopic(PROBE, 1, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 256 * 1024})
    value = b"v" * 90
    for i in range(mb * 1024 * 1024 // 110):
        while True:
            try:
                producer.produce(TOPIC, key=b"key-%06d" % (i % keys), value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def probe(bootstrap: str, seconds: float, until: object = None) -> tuple[list[float], list[float]]:
    """(produce ack latencies, produce-to-fetch latencies) in ms."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "probe", "fetch.wait.max.ms": 10, "fetch.min.bytes": 1}
    )
    _, high = consumer.get_watermark_offsets(TopicPartition(PROBE, 0), timeout=10)
    consumer.assign([TopicPartition(PROBE, 0, high)])
    acks: list[float] = []
    round_trips: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (until is None or not until()):  # type: ignore[operator]
        started = time.perf_counter()
        producer.produce(PROBE, value=b"probe", partition=0)
        producer.flush(10)
        acks.append((time.perf_counter() - started) * 1000)
        while True:
            message = consumer.poll(5)
            if message is not None and not message.error():
                break
        round_trips.append((time.perf_counter() - started) * 1000)
    consumer.close()
    return acks, round_trips


def summary(name: str, samples: list[float]) -> str:
    if not samples:
        return f"{name}: no samples"
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"{name}: n={len(samples)} p50={statistics.median(samples):.2f} ms p99={p99:.2f} ms max={ordered[-1]:.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=40)
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--io-limit", type=int, default=None, help="log.cleaner.io.max.bytes.per.second")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cleaner-") as tmp:
        data_dir, log_path, port = Path(tmp) / "data", Path(tmp) / "kbroker.log", free_port()
        bootstrap = f"127.0.0.1:{port}"
        process = start(data_dir, port, log_path, "log.cleaner.enable=false")
        fill(bootstrap, options.mb, options.keys)
        baseline = probe(bootstrap, options.seconds)
        stop(process)
        settings = ["log.cleaner.backoff.ms=100"]
        if options.io_limit:
            settings.append(f"log.cleaner.io.max.bytes.per.second={options.io_limit}")
        partition_dir = data_dir / f"{TOPIC}-0"
        size = sum(p.stat().st_size for p in partition_dir.glob("*.log"))
        process = start(data_dir, port, log_path, *settings)
        started = time.monotonic()
        while not any(p.name.endswith(".cleaned") for p in partition_dir.iterdir()):
            if time.monotonic() - started > 60:
                raise TimeoutError("no cleaning round started")
            time.sleep(0.01)
        during = probe(bootstrap, 120, until=lambda: "log_cleaned" in log_path.read_text())
        round_s = time.monotonic() - started
        stop(process)
        cleaned = [line for line in log_path.read_text().splitlines() if "log_cleaned" in line]
        print(f"log: {size / 1e6:.1f} MB in {TOPIC}-0, {options.keys} keys; cleaner I/O limit: {options.io_limit}")
        print(summary("produce ack, cleaner off", baseline[0]))
        print(summary("produce->fetch, cleaner off", baseline[1]))
        print(summary("produce ack, during the round", during[0]))
        print(summary("produce->fetch, during the round", during[1]))
        print(f"round (start to log_cleaned seen): {round_s:.1f} s")
        print(cleaned[0] if cleaned else "no log_cleaned event")
    return 0


if __name__ == "__main__":
    sys.exit(main())
