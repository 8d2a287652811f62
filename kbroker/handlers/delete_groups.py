"""DeleteGroups (42): remove groups without members, with their committed offsets."""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey


@handles(ApiKey.DELETE_GROUPS, "0-2")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    names = [name or "" for name in request["groups_names"]]
    results = await runtime.delete_groups(names)
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": name, "error_code": int(results[name])} for name in names],
    }
