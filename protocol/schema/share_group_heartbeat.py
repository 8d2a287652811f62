"""ShareGroupHeartbeat (key 76): a share-group member joins (epoch 0), stays alive, leaves (epoch -1) (KIP-932).

Version 0 was Kafka 4.0's early access and is not served; version 1 is the stable one.
"""

from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "ShareGroupHeartbeatRequest",
    76,
    "1",
    "0+",
    [
        F("group_id", "string", "0+"),
        F("member_id", "string", "0+"),
        F("member_epoch", "int32", "0+"),
        F("rack_id", "string", "0+", nullable="0+", default=None),
        F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
    ],
)

RESPONSE = response(
    "ShareGroupHeartbeatResponse",
    76,
    "1",
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
            Struct(
                [
                    F(
                        "topic_partitions",
                        [
                            F("topic_id", "uuid", "0+"),
                            F("partitions", "[]int32", "0+"),
                        ],
                        "0+",
                    ),
                ]
            ),
            "0+",
            nullable="0+",
            default=None,
        ),
    ],
)
