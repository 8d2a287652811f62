"""ListConfigResources (74) v0-1: the names of the resources that have configs (KIP-1142).

v0 (Kafka's former ListClientMetricsResources) lists client-metrics subscriptions: kbroker has none.
v1 lists the requested types, every type when none is named, as Kafka 4.3.1 answers: groups that
have configs (GROUP; a group without configs is not listed), this node (BROKER_LOGGER, BROKER), every
topic, internal ones included (TOPIC), and no client-metrics subscription. Another type is
UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation
from kbroker.auth.acl import ResourceType as AclResource
from kbroker.context import RequestContext
from kbroker.handlers._topic_admin import ResourceType
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

# Kafka's order when every type is asked for.
LISTED_TYPES = (
    ResourceType.GROUP,
    ResourceType.BROKER_LOGGER,
    ResourceType.BROKER,
    ResourceType.TOPIC,
    ResourceType.CLIENT_METRICS,
)


@handles(ApiKey.LIST_CONFIG_RESOURCES, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.DESCRIBE_CONFIGS, AclResource.CLUSTER):
        return _response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    if ctx.api_version == 0:
        return _response(ErrorCode.NONE, [])
    asked = request["resource_types"] or list(LISTED_TYPES)
    if any(t not in LISTED_TYPES for t in asked):
        return _response(ErrorCode.UNSUPPORTED_VERSION, [])
    found: list[dict[str, Any]] = []
    for kind in (t for t in LISTED_TYPES if t in asked):
        found += [{"resource_name": name, "resource_type": int(kind)} for name in _names(ctx, kind)]
    return _response(ErrorCode.NONE, found)


def _names(ctx: RequestContext, kind: ResourceType) -> list[str]:
    if kind == ResourceType.GROUP:
        return ctx.broker.dynamic_configs.groups()
    if kind in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        return [str(ctx.broker.node_id)]
    if kind == ResourceType.TOPIC:
        return sorted(ctx.broker.logs.topics())
    return []  # CLIENT_METRICS: kbroker has no client-metrics subscriptions


def _response(error: ErrorCode, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(error), "config_resources": resources}
