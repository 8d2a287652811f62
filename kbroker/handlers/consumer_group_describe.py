"""ConsumerGroupDescribe (69), versions 0-1: epochs, members, current and target assignments (KIP-848).

A group that is not a consumer-protocol group (unknown, classic, share) gets GROUP_ID_NOT_FOUND,
as Kafka answers; the admin client then describes classic groups with DescribeGroups.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.consumer_group import Assignment, ConsumerGroup
from kbroker.handlers._share import topic_id
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)
CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1  # v1: -1 unknown, 0 classic, 1 consumer


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    groups = []
    for group_id in request["group_ids"]:
        holder = runtime.groups.get(group_id)
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append({**_not_found(group_id, ""), "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)})
            groups[-1]["error_message"] = None
        elif not group_id:
            groups.append({**_not_found(group_id, ""), "error_code": int(ErrorCode.INVALID_GROUP_ID)})
            groups[-1]["error_message"] = None
        elif (owner := runtime.coordinator_error(group_id)) is not ErrorCode.NONE:  # another broker's (cluster)
            groups.append({**_not_found(group_id, ""), "error_code": int(owner), "error_message": None})
        elif holder is None and not _is_share_group(ctx, group_id):
            groups.append(_not_found(group_id, f"Group {group_id} not found."))
        elif holder is None or holder.consumer is None:
            groups.append(_not_found(group_id, f"Group {group_id} is not a consumer group."))
        else:
            groups.append(_authorized(ctx, request, _describe(ctx, group_id, holder.consumer)))
    return {"throttle_time_ms": 0, "groups": groups}


def _authorized(ctx: RequestContext, request: dict[str, Any], described: dict[str, Any]) -> dict[str, Any]:
    """As Kafka: a group whose members use topics the client may not describe is answered
    TOPIC_AUTHORIZATION_FAILED; the authorized operations when asked."""
    group_id = described["group_id"]
    if ctx.broker.authorizer is not None:
        topics = {name for m in described["members"] for name in m["subscribed_topic_names"]}
        for member in described["members"]:
            for kind in ("assignment", "target_assignment"):
                topics |= {t["topic_name"] for t in member[kind]["topic_partitions"]}
        if len(ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topics)) < len(topics):
            message = "The group has described topic(s) that the client is not authorized to describe."
            return {**_not_found(group_id, message), "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
    if request["include_authorized_operations"]:
        described["authorized_operations"] = ctx.authorized_operations(ResourceType.GROUP, group_id)
    return described


def _is_share_group(ctx: RequestContext, group_id: str) -> bool:
    shares = ctx.broker.shares  # not started for this: no share coordinator means no share group
    return shares is not None and group_id in shares.coordinator.groups


def _not_found(group_id: str, message: str) -> dict[str, Any]:
    return {
        "error_code": int(ErrorCode.GROUP_ID_NOT_FOUND),
        "error_message": message,
        "group_id": group_id,
        "group_state": "",  # the fields' defaults, as Kafka answers a group in error
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }


def _describe(ctx: RequestContext, group_id: str, group: ConsumerGroup) -> dict[str, Any]:
    described = _not_found(group_id, "")
    described.update(
        error_code=0,
        error_message=None,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor_name,
        members=[
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex,
                "assignment": {"topic_partitions": _partitions(ctx, m.assigned)},
                "target_assignment": {"topic_partitions": _partitions(ctx, group.target.get(m.member_id, {}))},
                "member_type": CONSUMER_MEMBER_TYPE if m.classic is None else CLASSIC_MEMBER_TYPE,
            }
            for m in group.members.values()
        ],
    )
    return described


def _partitions(ctx: RequestContext, assignment: Assignment) -> list[dict[str, Any]]:
    result = []
    for topic, partitions in sorted(assignment.items()):
        uuid = topic_id(ctx, topic)
        if uuid is not None and partitions:
            result.append({"topic_id": uuid, "topic_name": topic, "partitions": sorted(partitions)})
    return result
