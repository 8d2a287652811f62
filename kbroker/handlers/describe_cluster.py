"""DescribeCluster (60) v0-2: the cluster id, the controller and the live brokers (this node).

kbroker is a broker endpoint (endpoint type 1); a request for controllers (2) gets Kafka's
MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0), an unknown type UNSUPPORTED_ENDPOINT_TYPE.
When asked, the authorized operations are those of the CLUSTER resource the client may do (all of
them without an authorizer), or none when it may not DESCRIBE the cluster, as Kafka answers. v2 may ask
for fenced brokers too (KIP-1073): this node is never fenced, so the answer is the same, with is_fenced
false. In cluster mode (zookeeper.connect) the brokers are the live ones registered in ZooKeeper and the
controller the elected one.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

ENDPOINT_BROKER = 1
ENDPOINT_CONTROLLER = 2
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@handles(ApiKey.DESCRIBE_CLUSTER, "0-2")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    endpoint_type = request["endpoint_type"]
    if endpoint_type not in (ENDPOINT_BROKER, ENDPOINT_CONTROLLER):
        code = ErrorCode.INVALID_REQUEST if ctx.api_version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        return _error(code, f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type != ENDPOINT_BROKER:
        code = ErrorCode.INVALID_REQUEST if ctx.api_version == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
        return _error(
            code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
        )
    broker = ctx.broker
    address = broker.advertised_for(ctx.listener)
    operations = AUTHORIZED_OPERATIONS_OMITTED
    if request["include_cluster_authorized_operations"]:
        allowed = ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER)
        operations = ctx.authorized_operations(ResourceType.CLUSTER) if allowed else 0
    brokers = [
        {"broker_id": broker.node_id, "host": address.host, "port": address.port, "rack": None, "is_fenced": False}
    ]
    controller = broker.node_id
    if broker.cluster is not None:  # cluster mode: the live brokers and the controller in ZooKeeper
        from kbroker.handlers._cluster_metadata import live_brokers

        metadata = broker.cluster.metadata
        brokers = [
            {"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"], "is_fenced": False}
            for b in live_brokers(metadata, ctx.listener)
        ]
        controller = metadata.controller_id if metadata.controller_id is not None else -1
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "endpoint_type": ENDPOINT_BROKER,
        "cluster_id": broker.cluster_id,
        "controller_id": controller,
        "brokers": brokers,
        "cluster_authorized_operations": operations,
    }


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "cluster_id": ""}
