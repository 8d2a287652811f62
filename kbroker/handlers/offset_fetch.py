"""OffsetFetch (9): a group's committed offsets; -1 where nothing is committed.

Topics null (v2+) asks for every committed partition; v8 batches groups; v9 names the member
and member epoch of a consumer-protocol group (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH as Kafka); v10
names topics by id.
RequireStable (v7+): a partition with a transactional offset still pending (TxnOffsetCommit
before its transaction's marker, GroupRuntime.has_pending_txn_offset) answers
UNSTABLE_OFFSET_COMMIT with offset -1, as Kafka does; the client retries.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.group import CommittedOffset, TopicPartition
from kbroker.handlers._offsets import TOPIC_IDS_VERSION, topic_id_of, with_names_from_ids
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

NO_OFFSET = -1
NO_LEADER_EPOCH = -1


@handles(ApiKey.OFFSET_FETCH, "1-10")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    require_stable = ctx.api_version >= 7 and bool(request.get("require_stable"))
    pending = runtime.has_pending_txn_offset if require_stable else None
    if ctx.api_version >= 8:
        groups = []
        for group in request["groups"]:
            if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group["group_id"] or ""):
                error = ErrorCode.GROUP_AUTHORIZATION_FAILED
            else:
                error = runtime.coordinator_error(group["group_id"] or "")
            if error is ErrorCode.NONE:
                error = runtime.offsets.validate_fetch(
                    group["group_id"], group.get("member_id"), group.get("member_epoch", -1)
                )
            if error is not ErrorCode.NONE:
                topics = []
            elif ctx.api_version >= TOPIC_IDS_VERSION:
                topics = _fetch_by_id(ctx, runtime.fetch, group["group_id"], group["topics"], pending)
            else:
                topics = _fetch(runtime.fetch, group["group_id"], group["topics"], pending)
            topics = _describable(ctx, topics, named=group["topics"] is not None)
            groups.append({"group_id": group["group_id"], "topics": topics, "error_code": int(error)})
        return {"throttle_time_ms": 0, "groups": groups}
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, request["group_id"] or ""):
        return {"throttle_time_ms": 0, "topics": [], "error_code": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
    owner = runtime.coordinator_error(request["group_id"] or "")
    if owner is not ErrorCode.NONE:
        return {"throttle_time_ms": 0, "topics": [], "error_code": int(owner)}
    topics = _fetch(runtime.fetch, request["group_id"], request["topics"], pending)
    topics = _describable(ctx, topics, named=request["topics"] is not None)
    return {"throttle_time_ms": 0, "topics": topics, "error_code": 0}


def _describable(ctx: RequestContext, topics: list[dict[str, Any]], *, named: bool) -> list[dict[str, Any]]:
    """As Kafka: offsets only of topics the client may DESCRIBE; the others are left out of an all-topics
    answer, and answered TOPIC_AUTHORIZATION_FAILED when named."""
    if ctx.broker.authorizer is None:
        return topics
    allowed = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {t["name"] for t in topics if t["name"]})
    answered = []
    for topic in topics:
        if not topic["name"] or topic["name"] in allowed:
            answered.append(topic)
        elif named:
            denied = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            partitions = [{**_partition(p["partition_index"], None), "error_code": denied} for p in topic["partitions"]]
            answered.append({**topic, "partitions": partitions})
    return answered


def _fetch_by_id(
    ctx: RequestContext,
    fetch: Any,
    group_id: str,
    requested: list[dict[str, Any]] | None,
    pending: Callable[[str, TopicPartition], bool] | None,
) -> list[dict[str, Any]]:
    """v10: topics asked for and answered by id; an unknown id gets UNKNOWN_TOPIC_ID, and committed
    offsets of topics that no longer exist are left out (they have no id to show)."""
    named = None if requested is None else with_names_from_ids(ctx, requested)
    known = None if named is None else [t for t in named if t["name"]]
    answered = []
    for topic in _fetch(fetch, group_id, known, pending):
        uuid = topic_id_of(ctx, topic["name"])
        if uuid is not None:
            answered.append({**topic, "topic_id": uuid})
    for topic in named or []:
        if not topic["name"]:
            answered.append(
                {
                    "name": "",
                    "topic_id": topic["topic_id"],
                    "partitions": [
                        {**_partition(p, None), "error_code": int(ErrorCode.UNKNOWN_TOPIC_ID)}
                        for p in topic["partition_indexes"]
                    ],
                }
            )
    return answered


def _fetch(
    fetch: Any,
    group_id: str,
    requested: list[dict[str, Any]] | None,
    pending: Callable[[str, TopicPartition], bool] | None,
) -> list[dict[str, Any]]:
    wanted = None
    if requested is not None:
        wanted = [(t["name"], p) for t in requested for p in t["partition_indexes"]]
    group_id = group_id or ""
    found: dict[TopicPartition, CommittedOffset | None] = fetch(group_id, wanted)
    ordered = list(found.items()) if wanted is not None else sorted(found.items())
    return [
        {
            "name": name,
            "partitions": [
                _unstable(tp[1]) if pending is not None and pending(group_id, tp) else _partition(tp[1], committed)
                for tp, committed in entries
            ],
        }
        for name, entries in groupby(ordered, key=lambda item: item[0][0])
    ]


def _unstable(index: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": NO_OFFSET,
        "committed_leader_epoch": NO_LEADER_EPOCH,
        "metadata": "",
        "error_code": int(ErrorCode.UNSTABLE_OFFSET_COMMIT),
    }


def _partition(index: int, committed: CommittedOffset | None) -> dict[str, Any]:
    if committed is None:
        return {
            "partition_index": index,
            "committed_offset": NO_OFFSET,
            "committed_leader_epoch": NO_LEADER_EPOCH,
            "metadata": "",
            "error_code": 0,
        }
    return {
        "partition_index": index,
        "committed_offset": committed.offset,
        "committed_leader_epoch": committed.leader_epoch,
        "metadata": committed.metadata,
        "error_code": 0,
    }
