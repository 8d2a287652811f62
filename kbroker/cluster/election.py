"""Leader elections asked for by an admin (ElectLeaders) or by the controller's own imbalance check, pure.

Kafka's ZooKeeper-mode rules (KafkaController.processReplicaLeaderElection,
PartitionLeaderElectionAlgorithms):
- PREFERRED: the preferred replica (the first of the assignment) leads if it is live and in the ISR; a
  partition it already leads needs no election (ELECTION_NOT_NEEDED); otherwise it cannot
  (PREFERRED_LEADER_NOT_AVAILABLE). The ISR stays, the leader epoch rises.
- UNCLEAN: only a partition without a live leader is elected (else ELECTION_NOT_NEEDED), as an offline
  partition is: the first live replica in the ISR, else, with `unclean.leader.election.enable`, the first
  live replica with an ISR of itself; else ELIGIBLE_LEADERS_NOT_AVAILABLE. Kafka's admin-requested unclean
  election (KIP-460) ignores the config; kbroker keeps it: a replica outside the ISR never leads unless the
  cluster allows it, since it would lose acknowledged records.
- auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, for each broker, the share of
  the partitions it is preferred for that another broker leads; above leader.imbalance.per.broker.percentage,
  those of them whose preferred replica can lead get a PREFERRED election.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kbroker.cluster.controller import elect_leader
from kbroker.cluster.znodes import PartitionState, TopicAssignment


class ElectionType(enum.IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


class Outcome(enum.Enum):
    ELECTED = "elected"
    NOT_NEEDED = "election_not_needed"
    NOT_AVAILABLE = "leader_not_available"  # PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE


@dataclass(frozen=True)
class Election:
    outcome: Outcome
    after: PartitionState | None = None  # the state to write when ELECTED


def preferred(replicas: tuple[int, ...], state: PartitionState, live: set[int], controller_epoch: int) -> Election:
    first = replicas[0]
    if state.leader == first:
        return Election(Outcome.NOT_NEEDED)
    if first not in live or first not in state.isr:
        return Election(Outcome.NOT_AVAILABLE)
    return Election(
        Outcome.ELECTED, PartitionState(first, state.leader_epoch + 1, state.isr, controller_epoch, state.zk_version)
    )


def unclean(
    replicas: tuple[int, ...], state: PartitionState, live: set[int], controller_epoch: int, allowed: bool
) -> Election:
    if state.has_leader and state.leader in live:
        return Election(Outcome.NOT_NEEDED)
    leader = elect_leader(replicas, state.isr, live, unclean=allowed)
    if leader is None:
        return Election(Outcome.NOT_AVAILABLE)
    live_isr = tuple(r for r in state.isr if r in live)
    isr = live_isr if leader in live_isr else (leader,)
    return Election(
        Outcome.ELECTED, PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch, state.zk_version)
    )


def elect(
    kind: ElectionType,
    replicas: tuple[int, ...],
    state: PartitionState,
    live: set[int],
    controller_epoch: int,
    unclean_allowed: bool = False,
) -> Election:
    if kind is ElectionType.PREFERRED:
        return preferred(replicas, state, live, controller_epoch)
    return unclean(replicas, state, live, controller_epoch, unclean_allowed)


def imbalanced_partitions(
    topics: Mapping[str, TopicAssignment],
    states: Mapping[tuple[str, int], PartitionState],
    live: set[int],
    percentage: int,
) -> list[tuple[str, int]]:
    """The partitions the imbalance check moves back to their preferred replicas (KafkaController's
    checkAndTriggerAutoLeaderRebalance): per preferred broker, when the share of its partitions led by
    another broker is above `percentage`, each of those whose preferred replica is live and in the ISR."""
    by_preferred: dict[int, list[tuple[str, int]]] = {}
    for name, topic in topics.items():
        for partition, replicas in topic.partitions.items():
            if replicas:
                by_preferred.setdefault(replicas[0], []).append((name, partition))
    chosen = []
    for broker in sorted(by_preferred):
        mine = by_preferred[broker]
        elsewhere = [key for key in mine if key in states and states[key].leader != broker]
        if len(elsewhere) / len(mine) <= percentage / 100:
            continue
        chosen += sorted(key for key in elsewhere if broker in live and broker in states[key].isr)
    return chosen


@dataclass
class ImbalanceCheck:
    """When the controller looks at the leaders' balance next: `interval_s` after it became controller, then
    every `interval_s` (times in seconds on any monotonic clock)."""

    interval_s: float
    next_check: float | None = None

    def elected(self, now: float) -> None:
        self.next_check = now + self.interval_s

    def resigned(self) -> None:
        self.next_check = None

    def due(self, now: float) -> bool:
        """Whether a check is due now; if so, the next one is scheduled."""
        if self.next_check is None or now < self.next_check:
            return False
        self.next_check = now + self.interval_s
        return True

    def delay(self, now: float) -> float | None:
        """Seconds until the next check (None: not controller)."""
        return None if self.next_check is None else max(0.0, self.next_check - now)


def partitions_of(topics: Mapping[str, TopicAssignment]) -> Iterable[tuple[str, int]]:
    for name in sorted(topics):
        for partition in sorted(topics[name].partitions):
            yield name, partition
