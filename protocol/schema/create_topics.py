"""CreateTopics (key 19): create topics with a partition count and replication factor or explicit assignments."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "CreateTopicsRequest",
    19,
    "2-7",
    "5+",
    [
        F(
            "topics",
            [
                F("name", "string", "0+"),
                # -1 when the broker default (or explicit assignments) applies
                F("num_partitions", "int32", "0+"),
                F("replication_factor", "int16", "0+"),
                F(
                    "assignments",
                    [
                        F("partition_index", "int32", "0+"),
                        F("broker_ids", "[]int32", "0+"),
                    ],
                    "0+",
                ),
                F(
                    "configs",
                    [
                        F("name", "string", "0+"),
                        F("value", "string", "0+", nullable="0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("timeout_ms", "int32", "0+", default=60000),
        F("validate_only", "bool", "1+", default=False),
    ],
)

RESPONSE = response(
    "CreateTopicsResponse",
    19,
    "2-7",
    "5+",
    [
        F("throttle_time_ms", "int32", "2+", ignorable=True),
        F(
            "topics",
            [
                F("name", "string", "0+"),
                F("topic_id", "uuid", "7+", ignorable=True),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "1+", nullable="0+", ignorable=True),
                F("num_partitions", "int32", "5+", default=-1, ignorable=True),
                F("replication_factor", "int16", "5+", default=-1, ignorable=True),
                F(
                    "configs",
                    [
                        F("name", "string", "5+"),
                        F("value", "string", "5+", nullable="5+"),
                        F("read_only", "bool", "5+"),
                        F("config_source", "int8", "5+", default=-1, ignorable=True),
                        F("is_sensitive", "bool", "5+"),
                    ],
                    "5+",
                    nullable="5+",
                    ignorable=True,
                ),
                # why the topic's configs could not be described (configs is then null)
                F("topic_config_error_code", "int16", "5+", tag=0, ignorable=True),
            ],
            "0+",
        ),
    ],
)
