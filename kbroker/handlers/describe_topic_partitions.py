"""DescribeTopicPartitions (75) v0: topics and their partitions, page by page, as Kafka's broker pages them.

Topics (every topic when the list is empty) are taken in name order from the cursor's topic on,
the cursor's topic from its partition index. A page holds at most min(ResponsePartitionLimit,
max.request.partition.size.limit) partitions (at least 1); when a topic does not fit, the page
ends with the partitions that do and NextCursor points at the first one left; when the limit is
reached exactly at a topic's end, NextCursor points at the next topic's partition 0. A named
topic that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
illegal name); with every topic asked for there are no such errors. A cursor whose topic is not
among the named topics, or whose partition index is negative, makes the request invalid: every
named topic gets INVALID_REQUEST.

In cluster mode a topic's partitions are answered from the cluster's metadata (_cluster_metadata.py).
Alone, one node leads every partition with epoch 0 and is the only replica, in the ISR; the eligible
leader replicas (KIP-966) and the last known ELR are empty lists, as Kafka reports them for a
partition whose ISR is complete.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import InvalidTopicError
from kbroker.log.metadata import validate_topic_name
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

LEADER_EPOCH = 0
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
ZERO_UUID = b"\x00" * 16


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "0")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    known = _known_topics(ctx)
    named = [t["name"] for t in request["topics"]]
    cursor = request["cursor"]
    start_topic = cursor["topic_name"] if cursor is not None else ""
    every_topic = not named
    candidates = sorted({n for n in (known if every_topic else named) if n >= start_topic})
    if cursor is not None and ((not every_topic and start_topic not in candidates) or cursor["partition_index"] < 0):
        return {
            "throttle_time_ms": 0,
            "topics": [_error(ErrorCode.INVALID_REQUEST, n) for n in named],
            "next_cursor": None,
        }
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, candidates)
    denied = [_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n) for n in candidates if n not in describable]
    candidates = [n for n in candidates if n in describable]
    limit = max(
        min(ctx.broker.config.get_int("max.request.partition.size.limit"), request["response_partition_limit"]), 1
    )
    remaining = limit
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in candidates:
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        found = known.get(name)
        if found is None:
            if not every_topic:
                topics.append(_error(_missing_topic_error(name), name))
            continue
        topic_id, count = found
        first = cursor["partition_index"] if cursor is not None and name == start_topic else 0
        upper = min(count, first + remaining)
        topics.append(_topic(ctx, name, topic_id, range(first, upper)))
        if upper < count:
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= max(upper - first, 0)
    for topic in topics:
        topic["topic_authorized_operations"] = ctx.authorized_operations(ResourceType.TOPIC, topic["name"])
    if not every_topic:
        topics += denied
    return {"throttle_time_ms": 0, "topics": topics, "next_cursor": next_cursor}


def _known_topics(ctx: RequestContext) -> dict[str, tuple[bytes, int]]:
    """Topic id and partition count of every topic this broker describes: its logs' topics and, in cluster
    mode, the cluster's (a broker describes the topics it holds no replica of, as any Kafka broker does)."""
    known = {name: (meta.topic_id.bytes, meta.partitions) for name, meta in ctx.broker.logs.topics().items()}
    cluster = ctx.broker.cluster
    if cluster is not None:
        for name, assignment in cluster.metadata.topics.items():
            known[name] = (assignment.topic_id.bytes, len(assignment.partitions))
    return known


def _topic(ctx: RequestContext, name: str, topic_id: bytes, indexes: range) -> dict[str, Any]:
    node = ctx.broker.node_id
    cluster = ctx.broker.cluster
    if cluster is not None and name in cluster.metadata.topics:  # cluster mode: as the controller wrote them
        from kbroker.handlers._cluster_metadata import partition_entries

        partitions = partition_entries(cluster.metadata, name, indexes)
        for entry in partitions:
            entry["eligible_leader_replicas"], entry["last_known_elr"] = [], []
        return _topic_entry(name, topic_id, partitions)
    partitions = [
        {
            "error_code": 0,
            "partition_index": index,
            "leader_id": node,
            "leader_epoch": LEADER_EPOCH,
            "replica_nodes": [node],
            "isr_nodes": [node],
            "eligible_leader_replicas": [],
            "last_known_elr": [],
            "offline_replicas": [],
        }
        for index in indexes
    ]
    return _topic_entry(name, topic_id, partitions)


def _topic_entry(name: str, topic_id: bytes, partitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "error_code": 0,
        "name": name,
        "topic_id": topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


def _missing_topic_error(name: str) -> ErrorCode:
    try:
        validate_topic_name(name)
    except InvalidTopicError:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _error(code: ErrorCode, name: str) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "name": name,
        "topic_id": ZERO_UUID,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
