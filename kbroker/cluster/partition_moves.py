"""The controller's leader elections and partition reassignments, asyncio side: reads, fenced writes and the
imbalance timer around the pure decisions of kbroker.cluster.election and kbroker.cluster.reassignment.

Every partition state it writes is a compare-and-set at the version read, in a transaction checking the
controller's epoch (ClusterStore.write_partition_state), with a new leader epoch; every topic znode write a
compare-and-set too (ClusterStore.update_topic). A lost race is decided again from a fresh read; a moved
epoch makes this broker step down (NotControllerError to the caller). Brokers learn of the changes through
their ZooKeeper watches, as of any other.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import structlog
from kazoo.exceptions import KazooException

from kbroker.cluster import election, reassignment
from kbroker.cluster.store import ControllerLease, ControllerMovedError, StaleStateError
from kbroker.cluster.znodes import PartitionState, TopicAssignment

if TYPE_CHECKING:
    from kbroker.cluster.runtime import ClusterRuntime

log = structlog.get_logger(__name__)

TopicPartition = tuple[str, int]
WRITE_ATTEMPTS = 4


class NotControllerError(Exception):
    """This broker is not the controller (Kafka's NOT_CONTROLLER)."""


class UnknownPartitionError(LookupError):
    """Kafka's UNKNOWN_TOPIC_OR_PARTITION."""


class PartitionMoves:
    def __init__(self, runtime: ClusterRuntime) -> None:
        self.runtime = runtime

    def _lease(self) -> ControllerLease:
        lease = self.runtime.lease
        if lease is None:
            raise NotControllerError(f"broker {self.runtime.node_id} is not the controller")
        return lease

    async def _fenced(self, lease: ControllerLease) -> NotControllerError:
        await self.runtime.fenced(lease)
        return NotControllerError(f"broker {self.runtime.node_id} is no longer the controller")

    # ----- ElectLeaders

    async def elect_leaders(
        self, kind: election.ElectionType, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, election.Outcome | UnknownPartitionError]:
        """Elect the leaders of `partitions` (None: every partition). Raises NotControllerError."""
        lease = self._lease()
        metadata = self.runtime.metadata
        wanted = list(election.partitions_of(metadata.topics) if partitions is None else partitions)
        results: dict[TopicPartition, election.Outcome | UnknownPartitionError] = {}
        allowed = self.runtime.config.get_bool("unclean.leader.election.enable")
        for topic, partition in wanted:
            assignment = metadata.topics.get(topic)
            if assignment is None or partition not in assignment.partitions:
                results[(topic, partition)] = UnknownPartitionError("The partition does not exist.")
                continue
            replicas = assignment.partitions[partition]
            results[(topic, partition)] = await self._elect(
                lease, kind, topic, partition, replicas, metadata.state(topic, partition), allowed
            )
        counts = Counter(r.value if isinstance(r, election.Outcome) else "unknown" for r in results.values())
        log.info("leader_election_requested", type=kind.name, epoch=lease.epoch, **counts)
        return results

    async def _elect(
        self,
        lease: ControllerLease,
        kind: election.ElectionType,
        topic: str,
        partition: int,
        replicas: tuple[int, ...],
        state: PartitionState | None,
        unclean_allowed: bool,
    ) -> election.Outcome:
        for _ in range(WRITE_ATTEMPTS):
            if state is None:
                return election.Outcome.NOT_AVAILABLE  # no state yet: the controller has not elected it once
            live = set(self.runtime.metadata.brokers)
            decided = election.elect(kind, replicas, state, live, lease.epoch, unclean_allowed)
            if decided.after is None:
                return decided.outcome
            try:
                await self.runtime.store.write_partition_state(lease, topic, partition, state, decided.after)
                return decided.outcome
            except ControllerMovedError:
                raise await self._fenced(lease) from None
            except StaleStateError:
                state = await self.runtime.store.partition_state(topic, partition)
        return election.Outcome.NOT_AVAILABLE

    async def check_imbalance(self) -> None:
        """auto.leader.rebalance.enable: the controller's periodic check (a task for the broker's lifetime)."""
        config = self.runtime.config
        check = election.ImbalanceCheck(float(config.get_int("leader.imbalance.check.interval.seconds")))
        percentage = config.get_int("leader.imbalance.per.broker.percentage")
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            if self.runtime.lease is None:
                check.resigned()
            elif check.next_check is None:
                check.elected(now)
            if check.due(now):
                metadata = self.runtime.metadata
                chosen = election.imbalanced_partitions(
                    metadata.topics, metadata.states, set(metadata.brokers), percentage
                )
                if chosen:
                    try:
                        await self.elect_leaders(election.ElectionType.PREFERRED, chosen)
                    except (NotControllerError, KazooException) as exc:
                        log.info("leader_rebalance_failed", error=type(exc).__name__)
            delay = check.delay(loop.time())
            await asyncio.sleep(1.0 if delay is None else min(delay, 1.0))

    # ----- AlterPartitionReassignments / ListPartitionReassignments

    async def alter_reassignments(
        self,
        topic: str,
        targets: Mapping[int, tuple[int, ...] | None],
        allow_replication_factor_change: bool,
        timeout_s: float = 0.0,
    ) -> dict[int, Exception | None]:
        """Start (or cancel: None) the reassignment of some partitions of `topic`: the topic znode, then each
        started partition's state. Per partition None or the error (UnknownPartitionError,
        InvalidReplicaAssignment, InvalidReplicationFactor, NoReassignmentInProgress); returns once this
        broker's metadata shows the new assignments (or their completion), or after `timeout_s`. Raises
        NotControllerError."""
        lease = self._lease()
        for _ in range(WRITE_ATTEMPTS):
            found = await self.runtime.store.topic_assignment_versioned(topic)
            if found is None:
                return {p: UnknownPartitionError("The partition does not exist.") for p in targets}
            current, version = found
            live = set(self.runtime.metadata.brokers) or set(await self.runtime.store.live_brokers())
            results: dict[int, Exception | None] = {}
            planned: dict[int, reassignment.ReplicaAssignment] = {}
            for partition, target in targets.items():
                if partition not in current.partitions:
                    results[partition] = UnknownPartitionError("The partition does not exist.")
                    continue
                try:
                    before = reassignment.partition_assignment(current, partition)
                    planned[partition] = reassignment.plan(
                        before, target, live, allow_replication_factor_change=allow_replication_factor_change
                    )
                    results[partition] = None
                except (ValueError, reassignment.NoReassignmentInProgress) as exc:
                    results[partition] = exc
            if not planned:
                return results
            try:
                await self.runtime.store.update_topic(lease, reassignment.with_partitions(current, planned), version)
            except ControllerMovedError:
                raise await self._fenced(lease) from None
            except StaleStateError:
                continue  # the topic changed since it was read: plan again
            for partition, after in planned.items():
                await self._start(lease, topic, partition, after, live)
            log.info(
                "partition_reassignment_started",
                topic=topic,
                partitions={p: list(a.target) for p, a in planned.items()},
                epoch=lease.epoch,
            )
            self.runtime.refresh_soon()  # the reassignments that need no new replica complete at once
            await self.runtime.wait_for(lambda m, p=planned: _shows(m.topics.get(topic), p), timeout_s)
            return results
        raise StaleStateError(topic)

    async def _start(
        self, lease: ControllerLease, topic: str, partition: int, after: reassignment.ReplicaAssignment, live: set[int]
    ) -> None:
        """Phase A's state write: a new leader epoch, replicas no longer assigned out of the ISR."""
        for _ in range(WRITE_ATTEMPTS):
            state = await self.runtime.store.partition_state(topic, partition)
            if state is None:
                return
            new = reassignment.state_for_replicas(state, after.replicas, after.target, live, lease.epoch)
            try:
                await self.runtime.store.write_partition_state(lease, topic, partition, state, new)
                return
            except ControllerMovedError:
                raise await self._fenced(lease) from None
            except StaleStateError:
                continue

    def list_reassignments(
        self, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, reassignment.ReplicaAssignment]:
        """The partitions being reassigned (among `partitions`; None: all). Raises NotControllerError."""
        self._lease()
        topics = self.runtime.metadata.topics
        wanted = (
            [(t, p) for t, a in topics.items() for p in set(a.adding) | set(a.removing)]
            if partitions is None
            else partitions
        )
        found = {}
        for topic, partition in wanted:
            assignment = topics.get(topic)
            if assignment is not None and partition in assignment.partitions:
                current = reassignment.partition_assignment(assignment, partition)
                if current.being_reassigned:
                    found[(topic, partition)] = current
        return dict(sorted(found.items()))

    async def complete_reassignments(self) -> None:
        """Phase B of every reassignment whose target replicas are all in the ISR (after each refresh)."""
        lease = self.runtime.lease
        if lease is None:
            return
        metadata = self.runtime.metadata
        done = reassignment.completions(metadata.topics, metadata.states, set(metadata.brokers), lease.epoch)
        by_topic: dict[str, dict[int, reassignment.Completion]] = {}
        for completion in done:
            try:
                if completion.after is not None:
                    await self.runtime.store.write_partition_state(
                        lease, completion.topic, completion.partition, completion.before, completion.after
                    )
            except ControllerMovedError:
                await self.runtime.fenced(lease)
                return
            except StaleStateError:
                self.runtime.refresh_soon()
                continue
            by_topic.setdefault(completion.topic, {})[completion.partition] = completion
        for topic, completed in by_topic.items():
            found = await self.runtime.store.topic_assignment_versioned(topic)
            if found is None:
                continue
            current, version = found
            changes = {
                p: c.assignment
                for p, c in completed.items()
                if p in current.partitions
                and reassignment.partition_assignment(current, p).target == c.assignment.replicas
            }
            if not changes:
                continue
            try:
                await self.runtime.store.update_topic(lease, reassignment.with_partitions(current, changes), version)
            except ControllerMovedError:
                await self.runtime.fenced(lease)
                return
            except StaleStateError:
                self.runtime.refresh_soon()
                continue
            log.info(
                "partition_reassignment_completed",
                topic=topic,
                partitions={p: list(a.replicas) for p, a in changes.items()},
                epoch=lease.epoch,
            )


def _shows(topic: TopicAssignment | None, planned: Mapping[int, reassignment.ReplicaAssignment]) -> bool:
    """The metadata shows each planned assignment, or its completion."""
    if topic is None:
        return False
    for partition, after in planned.items():
        if partition not in topic.partitions:
            return False
        now = reassignment.partition_assignment(topic, partition)
        if now != after and now != reassignment.ReplicaAssignment(after.target):
            return False
    return True
