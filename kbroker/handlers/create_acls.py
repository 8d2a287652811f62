"""CreateAcls (30): add ACLs, each checked as Kafka checks it, saved durably before the answer.

As in Kafka: with no authorizer configured every creation answers SECURITY_DISABLED; the client
needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every creation); a creation that is
not a valid ACL answers INVALID_REQUEST with Kafka's message; creating an ACL that exists succeeds.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth import AclBinding, AclOperation, ResourceType
from kbroker.auth.acl import creation_error
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

NOT_AUTHORIZED = "Request is not authorized: CreateAcls needs ALTER on the cluster."


@handles(ApiKey.CREATE_ACLS, "1-3")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    creations = request["creations"]
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _answer([_result(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")] * len(creations))
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER):
        return _answer([_result(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)] * len(creations))
    results: list[dict[str, Any]] = []
    valid: list[AclBinding] = []
    for creation in creations:
        acl = AclBinding.from_wire(creation)
        problem = creation_error(acl)
        if problem is None:
            valid.append(acl)
            results.append(_result(ErrorCode.NONE, None))
        else:
            results.append(_result(ErrorCode.INVALID_REQUEST, problem))
    if valid:
        try:
            added = authorizer.store.add(valid)
        except OSError as error:
            ctx.log.error("acls_not_saved", error=str(error))
            failed = _result(ErrorCode.UNKNOWN_SERVER_ERROR, f"could not save the ACLs: {error}")
            return _answer([failed if r["error_code"] == 0 else r for r in results])
        ctx.log.info("acls_created", principal=ctx.principal, requested=len(creations), added=added)
    return _answer(results)


def _result(code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message}


def _answer(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "results": results}
