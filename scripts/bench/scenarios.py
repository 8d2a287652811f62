"""Workloads that need a broker of their own: CL (latency while the log cleaner works) and S4 (10,000 partitions).

Each starts a fresh broker (Apache Kafka or kbroker, alike), drives it with the load generator, checks what it
must (every record read back; for CL that the cleaner really worked during the measured window) and hands its
figures to `record(figure, broker name, value)`.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from brokers import Broker
from workloads import LOADGEN, WARMUP, Figure, run_workload, scale_args

Record = Callable[[Figure, str, float], None]

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"  # the same file and format in both brokers' log directory
CL_BROKER_SETTINGS = {"log.cleaner.backoff.ms": "100"}  # look for dirty logs every 100 ms, not 15 s (Kafka's default)
CL_TOPIC = "segment.bytes=1048576,min.cleanable.dirty.ratio=0.01,min.compaction.lag.ms=0"
CL_ARGS = ("-partitions", "2", "-rate", "1000", "-churn-rate", "10000", "-keys", "1000", "-size", "100")
CL_ARGS += ("-acks", "all", "-warm", "3s", "-duration", "30s")
CL_DESCRIPTION = (
    "latency while the log cleaner works: one broker of its own per round (after the same untimed warm-up),"
    " `log.cleaner.backoff.ms=100` on both (Kafka's default 15 s would leave the first seconds uncleaned), other"
    " settings default (no cleaner I/O limit on either); a 2-partition topic with segment.bytes=1 MiB,"
    " min.cleanable.dirty.ratio=0.01, min.compaction.lag.ms=0. Partition 1 gets the churn: 10,000 records/s of"
    " 100 B over 1,000 keys (acks=1, linger 5 ms), so a segment rolls about every second and the cleaner always"
    " has work; partition 0 gets the probe: 1,000 records/s of 100 B with a unique key each (acks=all,"
    " idempotent, linger 0), tailed by a consumer. 3 s untimed, then 30 s measured. First with"
    " cleanup.policy=delete (the baseline: nothing to clean), then a new topic with cleanup.policy=compact."
    " Checked: every probe record read back in order; the churn partition read back from its start, each key's"
    " last value present; with compaction fewer churn records left than written, and the cleaner checkpoint"
    " (`cleaner-offset-checkpoint` in the log directory, the same file in both brokers) advanced during the"
    " measured window"
)
CL_FIGURES = {
    (policy, key): Figure(f"CL {label} {policy}", f"CL {label}, {title}", key, "ms", False)
    for policy, title in (("delete", "no cleaning (baseline)"), ("compact", "cleaner working"))
    for key, label in (
        ("ack_p50_ms", "ack p50"),
        ("ack_p99_ms", "ack p99"),
        ("ack_p999_ms", "ack p99.9"),
        ("e2e_p50_ms", "end-to-end p50"),
        ("e2e_p99_ms", "end-to-end p99"),
    )
}
CL_ROUNDS = Figure("CL cleaner", "CL cleaner checkpoint advances seen in the window (polled every 100 ms)", "", "")
CL_KEPT = Figure("CL kept", "CL churn records left after the run, % of written", "", "%", False)

S4_TOPICS, S4_PARTITIONS = 100, 100
S4_DESCRIPTION = (
    f"{S4_TOPICS * S4_PARTITIONS:,} partitions (fewer topics with --scale below 1): a broker of its own per round, no warm-up; {S4_TOPICS} topics x"
    f" {S4_PARTITIONS} partitions created 10 topics per CreateTopics request (Kafka's controller takes at most"
    " 10,000 records per request), then one 100 B record written to every partition (acks=all). Create: from"
    " the first CreateTopics request to the last acknowledgement. Clean stop: SIGTERM to exit. Restart: from"
    " exec to every partition listing end offset 1 (ListOffsets), clean and after kill -9. Metadata: 50"
    " Metadata requests for all topics, one after another, after the clean restart. RSS: after the clean"
    " restart's checks. Every partition's record is read back after each restart"
)
S4_FIGURES = {
    "create": Figure("S4 create", "S4 create the partitions, each written once", "", "ms", False, "<= Kafka"),
    "stop": Figure("S4 stop", "S4 clean stop (SIGTERM to exit)", "", "ms", False),
    "restart": Figure("S4 restart", "S4 clean restart to every partition ready", "", "ms", False, "<= Kafka"),
    "first": Figure("S4 first answer", "S4 clean restart to first ApiVersions answer", "", "ms", False),
    "metadata p50": Figure("S4 metadata p50", "S4 Metadata (all topics) p50", "", "ms", False),
    "metadata p99": Figure("S4 metadata p99", "S4 Metadata (all topics) p99", "", "ms", False, "<= Kafka"),
    "rss": Figure("S4 RSS", "S4 RSS after the clean restart", "", "MiB", False, "<= Kafka"),
    "kill": Figure("S4 kill restart", "S4 restart after kill -9 to every partition ready", "", "ms", False, "<= Kafka"),
}


def note(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def loadgen(broker: Broker, cpus: str, args: list[str], timeout: float = 2400) -> dict[str, float]:
    """Run the load generator (pinned to cpus) against broker; its JSON result (RuntimeError on failure)."""
    assert broker.process is not None
    command = ["taskset", "-c", cpus, str(LOADGEN), "-bootstrap", broker.bootstrap]
    command += ["-broker-pid", str(broker.process.pid), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{args[1]} against {broker.name} failed: {done.stderr.strip()}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class CheckpointWatch:
    """Polls a cleaner checkpoint file every 100 ms; the times (Unix ms) at which a topic's entries changed."""

    def __init__(self, path: Path, topic: str) -> None:
        self.path, self.topic = path, topic
        self.changes: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _entries(self) -> list[str]:
        try:
            lines = self.path.read_text().splitlines()[2:]
        except OSError:
            return []
        return sorted(line for line in lines if line.split(" ")[0] == self.topic)

    def _run(self) -> None:
        last = self._entries()
        while not self._stop.wait(0.1):
            now = self._entries()
            if now != last:
                self.changes.append(time.time() * 1000)
                last = now

    def __enter__(self) -> CheckpointWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def cleaner_latency(kind: type[Broker], cpus: str, loadgen_cpus: str, scale: float, record: Record) -> None:
    """CL: the baseline topic (cleanup.policy=delete), then a compacted one, on one fresh broker."""
    broker = kind(cpus, CL_BROKER_SETTINGS)
    try:
        broker.start()
        for i, warmup in enumerate(WARMUP):
            run_workload(warmup, broker, loadgen_cpus, 1.0, topic=f"bench-cl-warmup-{i}")
        for policy in ("delete", "compact"):
            topic = f"bench-cl-{policy}"
            args = ["-mode", "cleaner", "-topic", topic, *scale_args(CL_ARGS, ("-duration",), scale)]
            args += ["-topic-configs", f"cleanup.policy={policy},{CL_TOPIC}"]
            with CheckpointWatch(broker.data_dir() / CLEANER_CHECKPOINT, topic) as watch:
                result = loadgen(broker, loadgen_cpus, args)
            window = (result["window_start_unix_ms"], result["window_end_unix_ms"])
            advances = sum(1 for t in watch.changes if window[0] <= t <= window[1])
            kept, written = int(result["churn_records_kept"]), int(result["churn_records"])
            if policy == "compact" and (advances < 2 or kept >= written):
                raise RuntimeError(
                    f"CL against {broker.name}: the cleaner did not work during the window "
                    f"({advances} checkpoint advances, {kept:,} of {written:,} churn records left)"
                )
            if policy == "delete" and (watch.changes or kept != written):
                raise RuntimeError(f"CL against {broker.name}: the baseline topic was cleaned")
            for key in ("ack_p50_ms", "ack_p99_ms", "ack_p999_ms", "e2e_p50_ms", "e2e_p99_ms"):
                record(CL_FIGURES[(policy, key)], broker.name, float(result[key]))
            if policy == "compact":
                record(CL_ROUNDS, broker.name, float(advances))
                record(CL_KEPT, broker.name, 100 * kept / written)
            note(
                f"{broker.name}: CL {policy} verified: ack p50/p99/p99.9 {result['ack_p50_ms']:.2f} /"
                f" {result['ack_p99_ms']:.2f} / {result['ack_p999_ms']:.2f} ms, end-to-end p50/p99"
                f" {result['e2e_p50_ms']:.2f} / {result['e2e_p99_ms']:.2f} ms; churn {kept:,} of {written:,} records"
                f" left, cleaner checkpoint advanced {advances} times in the window"
            )
    finally:
        broker.cleanup()


