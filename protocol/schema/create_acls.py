"""CreateAcls (key 30): add ACLs, one result per creation."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "CreateAclsRequest",
    30,
    "1-3",
    "2+",
    [
        F(
            "creations",
            [
                F("resource_type", "int8", "0+"),
                F("resource_name", "string", "0+"),
                F("resource_pattern_type", "int8", "1+", default=3),
                F("principal", "string", "0+"),
                F("host", "string", "0+"),
                F("operation", "int8", "0+"),
                F("permission_type", "int8", "0+"),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "CreateAclsResponse",
    30,
    "1-3",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "results",
            [
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ],
            "0+",
        ),
    ],
)
