"""DeleteShareGroupOffsets (92), version 0: an empty share group forgets its state for whole topics.

Members present: NON_EMPTY_GROUP; unknown group, or a classic or consumer group's id: GROUP_ID_NOT_FOUND; a topic the group has no state
for: UNKNOWN_TOPIC_OR_PARTITION. Tombstones are durable before the answer.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._share import is_classic_or_consumer_group, not_a_share_group, topic_id
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from kbroker.share import share_runtime
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

ZERO_UUID = b"\0" * 16


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "0")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    group_id = request["group_id"]
    ctx.require(AclOperation.DELETE, ResourceType.GROUP, group_id)
    if is_classic_or_consumer_group(ctx, group_id):
        return _top_level(ErrorCode.GROUP_ID_NOT_FOUND, not_a_share_group(group_id))
    group = runtime.coordinator.groups.get(group_id)
    if group is None:
        return _top_level(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        return _top_level(ErrorCode.NON_EMPTY_GROUP, "The group has active members.")
    responses = []
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, {t["topic_name"] for t in request["topics"]})
    for topic in request["topics"]:
        name = topic["topic_name"]
        if name not in readable:
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif runtime.delete_offsets(group_id, name):
            code = ErrorCode.NONE
        else:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        responses.append(
            {
                "topic_name": name,
                "topic_id": topic_id(ctx, name) or ZERO_UUID,
                "error_code": int(code),
                "error_message": code.message if code is not ErrorCode.NONE else None,
            }
        )
    try:
        await runtime.persist(group_id)
    except KafkaStorageError as error:
        ctx.log.error("share_state_write_failed", group=group_id, error=str(error))
        return _top_level(ErrorCode.KAFKA_STORAGE_ERROR, str(error))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}


def _top_level(error: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "responses": []}
