"""DescribeProducers (key 61): the active idempotent/transactional producers of each partition."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DescribeProducersRequest",
    61,
    "0",
    "0+",
    [
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F("partition_indexes", "[]int32", "0+"),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "DescribeProducersResponse",
    61,
    "0",
    "0+",
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
                        F("error_message", "string", "0+", nullable="0+", default=None),
                        F(
                            "active_producers",
                            [
                                F("producer_id", "int64", "0+"),
                                # int32 here, unlike the int16 epoch of other APIs.
                                F("producer_epoch", "int32", "0+"),
                                F("last_sequence", "int32", "0+", default=-1),
                                F("last_timestamp", "int64", "0+", default=-1),
                                F("coordinator_epoch", "int32", "0+"),
                                # -1: no open transaction.
                                F("current_txn_start_offset", "int64", "0+", default=-1),
                            ],
                            "0+",
                        ),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
