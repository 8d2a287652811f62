"""GroupOffsets: committed offsets of every group, with Kafka's commit checks and expiry (pure, no I/O).

It shares the coordinator's `groups` dict. Writing to __consumer_offsets is the
runtime's business: it validates here, appends, then applies here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kbroker.group.config import GroupConfig
from kbroker.group.consumer_group import ConsumerGroup, ConsumerMember
from kbroker.group.coordinator import validate_member
from kbroker.group.group import ClassicGroup, CommittedOffset, TopicPartition
from kbroker.group.state import GroupState
from protocol.errors import ErrorCode

E = ErrorCode
S = GroupState


@dataclass(frozen=True)
class GroupRecord:
    """What __consumer_offsets keeps of a group besides its offsets."""

    protocol_type: str
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp: int


class GroupOffsets:
    def __init__(self, config: GroupConfig, clock: Callable[[], int], groups: dict[str, ClassicGroup]) -> None:
        self.config = config
        self.clock = clock
        self.groups = groups

    # -- OffsetCommit ------------------------------------------------------------
    def validate_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        *,
        transactional: bool = False,
        api_version: int = 9,
    ) -> ErrorCode:
        """Whether this member may commit now (creates a "simple" group for a generation -1 commit).

        Transactional commits (TxnOffsetCommit) are checked as Kafka does: member and generation
        when given (KIP-447), but neither REBALANCE_IN_PROGRESS nor "members only" for anonymous ones.
        """
        if not group_id and transactional:  # OffsetCommit takes the empty group id, as Kafka's (old clients)
            return E.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return E.ILLEGAL_GENERATION  # Kafka (OffsetCommit < v9): no such group at that generation
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=self.clock())
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.consumer is not None:
            return _validate_consumer_commit(group.consumer, generation_id, member_id, transactional, api_version)
        if generation_id < 0 and group.is_in(S.EMPTY):
            return E.NONE  # admin clients and consumers that assign partitions themselves
        if generation_id >= 0 or member_id or instance_id is not None:
            error = validate_member(group, member_id, instance_id)
            if error is not E.NONE:
                return error
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
        elif not transactional and not group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if not transactional and group.is_in(S.COMPLETING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def metadata_fits(self, metadata: str | None) -> bool:
        return metadata is None or len(metadata.encode()) <= self.config.offset_metadata_max_bytes

    def apply_commit(self, group_id: str, offsets: dict[TopicPartition, CommittedOffset]) -> None:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=self.clock())
        group.offsets.update(offsets)

    # -- OffsetFetch ---------------------------------------------------------------
    def validate_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        """OffsetFetch v9+ from a member of a consumer-protocol group: its epoch must be current."""
        group = self.groups.get(group_id)
        if group is None or group.consumer is None or (member_id is None and member_epoch < 0):
            return E.NONE
        member = group.consumer.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return _check_epoch(member, member_epoch)

    def fetch(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        """Committed offsets of the partitions asked for (None: not committed), or all of them."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    # -- DeleteGroups and OffsetDelete ---------------------------------------------
    def delete_group(self, group_id: str) -> tuple[ErrorCode, ClassicGroup | None]:
        """Remove an empty group and its offsets; returns the removed group for tombstones."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return E.GROUP_ID_NOT_FOUND, None
        if not group.is_idle():
            return E.NON_EMPTY_GROUP, None
        group.transition(S.DEAD, self.clock())
        del self.groups[group_id]
        return E.NONE, group

    def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: drop offsets of partitions the group no longer consumes."""
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return E.GROUP_ID_NOT_FOUND, {}
        subscribed: set[str] = set()
        if not group.is_idle():
            topics = group.subscribed_topics()
            if topics is None:
                return E.NON_EMPTY_GROUP, {}
            subscribed = topics
        errors = {}
        for tp in partitions:
            if tp[0] in subscribed:
                errors[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                group.offsets.pop(tp, None)
                errors[tp] = E.NONE
        return E.NONE, errors

    # -- expiry ------------------------------------------------------------------
    def expire(
        self, topic_exists: Callable[[str], bool] = lambda _: True
    ) -> tuple[list[tuple[str, TopicPartition]], list[ClassicGroup]]:
        """offsets.retention.minutes: expired offsets, and the empty groups left without any (now Dead).

        An Empty group's offsets expire retention after the later of the commit and the group
        becoming Empty (only the commit for groups that never had members); a consumer group
        with members keeps the offsets of the topics it subscribes to. Offsets of topics that
        no longer exist go at once (commits need the topic, so they were deleted since).
        """
        now = self.clock()
        retention = self.config.offsets_retention_ms
        expired: list[tuple[str, TopicPartition]] = []
        dead: list[ClassicGroup] = []
        for group in list(self.groups.values()):
            for tp, committed in list(group.offsets.items()):
                if not topic_exists(tp[0]) or _expired(group, tp, committed, now, retention):
                    del group.offsets[tp]
                    expired.append((group.group_id, tp))
            if group.is_idle() and not group.offsets and not group.pending_members:
                group.transition(S.DEAD, now)
                del self.groups[group.group_id]
                dead.append(group)
        return expired, dead

    # -- replay of __consumer_offsets ----------------------------------------------
    def load_offset(self, group_id: str, tp: TopicPartition, committed: CommittedOffset | None) -> None:
        group = self.groups.get(group_id)
        if committed is None:
            if group is not None:
                group.offsets.pop(tp, None)
            return
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=committed.commit_timestamp)
        group.offsets[tp] = committed

    def load_group(self, group_id: str, record: GroupRecord | None) -> None:
        if record is None:
            self.groups.pop(group_id, None)
            return
        group = self.groups.setdefault(group_id, ClassicGroup(group_id))
        group.protocol_type = record.protocol_type
        group.generation_id = record.generation_id
        group.state_timestamp = record.state_timestamp

    def group_record(self, group_id: str) -> GroupRecord | None:
        """The record to persist for a group with members' history; None for simple groups or gone ones."""
        group = self.groups.get(group_id)
        if group is None or group.protocol_type is None:
            return None
        return GroupRecord(
            group.protocol_type, group.generation_id, group.protocol_name, group.leader_id, group.state_timestamp
        )


