"""Fetch (key 1): read record batches from topic partitions, optionally within a fetch session."""

from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "FetchRequest",
    1,
    "4-12",
    "12+",
    [
        F("replica_id", "int32", "0-14", default=-1),
        F("max_wait_ms", "int32", "0+"),
        F("min_bytes", "int32", "0+"),
        F("max_bytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
        F("isolation_level", "int8", "4+", default=0, ignorable=True),
        F("session_id", "int32", "7+", default=0, ignorable=True),
        F("session_epoch", "int32", "7+", default=-1, ignorable=True),
        F(
            "topics",
            [
                F("topic", "string", "0-12", ignorable=True),
                F(
                    "partitions",
                    [
                        F("partition", "int32", "0+"),
                        F("current_leader_epoch", "int32", "9+", default=-1, ignorable=True),
                        F("fetch_offset", "int64", "0+"),
                        F("last_fetched_epoch", "int32", "12+", default=-1),
                        F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                        F("partition_max_bytes", "int32", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        # partitions to drop from an incremental fetch session
        F(
            "forgotten_topics_data",
            [
                F("topic", "string", "7-12", ignorable=True),
                F("partitions", "[]int32", "7+"),
            ],
            "7+",
        ),
        F("rack_id", "string", "11+", default="", ignorable=True),
        F("cluster_id", "string", "12+", nullable="12+", tag=0, default=None, ignorable=True),
    ],
)

RESPONSE = response(
    "FetchResponse",
    1,
    "4-12",
    "12+",
    [
        F("throttle_time_ms", "int32", "1+", ignorable=True),
        F("error_code", "int16", "7+", ignorable=True),
        F("session_id", "int32", "7+", default=0),
        F(
            "responses",
            [
                F("topic", "string", "0-12", ignorable=True),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                        F("high_watermark", "int64", "0+"),
                        F("last_stable_offset", "int64", "4+", default=-1, ignorable=True),
                        F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                        F(
                            "aborted_transactions",
                            [
                                F("producer_id", "int64", "4+"),
                                F("first_offset", "int64", "4+"),
                            ],
                            "4+",
                            nullable="4+",
                            ignorable=True,
                        ),
                        F("preferred_read_replica", "int32", "11+", default=-1),
                        F("records", "records", "0+", nullable="0+"),
                        # set when the fetcher's last fetched epoch diverges from the leader's log
                        F(
                            "diverging_epoch",
                            Struct(
                                [
                                    F("epoch", "int32", "12+", default=-1),
                                    F("end_offset", "int64", "12+", default=-1),
                                ]
                            ),
                            "12+",
                            tag=0,
                        ),
                        F(
                            "current_leader",
                            Struct(
                                [
                                    F("leader_id", "int32", "12+", default=-1),
                                    F("leader_epoch", "int32", "12+", default=-1),
                                ]
                            ),
                            "12+",
                            tag=1,
                        ),
                        F(
                            "snapshot_id",
                            Struct(
                                [
                                    F("end_offset", "int64", "0+", default=-1),
                                    F("epoch", "int32", "0+", default=-1),
                                ]
                            ),
                            "12+",
                            tag=2,
                        ),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
