"""ListTransactions (66): transactional ids, filtered by state names, producer ids, (v1) duration and
(v2, KIP-1152) a transactional id pattern.

Unknown state names are echoed in unknown_state_filters, as Kafka does; with any
unknown filter nothing matches it. The pattern must match the whole transactional id (Java's
Matcher.matches); null or empty lists everything; one that does not compile answers
INVALID_REGULAR_EXPRESSION. Patterns are Python regular expressions, which agree with Java's on
the common constructs.
"""

from __future__ import annotations

import re
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.txn.runtime import transaction_coordinator
from kbroker.txn.transaction import TxnState
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError


@handles(ApiKey.LIST_TRANSACTIONS, "0-2")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    pattern = None
    if request["transactional_id_pattern"]:
        try:
            pattern = re.compile(request["transactional_id_pattern"])
        except re.error:
            return _response(int(ErrorCode.INVALID_REGULAR_EXPRESSION), [], [])
    try:
        coordinator = transaction_coordinator(ctx.broker)
    except KafkaProtocolError as failure:
        return _response(int(failure.code), [], [])
    names = request["state_filters"] or []
    unknown = [name for name in names if TxnState.from_label(name) is None]
    states = {s for s in (TxnState.from_label(name) for name in names) if s is not None}
    found = coordinator.list(
        states if names else None, set(request["producer_id_filters"] or []), request["duration_filter"]
    )
    listed: list[dict[str, Any]] = [
        {"transactional_id": m.transactional_id, "producer_id": m.producer_id, "transaction_state": m.state.label}
        for m in sorted(found, key=lambda m: m.transactional_id)
        if pattern is None or pattern.fullmatch(m.transactional_id)
    ]
    if ctx.broker.authorizer is not None:  # only the transactional ids the client may describe, unmentioned others
        allowed = ctx.authorized(
            AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, [str(s["transactional_id"]) for s in listed]
        )
        listed = [s for s in listed if s["transactional_id"] in allowed]
    return _response(0, unknown, listed)


def _response(error: int, unknown: list[str], states: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "unknown_state_filters": unknown, "transaction_states": states}
