"""DeleteAcls (31): remove the ACLs matching each filter; each filter's result lists what it matched.

As in Kafka: with no authorizer every filter answers SECURITY_DISABLED; the client needs ALTER on the
cluster (CLUSTER_AUTHORIZATION_FAILED); a filter with an unknown element answers INVALID_REQUEST. All
filters match against the ACLs as they were before the request (an ACL two filters match is listed by
both), and every match is removed and saved in one write before the answer.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth import AclBinding, AclBindingFilter, AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

NOT_AUTHORIZED = "Request is not authorized: DeleteAcls needs ALTER on the cluster."


@handles(ApiKey.DELETE_ACLS, "1-3")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    filters = request["filters"]
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _answer([_failed(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")] * len(filters))
    if not ctx.authorize(AclOperation.ALTER, ResourceType.CLUSTER):
        return _answer([_failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)] * len(filters))
    results: list[dict[str, Any]] = []
    doomed: list[AclBinding] = []
    for wire in filters:
        acl_filter = AclBindingFilter.from_wire(wire)
        problem = acl_filter.unknown_part()
        if problem is not None:
            results.append(_failed(ErrorCode.INVALID_REQUEST, problem))
            continue
        matched = authorizer.store.matching(acl_filter)
        doomed += matched
        results.append({"error_code": 0, "error_message": None, "matching_acls": [_matching(a) for a in matched]})
    if doomed:
        try:
            removed = authorizer.store.remove(doomed)
        except OSError as error:
            ctx.log.error("acls_not_saved", error=str(error))
            return _answer(
                [_failed(ErrorCode.UNKNOWN_SERVER_ERROR, f"could not save the ACLs: {error}")] * len(filters)
            )
        ctx.log.info("acls_deleted", principal=ctx.principal, filters=len(filters), removed=removed)
    return _answer(results)


def _matching(acl: AclBinding) -> dict[str, Any]:
    return {
        "error_code": 0,
        "error_message": None,
        "resource_type": int(acl.resource_type),
        "resource_name": acl.name,
        "pattern_type": int(acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": int(acl.operation),
        "permission_type": int(acl.permission),
    }


def _failed(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message, "matching_acls": []}


def _answer(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "filter_results": results}
