"""Produce (key 0): append record batches to topic partitions."""

from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "ProduceRequest",
    0,
    "0-12",
    "9+",
    [
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16", "0+"),
        F("timeout_ms", "int32", "0+"),
        F(
            "topic_data",
            [
                F("name", "string", "0-12", ignorable=True),
                F(
                    "partition_data",
                    [
                        F("index", "int32", "0+"),
                        F("records", "records", "0+", nullable="0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "ProduceResponse",
    0,
    "0-12",
    "9+",
    [
        F(
            "responses",
            [
                F("name", "string", "0-12", ignorable=True),
                F(
                    "partition_responses",
                    [
                        F("index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                        F("base_offset", "int64", "0+"),
                        F("log_append_time_ms", "int64", "2+", default=-1, ignorable=True),
                        F("log_start_offset", "int64", "5+", default=-1, ignorable=True),
                        F(
                            "record_errors",
                            [
                                F("batch_index", "int32", "8+"),
                                F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
                            ],
                            "8+",
                            ignorable=True,
                        ),
                        F("error_message", "string", "8+", nullable="8+", default=None, ignorable=True),
                        # the leader to retry against after NOT_LEADER_OR_FOLLOWER
                        F(
                            "current_leader",
                            Struct(
                                [
                                    F("leader_id", "int32", "10+", default=-1),
                                    F("leader_epoch", "int32", "10+", default=-1),
                                ]
                            ),
                            "10+",
                            tag=0,
                        ),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("throttle_time_ms", "int32", "1+", default=0, ignorable=True),
        F(
            "node_endpoints",
            [
                F("node_id", "int32", "10+"),
                F("host", "string", "10+"),
                F("port", "int32", "10+"),
                F("rack", "string", "10+", nullable="10+", default=None),
            ],
            "10+",
            tag=0,
        ),
    ],
)
