"""DeleteGroups (42): remove groups without members, with their committed offsets; share groups with
their share-partition state (NON_EMPTY_GROUP while they have members)."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from kbroker.share import share_runtime
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.DELETE_GROUPS, "0-2")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    shares = share_runtime(ctx.broker)
    names = [name or "" for name in request["groups_names"]]
    deletable = ctx.authorized(AclOperation.DELETE, ResourceType.GROUP, names)
    elsewhere = {name: runtime.coordinator_error(name) for name in names if name in deletable}
    elsewhere = {name: error for name, error in elsewhere.items() if error is not ErrorCode.NONE}
    deletable -= set(elsewhere)  # groups another broker coordinates (cluster mode)
    share_names = [name for name in names if name in shares.coordinator.groups and name in deletable]
    results = await runtime.delete_groups([name for name in names if name not in share_names and name in deletable])
    results.update(dict.fromkeys(set(names) - deletable, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    results.update(elsewhere)
    for name in share_names:
        if shares.coordinator.groups[name].members:
            results[name] = ErrorCode.NON_EMPTY_GROUP
            continue
        shares.delete_group(name)
        try:
            await shares.persist(name)
            results[name] = ErrorCode.NONE
        except KafkaStorageError as error:
            ctx.log.error("share_state_write_failed", group=name, error=str(error))
            results[name] = ErrorCode.KAFKA_STORAGE_ERROR
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": name, "error_code": int(results[name])} for name in names],
    }
