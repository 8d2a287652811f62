"""A consumer-protocol group (KIP-848): members with epochs, the group epoch and the target assignment.

Data only; the rules are in consumer_coordinator.py. Partitions are named by topic name here
(the handlers translate Kafka's topic ids). Epochs, as Kafka keeps them:

- the **group epoch** goes up whenever the group's membership or subscriptions change, or the
  partitions of a subscribed topic do;
- the **assignment epoch** is the group epoch the target assignment was computed for;
- each member's **member epoch** reaches the assignment epoch once it is reconciled with its
  target (it first gives up partitions other members are to receive: UNREVOKED_PARTITIONS; it may
  wait for partitions others still hold: UNRELEASED_PARTITIONS).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

Assignment = dict[str, frozenset[int]]  # topic name -> partitions

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2  # a static member that will come back (its partitions stay reserved for it)


class MemberState(enum.Enum):
    """Where a member stands in its reconciliation (Kafka's MemberState, as ConsumerGroupDescribe does not show it)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"  # must revoke partitions before it gets new ones
    UNRELEASED_PARTITIONS = "unreleased_partitions"  # waits for partitions other members still own


class ConsumerGroupState(enum.Enum):
    """The state ListGroups and ConsumerGroupDescribe report."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMetadata:
    """A member that joined with the classic protocol (JoinGroup): its session timeout and protocols, as
    given in its last JoinGroup (name, embedded consumer-protocol subscription), in its order of preference."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300_000
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # Timers (ms on the coordinator's clock): session expiry; UNREVOKED_PARTITIONS for too long.
    session_deadline: int = 0
    rebalance_deadline: int | None = None
    # A classic-protocol member (online migration): its metadata, and its two timers: told to rejoin
    # (REBALANCE_IN_PROGRESS), it must within its rebalance timeout; joined, it must sync within it.
    classic: ClassicMetadata | None = None
    join_deadline: int | None = None
    sync_deadline: int | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def subscribes(self, topic: str, regex_matches: frozenset[str]) -> bool:
        return topic in self.subscribed_topic_names or topic in regex_matches

    def owned(self) -> Assignment:
        """Partitions the member may still hold: assigned plus those it has to revoke."""
        return merge(self.assigned, self.pending_revocation)


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment
    # Partition counts of the topics the members subscribe to when the target was last computed.
    subscription_metadata: dict[str, int] = field(default_factory=dict)
    assignor_name: str = ""
    metadata_refresh_deadline: int = 0  # when a heartbeat next re-reads the subscribed topics (not persisted)

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.assignment_epoch < self.group_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        return member

    def replace_static(self, member: ConsumerMember, member_id: str) -> ConsumerMember:
        """A static member back under a new member id (KIP-345): the new incarnation takes over its
        predecessor's partitions and target assignment, from epoch 0."""
        target = self.target.get(member.member_id)
        self.remove(member.member_id)
        member.member_id = member_id
        member.member_epoch = member.previous_member_epoch = 0
        member.state = MemberState.STABLE
        self.add(member)
        if target is not None:
            self.target[member_id] = target
        return member

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def partition_owners(self, excluding: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> epoch of the member that still owns it, over every other member."""
        owners: dict[tuple[str, int], int] = {}
        for member in self.members.values():
            if member.member_id == excluding:
                continue
            for topic, partitions in member.owned().items():
                for partition in partitions:
                    owners[(topic, partition)] = member.member_epoch
        return owners


def merge(a: Assignment, b: Assignment) -> Assignment:
    result = dict(a)
    for topic, partitions in b.items():
        result[topic] = result.get(topic, frozenset()) | partitions
    return result


def count(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())