def many_partitions(kind: type[Broker], cpus: str, loadgen_cpus: str, scale: float, record: Record) -> None:
    """S4: create 10,000 partitions (times scale), write each once, stop and restart (clean, then after kill -9)."""
    topics = max(1, round(S4_TOPICS * min(1.0, scale)))
    shape = ["-topic", "bench-s4", "-topics", str(topics), "-partitions", str(S4_PARTITIONS), "-size", "100"]
    broker = kind(cpus)
    name = broker.name
    try:
        broker.start()
        created = loadgen(broker, loadgen_cpus, ["-mode", "s4-create", *shape])
        record(S4_FIGURES["create"], name, float(created["writable_ms"]))
        stopping = time.monotonic()
        broker.stop()
        record(S4_FIGURES["stop"], name, (time.monotonic() - stopping) * 1000)
        broker.start(timeout=1200)
        check = loadgen(broker, loadgen_cpus, ["-mode", "s4-check", *shape])
        restart = float(check["ready_unix_ms"]) - broker.started_unix_ms
        record(S4_FIGURES["restart"], name, restart)
        first = broker.startup_ms
        record(S4_FIGURES["first"], name, first)
        record(S4_FIGURES["metadata p50"], name, float(check["metadata_p50_ms"]))
        record(S4_FIGURES["metadata p99"], name, float(check["metadata_p99_ms"]))
        rss = broker.rss_mib()
        record(S4_FIGURES["rss"], name, rss)
        broker.kill()
        broker.start(timeout=1200)
        killed = loadgen(broker, loadgen_cpus, ["-mode", "s4-check", "-metadata-requests", "5", *shape])
        record(S4_FIGURES["kill"], name, float(killed["ready_unix_ms"]) - broker.started_unix_ms)
        note(
            f"{name}: S4 verified: create+write {created['writable_ms']:,.0f} ms (requests {created['create_ms']:,.0f}"
            f" ms), clean restart {restart:,.0f} ms (first answer {first:,.0f} ms), Metadata p99"
            f" {check['metadata_p99_ms']:.1f} ms, RSS {rss:.0f} MiB, restart after kill -9"
            f" {float(killed['ready_unix_ms']) - broker.started_unix_ms:,.0f} ms"
        )
    finally:
        broker.cleanup()
