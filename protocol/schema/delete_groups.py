"""DeleteGroups (key 42): deletes empty consumer groups and their committed offsets."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DeleteGroupsRequest",
    42,
    "0-2",
    "2+",
    [
        F("groups_names", "[]string", "0+"),
    ],
)

RESPONSE = response(
    "DeleteGroupsResponse",
    42,
    "0-2",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "results",
            [
                F("group_id", "string", "0+"),
                F("error_code", "int16", "0+"),
            ],
            "0+",
        ),
    ],
)
