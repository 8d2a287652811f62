"""DescribeTransactions (key 65): the coordinator's state of the given transactional ids."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DescribeTransactionsRequest",
    65,
    "0",
    "0+",
    [
        F("transactional_ids", "[]string", "0+"),
    ],
)

RESPONSE = response(
    "DescribeTransactionsResponse",
    65,
    "0",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "transaction_states",
            [
                F("error_code", "int16", "0+"),
                F("transactional_id", "string", "0+"),
                # Kafka's state name, e.g. "Ongoing", "PrepareCommit", "CompleteAbort".
                F("transaction_state", "string", "0+"),
                F("transaction_timeout_ms", "int32", "0+"),
                F("transaction_start_time_ms", "int64", "0+"),
                F("producer_id", "int64", "0+"),
                F("producer_epoch", "int16", "0+"),
                F(
                    "topics",
                    [
                        F("topic", "string", "0+"),
                        F("partitions", "[]int32", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
