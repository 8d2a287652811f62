"""Produce (0): validate one record batch per partition and append it, as Kafka's leader does.

Versions 3-12 are implemented (v12: transactions v2, KIP-890). ApiVersions advertises
Produce from v0, as Kafka 4 does (KAFKA-18659): librdkafka before 2.11 only compresses
when it sees v0 in the range. Like Kafka 4, kbroker still refuses v0-v2 requests: the connection layer
closes the connection on a version outside 3-12, which is what Kafka's socket
server does ("unsupported version").

Per partition, in Kafka's order: exactly one v2 batch (INVALID_RECORD), zstd only
from v7 (UNSUPPORTED_COMPRESSION_TYPE), base offset 0 (INVALID_RECORD), size within
max.message.bytes (MESSAGE_TOO_LARGE), CRC-32C (CORRUPT_MESSAGE), record count
consistent with the last offset delta, no control batches, a sequence when there is
a producer id (INVALID_RECORD); then, in the partition's `append_as_leader`, the
records themselves as Kafka's LogValidator walks them (kbroker/log/validator.py:
structure, decompression, compacted keys, timestamps; INVALID_RECORD /
INVALID_TIMESTAMP with per-record errors from v8, UNKNOWN_SERVER_ERROR where Kafka
fails too). A refused batch appends nothing.

A partition named more than once in a request (in one topic entry or in two) is
answered once, and only its last batch is appended: Kafka keys the request's
partitions by topic and partition, so a later entry replaces an earlier one.
acks=-1 on a replicated partition (cluster mode, kbroker.cluster.replica_manager) is refused before
the append with NOT_ENOUGH_REPLICAS while the ISR is smaller than min.insync.replicas (the topic's, else
the broker's); otherwise it is answered once the high watermark covers the batch (Kafka's
DelayedProduce), with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas by
then, REQUEST_TIMED_OUT after `timeout_ms`, NOT_LEADER_OR_FOLLOWER if leadership moved meanwhile.
With one replica per partition nothing waits for followers and `timeout_ms` is ignored, as in Kafka
(0 and negative values included). An fsync before the answer (kbroker.fsync.before.ack,
flush.messages) is not bounded by it either: Kafka's flush.messages also fsyncs inside the append.

Producer ids: until InitProducerId is served, no client can own one, so batches
carrying a producer id are refused with UNKNOWN_PRODUCER_ID. Once it is, the batch goes to
the partition's `append_as_leader` (kbroker/log/unified_log.py), whose producer state answers a
duplicate of one
of the producer's last 5 batches is answered with its original offsets and not
appended; a gap or a stale epoch is refused (OUT_OF_ORDER_SEQUENCE_NUMBER,
INVALID_PRODUCER_EPOCH). A transactional batch must belong to its producer's ongoing
transaction, with this partition added to it (AddPartitionsToTxn), else INVALID_TXN_STATE
(INVALID_PRODUCER_EPOCH for an older epoch), as Kafka's partition verification answers.
From v12 (transactions v2) a transactional batch adds its partition to the transaction
itself: the leader asks the coordinator (directly when it runs here; in cluster mode with
AddPartitionsToTxn v5 to the broker coordinating the transactional id, for a transaction's first
batch in the partition, and verify_only for older clients) before appending, as Kafka's
AddPartitionsToTxnManager does; a fenced producer gets INVALID_PRODUCER_EPOCH and a
coordinator that cannot answer now NOT_ENOUGH_REPLICAS (retriable without a metadata
refresh), as Kafka translates them.

acks=0 gets no response; if any partition failed, the connection is closed instead,
as Kafka does, so that the producer notices. acks=-1 waits for the fsync when the
topic asks for one (kbroker.fsync.before.ack, flush.messages).
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kbroker.context import RequestContext
from kbroker.handlers._authorize import produce_denied
from kbroker.handlers._leadership import leader_epoch
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from kbroker.internal_topics import INTERNAL_TOPICS
from kbroker.log import AppendInfo, AppendOrigin, KafkaStorageError, RecordTooLargeError, UnifiedLog
from kbroker.log.producer_state import ProducerStateError
from kbroker.log.validator import RecordError, RecordValidationError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, InvalidRecordError, KafkaProtocolError
from protocol.records import HEADER_SIZE, LOG_OVERHEAD, RecordBatch

ZSTD = 4
MAX_CODEC = 4
FIRST_ZSTD_VERSION = 7
_LENGTH = struct.Struct(">i")
# the broker's own topics: as in Kafka, only a client calling itself "__admin_client" may append to them
ADMIN_CLIENT_ID = "__admin_client"


# an appended partition whose answer waits: (result, log, append, fsync first, wait for the ISR)
Pending = tuple[dict[str, Any], UnifiedLog, AppendInfo, bool, bool]


class PartitionError(Exception):
    """A partition's batch is refused with `code`."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


