"""DescribeConfigs (32) v1-4: the configs of topics (2), of this broker (4) or the cluster-wide
dynamic default (4, empty name), of loggers (BROKER_LOGGER, 8) and of groups (32).

Each entry carries its value, its source as Kafka reports it (TOPIC_CONFIG for a topic override,
DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG for a dynamic broker config, STATIC_BROKER_CONFIG
for a value set in server.properties, --config or a command-line flag, GROUP_CONFIG for a group
override, DEFAULT_CONFIG otherwise), read_only (false for the broker configs that can be altered at
run time), synonyms in Kafka's order when asked (v1+), and the type and documentation (v3+).
Names asked for that do not exist are left out, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation
from kbroker.config import BROKER_PROPERTIES, ConfigEntry
from kbroker.context import RequestContext
from kbroker.handlers._authorize import config_denied
from kbroker.handlers._broker_loggers import logger_entries
from kbroker.handlers._group_configs import group_config_entries
from kbroker.handlers._topic_admin import (
    NO_MESSAGE,
    ResourceType,
    check_broker_name,
    check_topic_name,
    fail,
    resource_type_name,
    topic_config_entries,
)
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

DESCRIBE_CONFIGS = AclOperation.DESCRIBE_CONFIGS


@handles(ApiKey.DESCRIBE_CONFIGS, "1-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    synonyms = bool(request["include_synonyms"])
    documentation = bool(request["include_documentation"])
    results = []
    for resource in request["resources"]:
        result: dict[str, Any] = {
            "resource_type": resource["resource_type"],
            "resource_name": resource["resource_name"],
        }
        try:
            denied = config_denied(ctx, resource["resource_type"], resource["resource_name"], DESCRIBE_CONFIGS)
            if denied is not None:
                raise fail(denied)
            wanted = resource["configuration_keys"] or None  # null or empty: every config
            entries = _entries(ctx, resource["resource_type"], resource["resource_name"], wanted)
            result.update(error_code=0, error_message="")  # as Kafka answers
            result["configs"] = [_config(e, synonyms, documentation) for e in entries]
        except KafkaProtocolError as exc:
            result.update(error_code=int(exc.code), error_message=exc.message, configs=[])
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _entries(ctx: RequestContext, resource_type: int, name: str, wanted: list[str] | None) -> list[ConfigEntry]:
    broker = ctx.broker
    if resource_type == ResourceType.TOPIC:
        check_topic_name(name)
        metadata = broker.logs.topic(name)
        if metadata is None:
            raise fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NO_MESSAGE)
        entries = topic_config_entries(broker, metadata)
        return entries if wanted is None else [e for e in entries if e.name in wanted]
    if resource_type == ResourceType.BROKER:
        check_broker_name(broker, name)
        if not name:
            entries = broker.config.cluster_default_entries()
            return entries if wanted is None else [e for e in entries if e.name in wanted]
        if wanted is None:
            return broker.config.broker_entries()
        # Named properties kbroker accepts but ignores are shown too; unknown names are left out
        # unless set dynamically.
        dynamic = {**broker.config.dynamic_default, **broker.config.dynamic_broker}
        named = [n for n in dict.fromkeys(wanted) if n in BROKER_PROPERTIES or n in dynamic]
        return broker.config.broker_entries(named)
    if resource_type == ResourceType.BROKER_LOGGER:
        return logger_entries(ctx, name, wanted)
    if resource_type == ResourceType.GROUP:
        entries = group_config_entries(ctx, name)
        return entries if wanted is None else [e for e in entries if e.name in wanted]
    raise fail(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {resource_type_name(resource_type)}")


def _config(entry: ConfigEntry, synonyms: bool, documentation: bool) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": entry.value,
        "read_only": entry.read_only,
        "config_source": int(entry.source),
        "is_default": False,
        "is_sensitive": entry.sensitive,
        "synonyms": [{"name": s.name, "value": s.value, "source": int(s.source)} for s in entry.synonyms]
        if synonyms
        else [],
        "config_type": int(entry.type),
        "documentation": entry.doc if documentation else None,
    }
