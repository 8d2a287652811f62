"""ConsumerGroupHeartbeat (68), versions 0-1: join, stay in, or leave a consumer-protocol group (KIP-848).

The handler translates topic ids to names and back; the rules are kbroker/group/consumer_coordinator.py.
One namespace holds every group: a share group's id is refused as Kafka refuses it.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.consumer_coordinator import ConsumerHeartbeat
from kbroker.group.consumer_group import Assignment
from kbroker.handlers._share import topic_id, topic_names_by_id
from kbroker.handlers.registry import handles
from kbroker.share import share_runtime
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker, request["group_id"] or "")
    group_id = request["group_id"]
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id or ""):
        return _answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    subscribed = request["subscribed_topic_names"] or []
    denied = set(subscribed) - ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)
    if denied:
        return _answer(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"Unauthorized topics: {', '.join(sorted(denied))}")
    if group_id in share_runtime(ctx.broker).coordinator.groups:
        return _answer(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    owned = None
    if request["topic_partitions"] is not None:
        names = topic_names_by_id(ctx)
        owned = {
            names[t["topic_id"]]: frozenset(t["partitions"])
            for t in request["topic_partitions"]
            if t["topic_id"] in names
        }
    names_subscribed = request["subscribed_topic_names"]
    result = runtime.consumer_heartbeat(
        ConsumerHeartbeat(
            group_id=group_id,
            member_id=request["member_id"],
            member_epoch=request["member_epoch"],
            instance_id=request["instance_id"],
            rack_id=request["rack_id"],
            rebalance_timeout_ms=request["rebalance_timeout_ms"],
            subscribed_topic_names=None if names_subscribed is None else tuple(names_subscribed),
            subscribed_topic_regex=request.get("subscribed_topic_regex"),
            server_assignor=request["server_assignor"],
            owned=owned,
            client_id=ctx.client_id or "",
            client_host="/" + ctx.client_host.rsplit(":", 1)[0],  # Kafka shows "/<ip>", without the port
            api_version=ctx.api_version,
        )
    )
    if result.error is not ErrorCode.NONE:
        ctx.log.info("consumer_group_heartbeat_refused", group=group_id, error=result.error.name, reason=result.message)
        return _answer(result.error, result.message)
    answer = _answer(ErrorCode.NONE, None)
    answer.update(
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=None if result.assignment is None else {"topic_partitions": _by_id(ctx, result.assignment)},
    )
    return answer


def _by_id(ctx: RequestContext, assignment: Assignment) -> list[dict[str, Any]]:
    result = []
    for topic, partitions in sorted(assignment.items()):
        uuid = topic_id(ctx, topic)
        if uuid is not None and partitions:
            result.append({"topic_id": uuid, "partitions": sorted(partitions)})
    return result


def _answer(error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": message,
        "member_id": None,
        "member_epoch": 0,
        "heartbeat_interval_ms": 0,
        "assignment": None,
    }
