"""REST Proxy consumer instances as data: settings, subscription or manual assignment, positions,
idle expiry, and how the partitions of a subscribed group are shared (pure; a clock is passed in).

Instances of one group that subscribe (topics or a pattern) share the subscribed topics'
partitions among themselves, round-robin in instance-id order, recomputed whenever an instance
comes or goes. They do not join the group's Kafka membership: a REST instance and a Kafka
consumer of the same group each read every partition they are given. Committed offsets are the
group's own (in __consumer_offsets), so either kind resumes from what the other committed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

TopicPartition = tuple[str, int]

EARLIEST, LATEST = "earliest", "latest"


@dataclass(eq=False)
class ConsumerInstance:
    group: str
    instance_id: str
    format: str  # "binary" or "json"
    offset_reset: str = LATEST
    auto_commit: bool = True
    request_max_bytes: int = 67108864
    topics: list[str] = field(default_factory=list)  # subscription by name
    pattern: re.Pattern[str] | None = None  # subscription by pattern
    manual: list[TopicPartition] | None = None  # POST .../assignments
    positions: dict[TopicPartition, int] = field(default_factory=dict)  # next offset to return
    last_used: float = 0.0

    @property
    def subscribed(self) -> bool:
        return bool(self.topics) or self.pattern is not None

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return topic in self.topics


class ConsumerInstances:
    """Every consumer instance of the gateway, by (group, instance id)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.instances: dict[tuple[str, str], ConsumerInstance] = {}

    def add(self, instance: ConsumerInstance) -> bool:
        key = (instance.group, instance.instance_id)
        if key in self.instances:
            return False
        self.instances[key] = instance
        return True

    def get(self, group: str, instance_id: str, now: float) -> ConsumerInstance | None:
        instance = self.instances.get((group, instance_id))
        if instance is not None:
            instance.last_used = now
        return instance

    def remove(self, group: str, instance_id: str) -> ConsumerInstance | None:
        return self.instances.pop((group, instance_id), None)

    def expire(self, now: float) -> list[ConsumerInstance]:
        """Instances idle for longer than consumer.instance.timeout.ms, removed."""
        gone = [i for i in self.instances.values() if now - i.last_used > self.timeout_s]
        for instance in gone:
            del self.instances[(instance.group, instance.instance_id)]
        return gone

    def assignment(self, instance: ConsumerInstance, topics: dict[str, int]) -> list[TopicPartition]:
        """The partitions `instance` reads: its manual assignment, or its share of its group's
        subscribed partitions (`topics`: name -> partition count)."""
        if instance.manual is not None:
            return list(instance.manual)
        if not instance.subscribed:
            return []
        peers = sorted(
            (i for i in self.instances.values() if i.group == instance.group and i.subscribed),
            key=lambda i: i.instance_id,
        )
        wanted = sorted({tp for peer in peers for tp in _partitions(peer, topics)})
        mine = peers.index(instance) if instance in peers else 0
        return [tp for n, tp in enumerate(wanted) if n % len(peers) == mine and instance.matches(tp[0])]


def _partitions(instance: ConsumerInstance, topics: dict[str, int]) -> Iterable[TopicPartition]:
    for topic, count in topics.items():
        if not topic.startswith("__") and instance.matches(topic):
            yield from ((topic, p) for p in range(count))
