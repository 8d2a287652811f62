"""What OffsetCommit and TxnOffsetCommit share: checking each requested partition's offset."""

from __future__ import annotations

from typing import Any

from kbroker.auth.acl import AclOperation, ResourceType
from kbroker.context import RequestContext
from kbroker.group.group import CommittedOffset, TopicPartition
from kbroker.group.runtime import GroupRuntime
from protocol.errors import ErrorCode


def check_offsets(
    ctx: RequestContext, runtime: GroupRuntime, topics: list[dict[str, Any]]
) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, CommittedOffset]]:
    """Per partition: an error (unknown partition, metadata too large), or the offset to commit."""
    now = runtime.clock()
    errors: dict[TopicPartition, ErrorCode] = {}
    valid: dict[TopicPartition, CommittedOffset] = {}
    readable = ctx.authorized(AclOperation.READ, ResourceType.TOPIC, {t["name"] for t in topics})
    for topic in topics:
        count = partition_count(ctx, topic["name"])
        for partition in topic["partitions"]:
            tp = (topic["name"], partition["partition_index"])
            metadata = partition["committed_metadata"]
            if topic["name"] not in readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif count is None or not 0 <= tp[1] < count:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not runtime.offsets.metadata_fits(metadata):
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                epoch = partition["committed_leader_epoch"]
                valid[tp] = CommittedOffset(partition["committed_offset"], epoch, metadata or "", now)
    return errors, valid


def partition_count(ctx: RequestContext, topic: str) -> int | None:
    """The topic's partition count: the cluster's in cluster mode (this broker may hold no replica of it)."""
    cluster = ctx.broker.cluster
    if cluster is not None and topic in cluster.metadata.topics:
        return len(cluster.metadata.topics[topic].partitions)
    meta = ctx.broker.logs.topic(topic)
    return None if meta is None else meta.partitions


TOPIC_IDS_VERSION = 10  # OffsetCommit and OffsetFetch name topics by id from v10


def with_names_from_ids(ctx: RequestContext, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """v10+ requests: each topic with its name filled in from its topic id ("" for an unknown id)."""
    names = {meta.topic_id.bytes: name for name, meta in ctx.broker.logs.topics().items()}
    return [{**topic, "name": names.get(topic["topic_id"], "")} for topic in topics]


def topic_id_of(ctx: RequestContext, name: str) -> bytes | None:
    meta = ctx.broker.logs.topic(name)
    return None if meta is None else meta.topic_id.bytes
