"""LeaveGroup (13): one member leaves (v0-2), or a batch of members by id or group.instance.id (v3+; v5 adds a reason)."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.LEAVE_GROUP, "0-5")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker, request["group_id"] or "")
    group_id = request["group_id"] or ""
    ctx.require(AclOperation.READ, ResourceType.GROUP, group_id)
    if ctx.api_version < 3:
        error, errors = runtime.leave(group_id, [(request["member_id"] or "", None)])
        if error is ErrorCode.NONE and errors:
            error = errors[0]
        return {"throttle_time_ms": 0, "error_code": int(error), "members": []}
    leaving = [(m["member_id"] or "", m["group_instance_id"]) for m in request["members"]]
    error, errors = runtime.leave(group_id, leaving)
    members = [
        {"member_id": member_id, "group_instance_id": instance_id, "error_code": int(code)}
        for (member_id, instance_id), code in zip(leaving, errors, strict=False)
    ]
    return {"throttle_time_ms": 0, "error_code": int(error), "members": members}
