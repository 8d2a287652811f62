"""FindCoordinator (key 10): locate the broker coordinating a group (key type 0) or transaction (key type 1)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "FindCoordinatorRequest",
    10,
    "0-4",
    "3+",
    [
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+", default=0),
        F("coordinator_keys", "[]string", "4+"),
    ],
)

RESPONSE = response(
    "FindCoordinatorResponse",
    10,
    "0-4",
    "3+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3", ignorable=True),
        F("node_id", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
        F(
            "coordinators",
            [
                F("key", "string", "4+"),
                F("node_id", "int32", "4+"),
                F("host", "string", "4+"),
                F("port", "int32", "4+"),
                F("error_code", "int16", "4+"),
                F("error_message", "string", "4+", nullable="4+", ignorable=True),
            ],
            "4+",
        ),
    ],
)
