"""AlterClientQuotas (49): set or remove client quota values, one result per entity.

Validated as Kafka's controller validates (kbroker.quota.store); validate_only checks without
changing anything. Applied entities are stored durably before the answer and enforced from the
next request on.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.ALTER_CLIENT_QUOTAS, "0-1")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    quotas = ctx.broker.client_quotas()
    if not ctx.authorize(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER):
        code = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        denied = [{"error_code": code, "error_message": None, "entity": e["entity"]} for e in request["entries"]]
        return {"throttle_time_ms": 0, "entries": denied}
    results = quotas.store.alter(request["entries"], request["validate_only"])
    return {"throttle_time_ms": 0, "entries": results}
