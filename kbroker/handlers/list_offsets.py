"""ListOffsets (2), versions 1-11: offsets by timestamp, as Kafka's leader answers them.

-2 earliest: the log start offset; -1 latest: the high watermark (for read_committed
the last stable offset, from the partition's UnifiedLog); -3 (v7+) the record with the largest
timestamp; -4 (v8+) the local log start offset, which without tiered storage is the log
start offset; -5 latest tiered (v9+) and -6 earliest pending upload (v11+) are answered as
Kafka answers them for a topic without remote storage: no error, offset, timestamp and leader
epoch -1. A sentinel newer than the request's version, or an unknown negative timestamp, gets
UNSUPPORTED_VERSION for that partition (Kafka's ReplicaManager check). v10's TimeoutMs only
bounds remote reads, so it is ignored. A timestamp T >= 0: the first record whose timestamp is >= T, found inside its
batch; timestamp and offset -1 when no record qualifies, or (read_committed) when the one
found is at or past the last stable offset, as Kafka bounds lookups by the last fetchable offset.
Answers carry the leader epoch (0 on a broker alone). A partition listed twice gets
INVALID_REQUEST, as in Kafka. A new leader whose high watermark has not yet reached the start of its
leader epoch (its followers have not fetched from it yet: cluster mode) answers -1 latest and a timestamp
found with OFFSET_NOT_AVAILABLE, which clients retry (Kafka's guard against an offset going back on
failover).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._leadership import leadership_error
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from kbroker.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, KafkaStorageError
from kbroker.log.partition_log import EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP, MAX_TIMESTAMP
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import TimestampAndOffset

READ_COMMITTED = 1
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6
# The first version that may carry each sentinel timestamp.
SENTINEL_MIN_VERSION = {
    EARLIEST_TIMESTAMP: 1,
    LATEST_TIMESTAMP: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL_TIMESTAMP: 8,
    LATEST_TIERED_TIMESTAMP: 9,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP: 11,
}
# Answered without a log lookup: kbroker has no remote storage.
REMOTE_ONLY = (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP)


@handles(ApiKey.LIST_OFFSETS, "1-11")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    topics = request["topics"]
    seen = Counter((t["name"], p["partition_index"]) for t in topics for p in t["partitions"])
    read_committed = request["isolation_level"] == READ_COMMITTED
    answer = []
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {t["name"] for t in topics})
    answered: set[tuple[str, int]] = set()
    for topic in topics:
        name = topic["name"]
        partitions = []
        for p in topic["partitions"]:
            if name not in describable:
                partitions.append(_error(p["partition_index"], ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif seen[(name, p["partition_index"])] > 1:
                if (name, p["partition_index"]) not in answered:  # as Kafka: one answer for a partition asked twice
                    answered.add((name, p["partition_index"]))
                    partitions.append(_error(p["partition_index"], ErrorCode.INVALID_REQUEST))
            else:
                partitions.append(_list_offset(ctx, name, p, read_committed, ctx.api_version))
        answer.append({"name": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": answer}


def _list_offset(
    ctx: RequestContext, topic: str, partition: dict[str, Any], read_committed: bool, version: int
) -> dict[str, Any]:
    index = partition["partition_index"]
    timestamp = partition["timestamp"]
    if timestamp < 0 and version < SENTINEL_MIN_VERSION.get(timestamp, 1 << 15):
        return _error(index, ErrorCode.UNSUPPORTED_VERSION)
    log = ctx.broker.logs.get_partition(topic, index)
    if log is None:
        return _error(index, missing_log_error(ctx, topic, index))
    code, epoch = leadership_error(ctx, topic, index, partition["current_leader_epoch"])
    if code is not None:
        return _error(index, code)
    if timestamp in REMOTE_ONLY:
        return {"partition_index": index, "error_code": 0, "timestamp": -1, "offset": -1, "leader_epoch": -1}
    replicas = ctx.broker.replicas
    lagging = replicas is not None and replicas.high_watermark_lags_epoch(log)
    if lagging and timestamp == LATEST_TIMESTAMP:
        return _error(index, ErrorCode.OFFSET_NOT_AVAILABLE)
    try:
        found = log.local.fetch_offset_by_timestamp(timestamp)
        if read_committed and timestamp not in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            last_stable = log.last_stable_offset()
            if timestamp == LATEST_TIMESTAMP:
                found = TimestampAndOffset(-1, last_stable)
            elif found is not None and found.offset >= last_stable:
                found = None
    except KafkaStorageError as error:
        ctx.log.error("list_offsets_storage_error", topic=topic, partition=index, error=str(error))
        return _error(index, ErrorCode.KAFKA_STORAGE_ERROR)
    if found is None:
        return {"partition_index": index, "error_code": 0, "timestamp": -1, "offset": -1, "leader_epoch": -1}
    if lagging and timestamp >= 0:
        return _error(index, ErrorCode.OFFSET_NOT_AVAILABLE)
    return {
        "partition_index": index,
        "error_code": 0,
        "timestamp": found.timestamp,
        "offset": found.offset,
        "leader_epoch": epoch,
    }


def _error(index: int, code: ErrorCode) -> dict[str, Any]:
    return {"partition_index": index, "error_code": int(code), "timestamp": -1, "offset": -1, "leader_epoch": -1}
