"""DescribeProducers (61): the active producers of partitions (their producer state), for tooling."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DESCRIBE_PRODUCERS, "0")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    topics = []
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, {t["name"] for t in request["topics"] or []})
    for topic in request["topics"] or []:
        if topic["name"] not in readable:
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            topics.append(
                {"name": topic["name"], "partitions": [_error(i, denied) for i in topic["partition_indexes"]]}
            )
            continue
        partitions = [_partition(ctx, topic["name"], index) for index in topic["partition_indexes"]]
        topics.append({"name": topic["name"], "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _partition(ctx: RequestContext, topic: str, index: int) -> dict[str, Any]:
    log = ctx.broker.logs.get_partition(topic, index)
    if log is None:
        code = missing_log_error(ctx, topic, index)
        unknown_topic = ctx.broker.logs.topic(topic) is None  # Kafka words this one, not an unknown partition
        return _error(index, code, code.message if unknown_topic else None)
    try:
        state = log.producer_state()
    except KafkaStorageError as error:
        return _error(index, ErrorCode.KAFKA_STORAGE_ERROR, str(error))
    producers = [
        {
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "last_sequence": entry.last_seq,
            "last_timestamp": entry.last_timestamp,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_start_offset": entry.txn_first_offset,
        }
        for entry in state.producers.values()
    ]
    return {"partition_index": index, "error_code": 0, "error_message": None, "active_producers": producers}


def _error(index: int, code: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": int(code), "error_message": message, "active_producers": []}
