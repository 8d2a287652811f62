"""WriteTxnMarkers (key 27): append COMMIT/ABORT markers of transactions to the partitions this broker leads."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "WriteTxnMarkersRequest",
    27,
    "1-2",
    "1+",
    [
        F(
            "markers",
            [
                F("producer_id", "int64", "0+"),
                F("producer_epoch", "int16", "0+"),
                # true: COMMIT, false: ABORT.
                F("transaction_result", "bool", "0+"),
                F(
                    "topics",
                    [
                        F("name", "string", "0+"),
                        F("partition_indexes", "[]int32", "0+"),
                    ],
                    "0+",
                ),
                F("coordinator_epoch", "int32", "0+"),
                F("transaction_version", "int8", "2+", ignorable=True),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "WriteTxnMarkersResponse",
    27,
    "1-2",
    "1+",
    [
        F(
            "markers",
            [
                F("producer_id", "int64", "0+"),
                F(
                    "topics",
                    [
                        F("name", "string", "0+"),
                        F(
                            "partitions",
                            [
                                F("partition_index", "int32", "0+"),
                                F("error_code", "int16", "0+"),
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
