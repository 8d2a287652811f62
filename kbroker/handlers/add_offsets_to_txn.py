"""AddOffsetsToTxn (25): the transaction will commit offsets of a group.

Adds the group's __consumer_offsets partition to the transaction (creating the
topic if needed), so that the group's TxnOffsetCommit records get the transaction's
marker. Fencing is PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.store import OFFSETS_TOPIC
from kbroker.handlers.registry import handles
from kbroker.log import LogError
from kbroker.txn.coordinator import client_error
from kbroker.txn.runtime import transaction_coordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

FIRST_PRODUCER_FENCED_VERSION = 2


@handles(ApiKey.ADD_OFFSETS_TO_TXN, "0-3")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    transactional_id, group_id = request["transactional_id"], request["group_id"]
    if not transactional_id:
        return _response(ErrorCode.INVALID_REQUEST)
    group_id = group_id or ""  # the empty group id is taken, as Kafka takes it (TxnOffsetCommit refuses it)
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return _response(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return _response(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    try:
        coordinator = transaction_coordinator(ctx.broker, transactional_id)
        store = group_runtime(ctx.broker).store
        store.ensure_topic()  # a partition count adopted later would move the group to another partition
        partition = store.partition_for(group_id)
        error = await coordinator.add_partitions(
            transactional_id, request["producer_id"], request["producer_epoch"], {(OFFSETS_TOPIC, partition)}
        )
    except KafkaProtocolError as failure:
        error = failure.code
    except LogError as failure:
        ctx.log.error("add_offsets_to_txn_failed", group=group_id, error=str(failure))
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
    return _response(client_error(error, ctx.api_version, FIRST_PRODUCER_FENCED_VERSION))


def _response(error: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(error)}
