"""A network partition isolating a leader (the bounded version of
`scripts/cluster_faults --nemesis partition`, docs/faults.md): each broker in its own network namespace on
a bridge, clients (and kbroker's ZooKeeper) in the root namespace; iptables cuts the leader of partition 0
off from the other brokers and ZooKeeper while clients still reach it. The majority must elect new leaders
and keep taking writes, the isolated broker must acknowledge no acks=all write sent straight to it, and
after the heal the cluster agrees again (the old leader truncated what only it had) with no acknowledged
record lost, duplicated or reordered. Apache Kafka passes the same test (with KBROKER_FAULTS_VS_KAFKA=1, see
test_fault_kill)."""

from __future__ import annotations

import pytest

from scripts.faults.nemesis import Deadlines
from scripts.faults.netns import available
from scripts.faults.run import run
from tests.cluster.test_fault_kill import BROKERS, kafka_missing


@pytest.mark.timeout(400)
@pytest.mark.parametrize("broker", BROKERS)
def test_an_isolated_leader_is_replaced_and_acknowledges_nothing(broker: str) -> None:
    if why := available():
        pytest.skip(why)
    if broker == "kafka" and (why := kafka_missing()):
        pytest.skip(why)
    outcome = run(broker, "partition", 1, rate=50, warmup=2, hold=10, deadlines=Deadlines(recover=60, progress=30))
    print(outcome.render())
    assert outcome.ok, outcome.render()
    assert outcome.nemesis.probes, "no write was sent to the isolated broker"
    assert outcome.report.acknowledged > 0 and outcome.report.read >= outcome.report.acknowledged
