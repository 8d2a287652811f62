"""The aiohttp application and its listeners."""

from __future__ import annotations

import json
import socket
from typing import TYPE_CHECKING, Any

import structlog
from aiohttp import web

from kbroker.http.auth import auth_middleware
from kbroker.http.console import add_console_routes
from kbroker.http.explain import Explain
from kbroker.http.metrics import CONTENT_TYPE, BrokerCollector, new_registry, render
from kbroker.http.queues import BROKER_KEY, CONSUMERS_KEY, queue_socket
from kbroker.http.request_stats import RequestStats
from kbroker.http.rest import add_rest_routes
from kbroker.http.rest.errors import RestError, error_response
from kbroker.http.traffic import TopicTraffic
from kbroker.http.vq import VqRoutes
from kbroker.vq import VirtualQueues, VqConfig

if TYPE_CHECKING:
    from kbroker.broker import Broker

log = structlog.get_logger("kbroker.http")

GATEWAY_KEY = web.AppKey("gateway", object)


class HttpGateway:
    """The HTTP listeners' shared state: the broker, the metrics sources, readiness."""

    def __init__(self, broker: Broker, connections: Any) -> None:
        self.broker = broker
        self.requests = RequestStats()
        self.traffic = TopicTraffic()
        self.registry = new_registry(BrokerCollector(broker, self.requests, self.traffic, connections))
        self.ready = False  # the server sets it once the Kafka listener serves, clears it when stopping
        self.addresses: list[str] = []
        self._runner: web.AppRunner | None = None
        self.app = self._application()
        broker.logs.on_append.append(self.traffic.on_append)

    def _application(self) -> web.Application:
        middlewares: list[Any] = [_json_errors]
        if self.broker.authorizer is not None:  # HTTP Basic against the Kafka users, then the same ACLs
            middlewares.append(auth_middleware(self.broker, self.broker.authorizer))
        app = web.Application(
            client_max_size=self.broker.config.get_int("kbroker.http.max.body.bytes"), middlewares=middlewares
        )
        app[GATEWAY_KEY] = self
        app[BROKER_KEY] = self.broker
        app[CONSUMERS_KEY] = set()
        app.router.add_get("/health", self.health)
        app.router.add_get("/ready", self.readiness)
        app.router.add_get("/metrics", self.metrics)
        self.consumers = add_rest_routes(app, self.broker)
        app.router.add_get("/v1/queues/ws", queue_socket)
        self.virtual_queues = VirtualQueues(self.broker.logs, _vq_config(self.broker), self.broker.clock.wall_ms)
        VqRoutes(self.virtual_queues, self.broker.fetch_waiters.wait).add_to(app)
        explain = Explain(self.broker)
        app.router.add_get("/v1/explain/groups", explain.groups)
        app.router.add_get("/v1/explain/transactions", explain.transactions)
        add_console_routes(app, self.broker, self.virtual_queues)
        controls = self.broker.test_controls
        if controls is not None and self.broker.config.get_bool("kbroker.testing.admin.enable"):
            from kbroker.http.testing_admin import add_testing_routes

            add_testing_routes(app, controls)
        return app

    async def start(self, sockets: list[socket.socket]) -> None:
        self.consumers.start()
        self.virtual_queues.start()
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        for sock in sockets:
            await web.SockSite(self._runner, sock).start()
            host, port = sock.getsockname()[:2]
            self.addresses.append(f"http://{host}:{port}")
        log.info("http_listening", listeners=self.addresses)

    async def stop(self) -> None:
        self.ready = False
        await self.consumers.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.virtual_queues.stop()  # after the last request: its checkpoint covers every append

    # -- /health, /ready, /metrics -------------------------------------------------
    async def health(self, request: web.Request) -> web.Response:
        """The process is up and its event loop answers."""
        return web.json_response({"status": "up"})

    async def readiness(self, request: web.Request) -> web.Response:
        """Logs loaded, coordinators started, the Kafka listener bound and serving; 503 otherwise."""
        checks = {
            "logs_loaded": True,  # the gateway starts after LogManager.startup()
            "offline_partitions": len(self.broker.logs.offline_partitions),
            "group_coordinator": _runtime_active(self.broker, "group"),
            "share_coordinator": _runtime_active(self.broker, "share"),
            "kafka_listener": self.ready,
        }
        ready = bool(checks["group_coordinator"] and checks["share_coordinator"] and self.ready)
        body = {"status": "ready" if ready else "not ready", "checks": checks}
        return web.json_response(body, status=200 if ready else 503)

    async def metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=render(self.registry), headers={"Content-Type": CONTENT_TYPE})


def _vq_config(broker: Broker) -> VqConfig:
    config = broker.config
    return VqConfig(
        topic=config.get_str("kbroker.vq.topic"),
        partitions=config.get_int("kbroker.vq.topic.partitions"),
        positions_topic=config.get_str("kbroker.vq.positions.topic"),
        checkpoint_interval_ms=config.get_int("kbroker.vq.index.checkpoint.interval.ms"),
    )


def _runtime_active(broker: Broker, which: str) -> bool:
    from protocol.errors import KafkaProtocolError

    try:
        if which == "group":
            from kbroker.group import group_runtime

            group_runtime(broker)
        else:
            from kbroker.share import share_runtime

            share_runtime(broker)
    except KafkaProtocolError:
        return False
    return True


@web.middleware
async def _json_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every error answer is REST Proxy's JSON: {"error_code": ..., "message": ...}."""
    try:
        return await handler(request)
    except RestError as error:
        return error_response(error.status, error.code, error.message)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        status = error.status
        message = error.reason if status != 413 else f"request body larger than {request.app._client_max_size} bytes"
        return error_response(status, status, message)
    except json.JSONDecodeError as error:
        return error_response(400, 400, f"malformed JSON: {error}")
    except Exception:  # noqa: BLE001 - one bad request never harms the broker
        log.exception("http_handler_failed", method=request.method, path=request.path)
        return error_response(500, 50001, "internal server error")
