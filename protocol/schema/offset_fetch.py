"""OffsetFetch (key 9): read a consumer group's committed offsets (one group before v8, several from v8)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "OffsetFetchRequest",
    9,
    "1-10",
    "6+",
    [
        F("group_id", "string", "0-7"),
        # null (v2+) asks for every partition with a committed offset
        F(
            "topics",
            [
                F("name", "string", "0-7"),
                F("partition_indexes", "[]int32", "0-7"),
            ],
            "0-7",
            nullable="2-7",
        ),
        F(
            "groups",
            [
                F("group_id", "string", "8+"),
                F("member_id", "string", "9+", nullable="9+", default=None, ignorable=True),  # KIP-848 members
                F("member_epoch", "int32", "9+", default=-1, ignorable=True),
                F(
                    "topics",
                    [
                        F("name", "string", "8-9", ignorable=True),
                        F("topic_id", "uuid", "10+", ignorable=True),  # v10 names topics by id
                        F("partition_indexes", "[]int32", "8+"),
                    ],
                    "8+",
                    nullable="8+",
                ),
            ],
            "8+",
        ),
        F("require_stable", "bool", "7+", default=False),
    ],
)

RESPONSE = response(
    "OffsetFetchResponse",
    9,
    "1-10",
    "6+",
    [
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F(
            "topics",
            [
                F("name", "string", "0-7"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0-7"),
                        F("committed_offset", "int64", "0-7"),
                        F("committed_leader_epoch", "int32", "5-7", default=-1, ignorable=True),
                        F("metadata", "string", "0-7", nullable="0-7"),
                        F("error_code", "int16", "0-7"),
                    ],
                    "0-7",
                ),
            ],
            "0-7",
        ),
        F("error_code", "int16", "2-7", default=0, ignorable=True),
        F(
            "groups",
            [
                F("group_id", "string", "8+"),
                F(
                    "topics",
                    [
                        F("name", "string", "8-9", ignorable=True),
                        F("topic_id", "uuid", "10+", ignorable=True),  # v10 names topics by id
                        F(
                            "partitions",
                            [
                                F("partition_index", "int32", "8+"),
                                F("committed_offset", "int64", "8+"),
                                F("committed_leader_epoch", "int32", "8+", default=-1, ignorable=True),
                                F("metadata", "string", "8+", nullable="8+"),
                                F("error_code", "int16", "8+"),
                            ],
                            "8+",
                        ),
                    ],
                    "8+",
                ),
                F("error_code", "int16", "8+", default=0),
            ],
            "8+",
        ),
    ],
)
