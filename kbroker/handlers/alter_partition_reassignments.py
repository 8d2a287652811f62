"""AlterPartitionReassignments (45) v0-1, cluster mode only: start or cancel partition reassignments
(kbroker.cluster.reassignment, Kafka's ZooKeeper-mode algorithm).

As Kafka's ZooKeeper-mode controller answered it: ALTER on the cluster is needed (else
CLUSTER_AUTHORIZATION_FAILED at the top); a broker that is not the controller answers NOT_CONTROLLER at the
top (the AdminClient finds the controller again and retries). Per partition: UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REPLICA_ASSIGNMENT (empty, duplicate or negative replicas, a new replica on a broker that is not
live), INVALID_REPLICATION_FACTOR (v1's allow_replication_factor_change false and another replica count),
NO_REASSIGNMENT_IN_PROGRESS (a cancellation of a partition not being reassigned). The answer comes once the
reassignment has started (its assignment written) and this broker's metadata shows it, or after timeout_ms;
it completes when the new replicas have joined the ISR (ListPartitionReassignments shows it until then).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.cluster.assignment import InvalidReplicaAssignment, InvalidReplicationFactor
from kbroker.cluster.partition_moves import NotControllerError, UnknownPartitionError
from kbroker.cluster.reassignment import NoReassignmentInProgress
from kbroker.cluster.store import StaleStateError
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

ERRORS: list[tuple[type[Exception], ErrorCode]] = [
    (UnknownPartitionError, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (InvalidReplicaAssignment, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (InvalidReplicationFactor, ErrorCode.INVALID_REPLICATION_FACTOR),
    (NoReassignmentInProgress, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS),
]


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "0-1", cluster_only=True)
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    assert cluster is not None  # served in cluster mode only
    allow = request["allow_replication_factor_change"] if ctx.api_version >= 1 else True
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER):
        return _response(ctx, allow, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, [])
    responses = []
    try:
        for topic in request["topics"]:
            targets = {
                p["partition_index"]: None if p["replicas"] is None else tuple(p["replicas"])
                for p in topic["partitions"]
            }
            try:
                outcomes = await cluster.moves.alter_reassignments(
                    topic["name"], targets, allow, request["timeout_ms"] / 1000
                )
            except StaleStateError:
                outcomes = dict.fromkeys(targets, StaleStateError("The topic kept changing meanwhile; try again."))
            responses.append({"name": topic["name"], "partitions": [_result(p, e) for p, e in outcomes.items()]})
    except NotControllerError:
        message = f"Broker {cluster.node_id} is not the controller."
        return _response(ctx, allow, ErrorCode.NOT_CONTROLLER, message, [])
    return _response(ctx, allow, ErrorCode.NONE, None, responses)


def _result(partition: int, error: Exception | None) -> dict[str, Any]:
    if error is None:
        return {"partition_index": partition, "error_code": 0, "error_message": None}
    code = next((c for kind, c in ERRORS if isinstance(error, kind)), ErrorCode.UNKNOWN_SERVER_ERROR)
    return {"partition_index": partition, "error_code": int(code), "error_message": str(error)}


def _response(
    ctx: RequestContext, allow: bool, error: ErrorCode, message: str | None, responses: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "allow_replication_factor_change": allow,
        "error_code": int(error),
        "error_message": message,
        "responses": responses,
    }
