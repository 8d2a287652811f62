"""ShareFetch (78), versions 1-2: acknowledge, then acquire records for a share-group member.

- The share session (KIP-932): epoch 0 opens it with the request's partitions, later epochs add
  partitions and drop `forgotten_topics_data`, -1 closes it (acknowledgements are applied, nothing
  is fetched, what the member still holds in the session's partitions is released).
- Piggybacked acknowledgements are applied per partition, all or nothing, before fetching; their
  outcome is `acknowledge_error_code`.
- Up to `max_records` records are acquired over the session's partitions, starting from a
  different partition each time; each answer carries the record batches and the acquired ranges
  with their delivery counts. With nothing to acquire the request waits up to `max_wait_ms` for
  appends, released records or held records becoming due (the share runtime's timer wakes it);
  when the records read were all held or archived by the tag filter it reads on first, yielding to
  the event loop between rounds. v2's renew-only requests (`is_renew_ack`) acquire nothing.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._share import ack_batches, ack_error_message, current_leader, topic_names_by_id
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError, OffsetOutOfRangeError
from kbroker.share import share_runtime
from kbroker.share.reader import acquire_committed, acquire_from_log, more_to_read
from kbroker.share.runtime import ShareRuntime
from kbroker.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSession
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

DEFAULT_MAX_RECORDS = 500
RECORD_LIMIT_MODE = 1  # ShareAcquireMode: 0 batch-optimized (v1's behaviour), 1 record-limit
_rotation = itertools.count()

READ, TOPIC = AclOperation.READ, ResourceType.TOPIC


@handles(ApiKey.SHARE_FETCH, "1-2")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    group_id, member_id = request["group_id"] or "", request["member_id"] or ""
    if not group_id or not member_id:
        return _top_level(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.")
    ctx.require(AclOperation.READ, ResourceType.GROUP, group_id)
    epoch = request["share_session_epoch"]
    if epoch == INITIAL_EPOCH and any(p["acknowledgement_batches"] for t in request["topics"] for p in t["partitions"]):
        return _top_level(ErrorCode.INVALID_REQUEST)  # as Kafka: nothing to acknowledge in a new session
    error, session = runtime.sessions.begin(group_id, member_id, epoch, runtime.clock())
    if error is not ErrorCode.NONE or session is None:
        return _top_level(error)
    runtime.forget_deleted_topics()
    names = topic_names_by_id(ctx)
    ids = {name: uuid for uuid, name in names.items()}
    answers: dict[tuple[str, int], dict[str, Any]] = {}
    unknown: list[tuple[bytes, dict[str, Any]]] = []
    now = runtime.clock()
    readable = ctx.authorized(READ, TOPIC, {names[t["topic_id"]] for t in request["topics"] if t["topic_id"] in names})
    for topic in request["topics"]:
        name = names.get(topic["topic_id"])
        for p in topic["partitions"]:
            if name is None or name not in readable:
                code = ErrorCode.UNKNOWN_TOPIC_ID if name is None else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                unknown.append((topic["topic_id"], _partition(ctx, p["partition_index"], code)))
                continue
            key = (name, p["partition_index"])
            if epoch != FINAL_EPOCH:
                session.partitions[key] = None
            if p["acknowledgement_batches"]:
                answer = answers.setdefault(key, _partition(ctx, key[1]))
                share = runtime.share_partition(group_id, name, key[1])
                code = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    if share is None
                    else share.acknowledge(member_id, ack_batches(p), now)
                )
                answer["acknowledge_error_code"] = int(code)
                answer["acknowledge_error_message"] = ack_error_message(code)
                runtime.after_acknowledge(group_id, name, key[1])
    for forgotten in request["forgotten_topics_data"]:
        name = names.get(forgotten["topic_id"])
        keys = [(name, index) for index in forgotten["partitions"] if name is not None]
        for key in keys:
            session.partitions.pop(key, None)
        if keys:
            runtime.release_member(group_id, member_id, keys)
    try:
        await runtime.persist(group_id)
    except KafkaStorageError as error:
        ctx.log.error("share_state_write_failed", group=group_id, error=str(error))
        for answer in answers.values():
            answer["acknowledge_error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
    if epoch == FINAL_EPOCH:
        runtime.sessions.close(group_id, member_id)
        runtime.release_member(group_id, member_id, list(session.partitions))
        return _response(runtime, ids, answers, unknown)
    if epoch == INITIAL_EPOCH:  # a full request is answered for each of its partitions, records or not
        for key in session.partitions:
            answers.setdefault(key, _partition(ctx, key[1]))
    if not request.get("is_renew_ack", False):  # (as Kafka, for a member id the group does not know too)
        await _acquire(ctx, runtime, session, request, answers)
    return _response(runtime, ids, answers, unknown)


async def _acquire(
    ctx: RequestContext,
    runtime: ShareRuntime,
    session: ShareSession,
    request: dict[str, Any],
    answers: dict[tuple[str, int], dict[str, Any]],
) -> None:
    max_records = request["max_records"] if request["max_records"] > 0 else DEFAULT_MAX_RECORDS
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0, request["max_wait_ms"]) / 1000
    while True:
        whole_batches = request.get("share_acquire_mode", 0) != RECORD_LIMIT_MODE
        acquired, read_on = _acquire_once(
            ctx, runtime, session, max_records, request["max_bytes"], answers, whole_batches
        )
        if acquired:
            return
        remaining = deadline - loop.time()
        if remaining <= 0 or not session.partitions:
            return
        if read_on:
            await asyncio.sleep(0)
        else:
            await ctx.broker.fetch_waiters.wait(list(session.partitions), 1, remaining * 1000)
        if runtime.sessions.sessions.get((session.group_id, session.member_id)) is not session:
            return


def _acquire_once(
    ctx: RequestContext,
    runtime: ShareRuntime,
    session: ShareSession,
    max_records: int,
    max_bytes: int,
    answers: dict[tuple[str, int], dict[str, Any]],
    whole_batches: bool,
) -> tuple[bool, bool]:
    """(whether anything was acquired, whether a partition has more to read at once)."""
    keys = list(session.partitions)
    if not keys:
        return False, False
    start = next(_rotation) % len(keys)
    now = runtime.clock()
    acquired_any = read_on = False
    for key in keys[start:] + keys[:start]:
        if max_records <= 0 or max_bytes <= 0:
            break
        name, index = key
        log = ctx.broker.logs.get_log(name, index)
        share = runtime.share_partition(session.group_id, name, index)
        if ctx.broker.logs.topic(name) is None:
            session.partitions.pop(key, None)  # deleted
            continue
        if log is None or share is None:
            answers.setdefault(key, _partition(ctx, index))["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        before = share.end_offset
        try:
            unified = ctx.broker.logs.get_partition(name, index)
            fetch_end = log.high_watermark
            if unified is not None and runtime.settings(session.group_id).read_committed:
                fetch_end = unified.last_stable_offset()
                ranges, records = acquire_committed(
                    share, unified, session.member_id, now, max_records, max_bytes, whole_batches
                )
            else:
                ranges, records = acquire_from_log(
                    share, log, session.member_id, now, max_records, max_bytes, whole_batches=whole_batches
                )
        except (KafkaStorageError, OffsetOutOfRangeError) as error:
            ctx.log.error("share_fetch_read_failed", topic=name, partition=index, error=str(error))
            answers.setdefault(key, _partition(ctx, index))["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            continue
        if not ranges:
            read_on = read_on or (share.end_offset > before and more_to_read(share, fetch_end))
            continue
        acquired_any = True
        runtime.notify_lock_added(now + share.config.record_lock_duration_ms)
        answer = answers.setdefault(key, _partition(ctx, index))
        answer["records"] = records
        answer["acquired_records"] = [
            {"first_offset": r.first_offset, "last_offset": r.last_offset, "delivery_count": r.delivery_count}
            for r in ranges
        ]
        max_records -= sum(r.last_offset - r.first_offset + 1 for r in ranges)
        max_bytes -= len(records)
    return acquired_any, read_on


def _partition(ctx: RequestContext, index: int, error: ErrorCode = ErrorCode.NONE) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": int(error),
        "error_message": None,
        "acknowledge_error_code": 0,
        "acknowledge_error_message": None,
        "current_leader": current_leader(ctx),
        "records": b"",
        "acquired_records": [],
    }


def _response(
    runtime: ShareRuntime,
    ids: dict[str, bytes],
    answers: dict[tuple[str, int], dict[str, Any]],
    unknown: list[tuple[bytes, dict[str, Any]]],
) -> dict[str, Any]:
    by_topic: dict[bytes, list[dict[str, Any]]] = {}
    for (name, _), answer in answers.items():
        uuid = ids.get(name)
        if uuid is not None:  # else the topic was deleted meanwhile
            by_topic.setdefault(uuid, []).append(answer)
    for uuid, answer in unknown:
        by_topic.setdefault(uuid, []).append(answer)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": runtime.partition_config.record_lock_duration_ms,
        "responses": [{"topic_id": uuid, "partitions": parts} for uuid, parts in by_topic.items()],
        "node_endpoints": [],
    }


def _top_level(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": message,
        "acquisition_lock_timeout_ms": 0,
        "responses": [],
        "node_endpoints": [],
    }
