"""EndTxn (key 26): a transactional producer commits or aborts its ongoing transaction."""

from protocol.schema.types import F, request, response

# Versions 0-5: 4 widens the errors (TRANSACTION_ABORTABLE), 5 is transactions v2 (KIP-890),
# answering the bumped producer epoch.

REQUEST = request(
    "EndTxnRequest",
    26,
    "0-5",
    "3+",
    [
        F("transactional_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        # true: commit, false: abort.
        F("committed", "bool", "0+"),
    ],
)

RESPONSE = response(
    "EndTxnResponse",
    26,
    "0-5",
    "3+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "5+", default=-1, ignorable=True),
        F("producer_epoch", "int16", "5+", default=-1, ignorable=True),
    ],
)
