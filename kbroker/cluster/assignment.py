"""Replica assignment for new topics and partitions: Kafka's rack-unaware round robin.

Brokers sorted by id; partition p's first replica is broker (p + start) mod n, its followers follow at a
shift that grows by one every n partitions, so that leaders and followers spread evenly. `start` and
`shift` are random in Kafka (and here, by default); tests fix them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable


class InvalidReplicationFactor(ValueError):
    """Kafka's INVALID_REPLICATION_FACTOR."""


class InvalidReplicaAssignment(ValueError):
    """Kafka's INVALID_REPLICA_ASSIGNMENT."""


def assign_replicas(
    brokers: Iterable[int],
    partitions: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    start: int | None = None,
    shift: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Replicas of partitions first_partition .. first_partition + partitions - 1."""
    ids = sorted(set(brokers))
    count = len(ids)
    if replication_factor <= 0:
        raise InvalidReplicationFactor("Replication factor must be larger than 0.")
    if replication_factor > count:
        raise InvalidReplicationFactor(
            f"Replication factor: {replication_factor} larger than available brokers: {count}."
        )
    if partitions <= 0:
        raise ValueError("Number of partitions must be larger than 0.")
    start = random.randrange(count) if start is None else start
    shift = random.randrange(count) if shift is None else shift
    result: dict[int, tuple[int, ...]] = {}
    for partition in range(first_partition, first_partition + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(ids[(first + 1 + (shift + j) % (count - 1)) % count])
        result[partition] = tuple(replicas)
    return result


def check_explicit_assignment(
    assignment: dict[int, tuple[int, ...]], live_brokers: Iterable[int], first_partition: int = 0
) -> None:
    """A client's own assignment (CreateTopics / CreatePartitions): consecutive partitions, one replication
    factor, no broker twice in a partition, only known brokers."""
    live = set(live_brokers)
    expected = list(range(first_partition, first_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise InvalidReplicaAssignment("partitions must be numbered consecutively from " + str(first_partition))
    factors = {len(replicas) for replicas in assignment.values()}
    if len(factors) != 1 or 0 in factors:
        raise InvalidReplicaAssignment("All partitions should have the same number of replicas")
    for partition, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(f"Duplicate brokers not allowed in replica assignment of {partition}")
        unknown = sorted(set(replicas) - live)
        if unknown:
            raise InvalidReplicaAssignment(f"Unknown broker(s) {unknown} in replica assignment of {partition}")
