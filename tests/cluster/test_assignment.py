"""Kafka's rack-unaware replica assignment, and checks of a client's explicit assignment."""

from __future__ import annotations

from collections import Counter

import pytest

from kbroker.cluster.assignment import (
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    assign_replicas,
    check_explicit_assignment,
)


def test_round_robin_with_a_growing_follower_shift() -> None:
    # Kafka's own expectation for brokers 0-4, 10 partitions, 3 replicas, start and shift fixed at 0
    assert assign_replicas(range(5), 10, 3, start=0, shift=0) == {
        0: (0, 1, 2),
        1: (1, 2, 3),
        2: (2, 3, 4),
        3: (3, 4, 0),
        4: (4, 0, 1),
        5: (0, 2, 3),
        6: (1, 3, 4),
        7: (2, 4, 0),
        8: (3, 0, 1),
        9: (4, 1, 2),
    }


def test_broker_ids_are_sorted_and_need_not_be_dense() -> None:
    assert assign_replicas([30, 10, 20], 3, 2, start=0, shift=0) == {0: (10, 20), 1: (20, 30), 2: (30, 10)}


def test_random_start_spreads_leaders_evenly() -> None:
    assignment = assign_replicas([1, 2, 3], 30, 3)
    assert all(len(set(r)) == 3 for r in assignment.values())
    assert set(Counter(r[0] for r in assignment.values()).values()) == {10}


def test_new_partitions_continue_the_numbering() -> None:
    assert sorted(assign_replicas([1, 2, 3], 2, 1, first_partition=3)) == [3, 4]


@pytest.mark.parametrize("factor", [0, -1, 4])
def test_invalid_replication_factor(factor: int) -> None:
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas([1, 2, 3], 1, factor)


def test_explicit_assignment_checks() -> None:
    check_explicit_assignment({0: (1, 2), 1: (2, 3)}, {1, 2, 3})
    for bad in ({0: (1, 1)}, {0: (1, 2), 1: (1,)}, {0: (1, 9)}, {1: (1, 2)}, {0: ()}):
        with pytest.raises(InvalidReplicaAssignment):
            check_explicit_assignment(bad, {1, 2, 3})
