"""InitProducerId (22): producer ids for idempotent producers.

Without a transactional id Kafka "blindly accepts": every request gets a new
producer id with epoch 0, also at v3+ when the client names its current id and
epoch (KIP-360 epoch bumps of idempotent producers happen in the client; the
broker only sees a new epoch starting at sequence 0, see kbroker/txn).

An empty transactional id is INVALID_REQUEST, as in Kafka. kbroker has no
transaction coordinator yet, so a transactional id is answered with
COORDINATOR_NOT_AVAILABLE (logged as a warning), what Kafka answers while its
transaction coordinator is unavailable, and what FindCoordinator already answers
for transaction keys here (so clients, which look the coordinator up first, do not
even get this far). Clients retry it until their own timeout (Java: initTransactions
fails after max.block.ms); no transaction ever appears to start.

Versions 0-4, as Table A recommends (v5 only adds TRANSACTION_ABORTABLE, KIP-890).
"""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from kbroker.txn import producer_id_manager
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@handles(ApiKey.INIT_PRODUCER_ID, "0-4")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    transactional_id = request["transactional_id"]
    if transactional_id == "":
        return _response(ErrorCode.INVALID_REQUEST)
    if transactional_id is not None:
        ctx.log.warning(
            "transactions_not_supported",
            transactional_id=transactional_id,
            detail="kbroker serves idempotent producers only; answering COORDINATOR_NOT_AVAILABLE",
        )
        return _response(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    try:
        producer_id = producer_id_manager(ctx.broker).generate()
    except KafkaStorageError as error:
        ctx.log.error("producer_id_allocation_failed", error=str(error))
        return _response(ErrorCode.KAFKA_STORAGE_ERROR)
    ctx.log.debug("producer_id_issued", producer_id=producer_id)
    return _response(ErrorCode.NONE, producer_id, 0)


def _response(
    error: ErrorCode, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }
