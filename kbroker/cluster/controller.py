"""The controller's decisions, pure: given the live brokers, the topics' replica assignments and the partition
states as read from ZooKeeper, which partition states to write.

Kafka's ZooKeeper-mode rules:
- a new partition (no state yet) starts with its first live replica as leader, every live replica in the
  ISR, leader epoch 0; with no live replica it waits (no state is written);
- when a partition's leader is gone, the new leader is the first replica in assignment order that is live
  and in the ISR, and the ISR keeps its live members; with no such replica the partition goes offline
  (leader -1) and its ISR keeps one member, the last leader, which alone may lead it again: with
  `unclean.leader.election.enable=false` (the default) a replica outside the ISR never becomes leader,
  with it true the first live replica does and the ISR restarts as that replica alone;
- a live leader whose ISR names dead brokers gets them removed;
- every change the controller makes raises the leader epoch and carries the controller epoch.
The runtime writes each change as a compare-and-set on the state znode's version, in one ZooKeeper
transaction with a check of /controller_epoch's version (a deposed controller's writes fail).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kbroker.cluster.znodes import NO_LEADER, PartitionState, TopicAssignment


@dataclass(frozen=True)
class PartitionChange:
    topic: str
    partition: int
    before: PartitionState | None  # None: the state znode does not exist yet
    after: PartitionState
    reason: str  # new_partition, leader_elected, leader_offline, isr_shrunk


def elect_leader(replicas: Iterable[int], isr: Iterable[int], live: set[int], unclean: bool = False) -> int | None:
    """Kafka's offline-partition election: the first replica (assignment order) live and in the ISR; failing
    that, with unclean election, the first live replica; else None."""
    ordered = list(replicas)
    in_sync = set(isr)
    for replica in ordered:
        if replica in live and replica in in_sync:
            return replica
    if unclean:
        for replica in ordered:
            if replica in live:
                return replica
    return None


@dataclass
class ControllerContext:
    """What the elected controller knows: its epoch, the live brokers, assignments and partition states."""

    epoch: int
    unclean_leader_election: bool = False
    live_brokers: set[int] = field(default_factory=set)
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[tuple[str, int], PartitionState] = field(default_factory=dict)

    def partitions(self) -> Iterator[tuple[str, int, tuple[int, ...]]]:
        for name in sorted(self.topics):
            for partition, replicas in sorted(self.topics[name].partitions.items()):
                yield name, partition, replicas

    def decide(self) -> list[PartitionChange]:
        """The state writes that bring every partition in line with the live brokers."""
        changes = []
        for topic, partition, replicas in self.partitions():
            before = self.states.get((topic, partition))
            change = self._new_partition(replicas) if before is None else self._reconcile(replicas, before)
            if change is not None:
                after, reason = change
                changes.append(PartitionChange(topic, partition, before, after, reason))
        return changes

    def applied(self, change: PartitionChange, zk_version: int) -> None:
        """`change` was written; the znode is now at `zk_version`."""
        after = change.after
        self.states[(change.topic, change.partition)] = PartitionState(
            after.leader, after.leader_epoch, after.isr, after.controller_epoch, zk_version
        )

    def _new_partition(self, replicas: tuple[int, ...]) -> tuple[PartitionState, str] | None:
        live = [r for r in replicas if r in self.live_brokers]
        if not live:
            return None
        return PartitionState(live[0], 0, tuple(live), self.epoch), "new_partition"

    def _reconcile(self, replicas: tuple[int, ...], state: PartitionState) -> tuple[PartitionState, str] | None:
        live = self.live_brokers
        live_isr = tuple(r for r in state.isr if r in live)
        if state.has_leader and state.leader in live:
            if live_isr == state.isr:
                return None
            return self._next(state, state.leader, live_isr), "isr_shrunk"
        leader = elect_leader(replicas, state.isr, live, self.unclean_leader_election)
        if leader is not None:
            isr = live_isr if leader in live_isr else (leader,)  # (leader,): an unclean election
            return self._next(state, leader, isr), "leader_elected"
        # offline: the ISR keeps one member, the last leader if it was in sync, so it alone may come back
        last = (state.leader,) if state.leader in state.isr else state.isr[:1]
        if not state.has_leader and state.isr == last:
            return None
        return self._next(state, NO_LEADER, last), "leader_offline"

    def _next(self, state: PartitionState, leader: int, isr: tuple[int, ...]) -> PartitionState:
        return PartitionState(leader, state.leader_epoch + 1, isr, self.epoch, state.zk_version)


class InvalidIsrUpdate(ValueError):
    """A leader asked for an ISR change it may not make (not the leader, a stale epoch, a bad ISR)."""


def leader_isr_update(
    state: PartitionState, replicas: Iterable[int], leader: int, leader_epoch: int, isr: Iterable[int]
) -> PartitionState:
    """The state after the partition's leader shrinks or expands its ISR (as Kafka's ZooKeeper-mode leaders
    wrote it themselves): same leader and epoch, the new ISR; the write is a compare-and-set on the version
    the leader read, so a controller's concurrent change wins and the leader must re-read."""
    new_isr = tuple(dict.fromkeys(isr))
    if state.leader != leader:
        raise InvalidIsrUpdate(f"broker {leader} is not the leader ({state.leader})")
    if state.leader_epoch != leader_epoch:
        raise InvalidIsrUpdate(f"leader epoch {leader_epoch} is not the current {state.leader_epoch}")
    if leader not in new_isr:
        raise InvalidIsrUpdate("the ISR must contain the leader")
    unknown = set(new_isr) - set(replicas)
    if unknown:
        raise InvalidIsrUpdate(f"replicas {sorted(unknown)} are not assigned to the partition")
    return PartitionState(leader, leader_epoch, new_isr, state.controller_epoch, state.zk_version)
