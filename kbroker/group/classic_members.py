"""Classic members of a consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup answered by the
consumer-group coordinator, as Kafka 4.x answers them while a group migrates between the protocols. Pure.

A classic member is a consumer member whose subscription and owned partitions come from its JoinGroup's
embedded consumer protocol. JoinGroup is answered at once, with the member's epoch as the generation and
no member list (the member is never the leader: the coordinator assigns); SyncGroup returns the member's
current assignment. When the member must move (the group epoch moved past its epoch, it has partitions to
give up, or partitions it waited for were released), Heartbeat and SyncGroup answer REBALANCE_IN_PROGRESS
and the member rejoins, reporting in JoinGroup the partitions it still owns. Told to rejoin, it must within
its rebalance timeout; joined, it must sync within it; its session timeout is the classic one.
"""

from __future__ import annotations

import uuid

from kbroker.group.consumer_coordinator import ConsumerGroupCoordinator, subscription_key
from kbroker.group.consumer_group import ClassicMetadata, ConsumerGroup, ConsumerMember, MemberState
from kbroker.group.coordinator import JoinRequest, JoinResult, SyncRequest, SyncResult
from kbroker.group.embedded import EmbeddedProtocolError, assignment_bytes, parse_subscription, version_of
from kbroker.group.group import CONSUMER_PROTOCOL_TYPE
from protocol.errors import ErrorCode

E = ErrorCode


class ClassicMemberError(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.error = error


class ClassicMembers:
    """The classic protocol's requests for groups that are consumer groups (holder.consumer is set)."""

    def __init__(self, consumers: ConsumerGroupCoordinator) -> None:
        self.consumers = consumers

    # -- JoinGroup -----------------------------------------------------------------------
    def join(self, group: ConsumerGroup, request: JoinRequest) -> JoinResult:
        try:
            return self._join(group, request)
        except ClassicMemberError as failure:
            return JoinResult(failure.error, request.member_id)

    def _join(self, group: ConsumerGroup, request: JoinRequest) -> JoinResult:
        now = self.consumers.clock()
        member_id = request.member_id or uuid.uuid4().hex
        if len(group.members) >= self.consumers.config.max_size and member_id not in group.members:
            raise ClassicMemberError(E.GROUP_MAX_SIZE_REACHED)
        if not _protocols_supported(group, request):
            raise ClassicMemberError(E.INCONSISTENT_GROUP_PROTOCOL)
        try:
            subscription = parse_subscription(request.protocols[0][1])
        except EmbeddedProtocolError:
            raise ClassicMemberError(E.INCONSISTENT_GROUP_PROTOCOL) from None
        if not request.member_id and request.group_instance_id is None and request.require_known_member_id:
            return JoinResult(E.MEMBER_ID_REQUIRED, member_id)
        member = self._member(group, member_id, request)
        before = subscription_key(member)
        member.instance_id = request.group_instance_id
        if subscription.rack_id is not None:
            member.rack_id = subscription.rack_id
        member.rebalance_timeout_ms = _rebalance_timeout(request)
        member.server_assignor = None
        member.subscribed_topic_names = tuple(sorted(set(subscription.topics)))
        member.subscribed_topic_regex = None
        member.client_id, member.client_host = request.client_id, request.client_host
        member.classic = ClassicMetadata(request.session_timeout_ms, tuple(request.protocols))
        self.consumers.update_member(group, member, before, subscription.owned)
        self.consumers.dirty.add(group.group_id)
        member.session_deadline = now + request.session_timeout_ms
        member.join_deadline = None
        member.sync_deadline = now + member.rebalance_timeout_ms
        return JoinResult(
            E.NONE,
            member.member_id,
            member.member_epoch,
            CONSUMER_PROTOCOL_TYPE,
            member.classic.protocols[0][0],
            "",  # no leader: the coordinator assigns
            [],
        )

    def _member(self, group: ConsumerGroup, member_id: str, request: JoinRequest) -> ConsumerMember:
        instance_id = request.group_instance_id
        if instance_id is None:  # as Kafka: a member id the group does not know joins as a new member
            return group.members.get(member_id) or ConsumerMember(member_id)
        static = group.static_member(instance_id)
        if static is None:
            return group.members.get(member_id) or ConsumerMember(member_id)
        if static.member_id == member_id:
            return static
        if request.member_id:
            raise ClassicMemberError(E.FENCED_INSTANCE_ID)
        return group.replace_static(static, member_id)

    # -- SyncGroup -----------------------------------------------------------------------
    def sync(self, group: ConsumerGroup, request: SyncRequest) -> SyncResult:
        try:
            member = _classic_member(group, request.member_id, request.group_instance_id)
            if request.generation_id != member.member_epoch:
                raise ClassicMemberError(E.ILLEGAL_GENERATION)
            assert member.classic is not None
            protocol = member.classic.protocols[0][0]
            if (request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE) or (
                request.protocol_name is not None and request.protocol_name != protocol
            ):
                raise ClassicMemberError(E.INCONSISTENT_GROUP_PROTOCOL)
            self._rebalance_check(group, member)
        except ClassicMemberError as failure:
            return SyncResult(failure.error)
        now = self.consumers.clock()
        member.sync_deadline = None
        member.session_deadline = now + member.classic.session_timeout_ms
        version = version_of(member.classic.protocols[0][1])
        return SyncResult(E.NONE, assignment_bytes(member.assigned, version), CONSUMER_PROTOCOL_TYPE, protocol)

    def _rebalance_check(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """A new rebalance started after the member's epoch (and it is not still revoking): rejoin."""
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._ask_to_rejoin(member)
            raise ClassicMemberError(E.REBALANCE_IN_PROGRESS)

    def _ask_to_rejoin(self, member: ConsumerMember) -> None:
        if member.join_deadline is None:
            member.join_deadline = self.consumers.clock() + member.rebalance_timeout_ms

    # -- Heartbeat -----------------------------------------------------------------------
    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        try:
            member = _classic_member(group, member_id, instance_id)
        except ClassicMemberError as failure:
            return failure.error
        if generation_id != member.member_epoch:
            return E.ILLEGAL_GENERATION
        assert member.classic is not None
        member.session_deadline = self.consumers.clock() + member.classic.session_timeout_ms
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not _waits_on_unreleased(group, member))
        ):
            self._ask_to_rejoin(member)
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # -- LeaveGroup ----------------------------------------------------------------------
    def leave(self, group: ConsumerGroup, leaving: list[tuple[str, str | None]]) -> list[ErrorCode]:
        errors = []
        for member_id, instance_id in leaving:
            try:
                if instance_id is None:
                    member = _classic_member(group, member_id, None)
                else:
                    member = _static(group, instance_id)
                    if member_id and member.member_id != member_id:
                        raise ClassicMemberError(E.FENCED_INSTANCE_ID)
                    if member.classic is None:
                        raise ClassicMemberError(E.UNKNOWN_MEMBER_ID)
            except ClassicMemberError as failure:
                errors.append(failure.error)
                continue
            self.consumers.fence(group, member.member_id)
            errors.append(E.NONE)
        return errors


