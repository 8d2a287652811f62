"""TxnOffsetCommit (28): offsets committed inside a transaction, pending until its marker.

The group's __consumer_offsets partition must be in the producer's ongoing transaction
(AddOffsetsToTxn first): otherwise INVALID_TXN_STATE, or INVALID_PRODUCER_EPOCH for a
fenced epoch. v3 carries the consumer's member id, generation and instance id, checked
against the group as Kafka does (KIP-447: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
FENCED_INSTANCE_ID). The offsets are written as a transactional batch of the producer
and become visible to OffsetFetch when the transaction commits (dropped on abort).
v4 only widens the errors (TRANSACTION_ABORTABLE). v5 is transactions v2 (KIP-890): the
client sends no AddOffsetsToTxn, the group's offsets partition joins the transaction here
(a fenced producer gets INVALID_PRODUCER_EPOCH, as Kafka's verification answers).
In cluster mode the group's coordinator asks the transaction's coordinator on another broker with
AddPartitionsToTxn v5 (add for v5, verify_only before), as Kafka's group coordinator does.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import GroupRuntime, group_runtime
from kbroker.group.group import TopicPartition
from kbroker.group.store import OFFSETS_TOPIC
from kbroker.handlers._offsets import check_offsets
from kbroker.handlers.registry import handles
from kbroker.txn.runtime import transaction_coordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

FIRST_IMPLICIT_ADD_VERSION = 5


@handles(ApiKey.TXN_OFFSET_COMMIT, "0-5")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    topics = request["topics"] or []
    try:
        error, errors = await _commit(ctx, request, topics)
    except KafkaProtocolError as failure:
        error, errors = failure.code, {}
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": topic["name"],
                "partitions": [
                    {
                        "partition_index": p["partition_index"],
                        "error_code": int(errors.get((topic["name"], p["partition_index"]), error)),
                    }
                    for p in topic["partitions"]
                ],
            }
            for topic in topics
        ],
    }


async def _commit(
    ctx: RequestContext, request: dict[str, Any], topics: list[dict[str, Any]]
) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
    group_id = request["group_id"] or ""
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, {}
    ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request["transactional_id"] or "")
    ctx.require(AclOperation.READ, ResourceType.GROUP, group_id)
    runtime = group_runtime(ctx.broker, group_id)
    producer_id, epoch = request["producer_id"], request["producer_epoch"]
    offsets_partition = (OFFSETS_TOPIC, runtime.store.partition_for(group_id))
    transactional_id = request["transactional_id"] or ""
    transactions, placement = ctx.broker.transactions, ctx.broker.placement
    if placement is not None and transactions is not None and transactions.coordinator_error(transactional_id):
        # cluster mode: another broker coordinates the transaction; ask it (AddPartitionsToTxn v5)
        implicit = ctx.api_version >= FIRST_IMPLICIT_ADD_VERSION
        answers = await placement.add_or_verify(
            transactional_id, producer_id, epoch, {offsets_partition}, verify_only=not implicit
        )
        error = answers[offsets_partition]
        if error is ErrorCode.PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        if error is not ErrorCode.NONE:
            return error, {}
        return await _write(ctx, request, runtime, topics, producer_id, epoch)
    coordinator = transaction_coordinator(ctx.broker)
    if ctx.api_version >= FIRST_IMPLICIT_ADD_VERSION:
        error = await coordinator.add_partitions(
            request["transactional_id"] or "", producer_id, epoch, {offsets_partition}
        )
        if error is ErrorCode.PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
        if error is not ErrorCode.NONE:
            return error, {}
    error = coordinator.verify_partition(producer_id, epoch, offsets_partition)
    if error is not ErrorCode.NONE:
        return error, {}
    return await _write(ctx, request, runtime, topics, producer_id, epoch)


async def _write(
    ctx: RequestContext,
    request: dict[str, Any],
    runtime: GroupRuntime,
    topics: list[dict[str, Any]],
    producer_id: int,
    epoch: int,
) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
    group_id = request["group_id"] or ""
    errors, valid = check_offsets(ctx, runtime, topics)
    error = await runtime.txn_commit(
        group_id,
        producer_id,
        epoch,
        request["generation_id"],
        request["member_id"] or "",
        request["group_instance_id"],
        valid,
    )
    for tp in valid:
        errors[tp] = error
    return ErrorCode.NONE, errors
