"""ClassicGroup: one group's members, generation, chosen protocol and committed offsets (data, no timers)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kbroker.group.consumer_group import ConsumerGroup
from kbroker.group.member import Member
from kbroker.group.state import GroupState

TopicPartition = tuple[str, int]
CONSUMER_PROTOCOL_TYPE = "consumer"


class IllegalStateTransition(RuntimeError):
    """A bug: the coordinator asked for a transition the state machine forbids."""


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int  # -1 when the client did not send one
    metadata: str  # "" when the client sent none (Kafka stores a null as "")
    commit_timestamp: int  # wall-clock ms


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int = 0  # when the group entered its state (ms); Empty groups expire from here
    generation_id: int = 0
    protocol_type: str | None = None  # None for "simple" groups that only commit offsets
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id (MEMBER_ID_REQUIRED) -> deadline
    pending_sync: set[str] = field(default_factory=set)  # members still owing a SyncGroup this generation
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # Timers, as deadlines on the coordinator's clock (None: not armed).
    join_deadline: int | None = None  # PreparingRebalance ends here at the latest
    initial_delay_deadline: int | None = None  # group.initial.rebalance.delay.ms for a new group
    initial_delay_remaining: int = 0
    new_member_added: bool = False  # during the initial delay: extend it once more
    sync_deadline: int | None = None  # CompletingRebalance/Stable: members that have not synced by then are removed
    # Set while the group uses the consumer rebalance protocol (KIP-848): membership is then kept there
    # (consumer_coordinator.py) and the classic fields above stay unused; the offsets are shared.
    consumer: ConsumerGroup | None = None

    # -- state -----------------------------------------------------------
    def transition(self, target: GroupState, now: int) -> None:
        if not self.state.can_become(target):
            raise IllegalStateTransition(f"group {self.group_id!r}: {self.state.value} -> {target.value}")
        self.state = target
        self.state_timestamp = now

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # -- members ---------------------------------------------------------
    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, new_member_id: str) -> Member:
        """A static member came back with a fresh member id: it takes over the old one's place."""
        old_id = self.static_members[instance_id]
        member = self.members.pop(old_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader_id == old_id:
            self.leader_id = new_member_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_member_id)
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def all_joined(self) -> bool:
        return not self.pending_members and self.awaiting_join_count() == len(self.members)

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def max_rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols ---------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        counts = Counter(name for m in self.members.values() for name, _ in m.protocols)
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether a member with these protocols may join (INCONSISTENT_GROUP_PROTOCOL otherwise)."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Every member votes for its preferred candidate; most votes wins (ties: the leader's preference)."""
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        leader = self.members.get(self.leader_id or "")
        order = [name for name, _ in leader.protocols] if leader else sorted(votes)
        return next(name for name in order if votes.get(name) == best)

    def is_idle(self) -> bool:
        """Empty of members of either protocol (offsets may remain): it may be deleted, and expires."""
        if self.consumer is not None and self.consumer.members:
            return False
        return self.state is GroupState.EMPTY

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members of a consumer group subscribe to; None when not a consumer group
        or when a member's subscription cannot be read (then no topic counts as unsubscribed)."""
        if self.consumer is not None:
            return set(self.consumer.subscription_metadata)  # names and regex matches that exist
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            if member.protocols:
                parsed = parse_subscription_topics(member.protocols[0][1])
                if parsed is None:
                    return None
                topics |= parsed
        return topics


def parse_subscription_topics(metadata: bytes) -> set[str] | None:
    """The topics of a ConsumerProtocol Subscription (int16 version, then an int32 count of int16 strings)."""
    if len(metadata) < 6:
        return None
    count = int.from_bytes(metadata[2:6], "big", signed=True)
    position = 6
    topics: set[str] = set()
    for _ in range(count):
        length = int.from_bytes(metadata[position : position + 2], "big", signed=True)
        position += 2
        if length < 0 or position + length > len(metadata):
            return None
        try:
            topics.add(bytes(metadata[position : position + length]).decode())
        except UnicodeDecodeError:
            return None
        position += length
    return topics
