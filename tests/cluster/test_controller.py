"""The controller's pure decisions: new partitions, leader election from the ISR (clean and unclean), ISR
shrink on broker loss, offline partitions and their return, and a leader's own ISR updates."""

from __future__ import annotations

import uuid

import pytest

from kbroker.cluster.controller import (
    ControllerContext,
    InvalidIsrUpdate,
    PartitionChange,
    elect_leader,
    leader_isr_update,
)
from kbroker.cluster.znodes import NO_LEADER, PartitionState, TopicAssignment


def _context(live: set[int], *, unclean: bool = False, epoch: int = 3) -> ControllerContext:
    context = ControllerContext(epoch=epoch, unclean_leader_election=unclean, live_brokers=set(live))
    context.topics["t"] = TopicAssignment("t", uuid.uuid4(), {0: (1, 2, 3), 1: (2, 3, 1)})
    return context


def _apply(context: ControllerContext) -> list[PartitionChange]:
    changes = context.decide()
    for change in changes:
        context.applied(change, (change.before.zk_version if change.before else -1) + 1)
    return changes


def _state(context: ControllerContext, partition: int) -> tuple[int, int, tuple[int, ...]]:
    state = context.states[("t", partition)]
    return state.leader, state.leader_epoch, state.isr


def test_elect_leader_prefers_assignment_order_within_the_isr() -> None:
    assert elect_leader([1, 2, 3], [3, 2], {1, 2, 3}) == 2
    assert elect_leader([1, 2, 3], [1], {2, 3}) is None
    assert elect_leader([1, 2, 3], [1], {2, 3}, unclean=True) == 2
    assert elect_leader([1, 2, 3], [], set()) is None


def test_new_partitions_start_with_the_live_replicas() -> None:
    context = _context({1, 2, 3})
    changes = _apply(context)
    assert [(c.partition, c.reason, c.before) for c in changes] == [
        (0, "new_partition", None),
        (1, "new_partition", None),
    ]
    assert _state(context, 0) == (1, 0, (1, 2, 3))
    assert _state(context, 1) == (2, 0, (2, 3, 1))
    assert all(s.controller_epoch == 3 for s in context.states.values())
    assert context.decide() == []  # in line: nothing more to write


def test_a_new_partition_without_live_replicas_waits() -> None:
    context = _context({1})
    context.topics["u"] = TopicAssignment("u", uuid.uuid4(), {0: (2, 3)})
    _apply(context)
    assert ("u", 0) not in context.states
    context.live_brokers.add(3)
    assert [(c.topic, c.after.leader, c.after.isr) for c in _apply(context)] == [("u", 3, (3,))]


def test_leader_failure_elects_from_the_isr_and_shrinks_it() -> None:
    context = _context({1, 2, 3})
    _apply(context)
    context.live_brokers.discard(1)
    changes = {c.partition: c for c in _apply(context)}
    assert changes[0].reason == "leader_elected"
    assert _state(context, 0) == (2, 1, (2, 3))
    assert changes[1].reason == "isr_shrunk"  # partition 1's leader (2) lives: only the ISR changes
    assert _state(context, 1) == (2, 1, (2, 3))
    assert changes[0].before is not None and changes[0].after.zk_version == changes[0].before.zk_version


def test_last_isr_member_lost_goes_offline_and_only_it_may_lead_again() -> None:
    context = _context({1, 2, 3})
    _apply(context)
    context.live_brokers -= {2, 3}
    _apply(context)
    assert _state(context, 0) == (1, 1, (1,))
    context.live_brokers.discard(1)
    changes = _apply(context)
    assert {c.reason for c in changes} == {"leader_offline"}
    assert _state(context, 0) == (NO_LEADER, 2, (1,))
    assert context.decide() == []  # offline and unchanged: no further writes
    context.live_brokers |= {2, 3}  # out-of-sync replicas return: a clean election picks none of them
    assert context.decide() == []
    context.live_brokers.add(1)
    changes = _apply(context)
    assert _state(context, 0) == (1, 3, (1,))  # the ISR grows back through the leader, not the controller
    assert {c.reason for c in changes} == {"leader_elected"}


def test_unclean_election_takes_a_live_replica_outside_the_isr() -> None:
    context = _context({1, 2, 3}, unclean=True)
    _apply(context)
    context.live_brokers -= {2, 3}
    _apply(context)
    context.live_brokers = {3}
    _apply(context)
    assert _state(context, 0) == (3, 2, (3,))


def test_offline_partition_of_a_follower_only_isr_keeps_one_member() -> None:
    context = _context({1, 2, 3})
    context.states[("t", 0)] = PartitionState(NO_LEADER, 4, (2, 3), 2, zk_version=7)
    context.live_brokers = set()
    changes = [c for c in context.decide() if c.partition == 0]
    assert changes[0].after == PartitionState(NO_LEADER, 5, (2,), 3, 7)


def test_leader_isr_update_rules() -> None:
    state = PartitionState(1, 4, (1, 2), 2, zk_version=9)
    assert leader_isr_update(state, (1, 2, 3), 1, 4, [1, 2, 3]) == PartitionState(1, 4, (1, 2, 3), 2, 9)
    assert leader_isr_update(state, (1, 2, 3), 1, 4, [1]).isr == (1,)
    for leader, epoch, isr in ((2, 4, [1, 2]), (1, 3, [1, 2]), (1, 4, [2]), (1, 4, [1, 7])):
        with pytest.raises(InvalidIsrUpdate):
            leader_isr_update(state, (1, 2, 3), leader, epoch, isr)
