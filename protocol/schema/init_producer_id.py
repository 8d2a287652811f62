"""InitProducerId (key 22): allocate (or bump the epoch of) a producer id for idempotent/transactional producers."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "InitProducerIdRequest",
    22,
    "0-5",
    "2+",
    [
        F("transactional_id", "string", "0+", nullable="0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        # the current id and epoch (v3+), or -1 for a new producer
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ],
)

RESPONSE = response(
    "InitProducerIdResponse",
    22,
    "0-5",
    "2+",
    [
        F("throttle_time_ms", "int32", "0+", ignorable=True),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "0+", default=-1),
        F("producer_epoch", "int16", "0+"),
    ],
)
