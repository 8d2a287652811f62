"""What the topic and config admin APIs share: Kafka's topic-name rules, topic-config validation,
config resource types, and DescribeConfigs-style rows.

Errors are raised as KafkaProtocolError carrying the code and message Kafka's controller answers
with, so each handler turns them into a per-topic or per-resource result.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from enum import IntEnum
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.config import TOPIC_PROPERTIES, ConfigEntry, ConfigError, validate_topic_configs
from kbroker.config_defs import UNSUPPORTED_TOPIC_CONFIGS, suggest
from kbroker.log import InvalidConfigError, LogConfig, TopicMetadata
from protocol.errors import ErrorCode, KafkaProtocolError

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
ZERO_UUID = b"\x00" * 16
# Kafka's controller refuses a single operation writing more records than this.
MAX_PARTITIONS_PER_REQUEST = 10_000
_LEGAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class ResourceType(IntEnum):
    """Config resource types, numbered as DescribeConfigs / AlterConfigs carry them."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


def resource_type_name(code: int) -> str:
    try:
        return ResourceType(code).name
    except ValueError:
        return str(code)


NO_MESSAGE = ""  # where Kafka answers an error without a message (null, or "" where the field is not nullable)


def fail(code: ErrorCode, message: str | None = None) -> KafkaProtocolError:
    return KafkaProtocolError(code, message)


# --------------------------------------------------------------------------- topic names


def invalid_topic_reason(name: str) -> str | None:
    """Why Kafka refuses `name` as a topic name, or None when it is legal."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    if not _LEGAL_CHARS.issuperset(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def check_topic_name(name: str | None) -> str:
    """The name, or INVALID_TOPIC_EXCEPTION with Kafka's reason."""
    if name is None:
        raise fail(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: null")
    reason = invalid_topic_reason(name)
    if reason is not None:
        raise fail(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")
    return name


def colliding_topic(name: str, existing: Iterable[str]) -> str | None:
    """An existing topic whose name differs from `name` only by '.' versus '_' (metric names collide)."""
    if "." not in name and "_" not in name:
        return None
    unified = name.replace(".", "_")
    for other in existing:
        if other != name and other.replace(".", "_") == unified:
            return other
    return None


def find_topic_by_id(broker: Broker, topic_id: bytes) -> TopicMetadata | None:
    wanted = uuid.UUID(bytes=bytes(topic_id))
    for metadata in broker.logs.topics().values():
        if metadata.topic_id == wanted:
            return metadata
    return None


# --------------------------------------------------------------------------- topic configs


def check_topic_configs(broker: Broker, overrides: Mapping[str, str | None]) -> dict[str, str]:
    """Validate a topic's complete override set as Kafka does; INVALID_CONFIG naming the key otherwise.

    Returns the overrides as stored (raw strings). Null values are refused, unknown names are
    refused (with a hint), values are parsed against the topic config table and then by the
    storage engine, and Kafka's cross-field rule on compaction lags is applied.
    """
    nulls = [name for name, value in overrides.items() if value is None]
    if nulls:
        raise fail(ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs: " + ",".join(nulls))
    for name in overrides:
        if name not in TOPIC_PROPERTIES:
            raise fail(ErrorCode.INVALID_CONFIG, unknown_topic_config_message(name))
    values: dict[str, str] = {name: str(value) for name, value in overrides.items()}
    try:
        validate_topic_configs(values)
        LogConfig.from_properties(values, broker.logs.default_config)
    except (ConfigError, InvalidConfigError) as exc:
        raise fail(ErrorCode.INVALID_CONFIG, str(exc)) from None
    typed = broker.config.topic_config(values)
    if typed["remote.storage.enable"] is True:  # Kafka's answer when its tiered storage is off
        message = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
        raise fail(ErrorCode.INVALID_CONFIG, message)
    low, high = typed["min.compaction.lag.ms"], typed["max.compaction.lag.ms"]
    assert isinstance(low, int) and isinstance(high, int)
    if low > high:
        message = f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
        raise fail(ErrorCode.INVALID_CONFIG, message)
    return values


def unknown_topic_config_message(name: str) -> str:
    if name in UNSUPPORTED_TOPIC_CONFIGS:
        return f"Unknown topic config name: {name} (a Kafka topic config that kbroker does not support)"
    return f"Unknown topic config name: {name}{suggest(name, TOPIC_PROPERTIES)}"


def topic_config_entries(broker: Broker, metadata: TopicMetadata) -> list[ConfigEntry]:
    """Every topic config of the topic, with Kafka's sources (topic override, static broker, default)."""
    return broker.config.topic_entries(metadata.configs)


def is_list_config(name: str) -> bool:
    prop = TOPIC_PROPERTIES.get(name)
    return prop is not None and prop.type.name == "LIST"


# --------------------------------------------------------------------------- broker resources


def check_broker_name(broker: Broker, name: str) -> None:
    """A BROKER resource names this node's id (or is empty: the cluster-wide default)."""
    if not name:
        return
    try:
        node = int(name)
    except ValueError:
        raise fail(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if node != broker.node_id:
        raise fail(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {broker.node_id} or empty string, but received {name}",
        )


def result_error(exc: KafkaProtocolError) -> dict[str, Any]:
    return {"error_code": int(exc.code), "error_message": exc.message}
