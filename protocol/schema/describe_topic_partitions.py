"""DescribeTopicPartitions (key 75): topics and partitions page by page (KIP-966), with ELR fields."""

from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "DescribeTopicPartitionsRequest",
    75,
    "0",
    "0+",
    [
        # Empty: every topic.
        F("topics", [F("name", "string", "0+")], "0+"),
        F("response_partition_limit", "int32", "0+", default=2000),
        # Where to start: a topic name and the partition index within it.
        F(
            "cursor",
            Struct([F("topic_name", "string", "0+"), F("partition_index", "int32", "0+")]),
            "0+",
            nullable="0+",
            default=None,
        ),
    ],
)

RESPONSE = response(
    "DescribeTopicPartitionsResponse",
    75,
    "0",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+", ignorable=True),
        F(
            "topics",
            [
                F("error_code", "int16", "0+"),
                F("name", "string", "0+", nullable="0+"),
                F("topic_id", "uuid", "0+", ignorable=True),
                F("is_internal", "bool", "0+", default=False, ignorable=True),
                F(
                    "partitions",
                    [
                        F("error_code", "int16", "0+"),
                        F("partition_index", "int32", "0+"),
                        F("leader_id", "int32", "0+"),
                        F("leader_epoch", "int32", "0+", default=-1, ignorable=True),
                        F("replica_nodes", "[]int32", "0+"),
                        F("isr_nodes", "[]int32", "0+"),
                        F("eligible_leader_replicas", "[]int32", "0+", nullable="0+", default=None),
                        F("last_known_elr", "[]int32", "0+", nullable="0+", default=None),
                        F("offline_replicas", "[]int32", "0+", ignorable=True),
                    ],
                    "0+",
                ),
                F("topic_authorized_operations", "int32", "0+", default=-(2**31)),
            ],
            "0+",
        ),
        # Where the next page starts; null when this one is the last.
        F(
            "next_cursor",
            Struct([F("topic_name", "string", "0+"), F("partition_index", "int32", "0+")]),
            "0+",
            nullable="0+",
            default=None,
        ),
    ],
)
