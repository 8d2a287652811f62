"""GroupCoordinator: the classic group protocol as a pure state machine.

No asyncio and no I/O: every event (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
`tick` for the timers) reads the time from the injected clock and updates the
groups. JoinGroup and SyncGroup answers may be deferred: the caller passes an
opaque token with each request, and every answer (immediate or later) comes out
of `take_replies()` as (token, result). `next_deadline()` tells the runtime when
to call `tick()` next. Groups whose persisted metadata (generation, protocol)
changed are listed in `dirty`; groups that died in `removed`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

import structlog

from kbroker.group.config import GroupConfig
from kbroker.group.group import ClassicGroup
from kbroker.group.member import Member
from kbroker.group.state import GroupState
from protocol.errors import ErrorCode

log = structlog.get_logger(__name__)

Clock = Callable[[], int]
E = ErrorCode
S = GroupState


@dataclass(frozen=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    require_known_member_id: bool = True  # JoinGroup v4+
    supports_skip_assignment: bool = False  # JoinGroup v9+ (KIP-814)
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # only for the leader
    skip_assignment: bool = False  # a static leader that came back: it keeps the current assignment


@dataclass(frozen=True)
class SyncRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    generation_id: int
    assignments: dict[str, bytes]
    protocol_type: str | None = None  # checked from v5
    protocol_name: str | None = None


@dataclass(frozen=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


Reply = tuple[object, JoinResult | SyncResult]


class GroupCoordinator:
    def __init__(self, config: GroupConfig, clock: Clock, groups: dict[str, ClassicGroup] | None = None) -> None:
        self.config = config
        self.clock = clock
        self.groups: dict[str, ClassicGroup] = {} if groups is None else groups
        self.dirty: set[str] = set()  # group metadata to persist
        self._replies: list[Reply] = []

    def take_replies(self) -> list[Reply]:
        replies, self._replies = self._replies, []
        return replies

    def _reply(self, token: object | None, result: JoinResult | SyncResult) -> None:
        if token is not None:
            self._replies.append((token, result))

    # -- JoinGroup -----------------------------------------------------------
    def join(self, token: object, request: JoinRequest) -> None:
        now = self.clock()
        error = self.validate_join(request)
        if error is not E.NONE:
            self._reply(token, JoinResult(error, request.member_id))
            return
        group = self.groups.get(request.group_id)
        if group is None:
            if request.member_id:
                self._reply(token, JoinResult(E.UNKNOWN_MEMBER_ID, request.member_id))
                return
            group = self.groups[request.group_id] = ClassicGroup(request.group_id, state_timestamp=now)
        if group.consumer is not None:
            if group.consumer.members:  # the runtime sends these to classic_members.py (online migration)
                self._reply(token, JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, request.member_id))
                return
            group.consumer = None  # an empty consumer group becomes a classic group again (offsets kept)
            group.protocol_type = None
            self.dirty.add(group.group_id)
        if group.is_in(S.DEAD):
            self._reply(token, JoinResult(E.COORDINATOR_NOT_AVAILABLE, request.member_id))
        elif not request.member_id:
            self._join_new_member(group, token, request, now)
        else:
            self._join_known_member(group, token, request, now)
        if group.is_in(S.EMPTY) and not (group.members or group.pending_members or group.offsets):
            if group.protocol_type is None and group.generation_id == 0:
                del self.groups[group.group_id]  # created by a join that failed

    def validate_join(self, request: JoinRequest) -> ErrorCode:
        if not request.group_id:
            return E.INVALID_GROUP_ID
        timeout = request.session_timeout_ms
        if not self.config.min_session_timeout_ms <= timeout <= self.config.max_session_timeout_ms:
            return E.INVALID_SESSION_TIMEOUT
        return E.NONE

    def _join_new_member(self, group: ClassicGroup, token: object, request: JoinRequest, now: int) -> None:
        if not group.supports(request.protocol_type, request.protocols):
            self._reply(token, JoinResult(E.INCONSISTENT_GROUP_PROTOCOL))
            return
        prefix = request.group_instance_id if request.group_instance_id is not None else request.client_id
        member_id = f"{prefix}-{uuid.uuid4()}"
        if group.static_member_id(request.group_instance_id) is not None:
            self._replace_static_member(group, token, request, member_id, now)
            return
        if len(group.members) + len(group.pending_members) >= self.config.max_size:
            self._reply(token, JoinResult(E.GROUP_MAX_SIZE_REACHED))
            return
        if request.group_instance_id is None and request.require_known_member_id:
            group.pending_members[member_id] = now + request.session_timeout_ms
            self._reply(token, JoinResult(E.MEMBER_ID_REQUIRED, member_id))
            return
        self._add_member_and_rebalance(group, token, request, member_id, now)

    def _join_known_member(self, group: ClassicGroup, token: object, request: JoinRequest, now: int) -> None:
        member_id = request.member_id
        if member_id in group.pending_members and request.group_instance_id is None:
            if not group.supports(request.protocol_type, request.protocols):
                self._reply(token, JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
                return
            del group.pending_members[member_id]
            self._add_member_and_rebalance(group, token, request, member_id, now)
            return
        error = validate_member(group, member_id, request.group_instance_id)
        if error is E.NONE and not group.supports(request.protocol_type, request.protocols):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error is not E.NONE:
            self._reply(token, JoinResult(error, member_id))
            return
        member = group.members[member_id]
        unchanged = member.matches(request.protocols)
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member(group, member, token, request, now)
            self._try_complete_join(group, now)
        elif group.is_in(S.COMPLETING_REBALANCE) and unchanged:
            self._reply(token, self._join_result(group, member))  # a lost JoinGroup answer, asked again
        elif group.is_in(S.STABLE) and unchanged and not group.is_leader(member_id):
            self._reply(token, self._join_result(group, member))
        else:  # the leader rejoined, or a member's subscription changed
            self._update_member(group, member, token, request, now)
            self._prepare_rebalance(group, now, f"member {member_id} rejoined with new metadata or as leader")

    def _add_member_and_rebalance(
        self, group: ClassicGroup, token: object, request: JoinRequest, member_id: str, now: int
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=_rebalance_timeout(request),
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            session_deadline=now + request.session_timeout_ms,
            awaiting_join=token,
            is_new=True,
        )
        group.add(member)
        group.new_member_added = True
        log.info("group_member_added", group=group.group_id, member=member_id, instance=member.group_instance_id)
        if group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now)
        else:
            self._prepare_rebalance(group, now, f"member {member_id} joined")

    def _update_member(
        self, group: ClassicGroup, member: Member, token: object, request: JoinRequest, now: int
    ) -> None:
        if member.awaiting_join is not None and member.awaiting_join is not token:
            self._reply(member.awaiting_join, JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))
        member.update_protocols(request.protocols)
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = _rebalance_timeout(request)
        member.client_id, member.client_host = request.client_id, request.client_host
        member.session_deadline = now + request.session_timeout_ms
        member.awaiting_join = token

    def _replace_static_member(
        self, group: ClassicGroup, token: object, request: JoinRequest, member_id: str, now: int
    ) -> None:
        """A static member restarted (unknown member id, known group.instance.id): fence the old
        incarnation and hand the new one its place. As in Kafka, a Stable group does not rebalance
        unless the protocol the group would select changes: the member's new metadata (its owned
        partitions are gone) does not matter. A returning leader keeps the current assignment: from
        JoinGroup v9 it is told to skip the assignment; before, it is answered as a follower (the
        leader named is its previous member id), so it does not assign."""
        instance_id = request.group_instance_id
        assert instance_id is not None
        old = group.members[group.static_members[instance_id]]
        for pending in (old.awaiting_join, old.awaiting_sync):
            if pending is not None:
                fenced = JoinResult(E.FENCED_INSTANCE_ID, old.member_id)
                self._reply(pending, fenced if pending is old.awaiting_join else SyncResult(E.FENCED_INSTANCE_ID))
        old.awaiting_join = old.awaiting_sync = None
        previous_leader = group.leader_id or ""
        log.info("group_static_member_replaced", group=group.group_id, instance=instance_id, old=old.member_id)
        member = group.replace_static_member(instance_id, member_id)
        if group.is_in(S.STABLE):
            self._update_member(group, member, None, request, now)
            if group.select_protocol() == group.protocol_name:
                result = self._join_result(group, member)
                if group.is_leader(member_id):
                    if request.supports_skip_assignment:
                        result = replace(result, skip_assignment=True)
                    else:
                        result = replace(result, leader_id=previous_leader, members=[])
                self._reply(token, result)
                return
            member.awaiting_join = token
            self._prepare_rebalance(group, now, f"static member {instance_id} rejoined with another protocol")
            return
        self._update_member(group, member, token, request, now)
        if group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now)
        else:
            self._prepare_rebalance(group, now, f"static member {instance_id} rejoined")

    # -- rebalance -----------------------------------------------------------
    def rebalance(self, group: ClassicGroup, reason: str) -> None:
        """Start a rebalance of a group that has just become a classic group again (migration.py)."""
        self.dirty.add(group.group_id)
        self._prepare_rebalance(group, self.clock(), reason)

    def _prepare_rebalance(self, group: ClassicGroup, now: int, reason: str) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_assignments(group, E.REBALANCE_IN_PROGRESS)
        group.pending_sync.clear()
        group.sync_deadline = None
        delay = self.config.initial_rebalance_delay_ms
        if group.is_in(S.EMPTY) and delay > 0:
            delay = min(delay, group.max_rebalance_timeout())
            group.initial_delay_deadline = now + delay
            group.initial_delay_remaining = max(group.max_rebalance_timeout() - delay, 0)
            group.new_member_added = False
        else:
            group.join_deadline = now + group.max_rebalance_timeout()
        group.transition(S.PREPARING_REBALANCE, now)
        log.info("group_rebalance_started", group=group.group_id, generation=group.generation_id, reason=reason)
        self._try_complete_join(group, now)

    def _reset_assignments(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.awaiting_sync is not None:
                self._reply(member.awaiting_sync, SyncResult(error))
                member.awaiting_sync = None

    def _try_complete_join(self, group: ClassicGroup, now: int) -> None:
        if group.is_in(S.PREPARING_REBALANCE) and group.initial_delay_deadline is None and group.all_joined():
            self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: int) -> None:
        group.join_deadline = group.initial_delay_deadline = None
        for member in group.not_yet_rejoined():
            if not member.is_static:
                self._remove_member(group, member, E.UNKNOWN_MEMBER_ID)
        if not group.members:
            group.generation_id += 1
            group.protocol_name = None
            group.leader_id = None
            group.transition(S.EMPTY, now)
            self.dirty.add(group.group_id)
            log.info("group_empty", group=group.group_id, generation=group.generation_id)
            return
        joined = [m for m in group.members.values() if m.awaiting_join is not None]
        if not joined:  # only static members that have not rejoined: wait another rebalance timeout
            group.join_deadline = now + group.max_rebalance_timeout()
            return
        if group.leader_id not in {m.member_id for m in joined}:
            group.leader_id = joined[0].member_id  # the leader did not rejoin: a member that did leads
        group.generation_id += 1
        group.protocol_name = group.select_protocol()
        group.transition(S.COMPLETING_REBALANCE, now)
        group.pending_sync = set(group.members)
        group.sync_deadline = now + group.max_rebalance_timeout()
        self.dirty.add(group.group_id)
        log.info(
            "group_generation_started",
            group=group.group_id,
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            members=len(group.members),
        )
        for member in joined:
            self._reply(member.awaiting_join, self._join_result(group, member))
            member.awaiting_join = None
            member.is_new = False
            member.session_deadline = now + member.session_timeout_ms

    def _join_result(self, group: ClassicGroup, member: Member) -> JoinResult:
        protocol = group.protocol_name or ""
        members = []
        if group.is_leader(member.member_id):
            members = [(m.member_id, m.group_instance_id, m.metadata(protocol)) for m in group.members.values()]
        return JoinResult(
            E.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members,
        )

    # -- SyncGroup -----------------------------------------------------------
    def sync(self, token: object, request: SyncRequest) -> None:
        now = self.clock()
        group = self.groups.get(request.group_id)
        error = self._validate_sync(group, request)
        if error is not E.NONE or group is None:
            self._reply(token, SyncResult(error))
            return
        member = group.members[request.member_id]
        member.session_deadline = now + member.session_timeout_ms
        group.pending_sync.discard(member.member_id)
        if not group.pending_sync:
            group.sync_deadline = None
        if group.is_in(S.STABLE):
            self._reply(token, self._sync_result(group, member))
            return
        if member.awaiting_sync is not None:
            self._reply(member.awaiting_sync, SyncResult(E.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = token
        if group.is_leader(member.member_id):
            for other in group.members.values():
                other.assignment = request.assignments.get(other.member_id, b"")
            group.transition(S.STABLE, now)
            log.info("group_stable", group=group.group_id, generation=group.generation_id)
            for other in group.members.values():
                if other.awaiting_sync is not None:
                    self._reply(other.awaiting_sync, self._sync_result(group, other))
                    other.awaiting_sync = None

    def _validate_sync(self, group: ClassicGroup | None, request: SyncRequest) -> ErrorCode:
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        error = validate_member(group, request.member_id, request.group_instance_id)
        if error is not E.NONE:
            return error
        if request.generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or (
            request.protocol_name is not None and request.protocol_name != group.protocol_name
        ):
            return E.INCONSISTENT_GROUP_PROTOCOL
        if group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    @staticmethod
    def _sync_result(group: ClassicGroup, member: Member) -> SyncResult:
        return SyncResult(E.NONE, member.assignment, group.protocol_type, group.protocol_name)

    # -- Heartbeat and LeaveGroup ----------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        now = self.clock()
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        error = validate_member(group, member_id, instance_id)
        if error is not E.NONE:
            return error
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        member = group.members[member_id]
        member.session_deadline = now + member.session_timeout_ms
        if group.is_in(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """Remove members given as (member id, group instance id); returns the group error and one per member."""
        now = self.clock()
        group = self.groups.get(group_id)
        if group is None:  # as Kafka: every member is unknown, the request itself succeeds
            return E.NONE, [E.UNKNOWN_MEMBER_ID] * len(leaving)
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        removed = False
        for member_id, instance_id in leaving:
            if instance_id is None and group.pending_members.pop(member_id, None) is not None:
                errors.append(E.NONE)
                continue
            target = group.static_member_id(instance_id) if instance_id is not None else member_id
            if target is None or target not in group.members:
                errors.append(E.UNKNOWN_MEMBER_ID)
            elif instance_id is not None and member_id and member_id != target:
                errors.append(E.FENCED_INSTANCE_ID)
            else:
                log.info("group_member_left", group=group_id, member=target, instance=instance_id)
                self._remove_member(group, group.members[target], E.UNKNOWN_MEMBER_ID)
                errors.append(E.NONE)
                removed = True
        if removed:
            self._on_member_gone(group, now)
        return E.NONE, errors

    def _remove_member(self, group: ClassicGroup, member: Member, error: ErrorCode) -> None:
        if member.awaiting_join is not None:
            self._reply(member.awaiting_join, JoinResult(error, member.member_id))
        if member.awaiting_sync is not None:
            self._reply(member.awaiting_sync, SyncResult(error))
        member.awaiting_join = member.awaiting_sync = None
        group.remove(member.member_id)

    def _on_member_gone(self, group: ClassicGroup, now: int) -> None:
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now, "a member left")
        elif group.is_in(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now)

    # -- timers --------------------------------------------------------------
    def next_deadline(self) -> int | None:
        deadlines = [d for group in self.groups.values() for d in _deadlines(group)]
        return min(deadlines, default=None)

    def tick(self) -> None:
        """Fire every timer that is due: session expiry, rebalance and sync timeouts, the initial delay."""
        now = self.clock()
        for group in list(self.groups.values()):
            self._expire_pending_members(group, now)
            self._expire_sessions(group, now)
            if group.initial_delay_deadline is not None and group.initial_delay_deadline <= now:
                self._initial_delay_elapsed(group, now)
            if group.join_deadline is not None and group.join_deadline <= now and group.is_in(S.PREPARING_REBALANCE):
                log.info("group_rebalance_timeout", group=group.group_id, joined=group.awaiting_join_count())
                self._complete_join(group, now)
            if group.sync_deadline is not None and group.sync_deadline <= now:
                self._sync_timeout(group, now)

    def _expire_pending_members(self, group: ClassicGroup, now: int) -> None:
        expired = [m for m, deadline in group.pending_members.items() if deadline <= now]
        for member_id in expired:
            del group.pending_members[member_id]
        if expired:
            self._try_complete_join(group, now)

    def _expire_sessions(self, group: ClassicGroup, now: int) -> None:
        expired = [
            m
            for m in group.members.values()
            if m.session_deadline <= now and m.awaiting_join is None and m.awaiting_sync is None
        ]
        for member in expired:
            log.info("group_member_session_expired", group=group.group_id, member=member.member_id)
            self._remove_member(group, member, E.UNKNOWN_MEMBER_ID)
        if expired:
            self._on_member_gone(group, now)

    def _initial_delay_elapsed(self, group: ClassicGroup, now: int) -> None:
        if group.new_member_added and group.initial_delay_remaining > 0:
            delay = min(self.config.initial_rebalance_delay_ms, group.initial_delay_remaining)
            group.initial_delay_remaining -= delay
            group.initial_delay_deadline = now + delay
            group.new_member_added = False
            return
        group.initial_delay_deadline = None
        self._complete_join(group, now)

    def _sync_timeout(self, group: ClassicGroup, now: int) -> None:
        group.sync_deadline = None
        late = [group.members[m] for m in group.pending_sync if m in group.members]
        group.pending_sync.clear()
        for member in late:
            log.info("group_member_sync_timeout", group=group.group_id, member=member.member_id)
            self._remove_member(group, member, E.REBALANCE_IN_PROGRESS)
        if late:
            self._on_member_gone(group, now)

    # -- shutdown ------------------------------------------------------------
    def unload(self, group_ids: Iterable[str] | None = None) -> None:
        """The coordinator stops (or gives up these groups): every waiting JoinGroup/SyncGroup is told
        NOT_COORDINATOR."""
        chosen = self.groups.values() if group_ids is None else [self.groups[g] for g in group_ids if g in self.groups]
        for group in chosen:
            for member in group.members.values():
                if member.awaiting_join is not None:
                    self._reply(member.awaiting_join, JoinResult(E.NOT_COORDINATOR, member.member_id))
                if member.awaiting_sync is not None:
                    self._reply(member.awaiting_sync, SyncResult(E.NOT_COORDINATOR))
                member.awaiting_join = member.awaiting_sync = None


def validate_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
    """UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID (a static member's id taken over by a newer incarnation)."""
    if instance_id is not None:
        current = group.static_member_id(instance_id)
        if current is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if current == member_id else E.FENCED_INSTANCE_ID
    return E.NONE if group.has_member(member_id) else E.UNKNOWN_MEMBER_ID


def _rebalance_timeout(request: JoinRequest) -> int:
    """JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout."""
    return request.session_timeout_ms if request.rebalance_timeout_ms < 0 else request.rebalance_timeout_ms


def _deadlines(group: ClassicGroup) -> list[int]:
    found = list(group.pending_members.values())
    found += [m.session_deadline for m in group.members.values() if m.awaiting_join is None and m.awaiting_sync is None]
    for deadline in (group.initial_delay_deadline, group.join_deadline, group.sync_deadline):
        if deadline is not None:
            found.append(deadline)
    return found
