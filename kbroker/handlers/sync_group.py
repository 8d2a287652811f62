"""SyncGroup (14): the leader hands out the assignments; every member waits for its own.

From v5 the request must name the group's protocol type and protocol (else
INCONSISTENT_GROUP_PROTOCOL, as Kafka answers).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.coordinator import SyncRequest
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.SYNC_GROUP, "0-5")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker, request["group_id"] or "")
    ctx.require(AclOperation.READ, ResourceType.GROUP, request["group_id"] or "")
    if ctx.api_version >= 5 and (request["protocol_type"] is None or request["protocol_name"] is None):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL), "assignment": b""}
    result = await runtime.sync(
        SyncRequest(
            group_id=request["group_id"] or "",
            member_id=request["member_id"] or "",
            group_instance_id=request["group_instance_id"],
            generation_id=request["generation_id"],
            assignments={a["member_id"]: bytes(a["assignment"]) for a in request["assignments"]},
            protocol_type=request["protocol_type"],
            protocol_name=request["protocol_name"],
        )
    )
    return {
        "throttle_time_ms": 0,
        "error_code": int(result.error),
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "assignment": result.assignment,
    }
