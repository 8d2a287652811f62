"""The broker process: load the logs, listen, serve, and stop in order.

Shutdown (SIGTERM/SIGINT): stop accepting, let in-flight requests finish for a
short while, close connections, flush the logs and write the clean-shutdown
marker so the next start skips recovery.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from typing import Any

import structlog

from kbroker.broker import Broker, load_cluster_id, new_log_manager, with_dynamic_configs
from kbroker.config import BrokerConfig, ConfigError
from kbroker.config_repository import ConfigRepository
from kbroker.connection import Connection, ListenerRuntime
from kbroker.group import start_group_coordinator
from kbroker.handlers.registry import load_handlers
from kbroker.limits import ConnectionLimits, parse_overrides
from kbroker.memory import MemoryPool
from kbroker.share import start_share_coordinator
from kbroker.txn.runtime import start_transaction_coordinator

log = structlog.get_logger("kbroker.server")

SHUTDOWN_GRACE_SECONDS = 5.0


def run(config: BrokerConfig) -> int:
    """Serve until SIGTERM or SIGINT; returns the process exit code."""
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency, but stay runnable without it
        runner = asyncio.run
    try:
        return int(runner(serve(config)))
    except (OSError, ConfigError) as exc:
        log.error("broker_failed", error=str(exc))
        return 1


async def serve(config: BrokerConfig, started: asyncio.Event | None = None) -> int:
    begin = time.monotonic()
    loop = asyncio.get_running_loop()
    runtime: ListenerRuntime | None = None
    # Bind first: a port in use fails the start before anything is written to the data directory.
    server = await loop.create_server(
        lambda: Connection(_ready(runtime)),
        host=config.listen.host,
        port=config.listen.port,
        backlog=config.get_int("socket.listen.backlog.size"),
        reuse_address=True,
        start_serving=False,
    )
    bound_port = server.sockets[0].getsockname()[1]
    if config.listen.port == 0:
        config = config.with_listen_port(bound_port)
    handlers = load_handlers()
    dynamic_configs = ConfigRepository.load(config.data_dir)
    config = with_dynamic_configs(config, dynamic_configs)
    logs = new_log_manager(config)
    cluster_id = load_cluster_id(config.data_dir, config.node_id)
    logs.startup()
    broker = Broker(
        config=config,
        logs=logs,
        cluster_id=cluster_id,
        started_at_ms=int(time.time() * 1000),
        dynamic_configs=dynamic_configs,
    )
    broker.groups = groups = start_group_coordinator(broker)
    broker.shares = shares = start_share_coordinator(broker)
    # completes transactions a crash left in Prepare* (their markers may publish offsets: after the groups)
    broker.transactions = transactions = await start_transaction_coordinator(broker)
    registry = connection_limits(config)
    memory = MemoryPool(config.get_int("queued.max.request.bytes"))
    runtime = ListenerRuntime(
        broker=broker,
        handlers=handlers,
        limits=registry,
        memory=memory,
        max_frame_size=config.get_int("socket.request.max.bytes"),
        frame_timeout_ms=config.get_int("kbroker.request.receive.timeout.ms"),
    )
    await server.start_serving()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    duties = [
        loop.create_task(logs.run(), name="log-duties"),
        loop.create_task(_sweep_connections(registry), name="connection-limits"),
    ]
    log.info(
        "broker_started",
        listen=f"{config.listen.host}:{bound_port}",
        advertised=str(config.advertised),
        data_dir=str(config.data_dir),
        cluster_id=cluster_id,
        node_id=config.node_id,
        clean_start=logs.had_clean_shutdown,
        apis=len(handlers),
        startup_ms=round((time.monotonic() - begin) * 1000, 1),
    )
    if started is not None:
        started.set()
    await stop.wait()
    log.info("broker_stopping", connections=len(registry.connections))
    server.close()
    await shares.stop()
    await groups.stop()  # waiting JoinGroup/SyncGroup answers get NOT_COORDINATOR before the drain
    conns: list[Connection] = list(registry.connections)
    await asyncio.gather(*(c.drain(SHUTDOWN_GRACE_SECONDS) for c in conns))
    await transactions.stop()
    for conn in conns:
        conn.shut("broker shutting down")
    for task in duties:
        task.cancel()
    await asyncio.gather(*duties, return_exceptions=True)
    await logs.shutdown()
    log.info("broker_stopped")
    return 0


def _ready(runtime: ListenerRuntime | None) -> ListenerRuntime:
    assert runtime is not None, "a listener accepted a connection before the broker started serving"
    return runtime


def connection_limits(config: BrokerConfig) -> ConnectionLimits:
    return ConnectionLimits(
        max_connections=config.get_int("max.connections"),
        max_per_ip=config.get_int("max.connections.per.ip"),
        per_ip_overrides=parse_overrides(config.get_str("max.connections.per.ip.overrides")),
        idle_ms=config.get_int("connections.max.idle.ms"),
    )


async def _sweep_connections(registry: ConnectionLimits) -> None:
    """Once a second: idle connections and overdue requests (the frame deadline) are closed."""
    while True:
        await asyncio.sleep(1.0)
        registry.sweep(time.monotonic())
