"""AlterShareGroupOffsets (91), version 0: set the start offsets of an empty share group's partitions.

Members present: NON_EMPTY_GROUP; a classic or consumer group's id: GROUP_ID_NOT_FOUND. The share partition forgets its in-flight records and starts at
the given offset (kept within the log). The new state is durable before the answer.
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


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "0")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    group_id = request["group_id"]
    ctx.require(AclOperation.READ, ResourceType.GROUP, group_id)
    if is_classic_or_consumer_group(ctx, group_id):
        return _top_level(ErrorCode.GROUP_ID_NOT_FOUND, not_a_share_group(group_id))
    group = runtime.coordinator.groups.get(group_id)
    if group is not None and group.members:
        return _top_level(ErrorCode.NON_EMPTY_GROUP, "The group has active members.")
    responses = []
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, {t["topic_name"] for t in request["topics"]})
    for topic in request["topics"]:
        name = topic["topic_name"]
        partitions = []
        for p in topic["partitions"]:
            if name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif runtime.reset_offset(group_id, name, p["partition_index"], p["start_offset"]):
                code = ErrorCode.NONE
            else:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            message = code.message if code is not ErrorCode.NONE else None
            partitions.append(
                {"partition_index": p["partition_index"], "error_code": int(code), "error_message": message}
            )
        responses.append({"topic_name": name, "topic_id": topic_id(ctx, name) or ZERO_UUID, "partitions": partitions})
    try:
        await runtime.persist(group_id)
    except KafkaStorageError as error:
        ctx.log.error("share_state_write_failed", group=group_id, error=str(error))
        return _top_level(ErrorCode.KAFKA_STORAGE_ERROR, str(error))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": responses}


def _top_level(error: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "responses": []}
