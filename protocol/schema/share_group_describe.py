"""ShareGroupDescribe (key 77): members, epochs and assignments of share groups (KIP-932)."""

from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "ShareGroupDescribeRequest",
    77,
    "1",
    "1+",
    [
        F("group_ids", "[]string", "1+"),
        F("include_authorized_operations", "bool", "1+"),
    ],
)

_TOPIC_PARTITIONS = [
    F("topic_id", "uuid", "1+"),
    F("topic_name", "string", "1+"),
    F("partitions", "[]int32", "1+"),
]

RESPONSE = response(
    "ShareGroupDescribeResponse",
    77,
    "1",
    "1+",
    [
        F("throttle_time_ms", "int32", "1+"),
        F(
            "groups",
            [
                F("error_code", "int16", "1+"),
                F("error_message", "string", "1+", nullable="1+", default=None),
                F("group_id", "string", "1+"),
                F("group_state", "string", "1+"),
                F("group_epoch", "int32", "1+"),
                F("assignment_epoch", "int32", "1+"),
                F("assignor_name", "string", "1+"),
                F(
                    "members",
                    [
                        F("member_id", "string", "1+"),
                        F("rack_id", "string", "1+", nullable="1+", default=None),
                        F("member_epoch", "int32", "1+"),
                        F("client_id", "string", "1+"),
                        F("client_host", "string", "1+"),
                        F("subscribed_topic_names", "[]string", "1+"),
                        F("assignment", Struct([F("topic_partitions", _TOPIC_PARTITIONS, "1+")]), "1+"),
                    ],
                    "1+",
                ),
                F("authorized_operations", "int32", "1+", default=-2147483648),
            ],
            "1+",
        ),
    ],
)
