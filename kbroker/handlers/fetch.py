"""Fetch (1), versions 4-12: read record batches, long-polling until min_bytes or max_wait_ms.

As in Kafka (KafkaApis.handleFetchRequest, ReplicaManager.fetchMessages):
- every requested partition is in the answer, with its high watermark, last stable
  offset (the partition's UnifiedLog: below the first open transaction), log start offset
  and, for read_committed, the aborted transactions overlapping the returned data
  (Kafka's collectAbortedTransactions; null for read_uncommitted);
- read_committed reads stop at the last stable offset;
- max_bytes bounds the whole response and partition_max_bytes each partition, but the
  first partition with data returns at least one whole batch (KIP-74);
- the answer is immediate when max_wait_ms <= 0, min_bytes is reached, a partition
  has an error, or no partition is asked for; otherwise the fetch waits (kbroker.waiters) for appends or max_wait_ms,
  then reads again (read_committed: again and again until min_bytes are below the LSO, as
  an append may be an open transaction's and a marker moves the LSO);
- fetch sessions (KIP-227) are refused: session_id is always 0, which every client
  accepts as "full fetches only". A non-zero session id with a positive epoch names a
  session that cannot exist: FETCH_SESSION_ID_NOT_FOUND; id 0 with a positive epoch:
  INVALID_FETCH_SESSION_EPOCH.
A follower's fetch (replica_id >= 0, cluster mode; Kafka's replica fetch path) reads to the log end
offset, is first checked against its LastFetchedEpoch (the leader's epoch cache: a follower whose last
epoch ended earlier here, or is unknown here, gets DivergingEpoch and no records, and truncates), and
reports its fetch offset to the leader's replica state (kbroker.cluster.replica_manager: the high
watermark, the ISR). With an authorizer a follower's fetch needs CLUSTER_ACTION on the cluster, never READ
on the topics. Its long poll counts appends; a consumer's on a replicated partition wakes when
the high watermark moves.
Batches go out as FileChunks (kbroker.sendfile): the connection sends them with
os.sendfile, so the record bytes never pass through Python.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._leadership import leadership_error
from kbroker.handlers._partition_errors import missing_log_error
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError, LogReadResult, OffsetOutOfRangeError, UnifiedLog
from kbroker.sendfile import FileChunk
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

READ, TOPIC = AclOperation.READ, ResourceType.TOPIC
READ_COMMITTED = 1
NO_SESSION = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1


@handles(ApiKey.FETCH, "4-12")
def handle(ctx: RequestContext, request: dict[str, Any]) -> Any:
    session_error = _session_error(request["session_id"], request["session_epoch"])
    if session_error is not None:
        return {"throttle_time_ms": 0, "error_code": int(session_error), "session_id": NO_SESSION, "responses": []}
    quotas = ctx.broker.quotas
    metered = quotas is not None and quotas.fetch.enabled and request.get("replica_id", -1) < 0
    if metered:
        _cap_to_quota(ctx, request)
    response, available, respond_now = read_partitions(ctx, request)
    if respond_now or request["max_wait_ms"] <= 0 or available >= request["min_bytes"] or not request["topics"]:
        return _throttled(ctx, response) if metered else response
    if metered:
        return _throttled_after(ctx, _long_poll(ctx, request, request["min_bytes"] - available))
    return _long_poll(ctx, request, request["min_bytes"] - available)


def _cap_to_quota(ctx: RequestContext, request: dict[str, Any]) -> None:
    """A consumer never asks for more than its quota lets it take in one window: more would
    throttle it for sure (Kafka caps fetch.max.bytes so, KafkaApis.handleFetchRequest)."""
    assert ctx.broker.quotas is not None
    cap = ctx.broker.quotas.fetch_max_bytes(ctx)
    if cap is not None:
        request["max_bytes"] = min(request["max_bytes"], ctx.broker.config.get_int("fetch.max.bytes"), cap)
        request["min_bytes"] = min(request["min_bytes"], request["max_bytes"])


def _throttled(ctx: RequestContext, response: dict[str, Any]) -> dict[str, Any]:
    """Record the answer's size against consumer_byte_rate; over quota, the client gets an empty
    answer carrying the throttle time instead (its bytes are not counted), as Kafka does."""
    assert ctx.broker.quotas is not None
    size = sum(len(p["records"]) for t in response["responses"] for p in t["partitions"])
    throttle = ctx.broker.quotas.fetch_throttle(ctx, size)
    if throttle <= 0:
        return response
    ctx.throttle_ms = max(ctx.throttle_ms, throttle)
    return {"throttle_time_ms": throttle, "error_code": 0, "session_id": NO_SESSION, "responses": []}


async def _throttled_after(ctx: RequestContext, answer: Any) -> dict[str, Any]:
    return _throttled(ctx, await answer)


def _session_error(session_id: int, epoch: int) -> ErrorCode | None:
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        return None  # a full fetch (a session request we decline, or a session's close)
    if session_id == NO_SESSION:
        return ErrorCode.INVALID_FETCH_SESSION_EPOCH
    return ErrorCode.FETCH_SESSION_ID_NOT_FOUND


async def _long_poll(ctx: RequestContext, request: dict[str, Any], missing: int) -> dict[str, Any]:
    keys = [(t["topic"], p["partition"]) for t in request["topics"] for p in t["partitions"]]
    waiters = ctx.broker.fetch_waiters
    if request["isolation_level"] != READ_COMMITTED:
        await waiters.wait(keys, missing, request["max_wait_ms"], replica=_is_replica(ctx, request))
        response, _, _ = read_partitions(ctx, request)
        return response
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request["max_wait_ms"] / 1000
    while True:  # any append may have moved the LSO: read again after each
        await waiters.wait(keys, 1, max(0.0, (deadline - loop.time()) * 1000))
        response, available, failed = read_partitions(ctx, request)
        if failed or available >= request["min_bytes"] or loop.time() >= deadline:
            return response


def read_partitions(ctx: RequestContext, request: dict[str, Any]) -> tuple[dict[str, Any], int, bool]:
    """(response, bytes read, whether a partition failed) for the request's partitions, in order."""
    logs = ctx.broker.logs
    limit = request["max_bytes"]
    min_one_batch = True
    total = 0
    failed = False
    read_committed = request["isolation_level"] == READ_COMMITTED
    replica_id = request.get("replica_id", -1) if _is_replica(ctx, request) else -1
    responses = []
    readable = None if ctx.broker.authorizer is None else _readable(ctx, request)
    for topic in request["topics"]:
        name = topic["topic"]
        partitions = []
        for p in topic["partitions"]:
            index = p["partition"]
            log = logs.get_partition(name, index)
            code, current_epoch = leadership_error(ctx, name, index, p["current_leader_epoch"])
            if replica_id >= 0 and ctx.broker.replicas is not None and ctx.broker.replicas.shutting_down:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER  # stopping: the follower backs off
            if readable is not None and name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif log is None:
                code = missing_log_error(ctx, name, index)
            if code is not None:
                partitions.append(_error(index, code, aborted=[] if code in _REFUSED_BEFORE_READ else None))
                failed = True
                continue
            assert log is not None
            fetch_offset = p["fetch_offset"]
            if replica_id >= 0:
                diverging = _diverging_epoch(log, p, current_epoch)
                if diverging is not None:
                    partitions.append(diverging)
                    failed = True  # answer now: the follower truncates first
                    continue
            try:
                last_stable = log.last_stable_offset()
                result = log.read(
                    fetch_offset,
                    min(p["partition_max_bytes"], limit),
                    max_offset=last_stable if read_committed else None,
                    min_one_batch=min_one_batch,
                    to_log_end=replica_id >= 0,
                )
                if replica_id >= 0:
                    assert ctx.broker.replicas is not None
                    ctx.broker.replicas.follower_fetch(log, replica_id, fetch_offset, result.log_end_offset)
                    result.high_watermark = log.high_watermark
            except OffsetOutOfRangeError:
                partitions.append(_error(index, ErrorCode.OFFSET_OUT_OF_RANGE))
                failed = True
                continue
            except KafkaStorageError as error:
                ctx.log.error("fetch_storage_error", topic=name, partition=index, error=str(error))
                partitions.append(_error(index, ErrorCode.KAFKA_STORAGE_ERROR))
                failed = True
                continue
            region = result.region
            if region is not None:
                total += region.size
                limit = max(0, limit - region.size)
                min_one_batch = False
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": 0,
                    "high_watermark": result.high_watermark,
                    "last_stable_offset": last_stable,
                    "log_start_offset": result.log_start_offset,
                    "aborted_transactions": _aborted(log, fetch_offset, result, last_stable)
                    if read_committed
                    else None,
                    "preferred_read_replica": -1,
                    "records": b"" if region is None else FileChunk(region) if region.data is None else region.data,
                }
            )
        responses.append({"topic": name, "partitions": partitions})
    response = {"throttle_time_ms": 0, "error_code": 0, "session_id": NO_SESSION, "responses": responses}
    return response, total, failed


