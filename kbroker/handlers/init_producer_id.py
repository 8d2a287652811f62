"""InitProducerId (22): producer ids for idempotent producers.

Without a transactional id Kafka "blindly accepts": every request gets a new
producer id with epoch 0, also at v3+ when the client names its current id and
epoch (KIP-360 epoch bumps of idempotent producers happen in the client; the
broker only sees a new epoch starting at sequence 0, see kbroker/txn).

An empty transactional id is INVALID_REQUEST, as in Kafka. A transactional id goes to
the transaction coordinator (kbroker/txn/coordinator.py): the id's producer id with its
epoch bumped, fencing an older instance (its open transaction is aborted first and the
client asked to retry with CONCURRENT_TRANSACTIONS). The timeout must be within
transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT). v3+ may name the producer's
current id and epoch to resume it (KIP-360). A fenced producer gets PRODUCER_FENCED
from v4 and INVALID_PRODUCER_EPOCH before, as Kafka answers.

Versions 0-5 (v5 only widens the errors a client accepts: TRANSACTION_ABORTABLE, KIP-890).
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaProtocolError

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


FIRST_PRODUCER_FENCED_VERSION = 4


@handles(ApiKey.INIT_PRODUCER_ID, "0-5")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    transactional_id = request["transactional_id"]
    if transactional_id == "":
        return _response(ErrorCode.INVALID_REQUEST)
    if (request["producer_id"] == NO_PRODUCER_ID) != (request["producer_epoch"] == NO_PRODUCER_EPOCH):
        return _response(ErrorCode.INVALID_REQUEST)  # Kafka: both or neither, with a transactional id or not
    if transactional_id is not None:
        ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
        return await _transactional(ctx, request, transactional_id)
    if not ctx.authorize(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, log=False):
        if not ctx.authorize_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC):  # KIP-679
            return _response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    try:
        producer_id = ctx.broker.producer_ids.generate()
    except KafkaStorageError as error:
        ctx.log.error("producer_id_allocation_failed", error=str(error))
        return _response(ErrorCode.KAFKA_STORAGE_ERROR)
    ctx.log.debug("producer_id_issued", producer_id=producer_id)
    return _response(ErrorCode.NONE, producer_id, 0)


async def _transactional(ctx: RequestContext, request: dict[str, Any], transactional_id: str) -> dict[str, Any]:
    producer_id, epoch = request["producer_id"], request["producer_epoch"]
    expected = None if producer_id == NO_PRODUCER_ID else (producer_id, epoch)
    from kbroker.txn.runtime import transaction_coordinator  # transactional producers only

    try:
        coordinator = transaction_coordinator(ctx.broker, transactional_id)
        result = await coordinator.init_producer_id(transactional_id, request["transaction_timeout_ms"], expected)
    except KafkaProtocolError as error:
        return _response(error.code)
    except KafkaStorageError as error:
        ctx.log.error("producer_id_allocation_failed", error=str(error))
        return _response(ErrorCode.KAFKA_STORAGE_ERROR)
    code = result.error
    if code is ErrorCode.PRODUCER_FENCED and ctx.api_version < FIRST_PRODUCER_FENCED_VERSION:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    if code is not ErrorCode.NONE:
        ctx.log.info("init_producer_id_refused", transactional_id=transactional_id, error=code.name)
        return _response(code)
    return _response(code, result.producer_id, result.producer_epoch)


def _response(
    error: ErrorCode, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH
) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }
