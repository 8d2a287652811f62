"""SaslAuthenticate (key 36): carries one round of SASL authentication bytes each way."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "SaslAuthenticateRequest",
    36,
    "0-2",
    "2+",
    [
        F("auth_bytes", "bytes", "0+"),
    ],
)

RESPONSE = response(
    "SaslAuthenticateResponse",
    36,
    "0-2",
    "2+",
    [
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("auth_bytes", "bytes", "0+"),
        # 0 means the session never needs re-authentication.
        F("session_lifetime_ms", "int64", "1+", default=0, ignorable=True),
    ],
)
