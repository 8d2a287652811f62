"""JoinGroup (key 11): join a classic consumer group and receive the members (leader) or the generation."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "JoinGroupRequest",
    11,
    "0-9",
    "6+",
    [
        F("group_id", "string", "0+"),
        F("session_timeout_ms", "int32", "0+"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string", "0+"),
        F(
            "protocols",
            [
                F("name", "string", "0+"),
                F("metadata", "bytes", "0+"),
            ],
            "0+",
        ),
        F("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
    ],
)

RESPONSE = response(
    "JoinGroupResponse",
    11,
    "0-9",
    "6+",
    [
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("generation_id", "int32", "0+", default=-1),
        F("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
        F("protocol_name", "string", "0+", nullable="7+"),
        F("leader", "string", "0+"),
        F("skip_assignment", "bool", "9+", default=False),
        F("member_id", "string", "0+"),
        F(
            "members",
            [
                F("member_id", "string", "0+"),
                F("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
                F("metadata", "bytes", "0+"),
            ],
            "0+",
        ),
    ],
)
