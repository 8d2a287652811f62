"""DescribeUserScramCredentials (50): each user's SCRAM mechanisms and iteration counts (never the keys)."""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "0")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    store = ctx.broker.scram
    assert store is not None, "the server loads the SCRAM credentials before serving"
    users = request["users"]
    names = [u["name"] for u in users] if users else None
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": store.describe(names)}