FIRST_IMPLICIT_ADD_VERSION = 12
# coordinator answers Kafka's leader turns into a produce error clients retry (ReplicaManager)
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)


@handles(ApiKey.PRODUCE, "3-12", advertise_min=0)
def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    if request["transactional_id"] and _coordinated_elsewhere(ctx, request["transactional_id"]):
        joining = _transactional_partitions(ctx, request)
        if joining is not None:
            return _ask_coordinator_then_produce(ctx, request, *joining)
    if ctx.api_version >= FIRST_IMPLICIT_ADD_VERSION and request["transactional_id"]:
        joining = _transactional_partitions(ctx, request)
        if joining is not None:
            return _add_then_produce(ctx, request, *joining)
    return _produce(ctx, request, {})


def _transactional_partitions(
    ctx: RequestContext, request: dict[str, Any]
) -> tuple[int, int, set[tuple[str, int]]] | None:
    """(producer id, epoch, partitions) of the request's transactional batches, None if it has none."""
    found: tuple[int, int] | None = None
    partitions: set[tuple[str, int]] = set()
    for topic in request["topic_data"]:
        for partition in topic["partition_data"]:
            records = partition["records"]
            if records is None or len(records) < HEADER_SIZE or records[16] != 2:
                continue  # check_produce_data refuses it later
            batch = RecordBatch(records)
            if batch.is_transactional and ctx.broker.logs.get_partition(topic["name"], partition["index"]):
                found = found or (batch.producer_id, batch.producer_epoch)
                partitions.add((topic["name"], partition["index"]))
    return None if found is None else (found[0], found[1], partitions)


async def _add_then_produce(
    ctx: RequestContext, request: dict[str, Any], producer_id: int, epoch: int, partitions: set[tuple[str, int]]
) -> Any:
    """Transactions v2: add the partitions to the producer's transaction, then append."""
    from kbroker.txn.runtime import transaction_coordinator  # transactions only: not on every Produce's path

    try:
        error = await transaction_coordinator(ctx.broker).add_partitions(
            request["transactional_id"], producer_id, epoch, partitions
        )
    except KafkaProtocolError as failure:
        error = failure.code
    if error is ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    elif error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        error = ErrorCode.NOT_ENOUGH_REPLICAS
    if error is not ErrorCode.NONE:
        ctx.log.info("produce_txn_partitions_refused", producer_id=producer_id, epoch=epoch, error=error.name)
    result = _produce(ctx, request, dict.fromkeys(partitions, error) if error is not ErrorCode.NONE else {})
    if result is not None and not isinstance(result, dict):
        result = await result
    return result


def _coordinated_elsewhere(ctx: RequestContext, transactional_id: str) -> bool:
    """Cluster mode: another broker is the transaction coordinator of `transactional_id`."""
    runtime = ctx.broker.transactions
    return (
        ctx.broker.placement is not None and runtime is not None and bool(runtime.coordinator_error(transactional_id))
    )


