"""AddOffsetsToTxn (key 25): a transactional producer adds a consumer group's offsets to its transaction."""

from protocol.schema.types import F, request, response

# Kafka defines versions 0-4 (4 only widens the error codes); we serve 0-3.

REQUEST = request(
    "AddOffsetsToTxnRequest",
    25,
    "0-3",
    "3+",
    [
        F("transactional_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("group_id", "string", "0+"),
    ],
)

RESPONSE = response(
    "AddOffsetsToTxnResponse",
    25,
    "0-3",
    "3+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
    ],
)
