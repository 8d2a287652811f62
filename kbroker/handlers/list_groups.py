"""ListGroups (16): every group this node coordinates, optionally filtered by state (v4+) and type (v5+).

Every group here is a classic group (type "classic"); a types filter without it lists nothing.
"""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.state import GroupState
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey

CLASSIC_GROUP_TYPE = "classic"


@handles(ApiKey.LIST_GROUPS, "0-5")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    wanted = {s.lower() for s in request["states_filter"] or ()}
    types = {t.lower() for t in request["types_filter"] or ()}
    if types and CLASSIC_GROUP_TYPE not in types:
        return {"throttle_time_ms": 0, "error_code": 0, "groups": []}
    groups = [
        {
            "group_id": g.group_id,
            "protocol_type": g.protocol_type or "",
            "group_state": g.state.value,
            "group_type": CLASSIC_GROUP_TYPE,
        }
        for g in sorted(runtime.groups.values(), key=lambda g: g.group_id)
        if g.state is not GroupState.DEAD and (not wanted or g.state.value.lower() in wanted)
    ]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}
