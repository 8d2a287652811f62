"""DeleteRecords (key 21): advances partitions' log start offsets, discarding earlier records."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DeleteRecordsRequest",
    21,
    "0-2",
    "2+",
    [
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        # -1: delete up to the high watermark.
                        F("offset", "int64", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("timeout_ms", "int32", "0+"),
    ],
)

RESPONSE = response(
    "DeleteRecordsResponse",
    21,
    "0-2",
    "2+",
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
                        F("low_watermark", "int64", "0+"),
                        F("error_code", "int16", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
