"""Cluster mode: the group and transaction coordinators live on the leaders of their internal topics'
partitions, as in Kafka.

- `__consumer_offsets` and `__transaction_state` are cluster topics, created in ZooKeeper by the first
  FindCoordinator that needs one (offsets.topic.num.partitions / .replication.factor,
  transaction.state.log.num.partitions / .replication.factor, with min.insync.replicas from
  transaction.state.log.min.isr). As Kafka does, the topic is not created while fewer brokers are live
  than its replication factor asks: FindCoordinator answers COORDINATOR_NOT_AVAILABLE until then.
- FindCoordinator answers the leader of partition abs(hashCode(key)) % partitions of the key's topic, with
  its endpoint on the request's listener (COORDINATOR_NOT_AVAILABLE while that partition has no leader).
- After each metadata refresh, a partition this broker has come to lead is loaded (its groups and offsets,
  or its transactions, replayed from the local log; transactions found in a Prepare state are completed),
  and one it no longer leads is unloaded. Requests for a key whose partition this broker does not lead get
  NOT_COORDINATOR (group_runtime / transaction_coordinator with the key).
- Transaction markers of partitions led by other brokers go to those leaders as WriteTxnMarkers
  (BrokerChannel over the inter-broker listener).

Nothing of this is loaded without zookeeper.connect.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.cluster.channel import BrokerChannel
from kbroker.cluster.channel_security import ChannelSecurity
from kbroker.cluster.metadata import ClusterMetadata
from kbroker.cluster.store import TopicExistsInZkError
from kbroker.cluster.znodes import NO_LEADER, BrokerEndpoint
from kbroker.group.store import OFFSETS_TOPIC
from kbroker.group.store import TOPIC_CONFIGS as OFFSETS_TOPIC_CONFIGS
from kbroker.log.coordinator_log import CoordinatorLog, partition_for
from kbroker.txn.transaction import TopicPartition
from kbroker.txn.txn_store import TOPIC_CONFIGS as TXN_TOPIC_CONFIGS
from kbroker.txn.txn_store import TXN_TOPIC
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.cluster.runtime import ClusterRuntime

log = structlog.get_logger(__name__)

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
MARKER_TIMEOUT_S = 10.0
WRITE_TXN_MARKERS_VERSION = 1
VERIFY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class InternalTopic:
    name: str
    partitions_config: str
    replication_config: str
    configs: dict[str, str]


@dataclass(frozen=True)
class Coordinator:
    """FindCoordinator's answer for one key."""

    error: ErrorCode
    node_id: int = -1
    host: str = ""
    port: int = -1
    message: str | None = None


