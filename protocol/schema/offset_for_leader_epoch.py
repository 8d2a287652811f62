"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, for truncation and position validation."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "OffsetForLeaderEpochRequest",
    23,
    "2-4",
    "4+",
    [
        # a follower's broker id, -1 for a consumer; -2 (default) a debug consumer that may read past the HWM
        F("replica_id", "int32", "3+", default=-2, ignorable=True),
        F(
            "topics",
            [
                F("topic", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition", "int32", "0+"),
                        F("current_leader_epoch", "int32", "2+", default=-1, ignorable=True),
                        F("leader_epoch", "int32", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "OffsetForLeaderEpochResponse",
    23,
    "2-4",
    "4+",
    [
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F(
            "topics",
            [
                F("topic", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("error_code", "int16", "0+"),
                        F("partition", "int32", "0+"),
                        F("leader_epoch", "int32", "1+", default=-1, ignorable=True),
                        F("end_offset", "int64", "0+", default=-1),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
