"""DescribeClientQuotas (48): the stored client quotas matching the request's filter (kbroker.quota.store).

A bad filter is answered as Kafka answers it: INVALID_REQUEST (or UNSUPPORTED_VERSION for an unknown
entity type) with its message and null entries.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.quota.store import QuotaRequestError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    quotas = ctx.broker.client_quotas()
    if not ctx.authorize(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": int(code), "error_message": code.message, "entries": None}
    try:
        entries = quotas.store.describe(request["components"], request["strict"])
    except QuotaRequestError as error:
        return {"throttle_time_ms": 0, "error_code": int(error.code), "error_message": str(error), "entries": None}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "entries": entries}  # "": as Kafka
