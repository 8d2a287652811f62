"""DeleteTopics (key 20): delete topics by name (or, from v6, by topic id)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DeleteTopicsRequest",
    20,
    "1-6",
    "4+",
    [
        F(
            "topics",
            [
                F("name", "string", "6+", nullable="6+", default=None),
                F("topic_id", "uuid", "6+"),
            ],
            "6+",
        ),
        F("topic_names", "[]string", "0-5", ignorable=True),
        F("timeout_ms", "int32", "0+"),
    ],
)

RESPONSE = response(
    "DeleteTopicsResponse",
    20,
    "1-6",
    "4+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F(
            "responses",
            [
                F("name", "string", "0+", nullable="6+"),
                F("topic_id", "uuid", "6+", ignorable=True),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
            ],
            "0+",
        ),
    ],
)
