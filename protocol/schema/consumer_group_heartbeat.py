"""ConsumerGroupHeartbeat (key 68): join, stay in, or leave a consumer-protocol group (KIP-848).

v1 adds SubscribedTopicRegex and requires the client to choose its member id (KIP-1082).
Most request fields are null (or -1) when unchanged since the previous heartbeat.
"""

from protocol.schema.types import F, Struct, request, response

_TOPIC_PARTITIONS = [
    F("topic_id", "uuid", "0+"),
    F("partitions", "[]int32", "0+"),
]

REQUEST = request(
    "ConsumerGroupHeartbeatRequest",
    68,
    "0-1",
    "0+",
    [
        F("group_id", "string", "0+"),
        F("member_id", "string", "0+"),
        F("member_epoch", "int32", "0+"),
        F("instance_id", "string", "0+", nullable="0+", default=None),
        F("rack_id", "string", "0+", nullable="0+", default=None),
        F("rebalance_timeout_ms", "int32", "0+", default=-1),
        F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
        F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
        F("server_assignor", "string", "0+", nullable="0+", default=None),
        F("topic_partitions", _TOPIC_PARTITIONS, "0+", nullable="0+", default=None),
    ],
)

RESPONSE = response(
    "ConsumerGroupHeartbeatResponse",
    68,
    "0-1",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("member_id", "string", "0+", nullable="0+", default=None),
        F("member_epoch", "int32", "0+"),
        F("heartbeat_interval_ms", "int32", "0+"),
        F(
            "assignment",
            Struct([F("topic_partitions", _TOPIC_PARTITIONS, "0+")]),
            "0+",
            nullable="0+",
            default=None,
        ),
    ],
)
