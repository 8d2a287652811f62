"""ShareGroupHeartbeat (76), version 1: join, stay in, or leave a share group; the answer carries the assignment."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._share import is_classic_or_consumer_group, not_a_share_group, topic_id
from kbroker.handlers.registry import handles
from kbroker.share import share_runtime
from kbroker.share.coordinator import HeartbeatRequest
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, "1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    ctx.require(AclOperation.READ, ResourceType.GROUP, request["group_id"] or "")
    subscribed = request["subscribed_topic_names"] or []
    if len(ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)) < len(set(subscribed)):
        return _error(
            ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The client is not authorized to describe every subscribed topic."
        )
    if is_classic_or_consumer_group(ctx, request["group_id"]):
        return _error(ErrorCode.GROUP_ID_NOT_FOUND, not_a_share_group(request["group_id"]))
    topics = request["subscribed_topic_names"]
    result = runtime.heartbeat(
        HeartbeatRequest(
            group_id=request["group_id"],
            member_id=request["member_id"],
            member_epoch=request["member_epoch"],
            rack_id=request["rack_id"],
            subscribed_topic_names=None if topics is None else tuple(topics),
            client_id=ctx.client_id or "",
            client_host="/" + ctx.client_host.rsplit(":", 1)[0],  # Kafka shows "/<ip>", without the port
        )
    )
    assignment = None
    if result.assignment is not None:
        assigned = []
        for topic, partitions in sorted(result.assignment.items()):
            uuid = topic_id(ctx, topic)
            if uuid is not None:
                assigned.append({"topic_id": uuid, "partitions": list(partitions)})
        assignment = {"topic_partitions": assigned}
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "error_message": result.error_message,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
        "assignment": assignment,
    }


def _error(error: ErrorCode, message: str) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }
