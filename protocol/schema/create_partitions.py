"""CreatePartitions (key 37): raises the partition count of existing topics."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "CreatePartitionsRequest",
    37,
    "0-3",
    "2+",
    [
        F(
            "topics",
            [
                F("name", "string", "0+"),
                # The new total partition count, not the number added.
                F("count", "int32", "0+"),
                # One entry per new partition; null lets the broker place replicas.
                F(
                    "assignments",
                    [
                        F("broker_ids", "[]int32", "0+"),
                    ],
                    "0+",
                    nullable="0+",
                ),
            ],
            "0+",
        ),
        F("timeout_ms", "int32", "0+"),
        F("validate_only", "bool", "0+"),
    ],
)

RESPONSE = response(
    "CreatePartitionsResponse",
    37,
    "0-3",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "results",
            [
                F("name", "string", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ],
            "0+",
        ),
    ],
)
