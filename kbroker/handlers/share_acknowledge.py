"""ShareAcknowledge (79), versions 1-2: acknowledge acquired records within the member's share session.

The session must exist and the epoch be its next one (epoch 0 is INVALID_SHARE_SESSION_EPOCH: a
session opens with ShareFetch); -1 applies the acknowledgements, closes the session and releases
what the member still holds in its partitions.
"""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.handlers._share import ack_batches, ack_error_message, current_leader, topic_names_by_id
from kbroker.handlers.registry import handles
from kbroker.log import KafkaStorageError
from kbroker.share import share_runtime
from kbroker.share.sessions import FINAL_EPOCH, INITIAL_EPOCH
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode


@handles(ApiKey.SHARE_ACKNOWLEDGE, "1-2")
async def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = share_runtime(ctx.broker)
    group_id, member_id = request["group_id"] or "", request["member_id"] or ""
    epoch = request["share_session_epoch"]
    if not group_id or not member_id:
        return _top_level(ErrorCode.INVALID_REQUEST)
    ctx.require(AclOperation.READ, ResourceType.GROUP, group_id)
    if epoch == INITIAL_EPOCH:
        return _top_level(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    error, session = runtime.sessions.begin(group_id, member_id, epoch, runtime.clock())
    if error is not ErrorCode.NONE or session is None:
        return _top_level(error)
    names = topic_names_by_id(ctx)
    now = runtime.clock()
    responses = []
    known = {names[t["topic_id"]] for t in request["topics"] if t["topic_id"] in names}
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, known)
    for topic in request["topics"]:
        name = names.get(topic["topic_id"])
        partitions = []
        for p in topic["partitions"]:
            index = p["partition_index"]
            share = None if name is None else runtime.share_partition(group_id, name, index)
            if name is None:
                code = ErrorCode.UNKNOWN_TOPIC_ID
            elif name not in readable:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif share is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = share.acknowledge(member_id, ack_batches(p), now)
                runtime.after_acknowledge(group_id, name, index)
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": int(code),
                    "error_message": ack_error_message(code),
                    "current_leader": current_leader(ctx),
                }
            )
        responses.append({"topic_id": topic["topic_id"], "partitions": partitions})
    try:
        await runtime.persist(group_id)
    except KafkaStorageError as error:
        ctx.log.error("share_state_write_failed", group=group_id, error=str(error))
        for topic in responses:
            for partition in topic["partitions"]:
                if partition["error_code"] == 0:
                    partition["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
    if epoch == FINAL_EPOCH:
        runtime.sessions.close(group_id, member_id)
        runtime.release_member(group_id, member_id, list(session.partitions))
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "acquisition_lock_timeout_ms": runtime.partition_config.record_lock_duration_ms,
        "responses": responses,
        "node_endpoints": [],
    }


def _top_level(error: ErrorCode) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": None,
        "acquisition_lock_timeout_ms": 0,
        "responses": [],
        "node_endpoints": [],
    }
