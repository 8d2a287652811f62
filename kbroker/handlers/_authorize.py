"""Authorization checks that take more than one line in a handler (Kafka's rules for Produce and Metadata)."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import CLUSTER_NAME, AclOperation, ResourceType
from kbroker.context import AUTHORIZATION_ERRORS, RequestContext
from protocol.errors import ErrorCode
from protocol.records import HEADER_SIZE, RecordBatch


def produce_denied(ctx: RequestContext, request: dict[str, Any]) -> dict[str, ErrorCode]:
    """Topic -> the error all its partitions get: a transactional batch needs WRITE on the transactional id
    (else every partition fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED), every topic WRITE on the topic."""
    if ctx.broker.authorizer is None:
        return {}
    names = {t["name"] for t in request["topic_data"]}
    if _has_transactional_batch(request):
        transactional_id = request["transactional_id"]
        if not transactional_id or not ctx.authorize(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return dict.fromkeys(names, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    allowed = ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, names)
    return dict.fromkeys(names - allowed, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _has_transactional_batch(request: dict[str, Any]) -> bool:
    for topic in request["topic_data"]:
        for partition in topic["partition_data"]:
            records = partition["records"]
            if records is not None and len(records) >= HEADER_SIZE and RecordBatch(records).is_transactional:
                return True
    return False


def metadata_denied(ctx: RequestContext, names: set[str], allow_create: bool) -> set[str]:
    """The requested topics Metadata answers TOPIC_AUTHORIZATION_FAILED: those the client may not describe, and
    missing ones it would auto-create without CREATE on the cluster or on the topic."""
    if ctx.broker.authorizer is None:
        return set()
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    denied = names - describable
    missing = {n for n in describable if ctx.broker.logs.topic(n) is None}
    if (
        missing
        and allow_create
        and ctx.broker.config.get_bool("auto.create.topics.enable")
        and not ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER, log=False)
    ):
        denied |= missing - ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, missing)
    return denied


# config resource types (DescribeConfigs / AlterConfigs numbering)
_CONFIG_TOPIC, _CONFIG_GROUP = 2, 32
_CONFIG_ON_CLUSTER = frozenset({4, 8, 16})  # BROKER, BROKER_LOGGER, CLIENT_METRICS


def config_denied(ctx: RequestContext, config_type: int, name: str, operation: AclOperation) -> ErrorCode | None:
    """The error for a config resource the client may not DESCRIBE_CONFIGS / ALTER_CONFIGS, or None: broker,
    logger and client-metrics configs need the operation on the cluster, a topic's or group's on itself."""
    if config_type == _CONFIG_TOPIC:
        resource = ResourceType.TOPIC
    elif config_type == _CONFIG_GROUP:
        resource = ResourceType.GROUP
    elif config_type in _CONFIG_ON_CLUSTER:
        resource, name = ResourceType.CLUSTER, CLUSTER_NAME
    else:
        return None  # an unknown type is answered by the handler
    if ctx.authorize(operation, resource, name):
        return None
    return AUTHORIZATION_ERRORS[resource]
