"""Topic-level log settings, named as Kafka names them.

`LogConfig.from_properties({"retention.ms": "60000"})` builds a config from
Kafka property names (strings or already-typed values) on top of a base
config, raising InvalidConfigError with the property name for a bad value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbroker.log.errors import InvalidConfigError

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one topic's partition logs (Kafka topic config names in comments)."""

    segment_bytes: int = 1 << 30  # segment.bytes
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms
    retention_ms: int = 14 * 24 * 3600 * 1000  # retention.ms, -1 = unlimited
    retention_bytes: int = -1  # retention.bytes, -1 = unlimited
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    flush_messages: int = LONG_MAX  # flush.messages
    flush_ms: int = LONG_MAX  # flush.ms
    max_message_bytes: int = 1048588  # max.message.bytes
    message_timestamp_type: str = CREATE_TIME  # message.timestamp.type
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    message_timestamp_after_max_ms: int = 3_600_000  # message.timestamp.after.max.ms (Kafka 4: one hour)
    cleanup_policy: str = "delete"  # cleanup.policy
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    fsync_before_ack: bool = False  # kbroker.fsync.before.ack: fsync before an acks=all produce is acknowledged

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        """`base` (default: Kafka's defaults) with the given Kafka-named properties applied.

        Names Kafka knows but the log does not use (compression.type, ...) are accepted and
        ignored; unknown names and bad values raise InvalidConfigError.
        """
        changes: dict[str, Any] = {}
        for name, raw in properties.items():
            spec = _PROPERTIES.get(name)
            if spec is None:
                if name in OTHER_TOPIC_CONFIGS:
                    continue
                raise InvalidConfigError(f"unknown topic config name {name!r}")
            field, parse = spec
            changes[field] = parse(name, raw)
        return dataclasses.replace(base or cls(), **changes)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacted(self) -> bool:
        """cleanup.policy contains compact: every produced record needs a key."""
        return "compact" in self.cleanup_policy.split(",")


def _long(minimum: int, maximum: int = LONG_MAX) -> Callable[[str, Any], int]:
    def parse(name: str, raw: Any) -> int:
        if isinstance(raw, bool):
            raise InvalidConfigError(f"{name}: expected an integer, got {raw!r}")
        try:
            value = int(raw.strip()) if isinstance(raw, str) else int(raw)
        except (TypeError, ValueError):
            raise InvalidConfigError(f"{name}: expected an integer, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise InvalidConfigError(f"{name}: {value} is outside [{minimum}, {maximum}]")
        return value

    return parse


def _boolean(name: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidConfigError(f"{name}: expected true or false, got {raw!r}")
    return text == "true"


def _timestamp_type(name: str, raw: Any) -> str:
    if raw not in (CREATE_TIME, LOG_APPEND_TIME):
        raise InvalidConfigError(f"{name}: expected {CREATE_TIME} or {LOG_APPEND_TIME}, got {raw!r}")
    return str(raw)


def _cleanup_policy(name: str, raw: Any) -> str:
    policies = [part.strip() for part in str(raw).split(",") if part.strip()]
    if any(p not in ("delete", "compact") for p in policies):  # empty: neither (as Kafka accepts)
        raise InvalidConfigError(f"{name}: expected a list of delete/compact, got {raw!r}")
    return ",".join(policies)


_PROPERTIES: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "segment.bytes": ("segment_bytes", _long(14, INT_MAX)),
    "segment.ms": ("segment_ms", _long(1)),
    "retention.ms": ("retention_ms", _long(-1)),
    "retention.bytes": ("retention_bytes", _long(-1)),
    "index.interval.bytes": ("index_interval_bytes", _long(0, INT_MAX)),
    "segment.index.bytes": ("segment_index_bytes", _long(12, INT_MAX)),
    "flush.messages": ("flush_messages", _long(1)),
    "flush.ms": ("flush_ms", _long(0)),
    "max.message.bytes": ("max_message_bytes", _long(0, INT_MAX)),
    "message.timestamp.type": ("message_timestamp_type", _timestamp_type),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _long(0)),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _long(0)),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "file.delete.delay.ms": ("file_delete_delay_ms", _long(0)),
    "kbroker.fsync.before.ack": ("fsync_before_ack", _boolean),
}

#: Kafka property name of every LogConfig field.
PROPERTY_NAMES: dict[str, str] = {field: name for name, (field, _) in _PROPERTIES.items()}

#: Topic configs Kafka accepts that the log itself does not act on (kept by the caller).
OTHER_TOPIC_CONFIGS = frozenset(
    {
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.difference.max.ms",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "segment.jitter.ms",
        "unclean.leader.election.enable",
    }
)


#: Broker-level defaults (server.properties names) of each topic setting, by precedence.
BROKER_PROPERTIES: dict[str, tuple[tuple[str, int], ...]] = {
    "segment.bytes": (("log.segment.bytes", 1),),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "retention.bytes": (("log.retention.bytes", 1),),
    "index.interval.bytes": (("log.index.interval.bytes", 1),),
    "segment.index.bytes": (("log.index.size.max.bytes", 1),),
    "flush.messages": (("log.flush.interval.messages", 1),),
    "flush.ms": (("log.flush.interval.ms", 1),),
    "max.message.bytes": (("message.max.bytes", 1),),
    "message.timestamp.type": (("log.message.timestamp.type", 0),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1),),
    "cleanup.policy": (("log.cleanup.policy", 0),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1),),
    "kbroker.fsync.before.ack": (("kbroker.fsync.before.ack", 0),),
}


def from_broker_properties(properties: Mapping[str, Any]) -> LogConfig:
    """The broker-wide default LogConfig from server.properties names (log.retention.hours, ...).

    As in Kafka, *.ms beats *.minutes beats *.hours; a negative retention means unlimited.
    Names that are not log settings are ignored.
    """
    topic_properties: dict[str, Any] = {}
    for topic_name, candidates in BROKER_PROPERTIES.items():
        for broker_name, unit_ms in candidates:
            if broker_name not in properties:
                continue
            raw = properties[broker_name]
            if unit_ms > 1:
                value = _long(-1 if topic_name == "retention.ms" else 1)(broker_name, raw)
                raw = value if value < 0 else value * unit_ms
            topic_properties[topic_name] = raw
            break
    return LogConfig.from_properties(topic_properties)


def to_properties(config: LogConfig) -> dict[str, str]:
    """Every setting as a Kafka property name and string value (for DescribeConfigs)."""
    out: dict[str, str] = {}
    for field, name in PROPERTY_NAMES.items():
        value = getattr(config, field)
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out
