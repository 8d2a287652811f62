"""Metadata (3): brokers, cluster id, controller, and topics with their partitions.

In cluster mode (zookeeper.connect) the answer comes from the cluster's metadata (_cluster_metadata.py).
A single node leads every partition with leader epoch 0. Missing topics are
created when the request allows it (always below v4) and auto.create.topics.enable
is on; as in Kafka, a topic created by this request is answered with
LEADER_NOT_AVAILABLE and the client asks again.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._authorize import metadata_denied
from kbroker.handlers.registry import handles
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import InvalidTopicError, TopicExistsError
from kbroker.log.metadata import validate_topic_name
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema.types import ZERO_UUID

LEADER_EPOCH = 0
AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)
DESCRIBE, TOPIC = AclOperation.DESCRIBE, ResourceType.TOPIC


@handles(ApiKey.METADATA, "0-12")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any] | Awaitable[dict[str, Any]]:
    broker = ctx.broker
    if broker.cluster is not None:  # cluster mode: the brokers, controller and partition states in ZooKeeper
        from kbroker.handlers._cluster_metadata import cluster_metadata

        return cluster_metadata(ctx, broker.cluster, request, _requested_topic)
    address = broker.advertised_for(ctx.listener)
    requested = request["topics"]
    if requested is None or (ctx.api_version == 0 and not requested):
        names = sorted(broker.logs.topics())
        if broker.authorizer is not None:  # topics the client may not describe are left out, unmentioned
            names = [
                n for n in names if broker.authorizer.authorize(ctx.principal, ctx.client_address, DESCRIBE, TOPIC, n)
            ]
        topics = [topic_metadata(ctx, name) for name in names]
    else:
        allow_create = ctx.api_version < 4 or request["allow_auto_topic_creation"]
        denied = metadata_denied(ctx, {t["name"] for t in requested if t["name"] is not None}, allow_create)
        topics = [
            _topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, t["name"])
            if t["name"] in denied
            else _requested_topic(ctx, t, allow_create)
            for t in requested
        ]
    if ctx.api_version >= 8 and request["include_topic_authorized_operations"]:
        for topic in topics:
            if topic["name"] and topic["error_code"] != ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                topic["topic_authorized_operations"] = ctx.authorized_operations(TOPIC, topic["name"])
    cluster_operations = AUTHORIZED_OPERATIONS_UNKNOWN
    if 8 <= ctx.api_version <= 10 and request["include_cluster_authorized_operations"]:
        allowed = ctx.authorize(DESCRIBE, ResourceType.CLUSTER)
        cluster_operations = ctx.authorized_operations(ResourceType.CLUSTER) if allowed else 0
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.node_id, "host": address.host, "port": address.port, "rack": None}],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "cluster_authorized_operations": cluster_operations,
    }


def _requested_topic(ctx: RequestContext, topic: dict[str, Any], allow_create: bool) -> dict[str, Any]:
    name = topic["name"]
    if name is None or (not name and topic.get("topic_id", ZERO_UUID) != ZERO_UUID):
        # a lookup by topic id (v10+), as share consumers and KIP-848 consumers resolve their assignments
        # (the Java consumer sends the name as "" rather than null)
        for known, meta in ctx.broker.logs.topics().items():
            if meta.topic_id.bytes == topic["topic_id"]:
                if not ctx.authorize(DESCRIBE, TOPIC, known):  # ids are not secret: Kafka answers with the id
                    return {**_topic_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "", topic["topic_id"]), "name": None}
                return topic_metadata(ctx, known)
        return _topic_error(ErrorCode.UNKNOWN_TOPIC_ID, None, topic["topic_id"])  # no name, as Kafka answers
    if ctx.broker.logs.topic(name) is not None:
        return topic_metadata(ctx, name)
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return _topic_error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    if name in INTERNAL_TOPICS:
        # Created by their coordinators, with their own partition counts and configs, on first use.
        return _topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    if not (allow_create and ctx.broker.config.get_bool("auto.create.topics.enable")):
        return _topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    return auto_create(ctx, name)


def auto_create(ctx: RequestContext, name: str) -> dict[str, Any]:
    partitions = ctx.broker.config.get_int("num.partitions")
    try:
        ctx.broker.logs.create_topic(name, partitions)
    except TopicExistsError:
        return topic_metadata(ctx, name)
    except InvalidTopicError:
        return _topic_error(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    ctx.log.info("topic_auto_created", topic=name, partitions=partitions)
    return _topic_error(ErrorCode.LEADER_NOT_AVAILABLE, name)


def topic_metadata(ctx: RequestContext, name: str) -> dict[str, Any]:
    meta = ctx.broker.logs.topic(name)
    if meta is None:
        return _topic_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    node = ctx.broker.node_id
    # One replica list for every partition (the encoder only reads them): with thousands of partitions a
    # response would otherwise make four containers a partition, and the collections they set off (a
    # full one traverses every partition's objects) made most of Metadata's tail latency.
    replicas: list[int] = [node]
    offline: list[int] = []
    return {
        "error_code": 0,
        "name": name,
        "topic_id": meta.topic_id.bytes,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [
            {
                "error_code": 0,
                "partition_index": index,
                "leader_id": node,
                "leader_epoch": LEADER_EPOCH,
                "replica_nodes": replicas,
                "isr_nodes": replicas,
                "offline_replicas": offline,
            }
            for index in range(meta.partitions)
        ],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }


def _topic_error(code: int, name: str | None, topic_id: bytes = b"\x00" * 16) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "name": name,
        "topic_id": topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }
