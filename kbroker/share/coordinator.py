"""ShareGroupCoordinator: share-group membership through ShareGroupHeartbeat, pure (time is passed in).

Rules (Kafka's GroupMetadataManager for share groups, KIP-932):
- epoch 0 joins (the client picks its member id; a re-join with a known id replaces that member),
  with the subscribed topic names; epoch -1 leaves; any other epoch must be the member's current one
  (FENCED_MEMBER_EPOCH), and the member must exist (UNKNOWN_MEMBER_ID); the client then re-joins.
- a membership or subscription change, or a change in the subscribed topics' partition counts,
  bumps the group epoch and computes a new target assignment (the simple assignor). Share groups
  have no revocation step: a member takes the target assignment's epoch and its new partitions at
  its next heartbeat, whose answer carries the assignment only when it changed (always on a join).
- a member that has not heartbeated within `group.share.session.timeout.ms` is removed.
Removed members are reported so that the caller releases the records they held.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kbroker.share.group import Assignment, ShareGroup, ShareMember, simple_assignment
from protocol.errors import ErrorCode

JOIN_EPOCH = 0
LEAVE_EPOCH = -1


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None
    error_message: str | None = None


class ShareGroupCoordinator:
    def __init__(
        self,
        config: ShareCoordinatorConfig,
        partitions_of: Callable[[str], int],
        group_config: Callable[[str], ShareCoordinatorConfig] | None = None,
    ) -> None:
        self.config = config
        self.partitions_of = partitions_of  # topic name -> partition count (0: no such topic)
        self.group_config = group_config or (lambda group_id: config)  # a group's own timeouts
        self.groups: dict[str, ShareGroup] = {}
        self.removed: list[tuple[str, str]] = []  # (group id, member id) to release, drained by the caller

    def heartbeat(self, request: HeartbeatRequest, now: int) -> HeartbeatResult:
        if not request.group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, error_message="GroupId can't be empty.")
        if not request.member_id:  # members choose their ids (KIP-1082); Kafka 4.3 answers this one without text
            return HeartbeatResult(ErrorCode.INVALID_REQUEST)
        if request.member_epoch < LEAVE_EPOCH:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, error_message="MemberEpoch is invalid.")
        if request.member_epoch == JOIN_EPOCH:
            return self._join(request, now)
        group = self.groups.get(request.group_id)
        if group is None:
            found = "Group" if request.member_epoch == LEAVE_EPOCH else "Share group"  # Kafka's two wordings
            return HeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"{found} {request.group_id} not found.")
        member = group.members.get(request.member_id)
        if member is None:
            message = f"Member {request.member_id} is not a member of group {request.group_id}."
            return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID, error_message=message)
        if request.member_epoch == LEAVE_EPOCH:
            self._remove(group, member.member_id)
            return HeartbeatResult(ErrorCode.NONE, member.member_id, LEAVE_EPOCH)
        if request.member_epoch != member.member_epoch:
            return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH, error_message="member epoch is not the current one")
        member.session_deadline = now + self.group_config(group.group_id).session_timeout_ms
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.subscribed_topic_names is not None:
            subscribed = tuple(sorted(set(request.subscribed_topic_names)))
            if subscribed != member.subscribed_topic_names:
                member.subscribed_topic_names = subscribed
                group.group_epoch += 1
        return self._answer(group, member, force_assignment=False)

    def _join(self, request: HeartbeatRequest, now: int) -> HeartbeatResult:
        if not request.subscribed_topic_names:
            return HeartbeatResult(
                ErrorCode.INVALID_REQUEST, error_message="SubscribedTopicNames must be set in first request."
            )
        group = self.groups.get(request.group_id)
        if group is None:
            group = self.groups[request.group_id] = ShareGroup(request.group_id)
        member_id = request.member_id
        if member_id not in group.members and len(group.members) >= self.config.max_size:  # broker-wide
            return HeartbeatResult(ErrorCode.GROUP_MAX_SIZE_REACHED, error_message="the share group is full")
        if member_id in group.members:
            self.removed.append((group.group_id, member_id))  # a re-joining member lost what it held
        group.members[member_id] = ShareMember(
            member_id=member_id,
            member_epoch=0,
            client_id=request.client_id,
            client_host=request.client_host,
            rack_id=request.rack_id,
            subscribed_topic_names=tuple(sorted(set(request.subscribed_topic_names))),
            session_deadline=now + self.group_config(group.group_id).session_timeout_ms,
        )
        group.group_epoch += 1
        return self._answer(group, group.members[member_id], force_assignment=True)

    def _answer(self, group: ShareGroup, member: ShareMember, *, force_assignment: bool) -> HeartbeatResult:
        self._update_target(group)
        changed = force_assignment or member.assignment != group.target.get(member.member_id, {})
        member.member_epoch = group.assignment_epoch
        member.assignment = group.target.get(member.member_id, {})
        return HeartbeatResult(
            ErrorCode.NONE,
            member.member_id,
            member.member_epoch,
            self.group_config(group.group_id).heartbeat_interval_ms,
            member.assignment if changed else None,
        )

    def _update_target(self, group: ShareGroup) -> None:
        topics = group.subscribed_topics()
        counts = {t: self.partitions_of(t) for t in topics}
        target = simple_assignment({m.member_id: m.subscribed_topic_names for m in group.members.values()}, counts)
        if target != group.target or group.assignment_epoch < group.group_epoch:
            if target != group.target and group.assignment_epoch >= group.group_epoch:
                group.group_epoch += 1  # the topics changed under the group
            group.target = target
            group.assignment_epoch = group.group_epoch

    def _remove(self, group: ShareGroup, member_id: str) -> None:
        del group.members[member_id]
        group.target.pop(member_id, None)
        group.group_epoch += 1
        self.removed.append((group.group_id, member_id))

    def tick(self, now: int) -> None:
        """Remove members whose session timed out."""
        for group in self.groups.values():
            for member in [m for m in group.members.values() if m.session_deadline <= now]:
                self._remove(group, member.member_id)

    def next_deadline(self) -> int | None:
        deadlines = [m.session_deadline for g in self.groups.values() for m in g.members.values()]
        return min(deadlines) if deadlines else None

    def take_removed(self) -> list[tuple[str, str]]:
        removed, self.removed = self.removed, []
        return removed

    def is_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    def ensure_group(self, group_id: str) -> ShareGroup:
        """The group, created Empty when unknown (state reloaded at start-up, offsets altered by an admin)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group
