"""WriteTxnMarkers (27) v1-2: append COMMIT/ABORT markers sent by a coordinator or by an admin.

A coordinator sends it to the leaders of its transactions' partitions on other brokers (cluster mode;
the markers of partitions it leads itself it writes directly), and Kafka's admin abortTransaction
(`kafka-transactions abort`, after `find-hanging`) sends an ABORT marker for a transaction left open in
a partition. A partition another broker leads gets NOT_LEADER_OR_FOLLOWER. Each marker goes through the coordinator's marker
writer (kbroker/txn/markers.py), so producer state, waiting fetches and transactional offsets of
__consumer_offsets see it as they see the coordinator's own.

Checked per partition, as Kafka's producer state checks an end marker: the partition exists
(UNKNOWN_TOPIC_OR_PARTITION), the marker's producer epoch is not older than the producer's
(INVALID_PRODUCER_EPOCH; with transaction version 2, v2's field, it must be newer), and its
coordinator epoch not older than the last marker's (TRANSACTION_COORDINATOR_FENCED). The
partitions of one marker that pass are written together and answered once durable;
a storage failure answers KAFKA_STORAGE_ERROR for them.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._leadership import leader_epoch
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from kbroker.txn.runtime import marker_writer
from kbroker.txn.transaction import TopicPartition
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

TRANSACTION_VERSION_2 = 2


@handles(ApiKey.WRITE_TXN_MARKERS, "1-2")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    results = []
    # only brokers write markers: Kafka wants ALTER or CLUSTER_ACTION on the cluster
    allowed = ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER, log=False) or ctx.authorize(
        AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER
    )
    for marker in request["markers"]:
        if allowed:
            errors = await _write(ctx, marker)
        else:
            tps = [(t["name"], i) for t in marker["topics"] for i in t["partition_indexes"]]
            errors = dict.fromkeys(tps, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        topics = [
            {
                "name": topic["name"],
                "partitions": [
                    {"partition_index": index, "error_code": int(errors[(topic["name"], index)])}
                    for index in topic["partition_indexes"]
                ],
            }
            for topic in marker["topics"]
        ]
        results.append({"producer_id": marker["producer_id"], "topics": topics})
    return {"markers": results}


async def _write(ctx: RequestContext, marker: dict[str, Any]) -> dict[TopicPartition, ErrorCode]:
    producer_id, epoch = marker["producer_id"], marker["producer_epoch"]
    errors: dict[TopicPartition, ErrorCode] = {}
    valid: list[TopicPartition] = []
    for topic in marker["topics"]:
        for index in topic["partition_indexes"]:
            tp = (topic["name"], index)
            errors[tp] = _check(ctx, tp, producer_id, epoch, marker["coordinator_epoch"], marker["transaction_version"])
            if errors[tp] is ErrorCode.NONE and tp not in valid:
                valid.append(tp)
    if valid:
        commit = marker["transaction_result"]
        try:
            # No await between the checks above and the appends inside write_markers.
            await marker_writer(ctx.broker).write_local(
                producer_id, epoch, valid, commit, coordinator_epoch=marker["coordinator_epoch"]
            )
        except KafkaProtocolError as failure:
            errors.update(dict.fromkeys(valid, failure.code))
        except KafkaStorageError as failure:
            ctx.log.error("write_txn_markers_storage_error", producer_id=producer_id, error=str(failure))
            errors.update(dict.fromkeys(valid, ErrorCode.KAFKA_STORAGE_ERROR))
        else:
            ctx.log.info(
                "txn_markers_written",
                producer_id=producer_id,
                epoch=epoch,
                marker="COMMIT" if commit else "ABORT",
                partitions=len(valid),
            )
    return errors


def _check(
    ctx: RequestContext, tp: TopicPartition, producer_id: int, epoch: int, coordinator_epoch: int, version: int
) -> ErrorCode:
    log = ctx.broker.logs.get_partition(*tp)
    if log is None:
        return missing_log_error(ctx, *tp)
    if leader_epoch(ctx, *tp) is None:  # cluster mode: another broker leads it
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    try:
        entry = log.producer_state().entry(producer_id)
    except KafkaStorageError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if entry is None:
        return ErrorCode.NONE
    stale = epoch <= entry.producer_epoch if version >= TRANSACTION_VERSION_2 else epoch < entry.producer_epoch
    if stale:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if coordinator_epoch < entry.coordinator_epoch:
        return ErrorCode.TRANSACTION_COORDINATOR_FENCED
    return ErrorCode.NONE
