"""OffsetDelete (key 47): removes a group's committed offsets for partitions it no longer consumes."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "OffsetDeleteRequest",
    47,
    "0",
    "none",
    [
        F("group_id", "string", "0+"),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "OffsetDeleteResponse",
    47,
    "0",
    "none",
    [
        F("error_code", "int16", "0+"),
        F("throttle_time_ms", "int32", "0+", ignorable=True),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
