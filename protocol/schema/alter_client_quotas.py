"""AlterClientQuotas (key 49): set or remove quota values of user, client-id and ip entities."""

from protocol.schema.types import F, request, response

_ENTITY = [F("entity_type", "string", "0+"), F("entity_name", "string", "0+", nullable="0+")]  # null: the default

REQUEST = request(
    "AlterClientQuotasRequest",
    49,
    "0-1",
    "1+",
    [
        F(
            "entries",
            [
                F("entity", _ENTITY, "0+"),
                F(
                    "ops",
                    [F("key", "string", "0+"), F("value", "float64", "0+"), F("remove", "bool", "0+")],
                    "0+",
                ),
            ],
            "0+",
        ),
        F("validate_only", "bool", "0+"),
    ],
)

RESPONSE = response(
    "AlterClientQuotasResponse",
    49,
    "0-1",
    "1+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F(
            "entries",
            [
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+", default=None),
                F("entity", _ENTITY, "0+"),
            ],
            "0+",
        ),
    ],
)
