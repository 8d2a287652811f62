"""OffsetCommit (8): store a group's committed offsets durably in __consumer_offsets.

Members commit within their generation (members of consumer-protocol groups: within their
member epoch, v9+, else STALE_MEMBER_EPOCH); clients that assign partitions themselves
commit with generation -1 and no member id while the group has no members. The
answer leaves once the commit is in the log (and fsynced when configured). v10 names topics
by id (UNKNOWN_TOPIC_ID for an id no topic has).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers._offsets import TOPIC_IDS_VERSION, check_offsets, with_names_from_ids
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.OFFSET_COMMIT, "2-10")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    topics = request["topics"]
    if ctx.api_version >= TOPIC_IDS_VERSION:
        topics = with_names_from_ids(ctx, topics)
    if ctx.authorize(AclOperation.READ, ResourceType.GROUP, request["group_id"] or ""):
        errors, valid = check_offsets(ctx, runtime, [t for t in topics if t["name"]])
    else:
        errors = {
            (t["name"], p["partition_index"]): ErrorCode.GROUP_AUTHORIZATION_FAILED
            for t in topics
            for p in t["partitions"]
        }
        valid = {}
    error = runtime.coordinator_error(request["group_id"] or "")  # NOT_COORDINATOR: another broker's group
    if error is ErrorCode.NONE:
        error = await runtime.commit(
            request["group_id"] or "",
            request["generation_id_or_member_epoch"],
            request["member_id"] or "",
            request["group_instance_id"],
            valid,
            api_version=ctx.api_version,
        )
    for tp in valid:
        errors[tp] = error
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": topic["name"],
                "topic_id": topic.get("topic_id"),
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": int(
                            errors[(topic["name"], p["partition_index"])]
                            if topic["name"]
                            else ErrorCode.UNKNOWN_TOPIC_ID  # v10: an id no topic has
                        ),
                    }
                    for p in topic["partitions"]
                ],
            }
            for topic in topics
        ],
    }
