"""One fault run: a 3-broker cluster (kbroker or Apache Kafka), the workload, a nemesis, the read-back and
the checker's report (scripts/cluster_faults is the command line; tests/cluster/test_fault_*.py run
bounded versions)."""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from dataclasses import dataclass, field

from scripts.faults.checker import Report, check
from scripts.faults.cluster import FaultCluster, KBrokerCluster
from scripts.faults.nemesis import Deadlines, NemesisLog, kill_leaders, note, partition_leader, wait_for
from scripts.faults.netns import Network, clean_leftovers
from scripts.faults.workload import Workload, create_topic, read_back


@dataclass
class Outcome:
    report: Report
    nemesis: NemesisLog
    producer_errors: dict[str, int] = field(default_factory=dict)
    consumer_errors: dict[str, int] = field(default_factory=dict)
    producers: int = 1
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report.valid and not self.nemesis.findings

    def render(self) -> str:
        lines = [*self.nemesis.faults, *self.notes]
        lines += [f"FINDING: {finding}" for finding in self.nemesis.findings]
        lines.append(f"producers used: {self.producers}, delivery errors: {self.producer_errors or 'none'}")
        lines.append(f"consumer errors: {self.consumer_errors or 'none'}")
        lines.append(self.report.render())
        lines.append(f"run took {self.seconds:.0f}s: " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


def make_cluster(broker: str, network: Network | None) -> FaultCluster:
    if broker == "kafka":
        from scripts.faults.kafka_cluster import KafkaCluster

        return KafkaCluster(network)
    return KBrokerCluster(network)


def run(
    broker: str,
    nemesis: str,
    faults: int,
    *,
    partitions: int = 3,
    rate: float = 100.0,
    warmup: float = 5.0,
    hold: float = 20.0,
    pause: float = 2.0,
    deadlines: Deadlines | None = None,
) -> Outcome:
    """Start the cluster (in namespaces for the partition nemesis), run, tear everything down; the outcome."""
    started = time.monotonic()
    network = Network(3) if nemesis == "partition" else None
    if network is not None:
        network.up()
    try:
        with make_cluster(broker, network) as cluster:
            note(f"{broker}: 3 brokers up ({cluster.bootstrap()}), logs in {cluster.root}")
            return _run_on(cluster, nemesis, faults, partitions, rate, warmup, hold, pause, deadlines, started)
    finally:
        if network is not None:
            network.down()


def _run_on(
    cluster: FaultCluster,
    nemesis: str,
    faults: int,
    partitions: int,
    rate: float,
    warmup: float,
    hold: float,
    pause: float,
    deadlines: Deadlines | None,
    started: float,
) -> Outcome:
    topic = f"faults-{uuid.uuid4().hex[:6]}"
    create_topic(cluster.bootstrap(), topic, partitions)
    if wait_for(lambda: cluster.healthy(topic), 60) is None:
        raise RuntimeError(f"topic {topic} has no agreed leaders and full ISRs 60s after its creation")
    workload = Workload(cluster.bootstrap(), topic, partitions, rate).start()
    log = NemesisLog()
    try:
        if not workload.wait_progress(0, 0, 60, step=max(10, int(rate * warmup))):
            log.findings.append(f"no progress before the first fault (acknowledged, consumed: {workload.progress()})")
        elif nemesis == "kill":
            log = kill_leaders(cluster, workload, faults, pause, deadlines)
        else:
            log = partition_leader(cluster, workload, faults, hold, deadlines)
    finally:
        workload.stop()
    note(f"workload stopped: {workload.acknowledged} acknowledged of {len(workload.attempts)} attempted; reading back")
    if wait_for(lambda: cluster.healthy(topic), 60) is None:
        log.findings.append("the cluster was not healthy before the read-back")
    notes: list[str] = []
    agreed, sizes = _replicas_converge(cluster, topic, partitions)
    if agreed:
        notes.append(f"replicas identical after the run (partition -> bytes): {sizes}")
    else:
        log.findings.append(f"replicas differ 60s after the writes stopped (partition -> broker -> bytes): {sizes}")
    reads = read_back(cluster.bootstrap(), topic, partitions)
    report = check([*workload.history(), *log.probes], reads)
    return Outcome(
        report,
        log,
        workload.errors,
        workload.consumer_errors,
        workload.producers_used,
        time.monotonic() - started,
        notes,
    )


def _replicas_converge(
    cluster: FaultCluster, topic: str, partitions: int, timeout: float = 60.0
) -> tuple[bool, object]:
    """Once the writes stop, every replica of a partition holds the same bytes (DescribeLogDirs of each
    broker): a returning leader truncated what only it had, followers caught up. (agreed, sizes seen)."""
    seen: list[dict[int, dict[int, int]] | None] = [None]

    def same() -> bool:
        seen[0] = sizes = cluster.replica_sizes(topic, partitions)
        return sizes is not None and all(len(s) == cluster.size and len(set(s.values())) == 1 for s in sizes.values())

    if wait_for(same, timeout) is None:
        return False, seen[0]
    return True, {p: max(s.values()) for p, s in (seen[0] or {}).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/cluster_faults", description=__doc__)
    parser.add_argument("--broker", choices=("kbroker", "kafka"), default="kbroker")
    parser.add_argument("--nemesis", choices=("kill", "partition"), default="kill")
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--rate", type=float, default=100.0, help="records per second")
    parser.add_argument("--hold", type=float, default=20.0, help="seconds a partition lasts after the election")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds a killed broker stays down")
    parser.add_argument("--clean", action="store_true", help="only remove namespaces left by dead runs")
    args = parser.parse_args(argv)
    if args.clean:
        print("removed:", clean_leftovers() or "nothing")
        return 0
    outcome = run(
        args.broker,
        args.nemesis,
        args.faults,
        partitions=args.partitions,
        rate=args.rate,
        hold=args.hold,
        pause=args.pause,
    )
    print(outcome.render(), flush=True)
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())
