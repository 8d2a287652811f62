"""REST Proxy v2 (the API of Confluent's REST Proxy and Redpanda's HTTP Proxy) on broker internals.

errors.py       REST Proxy's error bodies and codes
body.py         content types, JSON bodies, the binary (base64) and json embedded formats
topics.py       GET /topics, /topics/{t}, /topics/{t}/partitions[/{p}]
produce.py      POST /topics/{t}, /topics/{t}/partitions/{p}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from kbroker.http.rest.consumers import Consumers
from kbroker.http.rest.produce import Produce
from kbroker.http.rest.topics import Topics

if TYPE_CHECKING:
    from kbroker.broker import Broker


def add_rest_routes(app: web.Application, broker: Broker) -> Consumers:
    """The REST Proxy v2 routes; the consumer instances (start() and stop() their expiry) are returned."""
    topics = Topics(broker)
    produce = Produce(broker, topics)
    router = app.router
    router.add_get("/brokers", topics.brokers)
    router.add_get("/topics", topics.list)
    router.add_get("/topics/{topic}", topics.get)
    router.add_post("/topics/{topic}", produce.to_topic)
    router.add_get("/topics/{topic}/partitions", topics.partitions)
    router.add_get("/topics/{topic}/partitions/{partition}", topics.partition)
    router.add_post("/topics/{topic}/partitions/{partition}", produce.to_partition)
    consumers = Consumers(broker, topics)
    router.add_post("/consumers/{group}", consumers.create)
    instance = "/consumers/{group}/instances/{instance}"
    router.add_delete(instance, consumers.delete)
    router.add_post(f"{instance}/subscription", consumers.subscribe)
    router.add_get(f"{instance}/subscription", consumers.subscription)
    router.add_delete(f"{instance}/subscription", consumers.unsubscribe)
    router.add_post(f"{instance}/assignments", consumers.assign)
    router.add_get(f"{instance}/assignments", consumers.assignments)
    router.add_post(f"{instance}/positions", consumers.seek)
    router.add_post(f"{instance}/positions/beginning", consumers.seek_to_beginning)
    router.add_post(f"{instance}/positions/end", consumers.seek_to_end)
    router.add_get(f"{instance}/records", consumers.records)
    router.add_post(f"{instance}/offsets", consumers.commit)
    router.add_get(f"{instance}/offsets", consumers.committed)
    return consumers
