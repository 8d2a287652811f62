"""The broker: every subsystem a handler reaches, as typed fields.

server.serve builds them in this order: configuration and logs (LogManager.startup), the
broker itself (its fetch waiters subscribe to every partition's appends; its producer id
manager reads its block file), the group coordinator (replays __consumer_offsets), then the
share-group coordinator, then the transaction coordinator (replays __transaction_state,
completes prepared transactions: its markers may publish transactional offsets, so it comes
after the groups). On a single broker, the group, share-group and transaction coordinators whose
internal topic does not exist yet (nothing to replay or complete) start at their first use instead
(start-up time; `coordinators_on_first_use`). The handler
registry is not part of it (kbroker.handlers.registry; the connections get it from the server).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from kbroker.clock import REAL_CLOCK, Clock
from kbroker.config import BrokerConfig, Endpoint
from kbroker.config_repository import CLUSTER_DEFAULT, ConfigRepository
from kbroker.log import LogConfig, LogManager, ProducerStateConfig
from kbroker.log.checkpoint import write_atomically
from kbroker.txn.producer_ids import ProducerIdManager
from kbroker.waiters import FetchWaiters

if TYPE_CHECKING:
    from kbroker.auth import Authorizer
    from kbroker.cluster.replica_manager import ReplicaManager
    from kbroker.cluster.runtime import ClusterRuntime
    from kbroker.coordinator_placement import CoordinatorPlacement
    from kbroker.group.runtime import GroupRuntime
    from kbroker.quota.manager import Quotas
    from kbroker.scram import ScramStore
    from kbroker.share.runtime import ShareRuntime
    from kbroker.testing.controls import TestControls
    from kbroker.txn.runtime import TxnRuntime

log = structlog.get_logger(__name__)

META_PROPERTIES = "meta.properties"


@dataclass(eq=False)
class Broker:
    config: BrokerConfig
    logs: LogManager
    cluster_id: str = ""
    started_at_ms: int = 0
    dynamic_configs: ConfigRepository = field(default_factory=ConfigRepository)  # <data-dir>/dynamic-configs.json
    fetch_waiters: FetchWaiters = field(init=False)  # long-poll fetches, woken by every partition's appends
    producer_ids: ProducerIdManager = field(init=False)  # <data-dir>/producer-id-block
    groups: GroupRuntime | None = None  # set once the group coordinator has loaded (group_runtime())
    shares: ShareRuntime | None = None  # the share-group coordinator (share_runtime())
    transactions: TxnRuntime | None = None  # set once the transaction coordinator has loaded
    scram: ScramStore | None = None  # SCRAM credentials (AlterUserScramCredentials), loaded at start
    authorizer: Authorizer | None = None  # ACL enforcement (authorizer.class.name), None: everything allowed
    quotas: Quotas | None = None  # client quotas (AlterClientQuotas), <data-dir>/client-quotas.json (client_quotas())
    cluster: ClusterRuntime | None = None  # cluster mode (zookeeper.connect): membership, controller, metadata
    placement: CoordinatorPlacement | None = None  # cluster mode: coordinators on their internal partitions' leaders
    replicas: ReplicaManager | None = None  # cluster mode: followers fetch, leaders track them (high watermark, ISR)
    clock: Clock = REAL_CLOCK  # what timeouts, retention and timers read (kbroker.testing: a virtual clock)
    test_controls: TestControls | None = None  # faults and the virtual clock, only when testing is enabled
    # a coordinator with no state in the data directory starts at its first use (group_runtime(),
    # share_runtime(), transaction_coordinator()) rather than with the broker: start-up time. The server sets it (not in cluster
    # mode) and clears it when stopping.
    coordinators_on_first_use: bool = False

    def __post_init__(self) -> None:
        self.fetch_waiters = FetchWaiters()
        self.logs.on_append.append(self.fetch_waiters.on_append)
        self.producer_ids = ProducerIdManager(self.config.data_dir)

    def client_quotas(self) -> Quotas:
        """The client quotas, loaded at their first use: with the broker when the data directory holds some,
        else at the first DescribeClientQuotas or AlterClientQuotas (start-up time). Until then, None in
        `quotas` means nothing is metered, as an empty store."""
        if self.quotas is None:
            from kbroker.quota.manager import new_quotas

            self.quotas = new_quotas(self.config, lambda: self.clock.monotonic() * 1000)  # a virtual clock in tests
        return self.quotas

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def advertised_host(self) -> str:
        return self.config.advertised.host

    @property
    def advertised_port(self) -> int:
        return self.config.advertised.port

    def advertised_for(self, listener: str) -> Endpoint:
        """The address this broker gives clients that connected through `listener` (Kafka answers Metadata,
        FindCoordinator and DescribeCluster with the endpoints of the request's own listener)."""
        for candidate in self.config.listeners:
            if candidate.name == listener:
                return candidate.advertised
        return self.config.advertised


def with_dynamic_configs(config: BrokerConfig, repository: ConfigRepository) -> BrokerConfig:
    """`config` with the repository's dynamic broker configs for this node and the cluster default."""
    return config.with_dynamic(
        repository.broker_configs(CLUSTER_DEFAULT), repository.broker_configs(str(config.node_id))
    )


def reconfigure(broker: Broker) -> None:
    """Apply the repository's dynamic broker configs now: the config handlers read, and the topic
    defaults of every running log (retention, segment size, message size, ...), as Kafka applies them."""
    broker.config = with_dynamic_configs(broker.config, broker.dynamic_configs)
    broker.logs.set_default_config(LogConfig.from_properties(broker.config.topic_defaults()))


def new_log_manager(config: BrokerConfig, clock: Clock = REAL_CLOCK) -> LogManager:
    return LogManager(
        config.data_dir,
        LogConfig.from_properties(config.topic_defaults()),
        log_dirs=config.log_dirs,
        retention_check_interval_ms=config.get_int("log.retention.check.interval.ms"),
        checkpoint_interval_ms=config.get_int("log.flush.offset.checkpoint.interval.ms"),
        producer_state=ProducerStateConfig(
            expiration_ms=config.get_int("producer.id.expiration.ms"),
            expiration_check_interval_ms=config.get_int("producer.id.expiration.check.interval.ms"),
            snapshot_interval_ms=config.get_int("log.flush.offset.checkpoint.interval.ms"),
        ),
        clock=clock,
    )


def load_cluster_id(data_dir: Path, node_id: int) -> str:
    """The cluster id kept in <data-dir>/meta.properties, created on first start (as Kafka's storage format does)."""
    path = data_dir / META_PROPERTIES
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "cluster.id" and value.strip():
                return value.strip()
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    data_dir.mkdir(parents=True, exist_ok=True)
    text = f"# written by kbroker\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
    write_atomically(path, text.encode())
    log.info("cluster_id_created", cluster_id=cluster_id, path=str(path))
    return cluster_id


def _meta_cluster_id(path: Path) -> str | None:
    if not path.exists():
        return None
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "cluster.id" and value.strip():
            return value.strip()
    return None


def write_log_dirs_meta(log_dirs: Sequence[Path], node_id: int, cluster_id: str, *, replacing: str) -> None:
    """meta.properties in every further data directory, naming the first one's cluster. A directory that
    belongs to another cluster is refused (InconsistentClusterIdError), as Kafka refuses it."""
    text = f"# written by kbroker\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
    for directory in log_dirs:
        path = directory / META_PROPERTIES
        found = _meta_cluster_id(path)
        if found == cluster_id:
            continue
        if found is not None and found != replacing:
            raise InconsistentClusterIdError(f"{path} belongs to cluster {found}, the broker to {cluster_id}")
        directory.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text.encode())


class InconsistentClusterIdError(Exception):
    """The data directory belongs to another cluster than the one in ZooKeeper (Kafka's InconsistentClusterIdException)."""


def adopt_cluster_id(data_dir: Path, node_id: int, local: str, cluster: str, *, fresh: bool) -> str:
    """The cluster id from ZooKeeper: written to a data directory that was just created, refused when the
    directory already belonged to another cluster."""
    if cluster == local:
        return cluster
    if not fresh:
        raise InconsistentClusterIdError(
            f"the cluster id {cluster} in ZooKeeper does not match {local} in {data_dir / META_PROPERTIES}: "
            "is zookeeper.connect pointing to the wrong cluster?"
        )
    text = f"# written by kbroker\nversion=1\ncluster.id={cluster}\nnode.id={node_id}\n"
    write_atomically(data_dir / META_PROPERTIES, text.encode())
    log.info("cluster_id_adopted", cluster_id=cluster)
    return cluster
