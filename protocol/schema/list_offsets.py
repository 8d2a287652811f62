"""ListOffsets (key 2): look up partition offsets by timestamp.

Sentinels: -1 latest, -2 earliest, -3 max timestamp (v7+), -4 earliest local (v8+),
-5 latest tiered (v9+), -6 earliest pending upload (v11+); v10 adds the remote-read timeout.
"""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ListOffsetsRequest",
    2,
    "1-11",
    "6+",
    [
        F("replica_id", "int32", "0+"),
        F("isolation_level", "int8", "2+"),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("current_leader_epoch", "int32", "4+", default=-1, ignorable=True),
                        F("timestamp", "int64", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("timeout_ms", "int32", "10+", ignorable=True),
    ],
)

RESPONSE = response(
    "ListOffsetsResponse",
    2,
    "1-11",
    "6+",
    [
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                        F("timestamp", "int64", "1+", default=-1),
                        F("offset", "int64", "1+", default=-1),
                        F("leader_epoch", "int32", "4+", default=-1),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
