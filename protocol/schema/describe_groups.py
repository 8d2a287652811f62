"""DescribeGroups (key 15): state, protocol and members of classic groups."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DescribeGroupsRequest",
    15,
    "0-5",
    "5+",
    [
        F("groups", "[]string", "0+"),
        F("include_authorized_operations", "bool", "3+"),
    ],
)

RESPONSE = response(
    "DescribeGroupsResponse",
    15,
    "0-5",
    "5+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F(
            "groups",
            [
                F("error_code", "int16", "0+"),
                F("group_id", "string", "0+"),
                F("group_state", "string", "0+"),
                F("protocol_type", "string", "0+"),
                # the chosen assignor name when the group is stable
                F("protocol_data", "string", "0+"),
                F(
                    "members",
                    [
                        F("member_id", "string", "0+"),
                        F("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
                        F("client_id", "string", "0+"),
                        F("client_host", "string", "0+"),
                        F("member_metadata", "bytes", "0+"),
                        F("member_assignment", "bytes", "0+"),
                    ],
                    "0+",
                ),
                F("authorized_operations", "int32", "3+", default=-2147483648),
            ],
            "0+",
        ),
    ],
)
