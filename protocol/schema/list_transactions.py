"""ListTransactions (key 66): lists transactional ids, optionally filtered by state, producer or age."""

from protocol.schema.types import F, request, response

# Version 2 filters by a transactional id pattern (KIP-1152).

REQUEST = request(
    "ListTransactionsRequest",
    66,
    "0-2",
    "0+",
    [
        F("state_filters", "[]string", "0+"),
        F("producer_id_filters", "[]int64", "0+"),
        # Only transactions running longer than this many ms; -1: no filter.
        F("duration_filter", "int64", "1+", default=-1),
        F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
    ],
)

RESPONSE = response(
    "ListTransactionsResponse",
    66,
    "0-2",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("unknown_state_filters", "[]string", "0+"),
        F(
            "transaction_states",
            [
                F("transactional_id", "string", "0+"),
                F("producer_id", "int64", "0+"),
                F("transaction_state", "string", "0+"),
            ],
            "0+",
        ),
    ],
)
