"""ShareFetch (key 78): acquire records for a share group, acknowledging earlier ones on the way (KIP-932).

Version 0 was Kafka 4.0's early access; 1 is stable; 2 adds ShareAcquireMode and Renew
acknowledgements (KIP-1206, KIP-1222).
"""

from protocol.schema.types import F, Struct, request, response

_ACK_BATCHES = [
    F("first_offset", "int64", "0+"),
    F("last_offset", "int64", "0+"),
    F("acknowledge_types", "[]int8", "0+"),
]

REQUEST = request(
    "ShareFetchRequest",
    78,
    "1-2",
    "0+",
    [
        F("group_id", "string", "0+", nullable="0+", default=None),
        F("member_id", "string", "0+", nullable="0+"),
        F("share_session_epoch", "int32", "0+"),
        F("max_wait_ms", "int32", "0+"),
        F("min_bytes", "int32", "0+"),
        F("max_bytes", "int32", "0+", default=0x7FFFFFFF),
        F("max_records", "int32", "1+"),
        F("batch_size", "int32", "1+"),
        F("share_acquire_mode", "int8", "2+"),
        F("is_renew_ack", "bool", "2+"),
        F(
            "topics",
            [
                F("topic_id", "uuid", "0+"),
                F(
                    "partitions",
                    [
                        F("partition_index", "int32", "0+"),
                        F("acknowledgement_batches", _ACK_BATCHES, "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F(
            "forgotten_topics_data",
            [
                F("topic_id", "uuid", "0+"),
                F("partitions", "[]int32", "0+"),
            ],
            "0+",
        ),
    ],
)

_LEADER = Struct([F("leader_id", "int32", "0+"), F("leader_epoch", "int32", "0+")])

NODE_ENDPOINTS = [
    F("node_id", "int32", "0+"),
    F("host", "string", "0+"),
    F("port", "int32", "0+"),
    F("rack", "string", "0+", nullable="0+", default=None),
]

RESPONSE = response(
    "ShareFetchResponse",
    78,
    "1-2",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("acquisition_lock_timeout_ms", "int32", "0+"),
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
                        F("acknowledge_error_code", "int16", "0+"),
                        F("acknowledge_error_message", "string", "0+", nullable="0+", default=None),
                        F("current_leader", _LEADER, "0+"),
                        F("records", "records", "0+", nullable="0+"),
                        F(
                            "acquired_records",
                            [
                                F("first_offset", "int64", "0+"),
                                F("last_offset", "int64", "0+"),
                                F("delivery_count", "int16", "0+"),
                            ],
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
