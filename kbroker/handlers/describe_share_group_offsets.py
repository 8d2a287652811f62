"""DescribeShareGroupOffsets (90), versions 0-1: each share partition's start offset; v1 adds the lag.

The lag is Kafka's: records between the start offset and the high watermark that are not yet
acknowledged or archived. Topics null: every share partition the group has state for. A partition
without state answers start offset -1, and so does every partition of a group the coordinator does not
know or of a topic that does not exist (no error: Apache Kafka 4.3.1 answers so, and its admin client
reports such partitions as having no offset). A partition number the topic lacks: UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._share import LEADER_EPOCH, topic_id
from kbroker.handlers.registry import handles
from kbroker.share import share_runtime
from kbroker.share.runtime import ShareRuntime
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

ZERO_UUID = b"\0" * 16


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    return {"throttle_time_ms": 0, "groups": [_group(ctx, runtime, g) for g in request["groups"]]}


def _group(ctx: RequestContext, runtime: ShareRuntime, requested: dict[str, Any]) -> dict[str, Any]:
    group_id = requested["group_id"]
    answer: dict[str, Any] = {"group_id": group_id, "topics": [], "error_code": 0, "error_message": None}
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        answer["error_code"] = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return answer
    state = runtime.group_partitions(group_id) if group_id in runtime.coordinator.groups else {}
    wanted: dict[str, list[int]] = {}
    if requested["topics"] is None:
        for topic, index in sorted(state):
            wanted.setdefault(topic, []).append(index)
    else:
        wanted = {t["topic_name"]: list(t["partitions"]) for t in requested["topics"]}
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, wanted)
    if requested["topics"] is None:  # offsets of topics the client may not describe are left out
        wanted = {topic: indexes for topic, indexes in wanted.items() if topic in describable}
    for topic, indexes in wanted.items():
        uuid = topic_id(ctx, topic)
        partitions = []
        for index in indexes:
            item = {
                "partition_index": index,
                "start_offset": -1,
                "leader_epoch": LEADER_EPOCH,
                "lag": -1,
                "error_code": 0,
                "error_message": None,
            }
            partition_log = ctx.broker.logs.get_log(topic, index)
            share = state.get((topic, index))
            if topic not in describable:
                item["error_code"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif partition_log is None:
                if uuid is not None:  # the topic exists without this partition
                    item["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif share is not None:
                item["start_offset"] = share.start_offset
                lag = partition_log.high_watermark - share.start_offset - share.delivery_complete_count()
                item["lag"] = max(0, lag)
            partitions.append(item)
        answer["topics"].append({"topic_name": topic, "topic_id": uuid or ZERO_UUID, "partitions": partitions})
    return answer
