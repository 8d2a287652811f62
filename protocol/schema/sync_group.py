"""SyncGroup (key 14): the leader hands out assignments; every member receives its own."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "SyncGroupRequest",
    14,
    "0-5",
    "4+",
    [
        F("group_id", "string", "0+"),
        F("generation_id", "int32", "0+"),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        # filled only by the group leader
        F(
            "assignments",
            [
                F("member_id", "string", "0+"),
                F("assignment", "bytes", "0+"),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "SyncGroupResponse",
    14,
    "0-5",
    "4+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("assignment", "bytes", "0+"),
    ],
)
