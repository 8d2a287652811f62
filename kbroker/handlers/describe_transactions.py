"""DescribeTransactions (65): state, producer, timeout, start time and partitions of transactional ids."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.txn.runtime import transaction_coordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError


@handles(ApiKey.DESCRIBE_TRANSACTIONS, "0")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    ids = request["transactional_ids"] or []
    try:
        coordinator = transaction_coordinator(ctx.broker)
    except KafkaProtocolError as failure:
        return {"throttle_time_ms": 0, "transaction_states": [_error(i, failure.code) for i in ids]}
    states = []
    for transactional_id in ids:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            states.append(_error(transactional_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        runtime = ctx.broker.transactions
        owner = runtime.coordinator_error(transactional_id) if runtime is not None else ErrorCode.NONE
        found = coordinator.describe(transactional_id) if owner is ErrorCode.NONE else owner  # cluster: elsewhere
        if isinstance(found, ErrorCode):
            states.append(_error(transactional_id, found))
            continue
        by_topic: dict[str, list[int]] = {}
        describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {t for t, _ in found.partitions})
        for topic, partition in sorted(tp for tp in found.partitions if tp[0] in describable):
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            {
                "error_code": 0,
                "transactional_id": transactional_id,
                "transaction_state": found.state.label,
                "transaction_timeout_ms": found.timeout_ms,
                "transaction_start_time_ms": found.start_timestamp,
                "producer_id": found.producer_id,
                "producer_epoch": found.producer_epoch,
                "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()],
            }
        )
    return {"throttle_time_ms": 0, "transaction_states": states}


def _error(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout_ms": 0,
        "transaction_start_time_ms": 0,  # the fields' defaults, as Kafka answers an error
        "producer_id": 0,
        "producer_epoch": 0,
        "topics": [],
    }
