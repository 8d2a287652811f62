"""ConsumerGroupCoordinator: ConsumerGroupHeartbeat and the timers of consumer-protocol groups (KIP-848). Pure.

The rules follow Kafka's GroupMetadataManager:
- epoch 0 joins (the client names its member id from v1; v0 lets the coordinator choose one), -1 leaves,
  -2 is a static member leaving for a while (it keeps its partitions for one session timeout and
  comes back with epoch 0 under the same `group.instance.id`); any other epoch must be the member's
  current one (or its previous one, with owned partitions within the current assignment: the answer
  that bumped it may have been lost), else FENCED_MEMBER_EPOCH; the client then rejoins.
- a new member, a member leaving or fenced, a changed subscription (names or regex), or a change in
  the partitions of a subscribed topic bumps the group epoch; the next heartbeat computes a new target
  assignment with the group's assignor, and each member reconciles toward it (reconcile.py).
- a member that sends nothing within the session timeout is fenced; so is one that still has not
  revoked partitions one rebalance timeout after being asked to.
Regex subscriptions are RE2 regular expressions matched whole against topic names, as Kafka's
RE2/J does: google-re2 (linear time, bounded memory, so a client's regex cannot stall the broker;
no backreferences or lookaround, as in RE2/J). Internal topics never match a regex.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kbroker.group.assignors import ASSIGNORS, UNIFORM
from kbroker.group.consumer_group import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from kbroker.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from kbroker.group.migration import (
    MigrationPolicy,
    downgrade_refusal,
    to_classic_group,
    to_consumer_group,
    upgrade_refusal,
)
from kbroker.group.reconcile import reconcile
from kbroker.group.state import GroupState
from protocol.errors import ErrorCode

E = ErrorCode
JOIN_EPOCH = 0
METADATA_REFRESH_MS = 1000  # how often a heartbeat re-reads the subscribed topics (new topics, partitions)
MEMBER_ID_REQUIRED_VERSION = 1  # from ConsumerGroupHeartbeat v1 the client generates its member id (KIP-1082)


@dataclass(frozen=True)
class ConsumerGroupSettings:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000


@dataclass(frozen=True)
class ConsumerCoordinatorConfig:
    assignors: tuple[str, ...] = (UNIFORM, "range")  # group.consumer.assignors; the first is the default
    max_size: int = 2**31 - 1  # group.consumer.max.size
    defaults: ConsumerGroupSettings = ConsumerGroupSettings()
    migration_policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL  # group.consumer.migration.policy
    classic_max_size: int = 2**31 - 1  # group.max.size: a downgrade may not make a bigger classic group


@dataclass(frozen=True)
class ConsumerHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None  # TopicPartitions, by topic name (None: not sent)
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True)
class ConsumerHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class HeartbeatError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class ConsumerGroupCoordinator:
    def __init__(
        self,
        config: ConsumerCoordinatorConfig,
        clock: Callable[[], int],
        groups: dict[str, ClassicGroup],
        topics: Callable[[], Mapping[str, int]],
        settings: Callable[[str], ConsumerGroupSettings] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.groups = groups  # shared with the classic coordinator: one namespace of group ids
        self.topics = topics  # every non-internal topic -> its partition count
        self.settings = settings or (lambda group_id: config.defaults)
        self.dirty: set[str] = set()  # groups whose state must be written
        # Answers owed to classic members' waiting JoinGroup/SyncGroup when their group was upgraded.
        self.replies: list[tuple[object, object]] = []
        self.downgraded: set[str] = set()  # groups turned back into classic groups: a rebalance is to start
        self.upgraded: list[tuple[str, int]] = []  # (group, classic members) turned into consumer groups, to log
        self.fenced: list[tuple[str, str, str]] = []  # (group, member, why) removed by a timer, drained to the log

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------
    def heartbeat(self, request: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request)
            return self._heartbeat(request)
        except HeartbeatError as failure:
            return ConsumerHeartbeatResult(failure.error, failure.message)

    def _validate(self, request: ConsumerHeartbeat) -> None:
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(E.INVALID_REQUEST, message)

        if not request.group_id:
            raise invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if epoch > 0 or epoch == LEAVE_EPOCH or request.api_version >= MEMBER_ID_REQUIRED_VERSION:
            if not request.member_id and epoch != STATIC_LEAVE_EPOCH:
                raise invalid("MemberId can't be empty.")
        if epoch == JOIN_EPOCH:
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.owned is None or any(request.owned.values()):
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if not request.subscribed_topic_names and not request.subscribed_topic_regex:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == STATIC_LEAVE_EPOCH:
            if not request.member_id:
                raise invalid("MemberId can't be empty.")
            if request.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif epoch < LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if request.server_assignor is not None and request.server_assignor not in self.config.assignors:
            raise HeartbeatError(
                E.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {request.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self.config.assignors)}.",
            )
        if request.subscribed_topic_regex:  # "" (as clients send it when leaving) means no regex
            if compile_regex(request.subscribed_topic_regex) is None:
                raise HeartbeatError(
                    E.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid regular expression.",
                )

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        holder = self.groups.get(group_id)
        if holder is not None and holder.state is GroupState.DEAD:
            holder = None
        if holder is None:
            if not create:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            holder = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=self.clock())
        if holder.consumer is None:
            if not create:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            if holder.members or holder.pending_members:
                # a live classic group: its members carry on in a consumer group, if the policy allows
                refusal = upgrade_refusal(holder, self.config.migration_policy, self.config.max_size)
                if refusal is not None:
                    raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
                members = len(holder.members)
                holder.consumer, replies = to_consumer_group(holder, self.config.assignors[0], self.clock())
                self.replies.extend(replies)
                self.dirty.add(group_id)
                self.upgraded.append((group_id, members))
                return holder.consumer
            # an empty classic group (or one that only has offsets) becomes a consumer group, offsets kept
            holder.consumer = ConsumerGroup(group_id, assignor_name=self.config.assignors[0])
            holder.protocol_type = CONSUMER_PROTOCOL_TYPE
            holder.protocol_name = holder.leader_id = None
        return holder.consumer

    def _heartbeat(self, request: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        now = self.clock()
        joining = request.member_epoch == JOIN_EPOCH
        group = self._group(request.group_id, joining)
        member_id = request.member_id or uuid.uuid4().hex
        if len(group.members) >= self.config.max_size and member_id not in group.members:
            raise HeartbeatError(
                E.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self.config.max_size} members.",
            )
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request)
        else:
            member = self._static_member(group, member_id, request.instance_id, request)
        before = subscription_key(member)
        _update(member, request)
        previous_assigned = dict(member.assigned)
        self.update_member(group, member, before, request.owned)
        settings = self.settings(group.group_id)
        member.session_deadline = now + settings.session_timeout_ms
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        return ConsumerHeartbeatResult(
            E.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            assignment=dict(member.assigned) if full or member.assigned != previous_assigned else None,
        )

    def update_member(
        self, group: ConsumerGroup, member: ConsumerMember, before: tuple[object, ...], owned: Assignment | None
    ) -> None:
        """After a member's heartbeat or JoinGroup updated it (`before`: its subscription until then): add it
        if new, bump the group epoch when the subscriptions or the subscribed topics changed, compute a new
        target assignment when the epoch moved past it, and reconcile the member toward its target."""
        now = self.clock()
        is_new = member.member_id not in group.members
        if is_new:
            group.add(member)
        bump = is_new or subscription_key(member) != before
        if bump or now >= group.metadata_refresh_deadline:
            # the subscribed topics' partitions (and regex matches), at most once a second per group
            metadata = self._subscription_metadata(group)
            group.metadata_refresh_deadline = now + METADATA_REFRESH_MS
            if metadata != group.subscription_metadata:
                group.subscription_metadata = metadata
                bump = True
        if bump:
            group.group_epoch += 1
            self.dirty.add(group.group_id)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, group.subscription_metadata)
        reconciled = member.state is MemberState.STABLE and member.member_epoch == group.assignment_epoch
        changed = not reconciled and reconcile(
            member,
            group.assignment_epoch,
            group.target.get(member.member_id, {}),
            group.partition_owners(member.member_id),
            owned,
        )
        if changed:
            self.dirty.add(group.group_id)
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                member.rebalance_deadline = now + member.rebalance_timeout_ms
            else:
                member.rebalance_deadline = None

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, request: ConsumerHeartbeat) -> ConsumerMember:
        member = group.members.get(member_id)
        if member is None:
            if request.member_epoch != JOIN_EPOCH:
                raise HeartbeatError(
                    E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
                )
            return ConsumerMember(member_id)
        _check_epoch(member, request)
        return member

    def _static_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str, request: ConsumerHeartbeat
    ) -> ConsumerMember:
        existing = group.static_member(instance_id)
        if request.member_epoch == JOIN_EPOCH:
            if existing is None:
                return group.members.get(member_id) or ConsumerMember(member_id)
            if existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(
                    E.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the group because "
                    f"the instance id is owned by {existing.member_id} member.",
                )
            self.dirty.add(group.group_id)
            return group.replace_static(existing, member_id)
        if existing is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise HeartbeatError(
                E.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member {existing.member_id}.",
            )
        _check_epoch(existing, request)
        return existing

    def _leave(self, request: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        group = self._group(request.group_id, create=False)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise HeartbeatError(
                    E.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of group {group.group_id}."
                )
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if member.member_id != request.member_id:
                raise HeartbeatError(
                    E.FENCED_INSTANCE_ID,
                    f"Static member {request.member_id} with instance id {request.instance_id} "
                    f"was fenced by member {member.member_id}.",
                )
            if request.member_epoch == STATIC_LEAVE_EPOCH:
                # it keeps its assignment for when it comes back; its session timeout still runs
                member.member_epoch = STATIC_LEAVE_EPOCH
                member.pending_revocation = {}
                member.rebalance_deadline = None
                self.dirty.add(group.group_id)
                return ConsumerHeartbeatResult(E.NONE, member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH)
        self.fence(group, member.member_id)
        return ConsumerHeartbeatResult(E.NONE, member_id=request.member_id, member_epoch=request.member_epoch)

    def fence(self, group: ConsumerGroup, member_id: str) -> None:
        """Remove a member (it left, or its session or rebalance timeout expired): the group rebalances, or,
        when only classic members remain and the policy allows it, becomes a classic group again."""
        member = group.members.get(member_id)
        if member is None:
            return
        holder = self.groups.get(group.group_id)
        if holder is not None and member.classic is None:
            refusal = downgrade_refusal(group, self.config.migration_policy, self.config.classic_max_size, member_id)
            if refusal is None:
                group.remove(member_id)
                to_classic_group(holder, self.clock())
                self.downgraded.add(group.group_id)
                self.dirty.add(group.group_id)
                return
        group.remove(member_id)
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
        self.dirty.add(group.group_id)

    # -- assignment --------------------------------------------------------------------------
    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, int]:
        topics = self.topics()
        subscribed: dict[str, int] = {}
        for member in group.members.values():
            for name in member.subscribed_topic_names:
                if name in topics:
                    subscribed[name] = topics[name]
            if member.subscribed_topic_regex is not None:
                for name in regex_matches(member.subscribed_topic_regex, topics):
                    subscribed[name] = topics[name]
        return subscribed

    def _compute_target(self, group: ConsumerGroup, metadata: Mapping[str, int]) -> None:
        topics = self.topics()
        subscriptions = {
            m.member_id: frozenset(
                [t for t in m.subscribed_topic_names if t in metadata]
                + (regex_matches(m.subscribed_topic_regex, topics) if m.subscribed_topic_regex else [])
            )
            for m in group.members.values()
        }
        group.assignor_name = self._assignor(group)
        group.target = ASSIGNORS[group.assignor_name](subscriptions, metadata, group.target)
        group.assignment_epoch = group.group_epoch
        self.dirty.add(group.group_id)

    def _assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members ask for (ties: the configured order); the default when none asks."""
        votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        if not votes:
            return self.config.assignors[0]
        best = max(votes.values())
        return next(name for name in self.config.assignors if votes.get(name) == best)

    # -- timers -------------------------------------------------------------------------------
    def tick(self) -> None:
        """Fence members whose session expired, that did not revoke within their rebalance timeout, or
        (classic members) that did not rejoin or sync within it."""
        now = self.clock()
        for holder in list(self.groups.values()):
            group = holder.consumer
            if group is None:
                continue
            for member in list(group.members.values()):
                why = _expired(member, now)
                if why is not None:
                    self.fence(group, member.member_id)
                    self.fenced.append((group.group_id, member.member_id, why))

    def next_deadline(self) -> int | None:
        deadlines = [
            d
            for holder in self.groups.values()
            if holder.consumer is not None
            for m in holder.consumer.members.values()
            for d in (m.session_deadline, m.rebalance_deadline, m.join_deadline, m.sync_deadline)
            if d is not None
        ]
        return min(deadlines, default=None)

    def restart_timers(self, group_ids: Iterable[str] | None = None) -> None:
        """After loading the groups (these, or all): every member gets a full session timeout from now, as
        Kafka does."""
        now = self.clock()
        chosen = self.groups.values() if group_ids is None else [self.groups[g] for g in group_ids if g in self.groups]
        for holder in chosen:
            if holder.consumer is not None:
                timeout = self.settings(holder.group_id).session_timeout_ms
                for member in holder.consumer.members.values():
                    classic = member.classic
                    member.session_deadline = now + (timeout if classic is None else classic.session_timeout_ms)
                    if member.state is MemberState.UNREVOKED_PARTITIONS:
                        member.rebalance_deadline = now + member.rebalance_timeout_ms


