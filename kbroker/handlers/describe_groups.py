"""DescribeGroups (15): state, protocol and members of classic groups.

An unknown group, or a consumer-protocol group (KIP-848), is reported as Dead with no
error, as Kafka answers before DescribeGroups v6. Member metadata and assignments, and the protocol name, only in Stable.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.state import GroupState
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)


@handles(ApiKey.DESCRIBE_GROUPS, "0-5")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    groups = []
    for group_id in request["groups"]:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_summary(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, ""))
            continue
        owner = runtime.coordinator_error(group_id)
        if owner is not ErrorCode.NONE:  # another broker coordinates it (cluster mode)
            groups.append(_summary(group_id, owner, ""))
            continue
        described = _describe(runtime.groups.get(group_id), group_id)
        if ctx.api_version >= 3 and request["include_authorized_operations"]:
            described["authorized_operations"] = ctx.authorized_operations(ResourceType.GROUP, group_id)
        groups.append(described)
    return {"throttle_time_ms": 0, "groups": groups}


def _describe(group: Any, group_id: str) -> dict[str, Any]:
    if group is None or group.consumer is not None:  # consumer-protocol groups: ConsumerGroupDescribe
        return _summary(group_id, ErrorCode.NONE, GroupState.DEAD.value)
    stable = group.state is GroupState.STABLE
    protocol = group.protocol_name if stable else None
    members = [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "member_metadata": m.metadata(protocol) if protocol else b"",
            "member_assignment": m.assignment if stable else b"",
        }
        for m in group.members.values()
    ]
    summary = _summary(group_id, ErrorCode.NONE, group.state.value, group.protocol_type or "", protocol or "")
    summary["members"] = members
    return summary


def _summary(
    group_id: str, error: ErrorCode, state: str, protocol_type: str = "", protocol: str = ""
) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "group_id": group_id,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": protocol,
        "members": [],
        "authorized_operations": AUTHORIZED_OPERATIONS_UNKNOWN,
    }
