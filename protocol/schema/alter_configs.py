"""AlterConfigs (key 33): replaces the whole configuration of topics or brokers."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "AlterConfigsRequest",
    33,
    "0-2",
    "2+",
    [
        F(
            "resources",
            [
                F("resource_type", "int8", "0+"),
                F("resource_name", "string", "0+"),
                F(
                    "configs",
                    [
                        F("name", "string", "0+"),
                        F("value", "string", "0+", nullable="0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("validate_only", "bool", "0+"),
    ],
)

RESPONSE = response(
    "AlterConfigsResponse",
    33,
    "0-2",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "responses",
            [
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("resource_type", "int8", "0+"),
                F("resource_name", "string", "0+"),
            ],
            "0+",
        ),
    ],
)
