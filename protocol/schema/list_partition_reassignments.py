"""ListPartitionReassignments (key 46): the partitions being reassigned, with their adding and removing
replicas (KIP-455)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ListPartitionReassignmentsRequest",
    46,
    "0",
    "0+",
    [
        F("timeout_ms", "int32", "0+", default=60000),
        # null: every partition being reassigned
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F("partition_indexes", "[]int32", "0+"),
            ],
            "0+",
            nullable="0+",
            default=None,
        ),
    ],
)

RESPONSE = response(
    "ListPartitionReassignmentsResponse",
    46,
    "0",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("replicas", "[]int32", "0+"),
                        F("adding_replicas", "[]int32", "0+"),
                        F("removing_replicas", "[]int32", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
