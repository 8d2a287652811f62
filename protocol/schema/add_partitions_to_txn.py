"""AddPartitionsToTxn (key 24): a transactional producer registers partitions it will write to."""

from protocol.schema.types import F, request, response

# Versions 4+ are the brokers' batched form (a partition leader asks the transaction coordinator to verify
# or add partitions), which clients do not send.

_TOPIC = [
    F("name", "string", "0+"),
    F("partitions", "[]int32", "0+"),
]

_TOPIC_RESULT = [
    F("name", "string", "0+"),
    F(
        "results_by_partition",
        [
            F("partition_index", "int32", "0+"),
            F("partition_error_code", "int16", "0+"),
        ],
        "0+",
    ),
]

REQUEST = request(
    "AddPartitionsToTxnRequest",
    24,
    "0-5",
    "3+",
    [
        F(
            "transactions",
            [
                F("transactional_id", "string", "4+"),
                F("producer_id", "int64", "4+"),
                F("producer_epoch", "int16", "4+"),
                F("verify_only", "bool", "4+", default=False),
                F("topics", _TOPIC, "4+"),
            ],
            "4+",
        ),
        F("v3_and_below_transactional_id", "string", "0-3"),
        F("v3_and_below_producer_id", "int64", "0-3"),
        F("v3_and_below_producer_epoch", "int16", "0-3"),
        F("v3_and_below_topics", _TOPIC, "0-3"),
    ],
)

RESPONSE = response(
    "AddPartitionsToTxnResponse",
    24,
    "0-5",
    "3+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "4+", ignorable=True),
        F(
            "results_by_transaction",
            [
                F("transactional_id", "string", "4+"),
                F("topic_results", _TOPIC_RESULT, "4+"),
            ],
            "4+",
        ),
        F("results_by_topic_v3_and_below", _TOPIC_RESULT, "0-3"),
    ],
)
