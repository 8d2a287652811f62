"""The HTTP listener: one aiohttp application on the broker's event loop.

  request_stats.py  per-API request counts and latency (the pipeline's hook; pure)
  traffic.py        bytes and records appended per topic (the logs' on_append event)
  metrics.py        /metrics: a Prometheus collector reading the broker's state at scrape time
  app.py            the application: error middleware, /health, /ready, /metrics, the REST routes
  rest/             REST Proxy v2 (topics, produce, consumer instances), on broker internals

Off unless `kbroker.http.listeners` is set; the server imports this package only then, so aiohttp
and prometheus_client cost nothing at start-up otherwise. The server calls
`await start_http(broker, connections)` once the logs are loaded and the coordinators run, sets
`gateway.ready` once the Kafka listener serves, and `await gateway.stop()` when stopping.
"""

from __future__ import annotations

from kbroker.http.app import HttpGateway, start_http

__all__ = ["HttpGateway", "start_http"]
