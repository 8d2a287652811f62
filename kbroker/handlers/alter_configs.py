"""AlterConfigs (33) v0-2: replace the whole set of config overrides of topics, brokers and groups.

Also the resource loop IncrementalAlterConfigs shares. Checks follow Kafka (broker preprocessing,
then the controller): a resource named twice, a key named twice or a null value is INVALID_REQUEST;
a topic's resulting override set is validated as a whole (unknown names and bad values are
INVALID_CONFIG naming the key) before the topic's existence is checked (UNKNOWN_TOPIC_OR_PARTITION).
Accepted changes reach the running partition logs at once through LogManager.set_topic_configs.

A BROKER resource holds the dynamic broker configs of this node or, with an empty name, the cluster
default (_broker_configs.py); a GROUP resource the group configs (_group_configs.py). BROKER_LOGGER
resources are changed only by IncrementalAlterConfigs, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kbroker.auth.acl import AclOperation
from kbroker.context import RequestContext
from kbroker.handlers._authorize import config_denied
from kbroker.handlers._broker_configs import alter_broker_configs, current_broker_configs
from kbroker.handlers._broker_loggers import alter_loggers
from kbroker.handlers._group_configs import alter_group_configs, current_group_configs
from kbroker.handlers._topic_admin import (
    ResourceType,
    check_topic_configs,
    check_topic_name,
    fail,
    resource_type_name,
)
from kbroker.handlers.registry import handles
from kbroker.log import InvalidConfigError, KafkaStorageError, UnknownTopicOrPartitionError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

# (context, resource type, the resource's current configs, the request's config entries) -> the new configs
ConfigChange = Callable[[RequestContext, int, Mapping[str, str], list[dict[str, Any]]], dict[str, str | None]]
# Which entries may carry a null value (none for AlterConfigs; DELETE for IncrementalAlterConfigs)
NullAllowed = Callable[[dict[str, Any]], bool]


@handles(ApiKey.ALTER_CONFIGS, "0-2")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return alter_resources(ctx, request, _replace, null_allowed=lambda entry: False)


def _replace(
    ctx: RequestContext, resource_type: int, current: Mapping[str, str], configs: list[dict[str, Any]]
) -> dict[str, str | None]:
    return {entry["name"]: entry["value"] for entry in configs}


def alter_resources(
    ctx: RequestContext,
    request: dict[str, Any],
    change: ConfigChange,
    *,
    null_allowed: NullAllowed,
    incremental: bool = False,
) -> dict[str, Any]:
    """Apply `change` to every resource of an AlterConfigs-shaped request; one result per resource."""
    resources = request["resources"]
    keys = [(r["resource_type"], r["resource_name"]) for r in resources]
    responses = []
    for resource, key in zip(resources, keys, strict=True):
        error: KafkaProtocolError | None = None
        try:
            if keys.count(key) > 1:
                raise fail(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            denied = config_denied(ctx, key[0], key[1], AclOperation.ALTER_CONFIGS)
            if denied is not None:
                raise fail(denied)
            _check_entries(resource["configs"], null_allowed)
            _alter(ctx, resource, change, bool(request["validate_only"]), incremental)
        except KafkaProtocolError as exc:
            error = exc
        responses.append(
            {
                "error_code": int(error.code) if error else 0,
                "error_message": error.message if error else None,
                "resource_type": resource["resource_type"],
                "resource_name": resource["resource_name"],
            }
        )
    return {"throttle_time_ms": 0, "responses": responses}


def _check_entries(configs: list[dict[str, Any]], null_allowed: NullAllowed) -> None:
    names = [entry["name"] for entry in configs]
    if len(set(names)) != len(names):
        raise fail(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [entry["name"] for entry in configs if entry["value"] is None and not null_allowed(entry)]
    if nulls:
        raise fail(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


def _alter(
    ctx: RequestContext, resource: dict[str, Any], change: ConfigChange, validate_only: bool, incremental: bool
) -> None:
    resource_type, name, configs = resource["resource_type"], resource["resource_name"], resource["configs"]
    if resource_type == ResourceType.TOPIC:
        _alter_topic(ctx, name, configs, change, validate_only)
    elif resource_type == ResourceType.BROKER:
        current = current_broker_configs(ctx, name)
        alter_broker_configs(ctx, name, change(ctx, resource_type, current, configs), validate_only)
    elif resource_type == ResourceType.GROUP:
        current = current_group_configs(ctx, name)
        alter_group_configs(ctx, name, change(ctx, resource_type, current, configs), validate_only)
    elif resource_type == ResourceType.BROKER_LOGGER and incremental:
        alter_loggers(ctx, name, configs, validate_only)
    elif resource_type == ResourceType.BROKER_LOGGER:
        raise fail(ErrorCode.INVALID_REQUEST, "AlterConfigs does not support the resource type BROKER_LOGGER")
    else:
        raise fail(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource_type_name(resource_type)}")


def _alter_topic(
    ctx: RequestContext, name: str, configs: list[dict[str, Any]], change: ConfigChange, validate_only: bool
) -> None:
    if not name:
        raise fail(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    check_topic_name(name)
    logs = ctx.broker.logs
    metadata = logs.topic(name)
    current = metadata.configs if metadata else {}
    overrides = check_topic_configs(ctx.broker, change(ctx, ResourceType.TOPIC, current, configs))
    if metadata is None:
        cluster = ctx.broker.cluster
        if cluster is not None and name in cluster.metadata.topics and not overrides:
            # a cluster topic this broker holds no replica of keeps no configs here: removing overrides (as
            # kafka-reassign-partitions --verify removes its throttles) has nothing to change on this broker
            return
        raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if validate_only:
        return
    try:
        logs.set_topic_configs(name, overrides)
    except UnknownTopicOrPartitionError:
        raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.") from None
    except InvalidConfigError as exc:
        raise fail(ErrorCode.INVALID_CONFIG, str(exc)) from None
    except (KafkaStorageError, OSError) as exc:
        ctx.log.error("topic_configs_alter_failed", topic=name, error=str(exc))
        raise fail(ErrorCode.KAFKA_STORAGE_ERROR, f"Could not store the topic's configs: {exc}") from None
    ctx.log.info("topic_configs_altered", topic=name, configs=overrides)
