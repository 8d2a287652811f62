"""OffsetForLeaderEpoch (23), versions 2-4: the end offset of a leader epoch.

The answer comes from the partition's leader epoch cache (kbroker/log/leader_epoch.py, Kafka's
leader-epoch-checkpoint): the current epoch ends at the log end offset, an older one where the next
higher one began (reported with the highest epoch at or below it); an epoch above the current one,
or -1, has no end offset (epoch -1, offset -1, no error). A single broker's epoch is always 0; in
cluster mode the current epoch is the controller's (and a broker that does not lead the partition
answers NOT_LEADER_OR_FOLLOWER). A consumer's current_leader_epoch is checked first: older is
FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (both make clients refresh metadata and retry).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._leadership import leadership_error
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

UNDEFINED = -1


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, "2-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    topics = []
    describable = {t["topic"] for t in request["topics"]}
    if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, log=False):  # else DESCRIBE per topic
        describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, describable)
    for topic in request["topics"]:
        name = topic["topic"]
        if name not in describable:
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            topics.append({"topic": name, "partitions": [_answer(p["partition"], denied) for p in topic["partitions"]]})
            continue
        partitions = [_end_offset(ctx, name, p) for p in topic["partitions"]]
        topics.append({"topic": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _end_offset(ctx: RequestContext, topic: str, partition: dict[str, Any]) -> dict[str, Any]:
    index = partition["partition"]
    log = ctx.broker.logs.get_partition(topic, index)
    if log is None:
        return _answer(index, missing_log_error(ctx, topic, index))
    code, current = leadership_error(ctx, topic, index, partition["current_leader_epoch"])
    if code is not None:
        return _answer(index, code)
    requested = partition["leader_epoch"]
    if requested > current:
        return _answer(index, ErrorCode.NONE)
    epoch, end_offset = log.end_offset_for_epoch(requested, current)
    return _answer(index, ErrorCode.NONE, epoch, end_offset)


def _answer(index: int, code: ErrorCode, epoch: int = UNDEFINED, end_offset: int = UNDEFINED) -> dict[str, Any]:
    return {"partition": index, "error_code": int(code), "leader_epoch": epoch, "end_offset": end_offset}
