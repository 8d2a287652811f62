"""ApiVersions (18): the APIs and version ranges this broker implements, derived from the handler registry."""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers.registry import HANDLERS, handles
from protocol.api_keys import ApiKey


@handles(ApiKey.API_VERSIONS, "0-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    keys = [
        {"api_key": h.api_key, "min_version": h.advertised_min, "max_version": h.max_version}
        for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)
    ]
    # No finalized features: in particular transaction.version stays below 2, so clients keep
    # the classic transaction protocol (see docs/protocol.md).
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}
