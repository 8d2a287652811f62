"""SaslHandshake (key 17): the client names a SASL mechanism; the broker lists those it enables."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "SaslHandshakeRequest",
    17,
    "0-1",
    "none",
    [
        F("mechanism", "string", "0+"),
    ],
)

RESPONSE = response(
    "SaslHandshakeResponse",
    17,
    "0-1",
    "none",
    [
        F("error_code", "int16", "0+"),
        F("mechanisms", "[]string", "0+"),
    ],
)
