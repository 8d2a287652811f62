"""OffsetCommit (key 8): store a consumer group's committed offsets."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "OffsetCommitRequest",
    8,
    "2-10",
    "8+",
    [
        F("group_id", "string", "0+"),
        # -1 for a commit made outside any group generation (simple consumers)
        F("generation_id_or_member_epoch", "int32", "1+", default=-1, ignorable=True),
        F("member_id", "string", "1+", ignorable=True),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        # -1 means the broker's default retention
        F("retention_time_ms", "int64", "2-4", default=-1, ignorable=True),
        F(
            "topics",
            [
                F("name", "string", "0-9", ignorable=True),
                F("topic_id", "uuid", "10+", ignorable=True),  # v10 names topics by id
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("committed_offset", "int64", "0+"),
                        F("committed_leader_epoch", "int32", "6+", default=-1, ignorable=True),
                        F("committed_metadata", "string", "0+", nullable="0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "OffsetCommitResponse",
    8,
    "2-10",
    "8+",
    [
        F("throttle_time_ms", "int32", "3+", ignorable=True),
        F(
            "topics",
            [
                F("name", "string", "0-9", ignorable=True),
                F("topic_id", "uuid", "10+", ignorable=True),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
