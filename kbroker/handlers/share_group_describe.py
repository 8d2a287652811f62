"""ShareGroupDescribe (77), version 1: epochs, members and assignments of share groups.

As Kafka answers: an unknown group, or a classic or consumer group's id, gets GROUP_ID_NOT_FOUND; an empty
id INVALID_GROUP_ID; a group in error has the fields' defaults (state "", epochs 0).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._share import is_classic_or_consumer_group, not_a_share_group, topic_id
from kbroker.handlers.registry import handles
from kbroker.share import share_runtime
from kbroker.share.group import ASSIGNOR, Assignment, ShareGroup
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)


@handles(ApiKey.SHARE_GROUP_DESCRIBE, "1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    groups = []
    for group_id in request["group_ids"]:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            denied = _describe(ctx, group_id, None)
            denied.update(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED), error_message=None)
            groups.append(denied)
            continue
        if not group_id:
            described = _describe(ctx, group_id, None)
            described.update(error_code=int(ErrorCode.INVALID_GROUP_ID), error_message=None)
            groups.append(described)
            continue
        described = _describe(ctx, group_id, runtime.coordinator.groups.get(group_id))
        if request["include_authorized_operations"] and described["error_code"] == 0:
            described["authorized_operations"] = ctx.authorized_operations(ResourceType.GROUP, group_id)
        groups.append(described)
    return {"throttle_time_ms": 0, "groups": groups}


def _describe(ctx: RequestContext, group_id: str, group: ShareGroup | None) -> dict[str, Any]:
    described: dict[str, Any] = {
        "error_code": 0,
        "error_message": None,
        "group_id": group_id,
        "group_state": "",
        "group_epoch": 0,
        "assignment_epoch": 0,
        "assignor_name": "",
        "members": [],
        "authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }
    if group is None:
        described["error_code"] = int(ErrorCode.GROUP_ID_NOT_FOUND)
        other = is_classic_or_consumer_group(ctx, group_id)
        described["error_message"] = not_a_share_group(group_id) if other else f"Group {group_id} not found."
        return described
    described.update(
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=ASSIGNOR,
        members=[
            {
                "member_id": m.member_id,
                "rack_id": m.rack_id,
                "member_epoch": m.member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "assignment": {"topic_partitions": _partitions(ctx, m.assignment)},
            }
            for m in group.members.values()
        ],
    )
    return described


def _partitions(ctx: RequestContext, assignment: Assignment) -> list[dict[str, Any]]:
    result = []
    for topic, partitions in sorted(assignment.items()):
        uuid = topic_id(ctx, topic)
        if uuid is not None:
            result.append({"topic_id": uuid, "topic_name": topic, "partitions": list(partitions)})
    return result
