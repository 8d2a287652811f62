"""What the share-group handlers share: topic ids and names, acknowledgement batches, node endpoints."""

from __future__ import annotations

from typing import Any

from kbroker.context import RequestContext
from kbroker.group import group_runtime
from kbroker.group.state import GroupState
from kbroker.share.partition import AcknowledgementBatch
from protocol.errors import ErrorCode

LEADER_EPOCH = 0


def topic_names_by_id(ctx: RequestContext) -> dict[bytes, str]:
    return {metadata.topic_id.bytes: name for name, metadata in ctx.broker.logs.topics().items()}


def topic_id(ctx: RequestContext, name: str) -> bytes | None:
    metadata = ctx.broker.logs.topic(name)
    return None if metadata is None else metadata.topic_id.bytes


def is_classic_or_consumer_group(ctx: RequestContext, group_id: str) -> bool:
    """Group ids are one namespace for every group type: this id is a live classic or consumer group's."""
    group = group_runtime(ctx.broker).groups.get(group_id)
    return group is not None and group.state is not GroupState.DEAD


def not_a_share_group(group_id: str) -> str:
    return f"Group {group_id} is not a share group."


def ack_batches(partition: dict[str, Any]) -> list[AcknowledgementBatch]:
    return [
        AcknowledgementBatch(b["first_offset"], b["last_offset"], tuple(b["acknowledge_types"]))
        for b in partition["acknowledgement_batches"]
    ]


def ack_error_message(code: ErrorCode) -> str | None:
    """The message of an acknowledgement's outcome: Kafka words the record-state refusals only."""
    return code.message if code is ErrorCode.INVALID_RECORD_STATE else None


def current_leader(ctx: RequestContext) -> dict[str, int]:
    """A partition answer's `current_leader`: Kafka fills it in only with a leadership error (this node leads
    every partition it answers for), else leaves the fields' defaults."""
    return {"leader_id": 0, "leader_epoch": LEADER_EPOCH}
