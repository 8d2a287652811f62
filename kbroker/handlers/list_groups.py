"""ListGroups (16): every group this node coordinates, optionally filtered by state (v4+) and type (v5+).

Classic groups have type "classic", consumer-protocol groups (KIP-848) type "consumer" (protocol type
"consumer", states Empty/Assigning/Reconciling/Stable); share groups (KIP-932) type "share" and protocol type "share",
as Kafka lists them. A types filter lists only the named types.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.state import GroupState
from kbroker.handlers.registry import handles
from kbroker.share import share_runtime
from protocol.api_keys import ApiKey

CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"
SHARE_GROUP_TYPE = "share"


@handles(ApiKey.LIST_GROUPS, "0-5")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    wanted = {s.lower() for s in request["states_filter"] or ()}
    types = {t.lower() for t in request["types_filter"] or ()}
    groups = []
    runtime = group_runtime(ctx.broker)
    for g in runtime.groups.values():
        if g.state is GroupState.DEAD:
            continue
        group_type = CLASSIC_GROUP_TYPE if g.consumer is None else CONSUMER_GROUP_TYPE
        state = g.state.value if g.consumer is None else g.consumer.state.value
        if (not types or group_type in types) and (not wanted or state.lower() in wanted):
            groups.append(
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type or "",
                    "group_state": state,
                    "group_type": group_type,
                }
            )
    if not types or SHARE_GROUP_TYPE in types:
        shares = share_runtime(ctx.broker)
        groups += [
            {
                "group_id": g.group_id,
                "protocol_type": SHARE_GROUP_TYPE,
                "group_state": g.state,
                "group_type": SHARE_GROUP_TYPE,
            }
            for g in shares.coordinator.groups.values()
            if not wanted or g.state.lower() in wanted
        ]
    groups.sort(key=lambda g: g["group_id"])
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, log=False):  # else only describable groups
        allowed = ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, [g["group_id"] for g in groups], log=False)
        groups = [g for g in groups if g["group_id"] in allowed]
    return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}
