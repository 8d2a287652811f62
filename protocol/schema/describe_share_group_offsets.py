"""DescribeShareGroupOffsets (key 90): each share partition's start offset (v1 adds the lag) (KIP-932)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DescribeShareGroupOffsetsRequest",
    90,
    "0-1",
    "0+",
    [
        F(
            "groups",
            [
                F("group_id", "string", "0+"),
                F(
                    "topics",
                    [
                        F("topic_name", "string", "0+"),
                        F("partitions", "[]int32", "0+"),
                    ],
                    "0+",
                    nullable="0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "DescribeShareGroupOffsetsResponse",
    90,
    "0-1",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "groups",
            [
                F("group_id", "string", "0+"),
                F(
                    "topics",
                    [
                        F("topic_name", "string", "0+"),
                        F("topic_id", "uuid", "0+"),
                        F(
                            "partitions",
                            [
                                F("partition_index", "int32", "0+"),
                                F("start_offset", "int64", "0+"),
                                F("leader_epoch", "int32", "0+"),
                                F("lag", "int64", "1+", default=-1, ignorable=True),
                                F("error_code", "int16", "0+"),
                                F("error_message", "string", "0+", nullable="0+", default=None),
                            ],
                            "0+",
                        ),
                    ],
                    "0+",
                ),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ],
            "0+",
        ),
    ],
)
