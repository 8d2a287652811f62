"""ShareAcknowledge (key 79): acknowledge acquired records without fetching more (KIP-932; v2: Renew, KIP-1222)."""

from protocol.schema.share_fetch import NODE_ENDPOINTS
from protocol.schema.types import F, Struct, request, response

REQUEST = request(
    "ShareAcknowledgeRequest",
    79,
    "1-2",
    "0+",
    [
        F("group_id", "string", "0+", nullable="0+", default=None),
        F("member_id", "string", "0+", nullable="0+"),
        F("share_session_epoch", "int32", "0+"),
        F("is_renew_ack", "bool", "2+"),
        F(
            "topics",
            [
                F("topic_id", "uuid", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F(
                            "acknowledgement_batches",
                            [
                                F("first_offset", "int64", "0+"),
                                F("last_offset", "int64", "0+"),
                                F("acknowledge_types", "[]int8", "0+"),
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

RESPONSE = response(
    "ShareAcknowledgeResponse",
    79,
    "1-2",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("acquisition_lock_timeout_ms", "int32", "2+", ignorable=True),
        F(
            "responses",
            [
                F("topic_id", "uuid", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("error_code", "int16", "0+"),
                        F("error_message", "string", "0+", nullable="0+", default=None),
                        F(
                            "current_leader",
                            Struct([F("leader_id", "int32", "0+"), F("leader_epoch", "int32", "0+")]),
                            "0+",
                        ),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("node_endpoints", NODE_ENDPOINTS, "0+"),
    ],
)
