#!/usr/bin/env python3
"""W11, replicated produce side by side: a 3-broker Apache Kafka cluster (KRaft, combined nodes) and a
3-broker kbroker cluster (ZooKeeper mode), in turn on the same machine, with the same load generator.

    .venv/bin/python scripts/bench/replicated.py [--rounds 3] [--scale 1.0] [--unpinned]

Each round starts Kafka's cluster, runs the two loads, stops it, then does the same with kbroker's. Topics
have replication factor 3 and min.insync.replicas=2; the producer is idempotent with acks=all, so every
acknowledgement waits for the in-sync followers. Loads (franz-go, scripts/bench/loadgen):
- throughput: 256 Ki records of 1 KiB over 6 partitions, linger 5 ms, batches up to 1 MiB;
- ack latency (acknowledgement - send, p50 and p99; linger 0, 3 s untimed then 20 s), twice: one producer
  writing 600 records/s to a topic of one partition, then 6 producers, one partition each, 100 records/s
  each (Apache Kafka's latency grows with the number of producers here: about 300 ms at the median with 6,
  about 20 ms with one, on the 2-core machine of docs/performance.md).
The load generator reads every record back and fails on any lost, duplicated or reordered one. Brokers run
on core 0 (all three of a cluster), the load generator on core 1, unless --unpinned. Prints medians
(min-max) and the ratio kbroker/Kafka, in the table of scripts/bench/run (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

from bench import load_average, note, run, summarise, table  # noqa: E402
from brokers import KAFKA_JVM_OPTS, environment_note  # noqa: E402
from workloads import LOADGEN, Figure, build_loadgen, scale_args  # noqa: E402

from scripts.faults.cluster import FaultCluster, KBrokerCluster  # noqa: E402
from scripts.faults.kafka_cluster import KafkaCluster  # noqa: E402

TOPIC_ARGS = ["-partitions", "6", "-replication-factor", "3", "-topic-configs", "min.insync.replicas=2"]
THROUGHPUT = ["-mode", "batch", "-records", "262144", "-size", "1024", "-acks", "all", "-linger", "5ms"]
LATENCY = ["-mode", "many", "-rate", "100", "-warm", "3s", "-duration", "20s", "-size", "1024", "-acks", "all"]
LATENCY_ONE = ["-mode", "many", "-clients", "1", "-rate", "600", "-warm", "3s", "-duration", "20s", "-size", "1024"]
LATENCY_ONE += ["-acks", "all"]
FIGURES = {
    "throughput": [
        Figure("W11", "W11 produce 1 KiB, RF 3, acks=all", "produce_mb_per_s", "MB/s", target=">= 1.0x"),
        Figure("W11 msgs", "W11 produce 1 KiB, RF 3, acks=all (records)", "produce_msgs_per_s", "msgs/s"),
    ],
    "latency-1": [
        Figure("W11 1p ack p50", "W11 ack p50, 1 producer, 1 partition, 600 msgs/s", "ack_p50_ms", "ms", False),
        Figure("W11 1p ack p99", "W11 ack p99, 1 producer, 1 partition, 600 msgs/s", "ack_p99_ms", "ms", False),
    ],
    "latency-6": [
        Figure("W11 6p ack p50", "W11 ack p50, 6 producers, 6 partitions, 100 msgs/s each", "ack_p50_ms", "ms", False),
        Figure("W11 6p ack p99", "W11 ack p99, 6 producers, 6 partitions, 100 msgs/s each", "ack_p99_ms", "ms", False),
    ],
}
Samples = dict[str, dict[str, list[float]]]


def loadgen(cluster: FaultCluster, cpus: str, topic: str, args: list[str]) -> dict[str, float]:
    seed = cluster.nodes[1].address  # the load generator finds the other brokers in Metadata
    command = ["taskset", "-c", cpus, str(LOADGEN), "-bootstrap", seed, "-topic", topic, *TOPIC_ARGS, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{topic} against {cluster.name} failed: {done.stderr.strip()}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    if not result.get("verified"):
        raise RuntimeError(f"{topic} against {cluster.name}: records not verified")
    return result


def one_cluster(cluster: FaultCluster, broker_cpus: str, loadgen_cpus: str, scale: float, samples: Samples) -> None:
    for node in cluster.nodes.values():
        node.prefix = ["taskset", "-c", broker_cpus]
    with cluster:
        # untimed: the JVMs compile their hot paths, both clusters alike
        loadgen(cluster, loadgen_cpus, "w11-warm", scale_args(THROUGHPUT, ("-records",), 0.25))
        loads = {
            "throughput": scale_args(THROUGHPUT, ("-records",), scale),
            "latency-1": scale_args(LATENCY_ONE, ("-duration",), scale),
            "latency-6": scale_args([*LATENCY, "-clients", "6"], ("-duration",), scale),
        }
        for load, args in loads.items():
            result = loadgen(cluster, loadgen_cpus, f"w11-{load}", args)
            shown = []
            for figure in FIGURES[load]:
                samples[figure.name][cluster.name].append(float(result[figure.key]))
                shown.append(f"{figure.name} {float(result[figure.key]):,.2f} {figure.unit}")
            note(f"{cluster.name}: {load} verified ({int(result['records']):,} records): " + ", ".join(shown))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the record count and the duration")
    parser.add_argument("--brokers", default="kafka,kbroker")
    parser.add_argument("--unpinned", action="store_true", help="brokers and load generator may use every core")
    args = parser.parse_args(argv)
    broker_cpus, loadgen_cpus = "0", "1"
    if args.unpinned:
        broker_cpus = loadgen_cpus = f"0-{(os.cpu_count() or 1) - 1}"
    build_loadgen()
    started = time.monotonic()
    samples: Samples = defaultdict(lambda: defaultdict(list))
    for round_no in range(1, args.rounds + 1):
        for name in args.brokers.split(","):
            note(f"round {round_no}/{args.rounds}: {name}, 3 brokers")
            cluster: FaultCluster
            if name == "kafka":  # each node as kafka-server-start.sh runs it (1 GiB heap, G1), as scripts/bench/run
                cluster = KafkaCluster(jvm_opts=KAFKA_JVM_OPTS)
            else:
                cluster = KBrokerCluster(log_level="warning")
            one_cluster(cluster, broker_cpus, loadgen_cpus, args.scale, samples)
    figures = {f.name: f for load in FIGURES.values() for f in load}
    where = "unpinned" if args.unpinned else f"brokers on core {broker_cpus}, load generator on core {loadgen_cpus}"
    print()
    print(
        f"W11, {args.rounds} rounds, scale {args.scale}, {(time.monotonic() - started) / 60:.1f} min;"
        f" {where}; {environment_note()}; load average {load_average()}"
    )
    print()
    print(table(summarise(samples, figures)))
    for name, figure in figures.items():
        per = samples[name]
        if per.get("kafka") and per.get("kbroker"):
            ratio = statistics.median(per["kbroker"]) / statistics.median(per["kafka"])
            note(f"{figure.name}: kbroker/Kafka {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    run(main)