def _expired(member: ConsumerMember, now: int) -> str | None:
    """Why the member is to be fenced now, if it is."""
    if member.session_deadline <= now:
        return "session timeout"
    if member.rebalance_deadline is not None and member.rebalance_deadline <= now:
        return "partitions not revoked in time"
    if member.join_deadline is not None and member.join_deadline <= now:
        return "classic member did not rejoin in time"
    if member.sync_deadline is not None and member.sync_deadline <= now:
        return "classic member did not sync in time"
    return None


def _check_epoch(member: ConsumerMember, request: ConsumerHeartbeat) -> None:
    received = request.member_epoch
    if received > member.member_epoch:
        raise HeartbeatError(
            E.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch:
        # the answer that moved it to its current epoch may have been lost
        lost_answer = received == member.previous_member_epoch and _is_subset(request.owned, member.assigned)
        if not lost_answer:
            raise HeartbeatError(
                E.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )


def _is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(partitions <= assigned.get(topic, frozenset()) for topic, partitions in owned.items())


def subscription_key(member: ConsumerMember) -> tuple[object, ...]:
    return (member.subscribed_topic_names, member.subscribed_topic_regex)


def _update(member: ConsumerMember, request: ConsumerHeartbeat) -> None:
    if request.instance_id is not None:
        member.instance_id = request.instance_id
    if request.rack_id is not None:
        member.rack_id = request.rack_id
    if request.rebalance_timeout_ms != -1:
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
    if request.server_assignor is not None:
        member.server_assignor = request.server_assignor
    if request.subscribed_topic_names is not None:
        member.subscribed_topic_names = tuple(sorted(set(request.subscribed_topic_names)))
    if request.subscribed_topic_regex is not None:
        member.subscribed_topic_regex = request.subscribed_topic_regex or None
    member.client_id = request.client_id
    member.client_host = request.client_host


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any | None:
    """The compiled RE2 regex, or None when RE2 refuses it (INVALID_REGULAR_EXPRESSION)."""
    import re2  # type: ignore[import-untyped]  # here: only regex subscriptions need it, not start-up

    options = re2.Options()
    options.log_errors = False  # a client's bad regex is its error, answered, not a line on stderr
    options.never_capture = True
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def regex_matches(pattern: str, topics: Mapping[str, int]) -> list[str]:
    compiled = compile_regex(pattern)
    if compiled is None:
        return []
    return [name for name in topics if compiled.fullmatch(name)]
