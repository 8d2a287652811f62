"""Heartbeat (12): keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey


@handles(ApiKey.HEARTBEAT, "0-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    ctx.require(AclOperation.READ, ResourceType.GROUP, request["group_id"] or "")
    error = group_runtime(ctx.broker, request["group_id"] or "").heartbeat(
        request["group_id"] or "", request["member_id"] or "", request["group_instance_id"], request["generation_id"]
    )
    return {"throttle_time_ms": 0, "error_code": int(error)}
