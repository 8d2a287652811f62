"""ElectLeaders (key 43): elect the preferred (or, unclean, any live) replica as leader of partitions."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ElectLeadersRequest",
    43,
    "0-2",
    "2+",
    [
        # 0: the preferred replica, 1: unclean (a live replica when no in-sync one is); v0 is preferred only
        F("election_type", "int8", "1+"),
        # null: every partition
        F(
            "topic_partitions",
            [
                F("topic", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ],
            "0+",
            nullable="0+",
        ),
        F("timeout_ms", "int32", "0+", default=60000),
    ],
)

RESPONSE = response(
    "ElectLeadersResponse",
    43,
    "0-2",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "1+"),
        F(
            "replica_election_results",
            [
                F("topic", "string", "0+"),
                F(
                    "partition_result",
                    [
                        F("partition_id", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                        F("error_message", "string", "0+", nullable="0+", default=None),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
