"""IncrementalAlterConfigs (44) v0-1: SET, DELETE, APPEND or SUBTRACT single config entries of topics,
brokers (dynamic configs, per broker or the cluster default), groups and broker loggers.

DELETE drops an override (the broker default applies again; deleting one that is not set is a
no-op, as in Kafka). APPEND and SUBTRACT work on list configs (cleanup.policy, log.cleanup.policy)
only; they start from the override, or else from the topic's effective default (a topic) or Kafka's
default (a broker), as Kafka does. The resource loop, validation and each resource's handling are
in alter_configs.py; BROKER_LOGGER operations in _broker_loggers.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers._broker_configs import broker_list_base, is_list_broker_config
from kbroker.handlers._topic_admin import ResourceType, fail, is_list_config
from kbroker.handlers.alter_configs import alter_resources
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


class OpType(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    return alter_resources(
        ctx,
        request,
        _apply_ops,
        null_allowed=lambda e: e["config_operation"] == OpType.DELETE,
        incremental=True,
    )


def _apply_ops(
    ctx: RequestContext, resource_type: int, current: Mapping[str, str], configs: list[dict[str, Any]]
) -> dict[str, str | None]:
    overrides: dict[str, str | None] = dict(current)
    for entry in configs:
        name, value, op = entry["name"], entry["value"], entry["config_operation"]
        if op == OpType.SET:
            overrides[name] = value
        elif op == OpType.DELETE:
            overrides.pop(name, None)
        elif op in (OpType.APPEND, OpType.SUBTRACT):
            overrides[name] = _list_op(ctx, resource_type, OpType(op), name, value, overrides)
        else:
            raise fail(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op} (config {name})")
    return overrides


def _list_op(
    ctx: RequestContext, resource_type: int, op: OpType, name: str, value: str, overrides: Mapping[str, str | None]
) -> str:
    broker = resource_type == ResourceType.BROKER
    if not (is_list_broker_config(name) if broker else resource_type == ResourceType.TOPIC and is_list_config(name)):
        raise fail(ErrorCode.INVALID_CONFIG, f"Can't {op.name} to key {name} because its type is not LIST.")
    if broker:
        base: str | None = broker_list_base(overrides, name)
    else:
        base = overrides[name] if name in overrides else ctx.broker.config.topic_defaults()[name]
    items = [item.strip() for item in (base or "").split(",") if item.strip()]
    for item in (part.strip() for part in value.split(",")):
        if op == OpType.APPEND and item and item not in items:
            items.append(item)
        elif op == OpType.SUBTRACT and item in items:
            items.remove(item)
    return ",".join(items)
