"""DescribeClientQuotas (key 48): the client quotas whose entities match a filter."""

from protocol.schema.types import F, request, response

_ENTITY = [F("entity_type", "string", "0+"), F("entity_name", "string", "0+", nullable="0+")]

REQUEST = request(
    "DescribeClientQuotasRequest",
    48,
    "0-1",
    "1+",
    [
        F(
            "components",
            [
                F("entity_type", "string", "0+"),
                F("match_type", "int8", "0+"),  # 0: exact name, 1: the default, 2: any specified name
                F("match", "string", "0+", nullable="0+"),
            ],
            "0+",
        ),
        F("strict", "bool", "0+"),  # only entities with no other entity types than the filter's
    ],
)

RESPONSE = response(
    "DescribeClientQuotasResponse",
    48,
    "0-1",
    "1+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F(
            "entries",
            [
                F("entity", _ENTITY, "0+"),
                F("values", [F("key", "string", "0+"), F("value", "float64", "0+")], "0+"),
            ],
            "0+",
            nullable="0+",
        ),
    ],
)
