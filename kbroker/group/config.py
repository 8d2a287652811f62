"""The coordinator's settings, read once from the broker's group.* and offsets.* properties."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class _Properties(Protocol):
    def get_int(self, name: str) -> int: ...

    def get_list(self, name: str) -> tuple[str, ...]: ...

    def get_str(self, name: str) -> str: ...


# Kafka names its assignors by class in group.consumer.assignors; clients by these short names.
_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 0
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 10080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    offsets_topic_partitions: int = 50
    # consumer-protocol groups (KIP-848)
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_max_size: int = 2**31 - 1
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_migration_policy: str = "bidirectional"  # online migration between classic and consumer groups

    @classmethod
    def from_properties(cls, config: _Properties) -> GroupConfig:
        return cls(
            min_session_timeout_ms=config.get_int("group.min.session.timeout.ms"),
            max_session_timeout_ms=config.get_int("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=config.get_int("group.initial.rebalance.delay.ms"),
            max_size=config.get_int("group.max.size"),
            offset_metadata_max_bytes=config.get_int("offset.metadata.max.bytes"),
            offsets_retention_ms=config.get_int("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=config.get_int("offsets.retention.check.interval.ms"),
            offsets_topic_partitions=config.get_int("offsets.topic.num.partitions"),
            consumer_assignors=tuple(
                _ASSIGNOR_CLASSES.get(name.strip(), name.strip())
                for name in config.get_list("group.consumer.assignors")
            ),
            consumer_max_size=config.get_int("group.consumer.max.size"),
            consumer_session_timeout_ms=config.get_int("group.consumer.session.timeout.ms"),
            consumer_heartbeat_interval_ms=config.get_int("group.consumer.heartbeat.interval.ms"),
            consumer_migration_policy=config.get_str("group.consumer.migration.policy").strip().lower(),
        )
