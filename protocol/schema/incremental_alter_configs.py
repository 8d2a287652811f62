"""IncrementalAlterConfigs (key 44): sets, deletes, appends or subtracts individual config entries."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "IncrementalAlterConfigsRequest",
    44,
    "0-1",
    "1+",
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
                        # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
                        F("config_operation", "int8", "0+"),
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
    "IncrementalAlterConfigsResponse",
    44,
    "0-1",
    "1+",
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
