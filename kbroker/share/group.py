"""A share group and its members: epochs, subscriptions, assignments and session deadlines (KIP-932)."""

from __future__ import annotations

from dataclasses import dataclass, field

Assignment = dict[str, tuple[int, ...]]  # topic name -> sorted partition indexes

EMPTY = "Empty"
STABLE = "Stable"
ASSIGNOR = "simple"


@dataclass(eq=False)
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]
    session_deadline: int
    assignment: Assignment = field(default_factory=dict)


@dataclass(eq=False)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topics(self) -> set[str]:
        return {name for member in self.members.values() for name in member.subscribed_topic_names}


def simple_assignment(members: dict[str, tuple[str, ...]], partitions_of: dict[str, int]) -> dict[str, Assignment]:
    """Kafka's SimpleAssignor, per topic: with no more members than partitions, partitions go round-robin
    to the members subscribed to the topic (each partition to one member); with more members than
    partitions, members go round-robin to the partitions (a partition shared by several members).
    Every subscribed member of a topic with partitions gets at least one; members in id order."""
    result: dict[str, Assignment] = {member_id: {} for member_id in members}
    for topic in sorted({t for subscribed in members.values() for t in subscribed}):
        count = partitions_of.get(topic, 0)
        if count <= 0:
            continue
        subscribers = sorted(m for m, subscribed in members.items() if topic in subscribed)
        chosen: dict[str, list[int]] = {m: [] for m in subscribers}
        if len(subscribers) <= count:
            for partition in range(count):
                chosen[subscribers[partition % len(subscribers)]].append(partition)
        else:
            for index, member_id in enumerate(subscribers):
                chosen[member_id].append(index % count)
        for member_id, parts in chosen.items():
            result[member_id][topic] = tuple(sorted(parts))
    return result
