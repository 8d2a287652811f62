"""DescribeLogDirs (key 35): the broker's log directories, their volume space, and partition sizes."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DescribeLogDirsRequest",
    35,
    "1-5",
    "2+",
    [
        # null: every partition of every topic.
        F(
            "topics",
            [
                F("topic", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ],
            "0+",
            nullable="0+",
        ),
    ],
)

RESPONSE = response(
    "DescribeLogDirsResponse",
    35,
    "1-5",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "3+", ignorable=True),
        F(
            "results",
            [
                F("error_code", "int16", "0+"),
                F("log_dir", "string", "0+"),
                F(
                    "topics",
                    [
                        F("name", "string", "0+"),
                        F(
                            "partitions",
                            [
                                F("partition_index", "int32", "0+"),
                                F("partition_size", "int64", "0+"),
                                F("offset_lag", "int64", "0+"),
                                F("is_future_key", "bool", "0+"),
                            ],
                            "0+",
                        ),
                    ],
                    "0+",
                ),
                F("total_bytes", "int64", "4+", default=-1, ignorable=True),
                F("usable_bytes", "int64", "4+", default=-1, ignorable=True),
                F("is_cordoned", "bool", "5+", default=False, ignorable=True),
            ],
            "0+",
        ),
    ],
)
