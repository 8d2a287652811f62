"""AlterUserScramCredentials (51): add, replace or delete SCRAM credentials, one result per user.

Kafka's checks: a known mechanism, 4096-16384 iterations, a user named once per mechanism, deletions
of existing credentials only. Stored durably before the answer (kbroker.scram).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "0")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER):
        denied = {"error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "error_message": None}
        users = [u["name"] for u in request["deletions"]] + [u["name"] for u in request["upsertions"]]
        return {"throttle_time_ms": 0, "results": [{"user": u, **denied} for u in dict.fromkeys(users)]}
    store = ctx.broker.scram
    assert store is not None, "the server loads the SCRAM credentials before serving"
    results = store.alter(request["deletions"], request["upsertions"])
    return {
        "throttle_time_ms": 0,
        "results": [{k: r[k] for k in ("user", "error_code", "error_message")} for r in results],
    }
