"""AlterUserScramCredentials (key 51): add, replace or delete users' SCRAM credentials.

The client salts and hashes the password itself; the broker never sees it.
"""

from protocol.schema.types import F, request, response

REQUEST = request(
    "AlterUserScramCredentialsRequest",
    51,
    "0",
    "0+",
    [
        F("deletions", [F("name", "string", "0+"), F("mechanism", "int8", "0+")], "0+"),
        F(
            "upsertions",
            [
                F("name", "string", "0+"),
                F("mechanism", "int8", "0+"),
                F("iterations", "int32", "0+"),
                F("salt", "bytes", "0+"),
                F("salted_password", "bytes", "0+"),
            ],
            "0+",
        ),
    ],
)

RESPONSE = response(
    "AlterUserScramCredentialsResponse",
    51,
    "0",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "results",
            [
                F("user", "string", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
            ],
            "0+",
        ),
    ],
)
