"""ApiVersions (key 18): which APIs and versions the broker supports."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ApiVersionsRequest",
    18,
    "0-4",
    "3+",
    [
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ],
)

RESPONSE = response(
    "ApiVersionsResponse",
    18,
    "0-4",
    "3+",
    [
        F("error_code", "int16", "0+"),
        F(
            "api_keys",
            [
                F("api_key", "int16", "0+"),
                F("min_version", "int16", "0+"),
                F("max_version", "int16", "0+"),
            ],
            "0+",
        ),
        F("throttle_time_ms", "int32", "1+"),
        F(
            "supported_features",
            [
                F("name", "string", "3+"),
                F("min_version", "int16", "3+"),
                F("max_version", "int16", "3+"),
            ],
            "3+",
            tag=0,
        ),
        F("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
        F(
            "finalized_features",
            [
                F("name", "string", "3+"),
                F("max_version_level", "int16", "3+"),
                F("min_version_level", "int16", "3+"),
            ],
            "3+",
            tag=2,
        ),
        F("zk_migration_ready", "bool", "3+", tag=3, default=False),
    ],
)
