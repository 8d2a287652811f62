"""DeleteShareGroupOffsets (key 92): forget an empty share group's state for whole topics (KIP-932)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DeleteShareGroupOffsetsRequest",
    92,
    "0",
    "0+",
    [
        F("group_id", "string", "0+"),
        F("topics", [F("topic_name", "string", "0+")], "0+"),
    ],
)

RESPONSE = response(
    "DeleteShareGroupOffsetsResponse",
    92,
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
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ],
            "0+",
        ),
    ],
)
