"""DescribeUserScramCredentials (key 50): which SCRAM mechanisms (and iterations) each user has."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "DescribeUserScramCredentialsRequest",
    50,
    "0",
    "0+",
    [
        # null or empty: every user
        F("users", [F("name", "string", "0+")], "0+", nullable="0+"),
    ],
)

RESPONSE = response(
    "DescribeUserScramCredentialsResponse",
    50,
    "0",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F(
            "results",
            [
                F("user", "string", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
                F(
                    "credential_infos",
                    [
                        F("mechanism", "int8", "0+"),  # 1: SCRAM-SHA-256, 2: SCRAM-SHA-512
                        F("iterations", "int32", "0+"),
                    ],
                    "0+",
                ),
            ],
            "0+",
        ),
    ],
)
