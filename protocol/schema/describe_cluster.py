"""DescribeCluster (key 60): the cluster id, controller and live brokers, for admin clients."""

from protocol.schema.types import F, request, response

# Version 2 adds fenced brokers (KIP-1073).

REQUEST = request(
    "DescribeClusterRequest",
    60,
    "0-2",
    "0+",
    [
        F("include_cluster_authorized_operations", "bool", "0+"),
        # 1: brokers, 2: controllers.
        F("endpoint_type", "int8", "1+", default=1),
        F("include_fenced_brokers", "bool", "2+"),
    ],
)

RESPONSE = response(
    "DescribeClusterResponse",
    60,
    "0-2",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("endpoint_type", "int8", "1+", default=1),
        F("cluster_id", "string", "0+"),
        F("controller_id", "int32", "0+", default=-1),
        F(
            "brokers",
            [
                F("broker_id", "int32", "0+"),
                F("host", "string", "0+"),
                F("port", "int32", "0+"),
                F("rack", "string", "0+", nullable="0+", default=None),
                F("is_fenced", "bool", "2+"),
            ],
            "0+",
        ),
        # INT32_MIN: operations were not requested.
        F("cluster_authorized_operations", "int32", "0+", default=-(2**31)),
    ],
)
