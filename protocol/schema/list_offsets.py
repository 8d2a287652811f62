"""ListOffsets (key 2): look up partition offsets by timestamp (earliest -2, latest -1, max timestamp -3)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ListOffsetsRequest",
    2,
    "1-7",
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
    ],
)

RESPONSE = response(
    "ListOffsetsResponse",
    2,
    "1-7",
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
