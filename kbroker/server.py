"""The broker process: load the logs, listen, serve, and stop in order.

Shutdown (SIGTERM/SIGINT): stop accepting, let in-flight requests finish for a
short while, close connections, flush the logs and write the clean-shutdown
marker so the next start skips recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from kbroker.broker import (
    META_PROPERTIES,
    Broker,
    InconsistentClusterIdError,
    adopt_cluster_id,
    load_cluster_id,
    new_log_manager,
    with_dynamic_configs,
    write_log_dirs_meta,
)
from kbroker.cleaner.runtime import new_log_cleaner
from kbroker.clock import REAL_CLOCK
from kbroker.config import BrokerConfig, ConfigError
from kbroker.config_repository import ConfigRepository
from kbroker.connection import Connection
from kbroker.handlers.registry import DECLARED, Handler, lazy_handlers, load_handlers
from kbroker.http.listeners import bind_http_listeners
from kbroker.limits import ConnectionLimits
from kbroker.listeners import Listeners
from kbroker.log.manager import DuplicateLogDirectoryError
from kbroker.logging_setup import effective_level
from kbroker.quota import FILE_NAME as QUOTAS_FILE
from kbroker.scram import ScramStore

if TYPE_CHECKING:
    from kbroker.testing.controls import TestControls

LOGGER_NAME = "kbroker.server"
log = structlog.get_logger(LOGGER_NAME)

SHUTDOWN_GRACE_SECONDS = 5.0
# the internal topics whose existence means a coordinator has state to replay at start-up
OFFSETS_TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"
TRANSACTION_STATE_TOPIC = "__transaction_state"


def run(config: BrokerConfig) -> int:
    """Serve until SIGTERM or SIGINT; returns the process exit code."""
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency, but stay runnable without it
        runner = asyncio.run
    try:
        return int(runner(serve(config, freeze_gc=True)))
    except (OSError, ConfigError) as exc:  # a port in use, an unreadable keystore
        log.error("broker_failed", error=str(exc))
        return 1


async def serve(
    config: BrokerConfig,
    started: asyncio.Event | None = None,
    *,
    controls: TestControls | None = None,
    stop: asyncio.Event | None = None,
    freeze_gc: bool = False,
) -> int:
    """Run the broker until SIGTERM, SIGINT or `stop`. `controls` (kbroker.testing): a virtual clock and
    fault injection, also built here when the config enables `kbroker.testing.admin.enable`.
    `freeze_gc` (the broker process, not a broker inside another program): once started, what start-up
    built (schema tables, generated codecs, loaded logs and coordinators: tens of thousands of objects
    living as long as the process) leaves the garbage collector's reach, so a full collection, which
    stops the event loop, scans only what came later (gc.freeze)."""
    begin = time.monotonic()
    loop = asyncio.get_running_loop()
    listeners = Listeners()
    config = await listeners.bind(config)  # first: a port in use fails before the data directory is written
    try:
        http_sockets = bind_http_listeners(config.get_list("kbroker.http.listeners"))
    except OSError:
        listeners.close()
        raise
    cluster = config.zookeeper_connect is not None  # a broker alone neither offers nor serves a cluster's APIs
    # each handler module loads at its API's first request
    handlers: Mapping[int, Handler] = lazy_handlers(cluster)
    if controls is None and config.get_bool("kbroker.testing.admin.enable"):
        from kbroker.testing.controls import TestControls

        controls = TestControls()
        log.warning("testing_controls_enabled", reason="kbroker.testing.admin.enable=true: never in production")
    clock = REAL_CLOCK
    if controls is not None:
        handlers = controls.faults.wrap({k: h for k, h in load_handlers().items() if cluster or not h.cluster_only})
        clock = controls.clock
    dynamic_configs = ConfigRepository.load(config.data_dir)
    config = with_dynamic_configs(config, dynamic_configs)
    logs = new_log_manager(config, clock)
    fresh_data_dir = not (config.data_dir / META_PROPERTIES).exists()
    cluster_id = load_cluster_id(config.data_dir, config.node_id)
    try:
        write_log_dirs_meta(config.log_dirs[1:], config.node_id, cluster_id, replacing=cluster_id)
    except InconsistentClusterIdError as exc:
        raise ConfigError(str(exc)) from None
    try:
        logs.startup()
    except DuplicateLogDirectoryError as exc:  # the operator must choose the copy: no start
        raise ConfigError(str(exc)) from None
    broker = Broker(
        config=config,
        logs=logs,
        cluster_id=cluster_id,
        started_at_ms=int(time.time() * 1000),
        dynamic_configs=dynamic_configs,
        clock=clock,
    )
    broker.scram = ScramStore.load(config.data_dir)
    if config.get_str("authorizer.class.name"):  # the ACL machinery loads only when configured
        from kbroker.auth.authorizer import new_authorizer

        broker.authorizer = new_authorizer(config)
    if (config.data_dir / QUOTAS_FILE).exists():  # else loaded at first use (Broker.client_quotas)
        broker.client_quotas()
    if config.zookeeper_connect is not None:  # cluster mode: kazoo is imported only here
        from kbroker.cluster.channel_security import ChannelSecurity

        ChannelSecurity.from_config(config)  # a ConfigError before joining: no broker registers unable to replicate
        await _join_cluster(broker, fresh_data_dir)
    cleaner = new_log_cleaner(lambda: broker.config, logs)  # topic settings as they are now (dynamic configs)
    # a single broker starts a coordinator with nothing to replay at its first use (start-up time)
    broker.coordinators_on_first_use = broker.cluster is None
    if not broker.coordinators_on_first_use or logs.topic(OFFSETS_TOPIC) is not None:
        from kbroker.group import start_group_coordinator

        broker.groups = start_group_coordinator(broker)
    if not broker.coordinators_on_first_use or logs.topic(SHARE_STATE_TOPIC) is not None:
        from kbroker.share import start_share_coordinator

        broker.shares = start_share_coordinator(broker)
    # completes transactions a crash left in Prepare* (their markers may publish offsets: after the groups)
    if not broker.coordinators_on_first_use or logs.topic(TRANSACTION_STATE_TOPIC) is not None:
        from kbroker.txn.runtime import start_transaction_coordinator

        broker.transactions = await start_transaction_coordinator(broker)
    if broker.cluster is not None:  # the coordinators follow the leaders of their internal partitions
        from kbroker.cluster.replica_manager import ReplicaManager
        from kbroker.coordinator_placement import start_placement

        broker.replicas = ReplicaManager(broker, broker.cluster)
        broker.replicas.start()  # before the coordinators' listener: a partition replicates before it loads
        broker.placement = start_placement(broker)
    registry = listeners.prepare(broker, handlers)
    if controls is not None:
        controls.attach(broker, registry)
    http = None
    if http_sockets:  # aiohttp loads only when an HTTP listener is configured
        from kbroker.http import start_http

        http = await start_http(broker, registry, http_sockets)
        listeners.observe_requests(http.requests.observe)
        if controls is not None:
            controls.http_addresses = list(http.addresses)
    await listeners.serve()
    if stop is None:
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
    duties = [
        loop.create_task(logs.run(), name="log-duties"),
        loop.create_task(_sweep_connections(registry), name="connection-limits"),
    ]
    if cleaner is not None:
        duties.append(loop.create_task(cleaner.run(), name="log-cleaner"))
    if freeze_gc:
        gc.freeze()
    log.info(
        "broker_started",
        listeners=",".join(str(x) for x in config.listeners),
        advertised=",".join(f"{x.name}://{x.advertised}" for x in config.listeners),
        data_dir=str(config.data_dir),
        cluster_id=broker.cluster_id,  # in cluster mode, the cluster's (ZooKeeper's)
        node_id=config.node_id,
        **({"fresh_directory": True} if logs.fresh_directory else {"clean_start": logs.had_clean_shutdown}),
        apis=sum(1 for d in DECLARED.values() if cluster or not d.cluster_only),
        startup_ms=round((time.monotonic() - begin) * 1000, 1),
        # counting walks every frozen object (~1 ms): only when the line is written
        gc_frozen=gc.get_freeze_count() if effective_level(LOGGER_NAME) <= logging.INFO else None,
    )
    if http is not None:
        http.ready = True
    if started is not None:
        started.set()
    await stop.wait()
    log.info("broker_stopping", connections=len(registry.connections))
    broker.coordinators_on_first_use = False  # a request of the drain finds no coordinator that was never used
    listeners.close()
    if http is not None:
        await http.stop()
    if broker.shares is not None:
        await broker.shares.stop()
    if broker.groups is not None:
        await broker.groups.stop()  # waiting JoinGroup/SyncGroup answers get NOT_COORDINATOR before the drain
    if broker.replicas is not None:  # other brokers' fetchers back off instead of keeping the drain busy
        broker.replicas.begin_shutdown()
    conns: list[Connection] = list(registry.connections)
    await asyncio.gather(*(c.drain(SHUTDOWN_GRACE_SECONDS) for c in conns))
    if broker.transactions is not None:
        await broker.transactions.stop()
    if broker.placement is not None:
        await broker.placement.stop()
    if broker.replicas is not None:
        await broker.replicas.stop()
    if broker.cluster is not None:
        await broker.cluster.stop()  # the registration goes: the controller moves leadership away
    for conn in conns:
        conn.shut("broker shutting down")
    for task in duties:
        task.cancel()
    await asyncio.gather(*duties, return_exceptions=True)
    if cleaner is not None:
        await cleaner.shutdown()  # a round in progress stops; its files go or are finished at the next start
    await logs.shutdown()
    log.info("broker_stopped")
    return 0


async def _join_cluster(broker: Broker, fresh_data_dir: bool) -> None:
    """Register with ZooKeeper, join the controller election, load the cluster's metadata."""
    from kazoo.exceptions import KazooException

    from kbroker.cluster.runtime import start_cluster
    from kbroker.cluster.store import BrokerIdInUseError

    config = broker.config
    try:
        cluster = await start_cluster(config, broker.logs, broker.cluster_id)
    except (TimeoutError, BrokerIdInUseError, KazooException) as exc:
        raise ConfigError(
            f"cannot join the cluster at {config.zookeeper_connect}: {exc or type(exc).__name__}"
        ) from None
    local_cluster_id = broker.cluster_id
    try:
        broker.cluster_id = adopt_cluster_id(
            config.data_dir, config.node_id, broker.cluster_id, cluster.cluster_id, fresh=fresh_data_dir
        )
        write_log_dirs_meta(config.log_dirs[1:], config.node_id, broker.cluster_id, replacing=local_cluster_id)
    except InconsistentClusterIdError as exc:
        await cluster.stop()
        raise ConfigError(str(exc)) from None
    broker.cluster = cluster
    broker.producer_ids.block_source = cluster.take_producer_id_block  # unique across the cluster's brokers


async def _sweep_connections(registry: ConnectionLimits) -> None:
    """Once a second: idle connections and overdue requests (the frame deadline) are closed."""
    while True:
        await asyncio.sleep(1.0)
        registry.sweep(time.monotonic())
