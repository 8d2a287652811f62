"""What a broker in cluster mode knows of the cluster: a snapshot read from ZooKeeper, replaced whole at
each refresh (readers never see half an update)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kbroker.cluster.znodes import BrokerRegistration, PartitionState, TopicAssignment


@dataclass(frozen=True)
class ClusterMetadata:
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)  # live: registered under /brokers/ids
    controller_id: int | None = None
    topics: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[tuple[str, int], PartitionState] = field(default_factory=dict)

    def state(self, topic: str, partition: int) -> PartitionState | None:
        return self.states.get((topic, partition))

    def offline_replicas(self, replicas: tuple[int, ...]) -> list[int]:
        return [r for r in replicas if r not in self.brokers]

    def leaders_known(self, topic: str) -> bool:
        """Every partition of `topic` has a state with a leader."""
        assignment = self.topics.get(topic)
        if assignment is None:
            return False
        for partition in assignment.partitions:
            state = self.states.get((topic, partition))
            if state is None or not state.has_leader:
                return False
        return True
