"""Partition reassignment, pure: Kafka's ZooKeeper-mode algorithm (KafkaController.onPartitionReassignment,
KIP-455), decided from a partition's assignment and state; the runtime writes what these functions return.

A partition's replica set RS while it moves from its original replicas ORS to the target TRS is TRS followed
by ORS's others, with AR = TRS - ORS being added and RR = ORS - TRS being removed, all three in the topic's
znode (`partitions`, `adding_replicas`, `removing_replicas`):
- start (phase A): the topic znode gets RS, AR, RR; the partition state gets a new leader epoch, the leader
  staying where it is; the new replicas create their logs and fetch from the leader, and the leader adds
  each to the ISR once it has caught up;
- complete (phase B), once every target replica is in the ISR: a new leader from the target if the current
  one is not in it (or not live), the removed replicas out of the ISR (one state write, a new leader epoch),
  then the topic znode gets RS = TRS and no AR/RR; the removed replicas delete their logs;
- a new reassignment of a partition being reassigned starts again from ORS (replicas no longer wanted are
  dropped at once); cancelling one (no target) is a reassignment back to ORS.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kbroker.cluster.assignment import InvalidReplicaAssignment, InvalidReplicationFactor
from kbroker.cluster.znodes import NO_LEADER, PartitionState, TopicAssignment


class NoReassignmentInProgress(ValueError):
    """Kafka's NO_REASSIGNMENT_IN_PROGRESS: a cancellation of a partition that is not being reassigned."""


def _without(replicas: Iterable[int], others: Iterable[int]) -> tuple[int, ...]:
    gone = set(others)
    return tuple(r for r in replicas if r not in gone)


@dataclass(frozen=True)
class ReplicaAssignment:
    """One partition's replicas (RS) with those being added (AR) and removed (RR): Kafka's ReplicaAssignment."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin(self) -> tuple[int, ...]:
        return _without(self.replicas, self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return _without(self.replicas, self.removing)

    @property
    def being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Iterable[int]) -> ReplicaAssignment:
        """The assignment while moving from the original replicas to `target` (target first)."""
        wanted = tuple(target)
        origin = self.origin
        full = tuple(dict.fromkeys(wanted + origin))
        return ReplicaAssignment(full, _without(full, origin), _without(full, wanted))


def partition_assignment(topic: TopicAssignment, partition: int) -> ReplicaAssignment:
    return ReplicaAssignment(
        topic.partitions[partition], topic.adding.get(partition, ()), topic.removing.get(partition, ())
    )


def with_partitions(topic: TopicAssignment, changes: Mapping[int, ReplicaAssignment]) -> TopicAssignment:
    """The topic's znode content with these partitions' assignments replaced."""
    partitions, adding, removing = dict(topic.partitions), dict(topic.adding), dict(topic.removing)
    for partition, assignment in changes.items():
        partitions[partition] = assignment.replicas
        adding.pop(partition, None)
        removing.pop(partition, None)
        if assignment.adding:
            adding[partition] = assignment.adding
        if assignment.removing:
            removing[partition] = assignment.removing
    return TopicAssignment(topic.topic, topic.topic_id, partitions, adding, removing)


def plan(
    current: ReplicaAssignment,
    target: Iterable[int] | None,
    live_brokers: set[int],
    *,
    allow_replication_factor_change: bool = True,
) -> ReplicaAssignment:
    """The partition's assignment once a request to reassign it to `target` (None: cancel) is accepted, with
    Kafka's checks (KafkaController.validateReplicas); raises InvalidReplicaAssignment,
    InvalidReplicationFactor or NoReassignmentInProgress."""
    if target is None:
        if not current.being_reassigned:
            raise NoReassignmentInProgress("No partition reassignment is in progress.")
        return current.reassign_to(current.origin)
    wanted = tuple(target)
    if not wanted:
        raise InvalidReplicaAssignment("Empty replica list specified in partition reassignment.")
    if len(set(wanted)) != len(wanted):
        raise InvalidReplicaAssignment(f"Duplicate replica ids in partition reassignment replica list: {list(wanted)}")
    if any(r < 0 for r in wanted):
        raise InvalidReplicaAssignment(f"Invalid broker id in replica list: {list(wanted)}")
    if not allow_replication_factor_change and len(wanted) != len(current.origin):
        raise InvalidReplicationFactor(
            f"The replication factor is changed from {len(current.origin)} to {len(wanted)} but "
            "allowReplicationFactorChange is false."
        )
    after = current.reassign_to(wanted)
    if not set(after.adding) <= live_brokers:
        raise InvalidReplicaAssignment(
            f"Replica assignment has brokers that are not alive. Replica list: {list(after.adding)}, "
            f"live broker list: {sorted(live_brokers)}"
        )
    return after


def state_for_replicas(
    state: PartitionState, kept: tuple[int, ...], leaders: tuple[int, ...], live: set[int], controller_epoch: int
) -> PartitionState:
    """The partition state once only `kept` remain assigned: the others leave the ISR, the leader stays if it
    is kept and live, else the first of `leaders` live and in the ISR leads (none: offline, the ISR keeping
    what is left of it); always a new leader epoch."""
    isr = tuple(r for r in state.isr if r in kept)
    leader = state.leader
    if leader not in kept or leader not in live or leader not in isr:
        leader = next((r for r in leaders if r in live and r in isr), NO_LEADER)
    return PartitionState(leader, state.leader_epoch + 1, isr or state.isr[:1], controller_epoch, state.zk_version)


def is_complete(assignment: ReplicaAssignment, state: PartitionState | None) -> bool:
    """Every target replica is in the ISR (KafkaController.isReassignmentComplete)."""
    return state is not None and set(assignment.target) <= set(state.isr)


@dataclass(frozen=True)
class Completion:
    """Phase B of one partition: its state write (None when the state needs no change) then its assignment."""

    topic: str
    partition: int
    assignment: ReplicaAssignment  # the final one: RS = target, nothing added or removed
    before: PartitionState
    after: PartitionState | None


def completions(
    topics: Mapping[str, TopicAssignment],
    states: Mapping[tuple[str, int], PartitionState],
    live: set[int],
    controller_epoch: int,
) -> list[Completion]:
    """The reassignments that can complete now: those whose target replicas are all in the ISR."""
    result = []
    for name in sorted(topics):
        topic = topics[name]
        for partition in sorted(set(topic.adding) | set(topic.removing)):
            if partition not in topic.partitions:
                continue
            current = partition_assignment(topic, partition)
            state = states.get((name, partition))
            if state is None or not is_complete(current, state):
                continue
            target = current.target
            after = None
            if state.leader not in target or state.leader not in live or not set(state.isr) <= set(target):
                after = state_for_replicas(state, target, target, live, controller_epoch)
            result.append(Completion(name, partition, ReplicaAssignment(target), state, after))
    return result
