"""OffsetFetch (9): a group's committed offsets; -1 where nothing is committed.

Topics null (v2+) asks for every committed partition; v8 batches groups.
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
from kbroker.handlers.registry import handles
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

NO_OFFSET = -1
NO_LEADER_EPOCH = -1


@handles(ApiKey.OFFSET_FETCH, "1-8")
def handle(ctx: RequestContext, request: dict[str, Any]) -> dict[str, Any]:
    runtime = group_runtime(ctx.broker)
    require_stable = ctx.api_version >= 7 and bool(request.get("require_stable"))
    pending = runtime.has_pending_txn_offset if require_stable else None
    if ctx.api_version >= 8:
        groups = []
        for group in request["groups"]:
            error, topics = _authorized_fetch(ctx, runtime.fetch, group["group_id"], group["topics"], pending)
            groups.append({"group_id": group["group_id"], "topics": topics, "error_code": int(error)})
        return {"throttle_time_ms": 0, "groups": groups}
    error, topics = _authorized_fetch(ctx, runtime.fetch, request["group_id"], request["topics"], pending)
    return {"throttle_time_ms": 0, "topics": topics, "error_code": int(error)}


def _authorized_fetch(
    ctx: RequestContext,
    fetch: Any,
    group_id: str,
    requested: list[dict[str, Any]] | None,
    pending: Callable[[str, TopicPartition], bool] | None,
) -> tuple[ErrorCode, list[dict[str, Any]]]:
    """As Kafka: DESCRIBE on the group, and offsets only of topics the client may describe (the others
    left out of an all-topics answer, TOPIC_AUTHORIZATION_FAILED when named)."""
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id or ""):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    if ctx.broker.authorizer is None:
        return ErrorCode.NONE, _fetch(fetch, group_id, requested, pending)
    if requested is None:
        found = _fetch(fetch, group_id, None, pending)
        describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {t["name"] for t in found})
        return ErrorCode.NONE, [t for t in found if t["name"] in describable]
    describable = ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, {t["name"] for t in requested})
    topics = _fetch(fetch, group_id, [t for t in requested if t["name"] in describable], pending)
    for topic in requested:
        if topic["name"] not in describable:
            denied = [
                {**_partition(p, None), "error_code": int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
                for p in topic["partition_indexes"]
            ]
            topics.append({"name": topic["name"], "partitions": denied})
    return ErrorCode.NONE, topics


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
