"""DescribeAcls (29): the ACLs matching the filter, grouped by resource pattern.

As in Kafka: the client needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); with no
authorizer configured the answer is SECURITY_DISABLED; a filter with an unknown element is refused
with INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth import AclBinding, AclBindingFilter, AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DESCRIBE_ACLS, "1-3")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Request is not authorized.")
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    acl_filter = AclBindingFilter.from_wire(request)
    problem = acl_filter.unknown_part()
    if problem is not None:
        return _error(ErrorCode.INVALID_REQUEST, problem)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "resources": resources(authorizer.store.matching(acl_filter)),
    }


def resources(acls: list[AclBinding]) -> list[dict[str, Any]]:
    """ACLs grouped by resource pattern, as DescribeAcls answers them."""
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for acl in acls:
        entries = grouped.setdefault((acl.resource_type, acl.name, acl.pattern_type), [])
        entries.append(
            {
                "principal": acl.principal,
                "host": acl.host,
                "operation": int(acl.operation),
                "permission_type": int(acl.permission),
            }
        )
    return [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": entries}
        for (rtype, name, ptype), entries in grouped.items()
    ]


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "resources": []}
