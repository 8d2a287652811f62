"""ListGroups (key 16): the groups a broker coordinates, optionally filtered by state and type."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ListGroupsRequest",
    16,
    "0-5",
    "3+",
    [
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ],
)

RESPONSE = response(
    "ListGroupsResponse",
    16,
    "0-5",
    "3+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
        F(
            "groups",
            [
                F("group_id", "string", "0+"),
                F("protocol_type", "string", "0+"),
                F("group_state", "string", "4+", ignorable=True),
                F("group_type", "string", "5+", ignorable=True),
            ],
            "0+",
        ),
    ],
)
