"""ListConfigResources (key 74): the names of config resources (v0, as ListClientMetricsResources: client
metrics subscriptions only; v1, KIP-1142: of the requested resource types)."""

from protocol.schema.types import F, request, response

REQUEST = request(
    "ListConfigResourcesRequest",
    74,
    "0-1",
    "0+",
    [
        # Empty: every resource type the broker lists.
        F("resource_types", "[]int8", "1+"),
    ],
)

RESPONSE = response(
    "ListConfigResourcesResponse",
    74,
    "0-1",
    "0+",
    [
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F(
            "config_resources",
            [
                F("resource_name", "string", "0+"),
                F("resource_type", "int8", "1+", default=16, ignorable=True),
            ],
            "0+",
        ),
    ],
)
