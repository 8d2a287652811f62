"""JoinGroup (11): join a classic group; the answer waits until the rebalance completes.

From v4 a member without an id is answered MEMBER_ID_REQUIRED with the id it must
rejoin with; from v5 group.instance.id makes a static member. The leader's answer
lists every member's metadata for the chosen protocol. v8 adds a reason (ignored);
v9 SkipAssignment lets a restarted static leader keep the current assignment.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.coordinator import JoinRequest
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.JOIN_GROUP, "0-9")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    ctx.require(AclOperation.READ, ResourceType.GROUP, request["group_id"] or "")
    runtime = group_runtime(ctx.broker, request["group_id"] or "")
    if ctx.broker.shares is not None and (request["group_id"] or "") in ctx.broker.shares.coordinator.groups:
        return _not_classic(ctx.api_version)  # a share group's id, as Kafka answers it
    result = await runtime.join(
        JoinRequest(
            group_id=request["group_id"] or "",
            member_id=request["member_id"] or "",
            group_instance_id=request["group_instance_id"],
            protocol_type=request["protocol_type"] or "",
            protocols=[(p["name"], bytes(p["metadata"])) for p in request["protocols"]],
            session_timeout_ms=request["session_timeout_ms"],
            rebalance_timeout_ms=request["rebalance_timeout_ms"],
            require_known_member_id=ctx.api_version >= 4,
            supports_skip_assignment=ctx.api_version >= 9,
            client_id=ctx.client_id or "",
            client_host="/" + ctx.client_host.rsplit(":", 1)[0],  # Kafka shows "/<ip>", without the port
        )
    )
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        # before v7 the name is not nullable: "" outside a generation, as Kafka answers
        "protocol_name": result.protocol_name if result.protocol_name is not None or ctx.api_version >= 7 else "",
        "leader": result.leader_id,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "metadata": metadata}
            for member_id, instance_id, metadata in result.members
        ],
    }


def _not_classic(version: int) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None if version >= 7 else "",
        "leader": "",
        "skip_assignment": False,
        "member_id": "",
        "members": [],
    }