async def _ask_coordinator_then_produce(
    ctx: RequestContext, request: dict[str, Any], producer_id: int, epoch: int, partitions: set[tuple[str, int]]
) -> Any:
    """Cluster mode, the producer's coordinator on another broker: for the partitions where this producer has
    no open transaction at this epoch yet (as Kafka's leader asks only for a transaction's first batch), ask
    it with AddPartitionsToTxn v5 (add them with transactions v2, verify them otherwise), then append."""
    placement = ctx.broker.placement
    assert placement is not None
    implicit = ctx.api_version >= FIRST_IMPLICIT_ADD_VERSION
    unverified = {tp for tp in partitions if not _in_open_transaction(ctx, tp, producer_id, epoch)}
    refused: dict[tuple[str, int], ErrorCode] = {}
    if unverified:
        answers = await placement.add_or_verify(
            request["transactional_id"], producer_id, epoch, unverified, verify_only=not implicit
        )
        for tp, error in answers.items():
            if error is ErrorCode.PRODUCER_FENCED:
                error = ErrorCode.INVALID_PRODUCER_EPOCH
            elif error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
                error = ErrorCode.NOT_ENOUGH_REPLICAS
            if error is not ErrorCode.NONE:
                refused[tp] = error
        if refused:
            ctx.log.info("produce_txn_partitions_refused", producer_id=producer_id, epoch=epoch, errors=len(refused))
    result = _produce(ctx, request, refused, verified=frozenset(partitions))
    if result is not None and not isinstance(result, dict):
        result = await result
    return result


def _in_open_transaction(ctx: RequestContext, tp: tuple[str, int], producer_id: int, epoch: int) -> bool:
    log = ctx.broker.logs.get_partition(*tp)
    entry = None if log is None else log.producer_state().entry(producer_id)
    return entry is not None and entry.producer_epoch == epoch and entry.txn_first_offset >= 0


def _produce(
    ctx: RequestContext,
    request: dict[str, Any],
    refused_by_coordinator: dict[tuple[str, int], ErrorCode],
    verified: frozenset[tuple[str, int]] = frozenset(),
) -> Any:
    acks = request["acks"]
    pending: list[Pending] = []
    refused: list[str] = []
    failed = False
    responses = []
    denied = produce_denied(ctx, request)
    for name, partitions in _last_entry_per_partition(request["topic_data"]):
        results = []
        for partition in partitions:
            if acks not in (-1, 0, 1):
                result = _error(partition["index"], ErrorCode.INVALID_REQUIRED_ACKS, None, None)  # as Kafka
            elif name in denied:
                result = _error(partition["index"], denied[name], None, None)
            elif (name, partition["index"]) in refused_by_coordinator:
                code = refused_by_coordinator[(name, partition["index"])]
                result = _error(partition["index"], code, None, "the transaction coordinator refused the partition")
            else:
                result = _produce_partition(ctx, name, partition, acks, pending, refused, verified)
            failed = failed or result["error_code"] != 0
            results.append(result)
        responses.append({"name": name, "partition_responses": results})
    if refused:
        ctx.log.warning("produce_records_refused", partitions=len(refused), first=refused[:5])
    response = {"responses": responses, "throttle_time_ms": 0}
    if acks == 0:
        if failed:
            raise KafkaProtocolError(ErrorCode.UNKNOWN_SERVER_ERROR, "acks=0 produce failed: closing as Kafka does")
        return None
    if pending:
        return _after_acks(ctx, pending, response, request["timeout_ms"])
    return response


