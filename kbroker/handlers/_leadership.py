"""Whether this broker leads a partition, and at which leader epoch: what Produce, Fetch, ListOffsets and
OffsetForLeaderEpoch check before touching the log.

A broker alone leads every partition at epoch 0. In cluster mode (zookeeper.connect) the epoch is the one
the controller wrote in ZooKeeper, and a broker that is not the partition's leader answers
NOT_LEADER_OR_FOLLOWER (clients then refresh their metadata and go to the leader). A client's
current_leader_epoch older than ours is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, as Kafka answers.
"""

from __future__ import annotations

from kbroker.context import RequestContext
from protocol.errors import ErrorCode

NO_EPOCH = -1


def leader_epoch(ctx: RequestContext, topic: str, partition: int) -> int | None:
    """This broker's leader epoch for the partition, or None when another broker leads it."""
    cluster = ctx.broker.cluster
    return 0 if cluster is None else cluster.leader_epoch(topic, partition)


def leadership_error(ctx: RequestContext, topic: str, partition: int, requested: int) -> tuple[ErrorCode | None, int]:
    """(error or None, this broker's leader epoch) for a request naming `requested` (-1: none)."""
    current = leader_epoch(ctx, topic, partition)
    if current is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, NO_EPOCH
    if requested == NO_EPOCH or requested == current:
        return None, current
    return (ErrorCode.FENCED_LEADER_EPOCH if requested < current else ErrorCode.UNKNOWN_LEADER_EPOCH), current
