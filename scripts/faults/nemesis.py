"""The faults: kill -9 of a partition leader (restarted after a pause), and a network partition cutting a
leader off from its peers (and ZooKeeper). After each fault the cluster must recover within a deadline
(every broker agrees on one leader per partition, every ISR full) and the producer and the consumer group
must make progress again; each miss is a finding, as is an isolated leader acknowledging an acks=all write.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from scripts.faults import wire
from scripts.faults.checker import Attempt, Outcome
from scripts.faults.cluster import FaultCluster
from scripts.faults.workload import Workload

NOT_ACKNOWLEDGED = "not acknowledged"


def note(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def wait_for(check: Callable[[], object], timeout: float) -> float | None:
    """Seconds until check() is true, or None at the deadline."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(0.25)
    return None


@dataclass
class NemesisLog:
    faults: list[str] = field(default_factory=list)  # one line per fault, for the report
    findings: list[str] = field(default_factory=list)  # availability and fencing failures
    probes: list[Attempt] = field(default_factory=list)  # writes sent straight to an isolated leader


@dataclass
class Deadlines:
    recover: float = 120.0  # all brokers agree, every ISR full again
    progress: float = 60.0  # producer acknowledgements and group consumption move again
    elect: float = 60.0  # the majority side names a new leader


def _recover_and_progress(
    cluster: FaultCluster, workload: Workload, log: NemesisLog, what: str, d: Deadlines, since: str = "the restart"
) -> bool:
    recovered = wait_for(lambda: cluster.healthy(workload.topic), d.recover)
    if recovered is None:
        log.findings.append(f"{what}: the cluster did not recover (agreed leaders, full ISRs) within {d.recover:.0f}s")
        return False
    acknowledged, consumed = workload.progress()
    if not workload.wait_progress(acknowledged, consumed, d.progress):
        now = workload.progress()
        log.findings.append(
            f"{what}: no progress within {d.progress:.0f}s (acknowledged {acknowledged} -> {now[0]},"
            f" consumed {consumed} -> {now[1]})"
        )
        return False
    log.faults[-1] += f", recovered {recovered:.1f}s after {since}"
    return True


def kill_leaders(
    cluster: FaultCluster, workload: Workload, faults: int, pause: float = 2.0, deadlines: Deadlines | None = None
) -> NemesisLog:
    """kill -9 the leader of partition i % partitions, wait for the survivors to elect new leaders, restart
    it `pause` seconds later, wait for recovery: N times."""
    d = deadlines or Deadlines()
    log = NemesisLog()
    for i in range(faults):
        leaders = cluster.leaders(workload.topic)
        victim = leaders.get(i % workload.partitions, -1)
        if victim < 0:
            victim = 1 + i % cluster.size
        led = sorted(p for p, leader in leaders.items() if leader == victim)
        killed = time.monotonic()
        cluster.kill(victim)
        log.faults.append(f"kill {i + 1}/{faults}: broker {victim} (leader of partitions {led})")
        note(log.faults[-1])
        # a real failover each time: the survivors name new leaders before the victim returns
        survivors = [n for n in cluster.nodes if n != victim]
        elected = wait_for(functools.partial(_moved, cluster, workload.topic, survivors, victim, led), d.elect)
        if elected is None:
            log.findings.append(f"kill {i + 1}: the survivors elected no new leader within {d.elect:.0f}s")
            note(log.findings[-1])
            cluster.restart(victim)
            break
        log.faults[-1] += f", new leaders in {elected:.1f}s"
        time.sleep(pause)
        cluster.restart(victim)
        if not _recover_and_progress(cluster, workload, log, f"kill {i + 1}", d):
            note(log.findings[-1])
            break
        log.faults[-1] += f" ({time.monotonic() - killed:.1f}s after the kill)"
        note(log.faults[-1])
    return log


def partition_leader(
    cluster: FaultCluster,
    workload: Workload,
    faults: int = 1,
    hold: float = 20.0,
    deadlines: Deadlines | None = None,
) -> NemesisLog:
    """Isolate the leader of partition 0 from the other brokers (and ZooKeeper) for `hold` seconds after the
    majority elected new leaders, probing it with acks=all writes, then heal; `faults` times."""
    d = deadlines or Deadlines()
    log = NemesisLog()
    for i in range(faults):
        leaders = cluster.leaders(workload.topic)
        victim = leaders.get(0, -1)
        if victim < 0:
            log.findings.append(f"partition {i + 1}: partition 0 has no leader before the fault")
            break
        led = sorted(p for p, leader in leaders.items() if leader == victim)
        majority = [n for n in cluster.nodes if n != victim]
        cluster.isolate(victim)
        log.faults.append(f"partition {i + 1}/{faults}: broker {victim} isolated (leader of partitions {led})")
        note(log.faults[-1])
        try:
            elected = wait_for(functools.partial(_moved, cluster, workload.topic, majority, victim, led), d.elect)
            if elected is None:
                log.findings.append(f"partition {i + 1}: the majority elected no new leader within {d.elect:.0f}s")
            else:
                log.faults[-1] += f", new leaders in {elected:.1f}s"
                acknowledged, consumed = workload.progress()
                if not workload.wait_progress(acknowledged, consumed, d.progress):
                    log.findings.append(f"partition {i + 1}: no progress on the majority side within {d.progress:.0f}s")
            _probe(cluster, workload, victim, led, hold, log, i + 1)
        finally:
            cluster.heal()
        note(log.faults[-1] + ", healed")
        if not _recover_and_progress(cluster, workload, log, f"partition {i + 1}", d, since="the heal"):
            note(log.findings[-1])
            break
    return log


def _moved(cluster: FaultCluster, topic: str, majority: list[int], victim: int, led: list[int]) -> bool:
    """Every broker of the majority names another leader than victim for each partition victim led."""
    views = [cluster.view(n, topic) for n in majority]
    return all(view is not None and all(view[p]["leader_id"] not in (victim, -1) for p in led) for view in views)


def _probe(
    cluster: FaultCluster, workload: Workload, victim: int, led: list[int], hold: float, log: NemesisLog, n: int
) -> None:
    """Through the hold: acks=all writes straight to the isolated broker, for a partition it led. It must
    not acknowledge one (its followers cannot copy it); each acknowledged probe is a finding, and every
    probe joins the history (acknowledged or indeterminate) so the checker judges what it left."""
    address = cluster.nodes[victim].address
    deadline = time.monotonic() + hold
    count = 0
    answers: dict[str, int] = {}
    while time.monotonic() < deadline:
        value = f"probe{n}-{count:04d}"
        partition = led[count % len(led)]
        try:
            code = wire.produce(address, workload.topic, partition, value.encode(), timeout_ms=3000)
        except (OSError, ValueError):
            code = -1
        answer = "no answer" if code < 0 else ErrorCode(code).name
        answers[answer] = answers.get(answer, 0) + 1
        outcome = Outcome.ACKNOWLEDGED if code == 0 else Outcome.INDETERMINATE
        log.probes.append(Attempt(value, f"probe{n}", partition, count, outcome))
        if code == 0:
            log.findings.append(f"partition {n}: isolated broker {victim} acknowledged acks=all write {value}")
        count += 1
        time.sleep(0.5)
    shown = ", ".join(f"{name} x{times}" for name, times in sorted(answers.items()))
    log.faults[-1] += f", {count} acks=all probes of the isolated broker answered {shown}"
