"""DeleteRecords (21), versions 0-2: advance partitions' log start offsets.

Offset -1 means the high watermark. An offset beyond the high watermark (or below
-1) is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks "delete" is
POLICY_VIOLATION, as in Kafka. The answer's low_watermark is the log start offset
afterwards (-1 on error). Whole segments below it are removed by the log's
periodic duties; reads stop at it at once. In cluster mode only the partition's leader deletes
(NOT_LEADER_OR_FOLLOWER elsewhere); its followers move their log start to it as they fetch, but the
answer does not wait for them (Kafka's DelayedDeleteRecords does).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._leadership import leader_epoch
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError, OffsetOutOfRangeError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DELETE_RECORDS, "0-2")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    topics = []
    deletable = ctx.authorized(AclOperation.DELETE, ResourceType.TOPIC, {t["name"] for t in request["topics"]})
    for topic in request["topics"]:
        name = topic["name"]
        if name not in deletable:
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            topics.append(
                {"name": name, "partitions": [_answer(p["partition_index"], denied) for p in topic["partitions"]]}
            )
            continue
        partitions = [_delete(ctx, name, p["partition_index"], p["offset"]) for p in topic["partitions"]]
        topics.append({"name": name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _delete(ctx: RequestContext, topic: str, index: int, offset: int) -> dict[str, Any]:
    log = ctx.broker.logs.get_log(topic, index)
    if log is None:
        return _answer(index, missing_log_error(ctx, topic, index))
    if leader_epoch(ctx, topic, index) is None:  # cluster mode: the leader's log start; followers follow it
        return _answer(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if not log.config.delete_enabled:
        return _answer(index, ErrorCode.POLICY_VIOLATION)
    try:
        low_watermark = log.delete_records(offset)
    except OffsetOutOfRangeError:
        return _answer(index, ErrorCode.OFFSET_OUT_OF_RANGE)
    except KafkaStorageError as error:
        ctx.log.error("delete_records_storage_error", topic=topic, partition=index, error=str(error))
        return _answer(index, ErrorCode.KAFKA_STORAGE_ERROR)
    ctx.broker.fetch_waiters.wake((topic, index))  # a waiting fetch below the new log start answers OFFSET_OUT_OF_RANGE
    ctx.log.info("records_deleted", topic=topic, partition=index, offset=offset, log_start_offset=low_watermark)
    return _answer(index, ErrorCode.NONE, low_watermark)


def _answer(index: int, code: ErrorCode, low_watermark: int = -1) -> dict[str, Any]:
    return {"partition_index": index, "low_watermark": low_watermark, "error_code": int(code)}
