"""The feature levels this broker supports and has finalized (KIP-584), as ApiVersions reports them.

Kafka 4.3 finalizes metadata.version 4.3-IV0, kraft.version 0, group.version 1,
transaction.version 2, eligible.leader.replicas.version 1, share.version 1 and streams.version 1.
kbroker lists only what it truly implements; a client reads these levels to choose a protocol:
the Java producer 4.x uses transactions v2 (KIP-890: an epoch bump per transaction, partitions
added implicitly by Produce) only when transaction.version is finalized at 2 or more, and
consumers with group.protocol=consumer need group.version 1. A level of 0 means "off": Kafka
never lists it among the finalized features.

To raise a level, implement the behaviour first, then change its row here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feature:
    name: str
    min_version: int  # the supported range
    max_version: int
    finalized_level: int  # 0: not enabled


FEATURES: tuple[Feature, ...] = (
    # 0: classic groups only; 1: the consumer rebalance protocol (KIP-848), as Kafka 4.x finalizes it.
    Feature("group.version", 0, 1, 1),
    # 0: the original transaction protocol; 1: Kafka's flexible __transaction_state records
    # (kbroker's transaction log has its own layout); 2: transactions v2 (KIP-890): EndTxn v5
    # bumps the epoch per transaction, Produce v12 and TxnOffsetCommit v5 add partitions.
    Feature("transaction.version", 0, 2, 2),
    # 1: share groups (KIP-932): ShareGroupHeartbeat, ShareFetch, ShareAcknowledge, ...
    Feature("share.version", 0, 1, 1),
)

# The epoch of the finalized levels: they never change while kbroker runs.
FINALIZED_FEATURES_EPOCH = 0


def supported_features(api_version: int) -> list[dict[str, object]]:
    """ApiVersions' SupportedFeatures; before v4 a feature whose minimum is 0 is left out (KAFKA-17492)."""
    return [
        {"name": f.name, "min_version": f.min_version, "max_version": f.max_version}
        for f in FEATURES
        if api_version >= 4 or f.min_version > 0
    ]


def finalized_features() -> list[dict[str, object]]:
    return [
        {"name": f.name, "min_version_level": f.finalized_level, "max_version_level": f.finalized_level}
        for f in FEATURES
        if f.finalized_level > 0
    ]
