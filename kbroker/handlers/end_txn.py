"""EndTxn (26): commit or abort the producer's ongoing transaction.

The coordinator writes PrepareCommit/PrepareAbort, a COMMIT/ABORT marker into every
partition of the transaction (publishing its TxnOffsetCommit offsets on commit), then
CompleteCommit/CompleteAbort, and only then answers. Fencing is PRODUCER_FENCED from
v2, INVALID_PRODUCER_EPOCH before. Versions 0-3: transaction version 1 only.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.txn.coordinator import client_error
from kbroker.txn.runtime import transaction_coordinator
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

FIRST_PRODUCER_FENCED_VERSION = 2
FIRST_TV2_VERSION = 5


@handles(ApiKey.END_TXN, "0-5")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    transactional_id = request["transactional_id"]
    if not transactional_id:
        return _response(ErrorCode.INVALID_REQUEST)
    if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return _response(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    client_version = 2 if ctx.api_version >= FIRST_TV2_VERSION else 0
    try:
        result = await transaction_coordinator(ctx.broker, transactional_id).end_txn(
            transactional_id, request["producer_id"], request["producer_epoch"], request["committed"], client_version
        )
    except KafkaProtocolError as failure:
        return _response(failure.code)
    if result.error is not ErrorCode.NONE:
        ctx.log.info("end_txn_refused", transactional_id=transactional_id, error=result.error.name)
        return _response(client_error(result.error, ctx.api_version, FIRST_PRODUCER_FENCED_VERSION))
    return _response(ErrorCode.NONE, result.producer_id, result.producer_epoch)


def _response(error: ErrorCode, producer_id: int = -1, producer_epoch: int = -1) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }
