"""TxnOffsetCommit (key 28): commits consumer offsets as part of a producer's transaction."""

from protocol.schema.types import F, request, response

# Versions 0-5: 4 widens the error codes, 5 is transactions v2 (the offsets partition joins the
# transaction implicitly); the body is v3's.

REQUEST = request(
    "TxnOffsetCommitRequest",
    28,
    "0-5",
    "3+",
    [
        F("transactional_id", "string", "0+"),
        F("group_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        # From v3 the consumer's group membership, so the coordinator can fence zombie members.
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+", default=""),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("committed_offset", "int64", "0+"),
                        F("committed_leader_epoch", "int32", "2+", default=-1, ignorable=True),
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
    "TxnOffsetCommitResponse",
    28,
    "0-5",
    "3+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "topics",
            [
                F("name", "string", "0+"),
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
