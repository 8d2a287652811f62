"""The broker's listeners: bound first, served once the broker is ready, one runtime each.

`Listeners.bind(config)` binds every listener of `listeners` (so a port in use fails the start
before anything is written to the data directory) and returns the config with the ports bound
(for port 0). An SSL listener's context is built while binding
(kbroker.tls), so bad keystores also fail the start early. `start(broker)` gives each listener its `ListenerRuntime` (name, request memory
shared broker-wide, limits, settings from `listener.name.<name>.*`) and starts accepting.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kbroker.config import BrokerConfig, Listener
from kbroker.connection import Connection, ListenerRuntime
from kbroker.limits import ConnectionLimits, parse_overrides
from kbroker.memory import MemoryPool
from kbroker.tls import server_context
from protocol.framing import DEFAULT_STAGING_SIZE, MapRecycler

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.handlers.registry import Handler
    from kbroker.sasl import SaslSettings


def connection_limits(config: BrokerConfig) -> ConnectionLimits:
    listener_max = {
        x.name: config.for_listener(x.name, "max.connections")
        for x in config.listeners
        if config.for_listener(x.name, "max.connections") != config.get("max.connections")
    }
    return ConnectionLimits(
        max_connections=config.get_int("max.connections"),
        max_per_ip=config.get_int("max.connections.per.ip"),
        per_ip_overrides=parse_overrides(config.get_str("max.connections.per.ip.overrides")),
        idle_ms=config.get_int("connections.max.idle.ms"),
        listener_max={name: int(value) for name, value in listener_max.items() if isinstance(value, int)},
    )


class Listeners:
    def __init__(self) -> None:
        self.servers: dict[str, Any] = {}  # name -> asyncio.Server (uvloop's Server is not asyncio.Server)
        self.runtimes: dict[str, ListenerRuntime] = {}
        self.limits: ConnectionLimits | None = None
        self.contexts: dict[str, ssl.SSLContext | None] = {}
        self.sasl: dict[str, SaslSettings] = {}

    async def bind(self, config: BrokerConfig) -> BrokerConfig:
        loop = asyncio.get_running_loop()
        ports: dict[str, int] = {}
        try:
            for listener in config.listeners:
                tls = server_context(config, listener.name) if listener.protocol in ("SSL", "SASL_SSL") else None
                if listener.protocol.startswith("SASL_"):
                    from kbroker.sasl import SaslSettings  # late: only SASL listeners load the SASL code

                    self.sasl[listener.name] = SaslSettings.from_config(config, listener.name)
                self.contexts[listener.name] = tls
                server = await loop.create_server(
                    lambda name=listener.name: Connection(self._runtime(name)),  # type: ignore[misc]
                    host=listener.bind.host,
                    port=listener.bind.port,
                    backlog=config.get_int("socket.listen.backlog.size"),
                    reuse_address=True,
                    start_serving=False,
                )
                self.servers[listener.name] = server
                ports[listener.name] = server.sockets[0].getsockname()[1]
        except OSError as error:
            self.close()
            raise OSError(error.errno, f"cannot listen on {listener}: {error.strerror or error}") from error
        return config.with_bound_ports(ports)

    def prepare(self, broker: Broker, handlers: Mapping[int, Handler]) -> ConnectionLimits:
        """One runtime per listener (not serving yet: `serve` starts accepting)."""
        config = broker.config
        limits = self.limits = connection_limits(config)
        memory = MemoryPool(config.get_int("queued.max.request.bytes"))
        staging = bytearray(DEFAULT_STAGING_SIZE)  # one staging buffer for every connection of the loop
        cipher = bytearray(DEFAULT_STAGING_SIZE)  # and one for TLS records before decryption
        maps = MapRecycler()  # and the maps of finished large frames, for reuse
        for listener in config.listeners:
            runtime = _runtime_for(broker, handlers, listener, limits, memory, staging)
            runtime.cipher_staging = cipher
            runtime.maps = maps
            runtime.tls = self.contexts.get(listener.name)
            settings = self.sasl.get(listener.name)
            runtime.sasl = dataclasses.replace(settings, scram=broker.scram) if settings is not None else None
            self.runtimes[listener.name] = runtime
        return limits

    def observe_requests(self, observe: Callable[[int, float, Any], None]) -> None:
        """Every listener's pipeline calls `observe(api key, seconds, answer)` per answered request."""
        for runtime in self.runtimes.values():
            runtime.observe = observe

    async def serve(self) -> None:
        for server in self.servers.values():
            await server.start_serving()

    def close(self) -> None:
        for server in self.servers.values():
            server.close()

    def _runtime(self, name: str) -> ListenerRuntime:
        runtime = self.runtimes.get(name)
        assert runtime is not None, "a listener accepted a connection before the broker started serving"
        return runtime


def _runtime_for(
    broker: Broker,
    handlers: Mapping[int, Handler],
    listener: Listener,
    limits: ConnectionLimits,
    memory: MemoryPool,
    staging: bytearray,
) -> ListenerRuntime:
    config = broker.config
    return ListenerRuntime(
        broker=broker,
        handlers=handlers,
        limits=limits,
        name=listener.name,
        listener=listener,
        memory=memory,
        staging=staging,
        max_frame_size=config.get_int("socket.request.max.bytes"),
        frame_timeout_ms=config.get_int("kbroker.request.receive.timeout.ms"),
        failed_authentication_delay_ms=config.get_int("connection.failed.authentication.delay.ms"),
    )