def _rebalance_timeout(request: JoinRequest) -> int:
    return request.session_timeout_ms if request.rebalance_timeout_ms < 0 else request.rebalance_timeout_ms


def _protocols_supported(group: ConsumerGroup, request: JoinRequest) -> bool:
    """The consumer embedded protocol, with a protocol name every classic member of the group also offers."""
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not request.protocols:
        return False
    names = {name for name, _ in request.protocols}
    for member in group.members.values():
        if member.classic is not None and member.member_id != request.member_id:
            names &= {name for name, _ in member.classic.protocols}
    return bool(names)


def _static(group: ConsumerGroup, instance_id: str) -> ConsumerMember:
    member = group.static_member(instance_id)
    if member is None:
        raise ClassicMemberError(E.UNKNOWN_MEMBER_ID)
    return member


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """The member, if it is one and uses the classic protocol: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID otherwise."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise ClassicMemberError(E.UNKNOWN_MEMBER_ID)
    else:
        member = _static(group, instance_id)
        if member.member_id != member_id:
            raise ClassicMemberError(E.FENCED_INSTANCE_ID)
    if member.classic is None:
        raise ClassicMemberError(E.UNKNOWN_MEMBER_ID)
    return member


def _waits_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Whether a partition of the member's target it does not have yet is still owned by another member."""
    owners = group.partition_owners(member.member_id)
    target = group.target.get(member.member_id, {})
    return any(
        (topic, p) in owners
        for topic, partitions in target.items()
        for p in partitions - member.assigned.get(topic, frozenset())
    )
