"""ConsumerGroupDescribe (key 69): epochs, members, current and target assignments of consumer groups.

v1 adds each member's MemberType (-1 unknown, 0 classic, 1 consumer).
"""

from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "ConsumerGroupDescribeRequest",
    69,
    "0-1",
    "0+",
    [
        F("group_ids", "[]string", "0+"),
        F("include_authorized_operations", "bool", "0+"),
    ],
)

_ASSIGNMENT = Struct(
    [
        F(
            "topic_partitions",
            [
                F("topic_id", "uuid", "0+"),
                F("topic_name", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ],
            "0+",
        ),
    ]
)

RESPONSE = response(
    "ConsumerGroupDescribeResponse",
    69,
    "0-1",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "groups",
            [
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
                F("group_id", "string", "0+"),
                F("group_state", "string", "0+"),
                F("group_epoch", "int32", "0+"),
                F("assignment_epoch", "int32", "0+"),
                F("assignor_name", "string", "0+"),
                F(
                    "members",
                    [
                        F("member_id", "string", "0+"),
                        F("instance_id", "string", "0+", nullable="0+", default=None),
                        F("rack_id", "string", "0+", nullable="0+", default=None),
                        F("member_epoch", "int32", "0+"),
                        F("client_id", "string", "0+"),
                        F("client_host", "string", "0+"),
                        F("subscribed_topic_names", "[]string", "0+"),
                        F("subscribed_topic_regex", "string", "0+", nullable="0+", default=None),
                        F("assignment", _ASSIGNMENT, "0+"),
                        F("target_assignment", _ASSIGNMENT, "0+"),
                        F("member_type", "int8", "1+", default=-1, ignorable=True),
                    ],
                    "0+",
                ),
                F("authorized_operations", "int32", "0+", default=-2147483648),
            ],
            "0+",
        ),
    ],
)
