"""Metadata (key 3): describe the cluster's brokers and the topics' partitions and leaders."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "MetadataRequest",
    3,
    "0-12",
    "9+",
    [
        # null (v1+) asks for every topic; an empty array for none
        F(
            "topics",
            [
                F("topic_id", "uuid", "10+", ignorable=True),
                F("name", "string", "0+", nullable="10+"),
            ],
            "0+",
            nullable="1+",
        ),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ],
)

RESPONSE = response(
    "MetadataResponse",
    3,
    "0-12",
    "9+",
    [
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F(
            "brokers",
            [
                F("node_id", "int32", "0+"),
                F("host", "string", "0+"),
                F("port", "int32", "0+"),
                F("rack", "string", "1+", nullable="1+", default=None, ignorable=True),
            ],
            "0+",
        ),
        F("cluster_id", "string", "2+", nullable="2+", default=None, ignorable=True),
        F("controller_id", "int32", "1+", default=-1, ignorable=True),
        F(
            "topics",
            [
                F("error_code", "int16", "0+"),
                F("name", "string", "0+", nullable="12+"),
                F("topic_id", "uuid", "10+", ignorable=True),
                F("is_internal", "bool", "1+", default=False, ignorable=True),
                F(
                    "partitions",
                    [
                        F("error_code", "int16", "0+"),
                        F("partition_index", "int32", "0+"),
                        F("leader_id", "int32", "0+"),
                        F("leader_epoch", "int32", "7+", default=-1, ignorable=True),
                        F("replica_nodes", "[]int32", "0+"),
                        F("isr_nodes", "[]int32", "0+"),
                        F("offline_replicas", "[]int32", "5+", ignorable=True),
                    ],
                    "0+",
                ),
                # -2147483648 (INT32_MIN) when not requested
                F("topic_authorized_operations", "int32", "8+", default=-2147483648),
            ],
            "0+",
        ),
        F("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
    ],
)
