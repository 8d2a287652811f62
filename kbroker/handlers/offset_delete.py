"""OffsetDelete (47): drop a group's offsets of partitions it does not consume.

Allowed for an empty group, or for topics no member of a consumer group subscribes
to (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.OFFSET_DELETE, "0")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not request["group_id"]:  # unlike OffsetCommit, Kafka refuses the empty group id here
        ctx.require(AclOperation.DELETE, ResourceType.GROUP, "")
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INVALID_GROUP_ID), "topics": []}
    runtime = group_runtime(ctx.broker, request["group_id"] or "")
    ctx.require(AclOperation.DELETE, ResourceType.GROUP, request["group_id"] or "")
    errors: dict[tuple[str, int], ErrorCode] = {}
    known: list[tuple[str, int]] = []
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, {t["name"] for t in request["topics"]})
    for topic in request["topics"]:
        meta = ctx.broker.logs.topic(topic["name"])
        for partition in topic["partitions"]:
            tp = (topic["name"], partition["partition_index"])
            if topic["name"] not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= tp[1] < meta.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                known.append(tp)
    error, results = await runtime.delete_offsets(request["group_id"] or "", known)
    if error is not ErrorCode.NONE:
        return {"throttle_time_ms": 0, "error_code": int(error), "topics": []}
    errors.update(results)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "topics": [
            {
                "name": topic["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": int(errors[(topic["name"], p["partition_index"])]),
                    }
                    for p in topic["partitions"]
                ],
            }
            for topic in request["topics"]
        ],
    }
