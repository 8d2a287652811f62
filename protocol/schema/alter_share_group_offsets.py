"""AlterShareGroupOffsets (key 91): set an empty share group's start offsets (KIP-932)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "AlterShareGroupOffsetsRequest",
    91,
    "0",
    "0+",
    [
        F("group_id", "string", "0+"),
        F(
            "topics",
            [
                F("topic_name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("start_offset", "int64", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "AlterShareGroupOffsetsResponse",
    91,
    "0",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F(
            "responses",
            [
                F("topic_name", "string", "0+"),
                F("topic_id", "uuid", "0+"),
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