class CoordinatorPlacement:
    def __init__(self, broker: Broker, cluster: ClusterRuntime) -> None:
        self.broker = broker
        self.cluster = cluster
        config = broker.config
        self.topics = {
            GROUP_KEY_TYPE: InternalTopic(
                OFFSETS_TOPIC, "offsets.topic.num.partitions", "offsets.topic.replication.factor", OFFSETS_TOPIC_CONFIGS
            ),
            TRANSACTION_KEY_TYPE: InternalTopic(
                TXN_TOPIC,
                "transaction.state.log.num.partitions",
                "transaction.state.log.replication.factor",
                {**TXN_TOPIC_CONFIGS, "min.insync.replicas": str(config.get_int("transaction.state.log.min.isr"))},
            ),
        }
        self.channel = BrokerChannel(
            f"broker-{broker.node_id}", self._inter_broker_endpoint, ChannelSecurity.from_config(config)
        )
        self._creating: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # ----- wiring

    def attach(self) -> None:
        """Take over the coordinators' placement: load what this broker leads now, follow every change."""
        if self.broker.groups is not None:
            self.broker.groups.topic_catalog = self._topic_catalog
        if self.broker.transactions is not None:
            self.broker.transactions.marker_writer.remote = self
        self.cluster.metadata_listeners.append(self.on_metadata)
        self.on_metadata(self.cluster.metadata)

    async def stop(self) -> None:
        if self.on_metadata in self.cluster.metadata_listeners:
            self.cluster.metadata_listeners.remove(self.on_metadata)
        tasks = [*self._tasks, *self._creating.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.channel.close()

    def _topic_catalog(self) -> dict[str, int]:
        return {name: len(a.partitions) for name, a in self.cluster.metadata.topics.items()}

    def _inter_broker_endpoint(self, broker_id: int) -> BrokerEndpoint | None:
        registration = self.cluster.metadata.brokers.get(broker_id)
        if registration is None:
            return None
        return registration.endpoint(self.broker.config.inter_broker_listener.name)

    # ----- FindCoordinator

    def find(self, key_type: int, key: str, listener: str) -> Coordinator:
        topic = self.topics[key_type]
        metadata = self.cluster.metadata
        assignment = metadata.topics.get(topic.name)
        if assignment is None:
            self._create(topic)
            return Coordinator(ErrorCode.COORDINATOR_NOT_AVAILABLE, message=f"{topic.name} is being created")
        state = metadata.state(topic.name, partition_for(key, len(assignment.partitions)))
        if state is None or not state.has_leader:
            return Coordinator(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        registration = metadata.brokers.get(state.leader)
        endpoint = None if registration is None else registration.endpoint(listener)
        if endpoint is None:
            return Coordinator(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return Coordinator(ErrorCode.NONE, state.leader, endpoint.host, endpoint.port)

    def _create(self, topic: InternalTopic) -> None:
        """Create the topic in ZooKeeper in the background (one attempt at a time; a client retries)."""
        running = self._creating.get(topic.name)
        if running is not None and not running.done():
            return
        task = asyncio.get_running_loop().create_task(self._create_topic(topic), name=f"create-{topic.name}")
        self._creating[topic.name] = task

    async def _create_topic(self, topic: InternalTopic) -> None:
        config = self.broker.config
        partitions = config.get_int(topic.partitions_config)
        factor = config.get_int(topic.replication_config)
        try:
            live = await self.cluster.store.live_brokers()
            if len(live) < factor:
                log.warning(
                    "internal_topic_not_created",
                    topic=topic.name,
                    live_brokers=len(live),
                    replication_factor=factor,
                    reason=f"fewer live brokers than {topic.replication_config}; retried on the next request",
                )
                return
            await self.cluster.create_topic(topic.name, partitions, factor, dict(topic.configs), by_controller=False)
        except TopicExistsInZkError:
            pass
        except Exception as error:  # noqa: BLE001 - ZooKeeper trouble: the next FindCoordinator tries again
            log.warning("internal_topic_create_failed", topic=topic.name, error=f"{type(error).__name__}: {error}")

    # ----- loading and unloading on leadership changes

    def on_metadata(self, metadata: ClusterMetadata) -> None:
        try:
            self._follow(metadata)
        except Exception:  # noqa: BLE001 - a damaged partition must not stop the broker following the cluster
            log.exception("coordinator_placement_failed")

    def _follow(self, metadata: ClusterMetadata) -> None:
        groups, transactions = self.broker.groups, self.broker.transactions
        if groups is not None:
            gained, lost = self._moves(metadata, groups.store)
            if lost:
                groups.unload(lost)
            if gained:
                groups.load(gained)
        if transactions is not None:
            gained, lost = self._moves(metadata, transactions.state_log.store)
            if lost:
                transactions.unload(lost)
            owned = transactions.state_log.store.owned or set()
            epochs = {
                p: state.leader_epoch for p in owned | gained if (state := metadata.state(TXN_TOPIC, p)) is not None
            }
            transactions.coordinator_epochs.update(epochs)  # the leader epoch moves on with ISR changes too
            if gained:
                transactions.load(gained, leader_epochs=epochs)
                self._spawn(transactions.coordinator.complete_prepared(), "complete-prepared-transactions")

    def _moves(self, metadata: ClusterMetadata, store: CoordinatorLog) -> tuple[set[int], set[int]]:
        """(partitions of the store's topic this broker has come to lead, those it no longer leads)."""
        assignment = metadata.topics.get(store.topic)
        owned = store.owned if store.owned is not None else set()
        if assignment is None:
            return set(), set(owned)
        store.partitions = len(assignment.partitions)
        node_id = self.broker.node_id
        led = {
            partition
            for partition in assignment.partitions
            if (state := metadata.state(store.topic, partition)) is not None
            and state.leader == node_id
            and self.broker.logs.get_partition(store.topic, partition) is not None
        }
        return led - owned, owned - led

    def _spawn(self, work: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("coordinator_task_failed", task=task.get_name(), error=str(task.exception()))

    # ----- transaction markers for other brokers' partitions (the marker writer's RemoteMarkers)

    def leader_of(self, topic: str, partition: int) -> int | None:
        metadata = self.cluster.metadata
        if topic not in metadata.topics:
            return None if not topic.startswith("__") else self.broker.node_id  # a local internal topic
        state = metadata.state(topic, partition)
        return state.leader if state is not None and state.has_leader else NO_LEADER

    async def send(
        self,
        broker_id: int,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        commit: bool,
        coordinator_epoch: int,
    ) -> dict[TopicPartition, ErrorCode]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        marker = {
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "transaction_result": commit,
            "topics": [{"name": t, "partition_indexes": p} for t, p in by_topic.items()],
            "coordinator_epoch": coordinator_epoch,
        }
        response = await self.channel.call(
            broker_id, ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, {"markers": [marker]}, MARKER_TIMEOUT_S
        )
        errors: dict[TopicPartition, ErrorCode] = dict.fromkeys(partitions, ErrorCode.UNKNOWN_SERVER_ERROR)
        for answered in response["markers"]:
            for topic in answered["topics"]:
                for entry in topic["partitions"]:
                    errors[(topic["name"], entry["partition_index"])] = ErrorCode(entry["error_code"])
        return errors

    # ----- transactional writes checked with another broker's transaction coordinator

    async def add_or_verify(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: set[TopicPartition], verify_only: bool
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v5 to the coordinator of `transactional_id` (a partition leader's question, as
        Kafka's AddPartitionsToTxnManager asks it): whether the producer's ongoing transaction has the
        partitions (verify_only), or add them (transactions v2). COORDINATOR_NOT_AVAILABLE when it cannot
        be asked."""
        listener = self.broker.config.inter_broker_listener.name
        found = self.find(TRANSACTION_KEY_TYPE, transactional_id, listener)
        if found.error is not ErrorCode.NONE:
            return dict.fromkeys(partitions, found.error)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(partitions):
            by_topic.setdefault(topic, []).append(partition)
        transaction = {
            "transactional_id": transactional_id,
            "producer_id": producer_id,
            "producer_epoch": epoch,
            "verify_only": verify_only,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
        }
        try:
            response = await self.channel.call(
                found.node_id, ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"transactions": [transaction]}, VERIFY_TIMEOUT_S
            )
        except (OSError, TimeoutError) as error:
            log.info("transaction_verification_failed", coordinator=found.node_id, error=type(error).__name__)
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        errors = dict.fromkeys(partitions, ErrorCode(response["error_code"]) or ErrorCode.UNKNOWN_SERVER_ERROR)
        for result in response["results_by_transaction"]:
            for topic in result["topic_results"]:
                for entry in topic["results_by_partition"]:
                    errors[(topic["name"], entry["partition_index"])] = ErrorCode(entry["partition_error_code"])
        return errors


def start_placement(broker: Broker) -> CoordinatorPlacement | None:
    """Cluster mode only (after the coordinators are built): their placement on the internal partitions."""
    if broker.cluster is None:
        return None
    placement = CoordinatorPlacement(broker, broker.cluster)
    placement.attach()
    return placement