def _readable(ctx: RequestContext, request: dict[str, Any]) -> set[str]:
    """The topics the fetch may read. A consumer needs READ on each; a follower (replica_id >= 0, Kafka's
    isFromFollower, whether or not this broker is in a cluster) needs CLUSTER_ACTION on the cluster, and
    without it gets TOPIC_AUTHORIZATION_FAILED for every partition, as KafkaApis.handleFetchRequest answers."""
    names = [t["topic"] for t in request["topics"]]
    if request.get("replica_id", -1) >= 0:
        return set(names) if ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER) else set()
    return ctx.authorized(READ, TOPIC, names)


def _is_replica(ctx: RequestContext, request: dict[str, Any]) -> bool:
    return request.get("replica_id", -1) >= 0 and ctx.broker.replicas is not None


def _diverging_epoch(log: UnifiedLog, partition: dict[str, Any], current_epoch: int) -> dict[str, Any] | None:
    """A follower's answer when its last fetched epoch does not end where its log does here (Kafka's
    Partition.fetchRecords): the epoch and end offset it must truncate to, no records."""
    last_fetched = partition["last_fetched_epoch"]
    if last_fetched < 0:
        return None
    epoch, end_offset = log.end_offset_for_epoch(last_fetched, current_epoch)
    if epoch >= last_fetched and end_offset >= partition["fetch_offset"]:
        return None
    answer = _error(partition["partition"], ErrorCode.NONE)
    answer.update(
        high_watermark=log.high_watermark,
        last_stable_offset=log.last_stable_offset(),
        log_start_offset=log.log_start_offset,
        diverging_epoch={"epoch": epoch, "end_offset": end_offset},
    )
    return answer


