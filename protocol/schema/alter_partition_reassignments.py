"""AlterPartitionReassignments (key 45): move partitions to other replicas, or cancel a move (KIP-455)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "AlterPartitionReassignmentsRequest",
    45,
    "0-1",
    "0+",
    [
        F("timeout_ms", "int32", "0+", default=60000),
        # v1 (KIP-860): false refuses a target with another number of replicas
        F("allow_replication_factor_change", "bool", "1+", default=True),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        # null cancels the partition's reassignment in progress
                        F("replicas", "[]int32", "0+", nullable="0+", default=None),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "AlterPartitionReassignmentsResponse",
    45,
    "0-1",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("allow_replication_factor_change", "bool", "1+", default=True, ignorable=True),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F(
            "responses",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                        F("error_message", "string", "0+", nullable="0+", default=None),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
