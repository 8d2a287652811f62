"""Partition reassignment's pure decisions (Kafka's ZooKeeper-mode algorithm, KIP-455): the assignment while
moving, the checks of a request, the state writes of phase A and B, and cancellation; with a fake cluster
state stepped through as the runtime would write it."""

from __future__ import annotations

import uuid

import pytest

from kbroker.cluster.assignment import InvalidReplicaAssignment, InvalidReplicationFactor
from kbroker.cluster.reassignment import (
    NoReassignmentInProgress,
    ReplicaAssignment,
    completions,
    partition_assignment,
    plan,
    state_for_replicas,
    with_partitions,
)
from kbroker.cluster.znodes import NO_LEADER, PartitionState, TopicAssignment, decode_topic, encode_topic

LIVE = {1, 2, 3, 4}


def test_reassign_to_puts_the_target_first_and_names_adding_and_removing() -> None:
    moving = ReplicaAssignment((1, 2)).reassign_to((2, 3))
    assert moving == ReplicaAssignment((2, 3, 1), adding=(3,), removing=(1,))
    # the original replicas are RS without those added, in RS's order (as Kafka's originReplicas)
    assert moving.origin == (2, 1) and moving.target == (2, 3) and moving.being_reassigned
    # a new target while moving starts again from the original replicas: 3 is no longer added
    again = moving.reassign_to((4, 2))
    assert again == ReplicaAssignment((4, 2, 1), adding=(4,), removing=(1,))
    # a reorder adds and removes nothing
    assert ReplicaAssignment((1, 2)).reassign_to((2, 1)) == ReplicaAssignment((2, 1))


def test_plan_checks_as_kafka_does() -> None:
    current = ReplicaAssignment((1, 2))
    with pytest.raises(InvalidReplicaAssignment, match="Empty replica list"):
        plan(current, (), LIVE)
    with pytest.raises(InvalidReplicaAssignment, match="Duplicate replica ids"):
        plan(current, (2, 2), LIVE)
    with pytest.raises(InvalidReplicaAssignment, match="Invalid broker id"):
        plan(current, (2, -1), LIVE)
    with pytest.raises(InvalidReplicaAssignment, match="not alive"):
        plan(current, (2, 9), LIVE)
    assert plan(current, (2, 1), LIVE - {1}).target == (2, 1)  # only new replicas must be live
    with pytest.raises(InvalidReplicationFactor, match="from 2 to 3"):
        plan(current, (2, 3, 4), LIVE, allow_replication_factor_change=False)
    assert plan(current, (2, 3, 4), LIVE).adding == (3, 4)
    with pytest.raises(NoReassignmentInProgress):
        plan(current, None, LIVE)
    # cancelling goes back to the original replicas, in RS's order as Kafka does (1, 2 come back as 2, 1)
    assert plan(ReplicaAssignment((2, 3, 1), (3,), (1,)), None, LIVE) == ReplicaAssignment((2, 1))


def test_the_topic_znode_keeps_adding_and_removing_as_kafka_writes_them() -> None:
    topic = TopicAssignment("t", uuid.uuid4(), {0: (1, 2), 1: (2, 3)})
    moving = with_partitions(topic, {0: ReplicaAssignment((2, 3, 1), (3,), (1,))})
    data = encode_topic(moving)
    assert b'"adding_replicas":{"0":[3]}' in data and b'"removing_replicas":{"0":[1]}' in data
    read = decode_topic("t", data)
    assert read == moving and partition_assignment(read, 0).target == (2, 3)
    assert partition_assignment(read, 1) == ReplicaAssignment((2, 3))
    done = with_partitions(read, {0: ReplicaAssignment((2, 3))})
    assert done.adding == {} and done.removing == {} and done.partitions[0] == (2, 3)


def test_phase_a_keeps_the_leader_and_raises_the_epoch() -> None:
    state = PartitionState(1, 4, (1, 2), 7, zk_version=9)
    moving = ReplicaAssignment((2, 3, 1), (3,), (1,))
    after = state_for_replicas(state, moving.replicas, moving.target, LIVE, controller_epoch=8)
    assert after == PartitionState(1, 5, (1, 2), 8, zk_version=9)


def test_cancel_drops_added_replicas_from_the_isr_and_moves_a_leader_among_them() -> None:
    state = PartitionState(3, 4, (3, 1, 2), 7)
    after = state_for_replicas(state, (1, 2), (1, 2), LIVE, controller_epoch=7)
    assert after.leader == 1 and after.isr == (1, 2) and after.leader_epoch == 5


def _cluster() -> tuple[dict[str, TopicAssignment], dict[tuple[str, int], PartitionState]]:
    topic = TopicAssignment("t", uuid.uuid4(), {0: (1, 2), 1: (1, 2, 3)})
    states = {("t", 0): PartitionState(1, 0, (1, 2), 1, 0), ("t", 1): PartitionState(1, 0, (1, 2, 3), 1, 0)}
    return {"t": topic}, states


def test_a_move_completes_only_once_the_new_replicas_are_in_the_isr() -> None:
    topics, states = _cluster()
    moving = plan(partition_assignment(topics["t"], 0), (2, 3), LIVE)
    topics["t"] = with_partitions(topics["t"], {0: moving})
    states[("t", 0)] = state_for_replicas(states[("t", 0)], moving.replicas, moving.target, LIVE, 1)
    assert completions(topics, states, LIVE, 1) == []  # broker 3 has not caught up
    # the leader adds 3 to the ISR (a replica that caught up)
    states[("t", 0)] = PartitionState(1, 1, (1, 2, 3), 1, 1)
    (done,) = completions(topics, states, LIVE, 1)
    assert (done.topic, done.partition, done.assignment) == ("t", 0, ReplicaAssignment((2, 3)))
    assert done.after == PartitionState(2, 2, (2, 3), 1, 1)  # the leader moves into the target, 1 leaves the ISR


def test_a_removal_completes_at_once_and_a_kept_leader_stays() -> None:
    topics, states = _cluster()
    moving = plan(partition_assignment(topics["t"], 1), (1, 3), LIVE)
    assert moving == ReplicaAssignment((1, 3, 2), (), (2,))
    topics["t"] = with_partitions(topics["t"], {1: moving})
    (done,) = completions(topics, states, LIVE, 1)
    assert done.after is not None and done.after.leader == 1 and done.after.isr == (1, 3)
    # once its state is written, only the assignment remains to be written: nothing more to change in the state
    states[("t", 1)] = done.after
    (again,) = completions(topics, states, LIVE, 1)
    assert again.after is None and again.assignment == ReplicaAssignment((1, 3))


def test_a_dead_target_replica_holds_the_move_and_no_live_leader_means_offline() -> None:
    topics, states = _cluster()
    moving = plan(partition_assignment(topics["t"], 0), (3, 4), LIVE)
    topics["t"] = with_partitions(topics["t"], {0: moving})
    states[("t", 0)] = PartitionState(1, 1, (1, 2, 3, 4), 1, 1)
    (done,) = completions(topics, states, {1, 2}, 1)  # 3 and 4 are in the ISR but not live
    assert done.after is not None and done.after.leader == NO_LEADER and done.after.isr == (3, 4)
