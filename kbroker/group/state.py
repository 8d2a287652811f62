"""The classic group states and the transitions each one allows (as Kafka's ClassicGroupState documents them)."""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    """A classic group's lifecycle; the value is the name DescribeGroups and ListGroups report."""

    # No members; the group may hold committed offsets. A join starts a rebalance, expiry or deletion ends it.
    EMPTY = "Empty"
    # Waiting for every known member to (re)join within the rebalance timeout.
    PREPARING_REBALANCE = "PreparingRebalance"
    # Members joined; waiting for the leader's assignments in SyncGroup.
    COMPLETING_REBALANCE = "CompletingRebalance"
    # Assignments handed out; members heartbeat and commit.
    STABLE = "Stable"
    # Deleted, or its offsets expired: the group is gone.
    DEAD = "Dead"

    def can_become(self, target: GroupState) -> bool:
        return self in VALID_PREVIOUS[target]


VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(
        {GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE}
    ),
}


def parse_state(name: str) -> GroupState | None:
    """The state called `name` (case-insensitive, as ListGroups' states filter), or None."""
    lowered = name.lower()
    for state in GroupState:
        if state.value.lower() == lowered:
            return state
    return None