def _validate_consumer_commit(
    group: ConsumerGroup, member_epoch: int, member_id: str, transactional: bool, api_version: int
) -> ErrorCode:
    """Kafka's ConsumerGroup.validateOffsetCommit: the member's current epoch, OffsetCommit v9+ (any version
    for a member using the classic protocol, whose generation is its epoch)."""
    if member_epoch < 0 and (not group.members or (transactional and not member_id)):
        return E.NONE  # admin clients and manual assignment, while the group has no members
    member = group.members.get(member_id)
    if member is None:
        return E.UNKNOWN_MEMBER_ID
    if not transactional and member.classic is None and api_version < 9:
        return E.UNSUPPORTED_VERSION
    return _check_epoch(member, member_epoch)


def _check_epoch(member: ConsumerMember, epoch: int) -> ErrorCode:
    """STALE_MEMBER_EPOCH for a consumer-protocol member, ILLEGAL_GENERATION for a classic one, as Kafka."""
    if member.member_epoch == epoch:
        return E.NONE
    return E.STALE_MEMBER_EPOCH if member.classic is None else E.ILLEGAL_GENERATION


def _expired(group: ClassicGroup, tp: TopicPartition, committed: CommittedOffset, now: int, retention: int) -> bool:
    if group.is_idle():
        since = committed.commit_timestamp
        if group.protocol_type is not None:
            since = max(since, group.state_timestamp)
        return now - since >= retention
    topics = group.subscribed_topics()
    if topics is None or tp[0] in topics:
        return False
    return now - committed.commit_timestamp >= retention
