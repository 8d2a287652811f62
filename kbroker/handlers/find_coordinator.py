"""FindCoordinator (10): a broker alone coordinates every group (key type 0) and transactional id
(key type 1), once its coordinators run (COORDINATOR_NOT_AVAILABLE, which clients retry, before).
In cluster mode the answer is the leader of the key's partition of __consumer_offsets or
__transaction_state (kbroker/coordinator_placement.py). From v4 a request carries a batch of keys
and gets one answer per key.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.handlers.registry import handles
from kbroker.txn.runtime import transaction_coordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2  # share-state partitions: asked by brokers, refused to clients as Kafka refuses them


@handles(ApiKey.FIND_COORDINATOR, "0-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    if ctx.api_version >= 4:
        keys = request["coordinator_keys"] or []
        coordinators = [{"key": key, **_find(ctx, request["key_type"], key)} for key in keys]
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    return {"throttle_time_ms": 0, **_find(ctx, request["key_type"], request["key"])}


def _find(ctx: RequestContext, key_type: int, key: str | None) -> dict[str, Any]:
    """Every group and transactional id, even an empty one (as Kafka answers), has a coordinator."""
    if key_type == SHARE_KEY_TYPE:
        return _error(ErrorCode.INVALID_REQUEST, "")
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return _error(ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
    if key_type == GROUP_KEY_TYPE and not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key or ""):
        return _error(ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED.message)
    if key_type == TRANSACTION_KEY_TYPE and not ctx.authorize(
        AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key or ""
    ):
        return _error(
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.message
        )
    try:
        if key_type == GROUP_KEY_TYPE:
            group_runtime(ctx.broker)
        else:
            transaction_coordinator(ctx.broker)
    except KafkaProtocolError as error:
        return _error(error.code, error.message)
    broker = ctx.broker
    if broker.placement is not None:  # cluster mode: the leader of the key's internal partition
        found = broker.placement.find(key_type, key or "", ctx.listener)
        if found.error is not ErrorCode.NONE:
            return _error(found.error, found.message or found.error.message)
        return {
            "error_code": 0,
            "error_message": _no_error(ctx),
            "node_id": found.node_id,
            "host": found.host,
            "port": found.port,
        }
    address = broker.advertised_for(ctx.listener)
    return {
        "error_code": 0,
        "error_message": _no_error(ctx),
        "node_id": broker.node_id,
        "host": address.host,
        "port": address.port,
    }


def _no_error(ctx: RequestContext) -> str:
    """The message of a found coordinator, as Kafka words it: the error's name before v4, empty from v4."""
    return "NONE" if ctx.api_version < 4 else ""


def _error(code: ErrorCode, message: str) -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message, "node_id": -1, "host": "", "port": -1}
