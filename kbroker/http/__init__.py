"""The HTTP listener: one aiohttp application on the broker's event loop.

  request_stats.py  per-API request counts and latency (the pipeline's hook; pure)
  traffic.py        bytes and records appended per topic (the logs' on_append event)
  metrics.py        /metrics: a Prometheus collector reading the broker's state at scrape time
  listeners.py      parsing http://HOST:PORT (no aiohttp: the CLI checks the setting before start)
  app.py            the application: error middleware, /health, /ready, /metrics, the REST routes
  rest/             REST Proxy v2 (topics, produce, consumer instances), on broker internals
  queues.py         queue streaming over WebSocket on the share-group engine
  explain.py        /v1/explain/groups and /v1/explain/transactions
  vq.py             virtual queues with named consumers (/v1/vq) on kbroker/vq

Off unless `kbroker.http.listeners` is set; the server imports this package only then, so aiohttp
and prometheus_client cost nothing at start-up otherwise. The server calls
`bind_http_listeners` (kbroker/http/listeners.py) before touching the data directory and
`await start_http(broker, connections, sockets)` once the logs are loaded and the coordinators run, sets
`gateway.ready` once the Kafka listener serves, and `await gateway.stop()` when stopping.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbroker.broker import Broker
    from kbroker.http.app import HttpGateway

__all__ = ["start_http"]


async def start_http(broker: Broker, connections: Any, sockets: list[socket.socket]) -> HttpGateway:
    """Serve HTTP on `sockets` (bound early by listeners.bind_http_listeners); aiohttp is imported here."""
    from kbroker.http.app import HttpGateway

    gateway = HttpGateway(broker, connections)
    await gateway.start(sockets)
    return gateway