def _last_entry_per_partition(topic_data: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each (topic, partition) once, with the request's last entry for it, in the order they first appear."""
    chosen: dict[str, dict[int, dict[str, Any]]] = {}
    for topic in topic_data:
        partitions = chosen.setdefault(topic["name"], {})
        for partition in topic["partition_data"]:
            partitions[partition["index"]] = partition  # a repeated key keeps its place, takes the new value
    return [(name, list(partitions.values())) for name, partitions in chosen.items()]


def _produce_partition(
    ctx: RequestContext,
    topic: str,
    partition: dict[str, Any],
    acks: int,
    pending: list[Pending],
    refused: list[str],
    verified: frozenset[tuple[str, int]] = frozenset(),
) -> dict[str, Any]:
    index = partition["index"]
    log = ctx.broker.logs.get_partition(topic, index)
    if log is None:
        return _error(index, missing_log_error(ctx, topic, index), None, None)
    try:
        batch = check_produce_data(partition["records"], ctx.api_version)
    except PartitionError as error:  # Kafka refuses these before the append: no message, no log start offset
        refused.append(f"{topic}-{index}: {error.code.name}: {error.message}")
        return _error(index, error.code, None, None)
    epoch = leader_epoch(ctx, topic, index)
    if epoch is None:  # cluster mode: another broker leads this partition
        return _error(index, ErrorCode.NOT_LEADER_OR_FOLLOWER, log, None)
    if topic in INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:
        return _error(index, ErrorCode.INVALID_TOPIC_EXCEPTION, log, f"cannot append to internal topic {topic}")
    replicas = ctx.broker.replicas
    replicated = acks == -1 and replicas is not None and replicas.replicated(topic, index)
    if replicated and replicas is not None and replicas.isr_too_small(topic, index):
        message = f"the ISR is smaller than min.insync.replicas {replicas.min_insync_replicas(topic)}"
        return _error(index, ErrorCode.NOT_ENOUGH_REPLICAS, log, message)
    try:
        check_batch(batch, log.config.max_message_bytes)
        if (topic, index) not in verified:  # (asked of another broker's coordinator: cluster mode)
            _check_producer(ctx, batch, topic, index)
        info = log.append_as_leader(batch, AppendOrigin.CLIENT, leader_epoch=epoch)
    except RecordValidationError as error:
        refused.append(f"{topic}-{index}: {error.code.name}: {error.message[:200]}")
        return _error(index, error.code, log, error.message, error.record_errors)
    except (PartitionError, ProducerStateError) as error:
        return _error(index, error.code, log, error.message)
    except RecordTooLargeError as error:
        return _error(index, ErrorCode.MESSAGE_TOO_LARGE, log, str(error))
    except InvalidRecordError as error:
        return _error(index, ErrorCode.CORRUPT_MESSAGE, log, str(error))
    except KafkaStorageError as error:
        ctx.log.error("produce_storage_error", topic=topic, partition=index, error=str(error))
        return _error(index, ErrorCode.KAFKA_STORAGE_ERROR, log, None)
    result = {
        "index": index,
        "error_code": 0,
        "base_offset": info.base_offset,
        "log_append_time_ms": info.log_append_time,
        "log_start_offset": info.log_start_offset,
        "record_errors": [],
        "error_message": None,
    }
    # the same rule as PartitionLog.wait_for_ack, checked here so that most produces need no coroutine
    flush = info.flush_required or (acks == -1 and log.config.fsync_before_ack)
    if flush or replicated:
        pending.append((result, log, info, flush, replicated))
    return result


def check_produce_data(records: Any, version: int) -> RecordBatch:
    """What Kafka checks of a partition's produce data before it appends (ProduceRequest's validation): one
    complete record batch of magic 2, zstd only from v7. A refusal has neither message nor log start offset."""
    size = 0 if records is None else len(records)
    if size < LOG_OVERHEAD or _LENGTH.unpack_from(records, 8)[0] + LOG_OVERHEAD > size:
        raise PartitionError(
            ErrorCode.INVALID_RECORD, "a produce request needs one complete record batch per partition"
        )
    if size < HEADER_SIZE or _LENGTH.unpack_from(records, 8)[0] < HEADER_SIZE - LOG_OVERHEAD:
        raise PartitionError(ErrorCode.CORRUPT_MESSAGE, "record batch shorter than its header")
    if records[16] != 2:
        raise PartitionError(ErrorCode.INVALID_RECORD, f"record batch magic {records[16]}: only magic 2 is accepted")
    batch = RecordBatch(records)
    if batch.compression == ZSTD and version < FIRST_ZSTD_VERSION:
        raise PartitionError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later")
    _check_single_batch(records, batch.size)
    return batch


def check_batch(batch: RecordBatch, max_message_bytes: int) -> None:
    """The one record batch check_produce_data found, validated as Kafka's leader does."""
    codec = batch.compression
    if codec > MAX_CODEC:  # Kafka fails on it with an unexpected exception
        raise PartitionError(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown compression codec {codec}")
    if batch.base_offset != 0:
        raise PartitionError(ErrorCode.INVALID_RECORD, f"the batch's base offset must be 0, not {batch.base_offset}")
    if batch.size > max_message_bytes:
        raise PartitionError(
            ErrorCode.MESSAGE_TOO_LARGE, f"batch of {batch.size} bytes exceeds max.message.bytes {max_message_bytes}"
        )
    if not batch.is_valid():
        raise PartitionError(ErrorCode.CORRUPT_MESSAGE, f"record batch CRC mismatch (stored {batch.crc:#010x})")
    count = batch.records_count
    if count <= 0 or batch.last_offset_delta < 0 or batch.last_offset_delta + 1 != count:
        raise PartitionError(
            ErrorCode.INVALID_RECORD,
            f"inconsistent batch: {count} records, last offset delta {batch.last_offset_delta}",
        )
    if batch.is_control:
        raise PartitionError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
    if batch.has_producer_id and batch.base_sequence < 0:
        raise PartitionError(ErrorCode.INVALID_RECORD, "a batch with a producer id needs a base sequence")


def _check_single_batch(records: Any, batch_size: int) -> None:
    """Kafka accepts one batch per partition (v3+); like Kafka, it ignores an incomplete trailing fragment."""
    rest = len(records) - batch_size
    if rest >= LOG_OVERHEAD and _LENGTH.unpack_from(records, batch_size + 8)[0] + LOG_OVERHEAD <= rest:
        raise PartitionError(ErrorCode.INVALID_RECORD, "only one record batch per partition is allowed")


def _check_producer(ctx: RequestContext, batch: RecordBatch, topic: str, index: int) -> None:
    if not batch.has_producer_id and not batch.is_transactional:
        return
    if batch.is_transactional:
        from kbroker.txn.runtime import transaction_coordinator  # transactions only: not on every Produce's path

        try:
            code = transaction_coordinator(ctx.broker).verify_partition(
                batch.producer_id, batch.producer_epoch, (topic, index)
            )
        except KafkaProtocolError:
            code = ErrorCode.INVALID_TXN_STATE
        if code is not ErrorCode.NONE:
            raise PartitionError(code, "the partition is not part of the producer's ongoing transaction")


def _error(
    index: int,
    code: ErrorCode,
    log: UnifiedLog | None,
    message: str | None,
    record_errors: tuple[RecordError, ...] = (),
) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": int(code),
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": log.log_start_offset if log is not None else -1,
        "record_errors": [
            {"batch_index": e.batch_index, "batch_index_error_message": e.message} for e in record_errors
        ],
        "error_message": message,
    }


async def _after_acks(
    ctx: RequestContext, pending: list[Pending], response: dict[str, Any], timeout_ms: int
) -> dict[str, Any]:
    """Answer once every appended partition that needs it is fsynced (one group commit per log) and, with
    acks=-1 on a replicated partition, in its ISR's hands."""
    outcomes = await asyncio.gather(*(_acknowledged(ctx, p, timeout_ms) for p in pending))
    for (result, log, *_), code in zip(pending, outcomes, strict=True):
        if code is not ErrorCode.NONE:
            result.update(_error(result["index"], code, log, None))
    return response


async def _acknowledged(ctx: RequestContext, pending: Pending, timeout_ms: int) -> ErrorCode:
    result, log, info, flush, replicated = pending
    if flush:
        try:
            await log.local.flush(info.last_offset + 1)
        except Exception as failure:  # noqa: BLE001 - the partition's answer, not the request's
            ctx.log.error("produce_flush_failed", partition=result["index"], error=str(failure))
            return ErrorCode.KAFKA_STORAGE_ERROR
    if replicated:
        assert ctx.broker.replicas is not None
        return await ctx.broker.replicas.wait_for_replication(log, info.last_offset + 1, timeout_ms)
    return ErrorCode.NONE
