"""ElectLeaders' and the imbalance check's pure decisions: PREFERRED and UNCLEAN elections, the per-broker
imbalance ratio, and the check's schedule on a fake clock."""

from __future__ import annotations

import uuid

from kbroker.cluster.election import (
    ElectionType,
    ImbalanceCheck,
    Outcome,
    elect,
    imbalanced_partitions,
)
from kbroker.cluster.znodes import NO_LEADER, PartitionState, TopicAssignment

LIVE = {1, 2, 3}


def test_preferred_election() -> None:
    moved = PartitionState(2, 3, (2, 1), 5, zk_version=8)
    elected = elect(ElectionType.PREFERRED, (1, 2), moved, LIVE, controller_epoch=6)
    assert elected.outcome is Outcome.ELECTED
    assert elected.after == PartitionState(1, 4, (2, 1), 6, zk_version=8)  # same ISR, next epoch
    already = PartitionState(1, 3, (1, 2), 5)
    assert elect(ElectionType.PREFERRED, (1, 2), already, LIVE, 6).outcome is Outcome.NOT_NEEDED
    out_of_sync = PartitionState(2, 3, (2,), 5)
    assert elect(ElectionType.PREFERRED, (1, 2), out_of_sync, LIVE, 6).outcome is Outcome.NOT_AVAILABLE
    assert elect(ElectionType.PREFERRED, (1, 2), moved, {2, 3}, 6).outcome is Outcome.NOT_AVAILABLE  # 1 is down


def test_unclean_election_elects_only_leaderless_partitions_and_keeps_the_config() -> None:
    led = PartitionState(2, 3, (2,), 5)
    assert elect(ElectionType.UNCLEAN, (1, 2), led, LIVE, 6).outcome is Outcome.NOT_NEEDED
    offline = PartitionState(NO_LEADER, 4, (3,), 5)  # its last ISR member, 3, is down
    assert elect(ElectionType.UNCLEAN, (1, 2, 3), offline, {1, 2}, 6).outcome is Outcome.NOT_AVAILABLE
    allowed = elect(ElectionType.UNCLEAN, (1, 2, 3), offline, {1, 2}, 6, unclean_allowed=True)
    assert allowed.outcome is Outcome.ELECTED and allowed.after is not None
    assert (allowed.after.leader, allowed.after.isr, allowed.after.leader_epoch) == (1, (1,), 5)
    back = elect(ElectionType.UNCLEAN, (1, 2, 3), offline, {3}, 6)  # the in-sync replica is back
    assert back.after is not None and (back.after.leader, back.after.isr) == (3, (3,))


def _topics(count: int) -> dict[str, TopicAssignment]:
    # partitions 0..count-1, preferred leaders 1, 2, 3, 1, 2, 3, ...
    replicas = {p: tuple(1 + (p + i) % 3 for i in range(3)) for p in range(count)}
    return {"t": TopicAssignment("t", uuid.uuid4(), replicas)}


def test_imbalance_above_the_percentage_moves_leaders_back() -> None:
    topics = _topics(30)  # ten partitions preferred by each broker
    states = {("t", p): PartitionState(r[0], 0, r, 1) for p, r in topics["t"].partitions.items()}
    assert imbalanced_partitions(topics, states, LIVE, 10) == []
    # broker 1 lost one of its ten to broker 2: 10%, not above the threshold
    states[("t", 0)] = PartitionState(2, 1, (1, 2, 3), 1)
    assert imbalanced_partitions(topics, states, LIVE, 10) == []
    # two of ten: 20% > 10%; both move back, but not one whose preferred replica is out of the ISR
    states[("t", 3)] = PartitionState(2, 1, (1, 2, 3), 1)
    assert imbalanced_partitions(topics, states, LIVE, 10) == [("t", 0), ("t", 3)]
    states[("t", 3)] = PartitionState(2, 1, (2, 3), 1)
    assert imbalanced_partitions(topics, states, LIVE, 10) == [("t", 0)]
    assert imbalanced_partitions(topics, states, LIVE, 20) == []
    assert imbalanced_partitions(topics, states, {2, 3}, 10) == []  # broker 1 is down: nothing to move


def test_the_check_runs_every_interval_while_controller() -> None:
    check = ImbalanceCheck(interval_s=300)
    now = 1000.0
    assert not check.due(now) and check.delay(now) is None  # not the controller
    check.elected(now)
    assert check.delay(now) == 300 and not check.due(now + 299.9)
    assert check.due(now + 300) and not check.due(now + 300)  # once, then the next interval
    assert check.delay(now + 300) == 300 and check.due(now + 600)
    check.resigned()
    assert not check.due(now + 10_000)
