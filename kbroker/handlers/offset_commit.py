"""OffsetCommit (8): store a group's committed offsets durably in __consumer_offsets.

Members commit within their generation; clients that assign partitions themselves
commit with generation -1 and no member id while the group has no members. The
answer leaves once the commit is in the log (and fsynced when configured).
"""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.group import CommittedOffset, TopicPartition
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.OFFSET_COMMIT, "2-8")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    now = runtime.clock()
    errors: dict[TopicPartition, ErrorCode] = {}
    valid: dict[TopicPartition, CommittedOffset] = {}
    for topic in request["topics"]:
        meta = ctx.broker.logs.topic(topic["name"])
        for partition in topic["partitions"]:
            tp = (topic["name"], partition["partition_index"])
            metadata = partition["committed_metadata"]
            if meta is None or not 0 <= tp[1] < meta.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not runtime.offsets.metadata_fits(metadata):
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                epoch = partition["committed_leader_epoch"]
                valid[tp] = CommittedOffset(partition["committed_offset"], epoch, metadata or "", now)
    error = await runtime.commit(
        request["group_id"] or "",
        request["generation_id_or_member_epoch"],
        request["member_id"] or "",
        request["group_instance_id"],
        valid,
    )
    for tp in valid:
        errors[tp] = error
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": topic["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": int(errors[(topic["name"], p["partition_index"])]),
                    }
                    for p in topic["partitions"]
                ],
            }
            for topic in request["topics"]
        ],
    }
