"""DeleteAcls (key 31): remove the ACLs matching each filter, answering which ones each removed."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DeleteAclsRequest",
    31,
    "1-3",
    "2+",
    [
        F(
            "filters",
            [
                F("resource_type_filter", "int8", "0+"),
                F("resource_name_filter", "string", "0+", nullable="0+"),
                F("pattern_type_filter", "int8", "1+", default=3),
                F("principal_filter", "string", "0+", nullable="0+"),
                F("host_filter", "string", "0+", nullable="0+"),
                F("operation", "int8", "0+"),
                F("permission_type", "int8", "0+"),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "DeleteAclsResponse",
    31,
    "1-3",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "filter_results",
            [
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
                F(
                    "matching_acls",
                    [
                        F("error_code", "int16", "0+"),
                        F("error_message", "string", "0+", nullable="0+", default=None),
                        F("resource_type", "int8", "0+"),
                        F("resource_name", "string", "0+"),
                        F("pattern_type", "int8", "1+", default=3),
                        F("principal", "string", "0+"),
                        F("host", "string", "0+"),
                        F("operation", "int8", "0+"),
                        F("permission_type", "int8", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