def _aborted(log: UnifiedLog, fetch_offset: int, result: LogReadResult, bound: int) -> list[dict[str, int]]:
    """The aborted transactions a read_committed consumer needs to filter the returned batches."""
    if result.region is None:
        return []
    upper = _next_offset(result, bound)
    return [
        {"producer_id": t.producer_id, "first_offset": t.first_offset} for t in log.collect_aborted(fetch_offset, upper)
    ]


def _next_offset(result: LogReadResult, bound: int) -> int:
    """The offset after the returned batches: the base offset of the batch that follows them in
    the segment file (one 8-byte pread), else `bound` (the LSO the read stopped at)."""
    region = result.region
    assert region is not None
    try:
        data = os.pread(region.fd, 8, region.position + region.size)
    except OSError:
        return bound
    if len(data) == 8:
        offset = int.from_bytes(data, "big", signed=True)
        if result.first_offset < offset <= bound:
            return offset
    return bound


# Kafka answers these before it reads (unknown or unauthorized partitions) with an empty list of aborted
# transactions; the errors of a read (leadership, offsets) with none
_REFUSED_BEFORE_READ = frozenset(
    {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID}
)


def _error(index: int, code: ErrorCode, aborted: list[dict[str, int]] | None = None) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": int(code),
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": b"",
    }
