"""ListPartitionReassignments (46) v0, cluster mode only: the partitions being reassigned, each with its
replicas (target first, then the original's others), those being added and those being removed, as the
topic znodes hold them. DESCRIBE on the cluster is needed (else CLUSTER_AUTHORIZATION_FAILED); a broker that
is not the controller answers NOT_CONTROLLER (as Kafka's ZooKeeper mode did). Partitions asked for that do
not exist or are not being reassigned are left out, as in Kafka."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.cluster.partition_moves import NotControllerError
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, "0", cluster_only=True)
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    cluster = ctx.broker.cluster
    assert cluster is not None  # served in cluster mode only
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER):
        return _response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None, [])
    given = request["topics"]
    wanted = None if given is None else [(t["name"], p) for t in given for p in t["partition_indexes"]]
    try:
        found = cluster.moves.list_reassignments(wanted)
    except NotControllerError:
        return _response(ErrorCode.NOT_CONTROLLER, f"Broker {cluster.node_id} is not the controller.", [])
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), assignment in found.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "replicas": list(assignment.replicas),
                "adding_replicas": list(assignment.adding),
                "removing_replicas": list(assignment.removing),
            }
        )
    return _response(ErrorCode.NONE, None, [{"name": t, "partitions": p} for t, p in by_topic.items()])


def _response(error: ErrorCode, message: str | None, topics: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(error), "error_message": message, "topics": topics}
