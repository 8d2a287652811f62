"""AddPartitionsToTxn (24): a transactional producer names the partitions it is about to write.

Versions 0-3 are the producer's. Versions 4-5 are Kafka's broker-to-broker form: in cluster mode a
partition's leader asks the producer's transaction coordinator whether a transactional batch belongs
to an ongoing transaction (verify_only, KIP-890 part 1) or, for transactions v2, to add its partition
(needs CLUSTER_ACTION; NOT_COORDINATOR for an id coordinated elsewhere). For 0-3: partitions of
unknown topics get UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
as Kafka answers; otherwise every partition gets the coordinator's answer. Fencing
is PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.txn.coordinator import client_error
from kbroker.txn.runtime import transaction_coordinator
from kbroker.txn.transaction import TopicPartition
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

FIRST_PRODUCER_FENCED_VERSION = 2
FIRST_BROKER_VERSION = 4
_V3_RESULTS = "results_by_topic_v3_and_below"


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, "0-5")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if ctx.api_version >= FIRST_BROKER_VERSION:
        return await _from_broker(ctx, request)
    topics = request["v3_and_below_topics"] or []
    wanted: list[TopicPartition] = [(t["name"], p) for t in topics for p in t["partitions"]]
    transactional_id = request["v3_and_below_transactional_id"]
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id or ""):
        return _response(topics, dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    writable = ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, {tp[0] for tp in wanted})
    unknown = {tp for tp in wanted if not _exists(ctx, tp)}
    if unknown or len(writable) < len({tp[0] for tp in wanted}):
        errors = {
            tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if tp[0] not in writable
            else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if tp in unknown
            else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in wanted
        }
        return _response(topics, errors)
    transactional_id = request["v3_and_below_transactional_id"]
    if not transactional_id:
        error = ErrorCode.INVALID_REQUEST
    else:
        try:
            error = await transaction_coordinator(ctx.broker, transactional_id).add_partitions(
                transactional_id,
                request["v3_and_below_producer_id"],
                request["v3_and_below_producer_epoch"],
                set(wanted),
            )
        except KafkaProtocolError as failure:
            error = failure.code
    error = client_error(error, ctx.api_version, FIRST_PRODUCER_FENCED_VERSION)
    return _response(topics, dict.fromkeys(wanted, error))


async def _from_broker(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    """v4+: a partition leader verifies (verify_only) or adds partitions of transactions coordinated here."""
    if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": int(error), "results_by_transaction": []}
    results = []
    for txn in request["transactions"]:
        transactional_id, producer_id, epoch = txn["transactional_id"], txn["producer_id"], txn["producer_epoch"]
        wanted: list[TopicPartition] = [(t["name"], p) for t in txn["topics"] for p in t["partitions"]]
        try:
            coordinator = transaction_coordinator(ctx.broker, transactional_id)
            if txn["verify_only"]:
                errors = {tp: coordinator.verify_partition(producer_id, epoch, tp) for tp in wanted}
            else:
                added = await coordinator.add_partitions(transactional_id, producer_id, epoch, set(wanted))
                errors = dict.fromkeys(wanted, added)
        except KafkaProtocolError as failure:
            errors = dict.fromkeys(wanted, failure.code)
        results.append(
            {"transactional_id": transactional_id, "topic_results": _response(txn["topics"], errors)[_V3_RESULTS]}
        )
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": results}


def _exists(ctx: RequestContext, tp: TopicPartition) -> bool:
    cluster = ctx.broker.cluster
    if cluster is not None and tp[0] in cluster.metadata.topics:  # the cluster's topic, with or without a replica here
        return 0 <= tp[1] < len(cluster.metadata.topics[tp[0]].partitions)
    metadata = ctx.broker.logs.topic(tp[0])
    return metadata is not None and 0 <= tp[1] < metadata.partitions


def _response(topics: list[dict[str, Any]], errors: dict[TopicPartition, ErrorCode]) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "results_by_topic_v3_and_below": [
            {
                "name": topic["name"],
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": int(errors[(topic["name"], p)])}
                    for p in topic["partitions"]
                ],
            }
            for topic in topics
        ],
    }
