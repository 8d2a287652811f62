"""LeaveGroup (key 13): remove one member (v0-2) or a batch of members (v3+) from a classic group."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "LeaveGroupRequest",
    13,
    "0-5",
    "4+",
    [
        F("group_id", "string", "0+"),
        F("member_id", "string", "0-2"),
        F(
            "members",
            [
                F("member_id", "string", "3+"),
                F("group_instance_id", "string", "3+", nullable="3+", default=None),
                F("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
            ],
            "3+",
        ),
    ],
)

RESPONSE = response(
    "LeaveGroupResponse",
    13,
    "0-5",
    "4+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
        F(
            "members",
            [
                F("member_id", "string", "3+"),
                F("group_instance_id", "string", "3+", nullable="3+"),
                F("error_code", "int16", "3+"),
            ],
            "3+",
        ),
    ],
)
