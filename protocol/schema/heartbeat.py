"""Heartbeat (key 12): a classic group member's liveness signal within its generation."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "HeartbeatRequest",
    12,
    "0-4",
    "4+",
    [
        F("group_id", "string", "0+"),
        F("generation_id", "int32", "0+"),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
)

RESPONSE = response(
    "HeartbeatResponse",
    12,
    "0-4",
    "4+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "0+"),
    ],
)
