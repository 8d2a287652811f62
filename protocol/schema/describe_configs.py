"""DescribeConfigs (key 32): reads the configuration entries of topics and brokers."""

from protocol.schema.types import F, request, response

# Kafka dropped version 0 (its IsDefault field survives in the schema, never sent in 1-4).

REQUEST = request(
    "DescribeConfigsRequest",
    32,
    "1-4",
    "4+",
    [
        F(
            "resources",
            [
                F("resource_type", "int8", "0+"),
                F("resource_name", "string", "0+"),
                # null: every key of the resource.
                F("configuration_keys", "[]string", "0+", nullable="0+"),
            ],
            "0+",
        ),
        F("include_synonyms", "bool", "1+", default=False),
        F("include_documentation", "bool", "3+", default=False),
    ],
)

RESPONSE = response(
    "DescribeConfigsResponse",
    32,
    "1-4",
    "4+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "results",
            [
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("resource_type", "int8", "0+"),
                F("resource_name", "string", "0+"),
                F(
                    "configs",
                    [
                        F("name", "string", "0+"),
                        F("value", "string", "0+", nullable="0+"),
                        F("read_only", "bool", "0+"),
                        F("config_source", "int8", "1+", default=-1, ignorable=True),
                        F("is_default", "bool", "0"),
                        F("is_sensitive", "bool", "0+"),
                        F(
                            "synonyms",
                            [
                                F("name", "string", "1+"),
                                F("value", "string", "1+", nullable="0+"),
                                F("source", "int8", "1+"),
                            ],
                            "1+",
                            ignorable=True,
                        ),
                        F("config_type", "int8", "3+", default=0, ignorable=True),
                        F("documentation", "string", "3+", nullable="0+", ignorable=True),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
