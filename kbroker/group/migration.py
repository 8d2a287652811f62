"""Online migration between the classic and the consumer group protocols (KIP-848), as Kafka 4.x does it.

- **Upgrade**: a member with the consumer protocol (ConsumerGroupHeartbeat, epoch 0) joins a classic group
  that has members. If `group.consumer.migration.policy` allows upgrades, the group uses the consumer
  protocol (`consumer` embedded protocol) and has no more members than `group.consumer.max.size`, it becomes
  a consumer group: every classic member stays, Stable, at the group's generation as its epoch, with its
  last assignment as both current and target assignment; JoinGroup/SyncGroup answers still awaited are
  answered REBALANCE_IN_PROGRESS. Classic members then go on through JoinGroup, SyncGroup and Heartbeat,
  answered by the consumer group (classic_members.py).
- **Downgrade**: when a member with the consumer protocol leaves or is fenced and only classic members
  remain, and the policy allows downgrades (and the group is no bigger than `group.max.size`), the group
  becomes a classic group again: generation = the group epoch, each member's target assignment as its
  assignment, and a rebalance starts.

Pure: these functions change the group objects they are given and return what must be answered.
"""

from __future__ import annotations

import enum

from kbroker.group.consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember, MemberState
from kbroker.group.embedded import (
    EmbeddedProtocolError,
    assignment_bytes,
    parse_assignment,
    parse_subscription,
    version_of,
)
from kbroker.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from kbroker.group.member import Member
from kbroker.group.state import GroupState
from protocol.errors import ErrorCode


class MigrationPolicy(enum.Enum):
    """group.consumer.migration.policy: which conversions of a group with members are allowed."""

    BIDIRECTIONAL = "bidirectional"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    DISABLED = "disabled"

    @classmethod
    def parse(cls, text: str) -> MigrationPolicy:
        return cls(text.strip().lower())

    @property
    def upgrades(self) -> bool:
        return self in (MigrationPolicy.BIDIRECTIONAL, MigrationPolicy.UPGRADE)

    @property
    def downgrades(self) -> bool:
        return self in (MigrationPolicy.BIDIRECTIONAL, MigrationPolicy.DOWNGRADE)


def upgrade_refusal(group: ClassicGroup, policy: MigrationPolicy, max_size: int) -> str | None:
    """Why the classic group with members cannot become a consumer group, or None."""
    if not policy.upgrades:
        return "online upgrade is disabled"
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or group.protocol_name is None:
        return "the group does not use the consumer embedded protocol"
    if len(group.members) > max_size:
        return "the group has more members than group.consumer.max.size"
    for member in group.members.values():
        try:
            parse_subscription(member.metadata(group.protocol_name))
            parse_assignment(member.assignment)
        except EmbeddedProtocolError as error:
            return f"member {member.member_id}: {error}"
    return None


def to_consumer_group(
    group: ClassicGroup, assignor: str, now: int
) -> tuple[ConsumerGroup, list[tuple[object, object]]]:
    """The consumer group the classic `group` becomes (checked by upgrade_refusal first), and the answers
    (token, result) owed to its members' waiting JoinGroup/SyncGroup: REBALANCE_IN_PROGRESS."""
    from kbroker.group.coordinator import JoinResult, SyncResult  # late: coordinator.py imports the group modules

    protocol = group.protocol_name or ""
    generation = group.generation_id
    consumer = ConsumerGroup(
        group.group_id, group_epoch=generation, assignment_epoch=generation, assignor_name=assignor
    )
    replies: list[tuple[object, object]] = []
    for member in group.members.values():
        subscription = parse_subscription(member.metadata(protocol))
        assigned = parse_assignment(member.assignment)
        converted = ConsumerMember(
            member.member_id,
            instance_id=member.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            member_epoch=generation,
            previous_member_epoch=generation,
            state=MemberState.STABLE,
            assigned=assigned,
            session_deadline=now + member.session_timeout_ms,
            classic=ClassicMetadata(member.session_timeout_ms, tuple(member.protocols)),
        )
        consumer.add(converted)
        consumer.target[member.member_id] = dict(assigned)
        if member.awaiting_join is not None:
            replies.append((member.awaiting_join, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id)))
        if member.awaiting_sync is not None:
            replies.append((member.awaiting_sync, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)))
        member.awaiting_join = member.awaiting_sync = None
    consumer.subscription_metadata = {}  # computed by the heartbeat that triggered the upgrade
    _forget_classic_membership(group, now)
    group.consumer = consumer
    return consumer, replies


def _forget_classic_membership(group: ClassicGroup, now: int) -> None:
    group.members.clear()
    group.static_members.clear()
    group.pending_members.clear()
    group.pending_sync.clear()
    group.leader_id = None
    group.protocol_name = None
    group.protocol_type = CONSUMER_PROTOCOL_TYPE
    group.join_deadline = group.initial_delay_deadline = group.sync_deadline = None
    group.state = GroupState.EMPTY  # a conversion, not a transition of the classic state machine
    group.state_timestamp = now


def downgrade_refusal(group: ConsumerGroup, policy: MigrationPolicy, classic_max_size: int, leaving: str) -> str | None:
    """Why the consumer group cannot become a classic group when member `leaving` leaves, or None: members
    remain and every one of them uses the classic protocol."""
    remaining = [m for m in group.members.values() if m.member_id != leaving]
    if not remaining:
        return "the group becomes empty"
    if any(m.classic is None for m in remaining):
        return "members with the consumer protocol remain"
    if not policy.downgrades:
        return "online downgrade is disabled"
    if len(remaining) > classic_max_size:
        return "the group has more members than group.max.size"
    return None


def to_classic_group(holder: ClassicGroup, now: int) -> None:
    """Turn the consumer group of `holder` (checked by downgrade_refusal first, the leaving member removed)
    back into a classic group, Stable at generation = the group epoch (the one its members were given);
    the caller then starts a rebalance."""
    consumer = holder.consumer
    assert consumer is not None
    holder.consumer = None
    holder.members.clear()
    holder.static_members.clear()
    holder.leader_id = None
    holder.generation_id = consumer.group_epoch
    holder.protocol_type = CONSUMER_PROTOCOL_TYPE
    for member in consumer.members.values():
        classic = member.classic
        assert classic is not None
        joined = Member(
            member.member_id,
            member.instance_id,
            member.client_id,
            member.client_host,
            classic.session_timeout_ms,
            member.rebalance_timeout_ms,
            CONSUMER_PROTOCOL_TYPE,
            list(classic.protocols),
            session_deadline=now + classic.session_timeout_ms,
        )
        holder.add(joined)
    holder.protocol_name = holder.select_protocol()
    for classic_member in holder.members.values():
        target = consumer.target.get(classic_member.member_id, {})
        version = version_of(classic_member.metadata(holder.protocol_name))
        classic_member.assignment = assignment_bytes(target, version)
    holder.state = GroupState.STABLE  # a conversion; the rebalance the caller starts is a transition
    holder.state_timestamp = now
