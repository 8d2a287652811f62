"""DescribeUserScramCredentials (50): each user's SCRAM mechanisms and iteration counts (never the keys)."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "0")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
        return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "results": []}
    store = ctx.broker.scram
    assert store is not None, "the server loads the SCRAM credentials before serving"
    users = request["users"]
    names = [u["name"] for u in users] if users else None
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "results": store.describe(names)}  # as Kafka
