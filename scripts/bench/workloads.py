"""The workloads W1-W7 and E1 as loadgen invocations, and the figures each one yields."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from brokers import Broker

LOADGEN_DIR = Path(__file__).resolve().parent / "loadgen"
LOADGEN = LOADGEN_DIR / "bin" / "loadgen"


@dataclass(frozen=True)
class Figure:
    """One reported number: its key in the loadgen result, label, unit, and whether higher is better."""

    name: str
    label: str
    key: str
    unit: str
    higher_is_better: bool = True
    target: str = ""
    phase: str = "produce"  # which loadgen phase the figure measures: "produce" or "consume"


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    args: tuple[str, ...]
    figures: tuple[Figure, ...]
    fsync_topic: bool = False
    scale_keys: tuple[str, ...] = field(default=("-records",))


W1 = Workload(
    "W1",
    "produce 1 KiB records, 6 partitions, acks=1, linger 5 ms, batch 1 MiB",
    ("-mode", "batch", "-records", "1048576", "-size", "1024", "-acks", "1", "-linger", "5ms"),
    (
        Figure("W1", "W1 produce 1 KiB, acks=1", "produce_mb_per_s", "MB/s", target=">= 1.0x"),
        Figure(
            "W4",
            "W4 consume from earliest (W1's topic, warm cache)",
            "consume_mb_per_s",
            "MB/s",
            target=">= 1.0x",
            phase="consume",
        ),
    ),
)
W2 = Workload(
    "W2",
    "produce 100 B records, 6 partitions, acks=1, linger 5 ms, batch 1 MiB",
    ("-mode", "batch", "-records", "4194304", "-size", "100", "-acks", "1", "-linger", "5ms"),
    (Figure("W2", "W2 produce 100 B, acks=1", "produce_msgs_per_s", "msgs/s", target=">= 1.0x"),),
)
W3 = Workload(
    "W3",
    "produce unbatched: 6 producers (one per partition, one connection each), each with one"
    " single-record request in flight, 1 KiB, acks=1, for 10 s",
    ("-mode", "single", "-clients", "6", "-size", "1024", "-acks", "1", "-linger", "0s", "-duration", "10s"),
    (Figure("W3", "W3 unbatched produce, acks=1", "requests_per_s", "requests/s", target=">= 0.5x"),),
    scale_keys=(),
)
W5 = Workload(
    "W5",
    "end to end at 2,000 msgs/s for 10 s (after 1 s untimed), 1 KiB, acks=all (idempotent producer), linger 0;"
    " consumer in the same process, latency = arrival - send time",
    ("-mode", "latency", "-rate", "2000", "-duration", "10s", "-size", "1024", "-acks", "all", "-linger", "0s"),
    (
        Figure("W5 p50", "W5 end-to-end p50", "latency_p50_ms", "ms", False, "<= 2 ms"),
        Figure("W5 p99", "W5 end-to-end p99", "latency_p99_ms", "ms", False, "<= Kafka"),
    ),
    scale_keys=(),
)
W6 = Workload(
    "W6",
    "produce 1 KiB records, acks=all (idempotent), linger 5 ms, batch 1 MiB, fsync before every ack"
    " (Kafka: topic flush.messages=1; kbroker: topic kbroker.fsync.before.ack=true)",
    ("-mode", "batch", "-records", "262144", "-size", "1024", "-acks", "all", "-linger", "5ms"),
    (Figure("W6", "W6 produce acks=all + fsync per ack", "produce_mb_per_s", "MB/s", target=">= 1.0x"),),
    fsync_topic=True,
)

W7 = Workload(
    "W7",
    "many clients: 50 producers (10 records/s each, 1 KiB, acks=all, idempotent, linger 0) and 50 consumers,"
    " each its own client, one partition each of a 50-partition topic, for 3 s + 30 s; ack latency ="
    " acknowledgement - send, end-to-end = arrival at the consumer - send, of the records sent from 3 s on (or"
    " from 1 s after the last producer's first acknowledgement, if later); first ack = from the common start"
    " (all clients created then) to each producer's first acknowledgement",
    (
        "-mode",
        "many",
        "-clients",
        "50",
        "-rate",
        "10",
        "-warm",
        "3s",
        "-duration",
        "30s",
        "-size",
        "1024",
        "-acks",
        "all",
    ),
    (
        Figure("W7 ack p50", "W7 produce ack p50", "ack_p50_ms", "ms", False),
        Figure("W7 ack p99", "W7 produce ack p99", "ack_p99_ms", "ms", False, "<= Kafka"),
        Figure("W7 ack p999", "W7 produce ack p99.9", "ack_p999_ms", "ms", False),
        Figure("W7 e2e p50", "W7 end-to-end p50", "e2e_p50_ms", "ms", False),
        Figure("W7 e2e p99", "W7 end-to-end p99", "e2e_p99_ms", "ms", False, "<= Kafka"),
        Figure("W7 e2e p999", "W7 end-to-end p99.9", "e2e_p999_ms", "ms", False),
        Figure("W7 first ack", "W7 start to every producer's first ack", "first_ack_max_ms", "ms", False),
    ),
    scale_keys=("-duration",),
)
E1 = Workload(
    "E1",
    "broker CPU per record: 20 topics x 4 partitions, 4 producers (each owns 20 partitions) writing 2,800"
    " records/s of 1 KiB in all (acks=all, idempotent, linger 5 ms: about one record per partition and"
    " batch), 4 consumer groups (one member each) reading every topic; broker CPU time (user + system, all"
    " threads) over 30 s after 3 s untimed, per 10,000 records produced",
    (
        "-mode",
        "soak",
        "-topics",
        "20",
        "-partitions",
        "4",
        "-clients",
        "4",
        "-groups",
        "4",
        "-rate",
        "2800",
        "-size",
        "1024",
        "-acks",
        "all",
        "-linger",
        "5ms",
        "-warm",
        "3s",
        "-duration",
        "30s",
    ),
    (
        Figure("E1", "E1 broker CPU per 10,000 records (80 partitions)", "broker_cpu_s_per_10k", "CPU s", False),
        Figure("E1 rate", "E1 records/s achieved", "records_per_s", "records/s"),
    ),
    scale_keys=("-duration",),
)

WORKLOADS = {w.name: w for w in (W1, W2, W3, W5, W6, W7, E1)}
# Untimed, before the measured workloads, so that a JVM has compiled its hot paths (both brokers alike).
WARMUP = (
    Workload("warm-up batch", "", ("-mode", "batch", "-records", "262144", "-size", "1024", "-acks", "all"), ()),
    Workload(
        "warm-up single",
        "",
        ("-mode", "single", "-clients", "6", "-duration", "3s", "-linger", "0s"),
        (),
        scale_keys=(),
    ),
)
# W4 is measured by W1's verification pass (a full read from earliest of W1's topic).
ALIASES = {"W4": "W1"}


def build_loadgen() -> None:
    """Compile the Go load generator (franz-go from the module cache)."""
    subprocess.run(["go", "build", "-o", str(LOADGEN), "."], cwd=LOADGEN_DIR, check=True)


def scaled_args(workload: Workload, scale: float) -> list[str]:
    return scale_args(workload.args, workload.scale_keys, scale)


def scale_args(given: tuple[str, ...] | list[str], keys: tuple[str, ...], scale: float) -> list[str]:
    """Multiply the values of keys by scale: record counts (at least 1,000) and durations ("30s", at least 2 s)."""
    args = list(given)
    for key in keys:
        i = args.index(key) + 1
        if args[i].endswith("s"):
            args[i] = f"{max(2.0, float(args[i][:-1]) * scale):g}s"
        else:
            args[i] = str(max(1000, int(int(args[i]) * scale)))
    return args


def run_workload(workload: Workload, broker: Broker, cpus: str, scale: float, topic: str) -> dict[str, float]:
    """Run one workload against broker (loadgen pinned to cpus); the loadgen's JSON result.

    Raises RuntimeError, with the loadgen's message, if any record was lost, duplicated or reordered.
    """
    assert broker.process is not None
    command = ["taskset", "-c", cpus, str(LOADGEN), "-bootstrap", broker.bootstrap, "-topic", topic]
    command += ["-broker-pid", str(broker.process.pid)]
    command += scaled_args(workload, scale)
    if workload.fsync_topic:
        command += ["-topic-configs", broker.fsync_topic_configs()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{workload.name} against {broker.name} failed: {done.stderr.strip()}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    if not result.get("verified"):
        raise RuntimeError(f"{workload.name} against {broker.name}: records not verified")
    return result
