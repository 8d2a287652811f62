"""Topic-level log settings: the log's typed view of the topic configs it acts on.

Names, types, defaults and valid ranges are the configuration vocabulary's
(kbroker/config_defs.py, TOPIC_PROPERTIES): this module only says which LogConfig
field each of those configs fills. `LogConfig.from_properties({"retention.ms": "60000"})`
builds a config from Kafka property names (strings or already-typed values) on top of a
base config, raising InvalidConfigError naming the property for a bad value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kbroker.config_defs import BROKER_PROPERTIES, LONG_MAX, TOPIC_PROPERTIES, UNSUPPORTED_TOPIC_CONFIGS, ConfigError
from kbroker.log.errors import InvalidConfigError

__all__ = ["CREATE_TIME", "LOG_APPEND_TIME", "LONG_MAX", "PROPERTY_NAMES", "LogConfig", "to_properties"]

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"

#: LogConfig field -> the topic config (Kafka name) it holds.
PROPERTY_NAMES: dict[str, str] = {
    "segment_bytes": "segment.bytes",
    "segment_ms": "segment.ms",
    "retention_ms": "retention.ms",
    "retention_bytes": "retention.bytes",
    "index_interval_bytes": "index.interval.bytes",
    "segment_index_bytes": "segment.index.bytes",
    "flush_messages": "flush.messages",
    "flush_ms": "flush.ms",
    "max_message_bytes": "max.message.bytes",
    "message_timestamp_type": "message.timestamp.type",
    "message_timestamp_before_max_ms": "message.timestamp.before.max.ms",
    "message_timestamp_after_max_ms": "message.timestamp.after.max.ms",
    "cleanup_policy": "cleanup.policy",
    "file_delete_delay_ms": "file.delete.delay.ms",
    "fsync_before_ack": "kbroker.fsync.before.ack",
}
_FIELDS = {name: field for field, name in PROPERTY_NAMES.items()}


def _default(name: str) -> Any:
    """A topic config's default: its first broker synonym's default, in the topic's unit."""
    prop = TOPIC_PROPERTIES[name]
    for synonym in prop.synonyms:
        value = BROKER_PROPERTIES[synonym.name].default
        if value is None:
            continue
        if isinstance(value, tuple):
            return ",".join(value)
        if synonym.scale != 1 and isinstance(value, int) and value >= 0:
            return value * synonym.scale
        return value
    raise AssertionError(f"{name} has no default")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one topic's partition logs (Kafka topic config names in PROPERTY_NAMES)."""

    segment_bytes: int = _default("segment.bytes")
    segment_ms: int = _default("segment.ms")
    retention_ms: int = _default("retention.ms")  # -1 = unlimited
    retention_bytes: int = _default("retention.bytes")  # -1 = unlimited
    index_interval_bytes: int = _default("index.interval.bytes")
    segment_index_bytes: int = _default("segment.index.bytes")
    flush_messages: int = _default("flush.messages")
    flush_ms: int = _default("flush.ms")
    max_message_bytes: int = _default("max.message.bytes")
    message_timestamp_type: str = _default("message.timestamp.type")
    message_timestamp_before_max_ms: int = _default("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = _default("message.timestamp.after.max.ms")  # Kafka 4: one hour
    cleanup_policy: str = _default("cleanup.policy")  # comma-separated
    file_delete_delay_ms: int = _default("file.delete.delay.ms")
    fsync_before_ack: bool = _default("kbroker.fsync.before.ack")  # fsync before an acks=all produce is acknowledged

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        """`base` (default: the vocabulary's defaults) with the given Kafka-named properties applied.

        Topic configs the log does not act on (compression.type, ...) are accepted and ignored;
        unknown names and bad values raise InvalidConfigError.
        """
        changes: dict[str, Any] = {}
        for name, raw in properties.items():
            field = _FIELDS.get(name)
            if field is None:
                if name in TOPIC_PROPERTIES or name in UNSUPPORTED_TOPIC_CONFIGS:
                    continue
                raise InvalidConfigError(f"unknown topic config name {name!r}")
            changes[field] = _parse(name, raw)
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


def _parse(name: str, raw: Any) -> Any:
    """Parse and validate as the vocabulary declares the property (ConfigError -> InvalidConfigError)."""
    text = raw if isinstance(raw, str) else str(raw).lower() if isinstance(raw, bool) else str(raw)
    try:
        value = TOPIC_PROPERTIES[name].parse(text)
    except ConfigError as error:
        raise InvalidConfigError(str(error)) from None
    return ",".join(value) if isinstance(value, tuple) else value


def to_properties(config: LogConfig) -> dict[str, str]:
    """Every setting as a Kafka property name and string value."""
    out: dict[str, str] = {}
    for field, name in PROPERTY_NAMES.items():
        value = getattr(config, field)
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out
